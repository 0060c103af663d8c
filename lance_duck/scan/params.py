"""Named types of the public read arguments (``columns``, ``filter``, ``version``, ``indices``, ...)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from ..table.history import VersionInfo

if TYPE_CHECKING:
    from ..predicate.compiled import CompiledFilter     # the filter model (and sqlglot) load on a read

__all__ = ["int_arg", "AsOf", "Columns", "Filter", "Indices", "StorageOptions", "Version", "VersionInfo"]

Columns = Union[Sequence[str], Mapping[str, str], None]
"""Column names (nested ``"s.a"`` allowed), or ``{alias: SQL expression}``; ``None`` = all columns."""

Filter = Union[str, pc.Expression, "CompiledFilter", None]
"""A SQL predicate in pylance's dialect, or a ``pyarrow.compute.Expression`` (or a filter compiled by
``lance_duck.predicate``); ``None`` = every row."""

Version = Union[int, str, None]
"""A version number or a tag name; ``None`` = the latest version."""

AsOf = Union[datetime, str, None]
"""A ``datetime`` or an ISO 8601 string: the latest version committed at or before then."""

Indices = Union[Sequence[int], np.ndarray, pa.Array, range]
"""Logical row positions (after deletions), in the order wanted."""

StorageOptions = Union[dict[str, Any], None]
"""Object-store settings with pylance's keys, or fsspec arguments (see :func:`lance_duck.dataset`)."""


def int_arg(value: Any, name: str, what: str) -> int:
    """``value`` as an int, or InvalidArgumentError naming ``what``'s argument ``name`` (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidArgumentError(f"{what}: {name} must be an integer, not {value!r}")
    return int(value)
