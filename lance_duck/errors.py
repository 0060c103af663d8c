"""The lance_duck exception family.

Everything lance_duck raises on purpose derives from :class:`LanceDuckError`, except I/O
problems, which surface as the builtin ``FileNotFoundError`` / ``PermissionError`` naming
the path.
"""
from __future__ import annotations


class LanceDuckError(Exception):
    """Root of every error lance_duck raises on purpose."""


class NotFoundError(LanceDuckError, LookupError, ValueError):
    """A version, tag or branch that the table does not have (also a ``ValueError``, which is
    what pylance raises for the same references, so code written for pylance still catches it)."""


class VersionNotFoundError(NotFoundError):
    """The requested version does not exist (never written, or cleaned up)."""


class TagNotFoundError(NotFoundError):
    """The requested tag does not exist."""


class BranchNotFoundError(NotFoundError):
    """The requested branch does not exist."""


class UnsupportedFeatureError(LanceDuckError, NotImplementedError):
    """The table or file uses something lance_duck cannot read (named in the message)."""


class CorruptFileError(LanceDuckError, ValueError):
    """A manifest, data file or deletion file is truncated or malformed."""


class InvalidArgumentError(LanceDuckError, ValueError):
    """A call's arguments are malformed (bad filter, unknown column, bad version spec)."""


class RowIndexError(InvalidArgumentError, IndexError):
    """A row position outside the rows there are (``take``); also an ``IndexError``."""


__all__ = [
    "LanceDuckError",
    "NotFoundError",
    "VersionNotFoundError",
    "TagNotFoundError",
    "BranchNotFoundError",
    "UnsupportedFeatureError",
    "CorruptFileError",
    "InvalidArgumentError",
    "RowIndexError",
]


class ObjectStoreError(LanceDuckError, OSError):
    """A request to an object store kept failing (throttled, dropped, truncated) after its retries;
    the message names the object."""


class CredentialsError(ObjectStoreError, PermissionError):
    """An object store was asked for an object without credentials to sign the request with; the
    message names the object and the options or environment variables that give them."""
