"""Named types of the public read arguments (``columns``, ``filter``, ``version``, ``indices``, ...)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..table.history import VersionInfo

__all__ = ["AsOf", "Columns", "Filter", "Indices", "StorageOptions", "Version", "VersionInfo"]

Columns = Union[Sequence[str], Mapping[str, str], None]
"""Column names (nested ``"s.a"`` allowed), or ``{alias: SQL expression}``; ``None`` = all columns."""

Filter = Union[str, pc.Expression, None]
"""A SQL predicate in pylance's dialect, or a ``pyarrow.compute.Expression``; ``None`` = every row."""

Version = Union[int, str, None]
"""A version number or a tag name; ``None`` = the latest version."""

AsOf = Union[datetime, str, None]
"""A ``datetime`` or an ISO 8601 string: the latest version committed at or before then."""

Indices = Union[Sequence[int], np.ndarray, pa.Array, range]
"""Logical row positions (after deletions), in the order wanted."""

StorageOptions = Union[dict[str, Any], None]
"""Object-store settings with pylance's keys, or fsspec arguments (see :func:`lance_duck.dataset`)."""
