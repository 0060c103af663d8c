"""lance_duck: read Lance tables in Python and query them with DuckDB, pyarrow and Spark."""
from __future__ import annotations

from .errors import (
    BranchNotFoundError,
    CorruptFileError,
    InvalidArgumentError,
    LanceDuckError,
    NotFoundError,
    TagNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "LanceDuckError",
    "NotFoundError",
    "VersionNotFoundError",
    "TagNotFoundError",
    "BranchNotFoundError",
    "UnsupportedFeatureError",
    "CorruptFileError",
    "InvalidArgumentError",
]
