"""A reference's version and the identity of its manifest file, found cheaply (a listing, a ``stat`` or
a tag read; no manifest read): what a cache of opened versions keys on (``lance_duck.sql``'s kept tables).

:func:`pinned_manifest` answers for main-branch references by latest, number or tag; ``asof`` and branch
references return None (the caller opens them in full, :func:`lance_duck.table.open_snapshot`).
"""
from __future__ import annotations

import os
from typing import Any

from .refs import read_tag
from .versions import VERSIONS_DIR, list_versions, manifest_name

#: What tells one manifest file from another written later at the same path.
ManifestIdentity = tuple[Any, ...]


def manifest_identity(io: Any, path: str, size: int | None = None) -> ManifestIdentity | None:
    """The identity of the manifest at ``path``; None: not there. Local: its path, size, mtime and inode;
    on an object store: the path and the size listed (what the io layer's manifest cache keys on)."""
    if not io.is_local:
        return (path, size)
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (path, st.st_size, st.st_mtime_ns, st.st_ino)


def pinned_manifest(io: Any, root: str, version: Any, asof: Any,
                    branch: str | None) -> tuple[int, ManifestIdentity] | None:
    """(version, manifest identity) of a main-branch reference (latest, a version number or a tag on
    main), or None: an ``asof`` or branch reference, a tag on another branch, or no such manifest.

    Raises what reading ``_versions/`` or the tag raises (a missing tag: ``TagNotFoundError``).

    Example::

        pinned_manifest(io, root, None, None, None)   # (latest version, identity of its manifest)
    """
    if branch is not None or asof is not None:
        return None
    vdir = io.join(root, VERSIONS_DIR)
    if version is None:
        entries = list_versions(io, root, sizes=False)     # (a local manifest's identity is stat'ed below)
        if not entries:
            return None
        e = entries[-1]
        ident = manifest_identity(io, io.join(vdir, e.name), e.size)
        return None if ident is None else (e.version, ident)
    if isinstance(version, str):
        tag = read_tag(io, root, version)
        if tag["branch"] not in (None, "main"):
            return None
        version = tag["version"]
    if not isinstance(version, int) or isinstance(version, bool):
        return None
    ident = manifest_identity(io, io.join(vdir, manifest_name(version, "v2")))
    return None if ident is None else (version, ident)


__all__ = ["ManifestIdentity", "manifest_identity", "pinned_manifest"]
