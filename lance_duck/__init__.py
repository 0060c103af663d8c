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

# Entry points are imported lazily so that `import lance_duck` stays cheap.
_LAZY = {
    "dataset": ("lance_duck.scan.dataset", "dataset"),
    "LanceDataset": ("lance_duck.scan.dataset", "LanceDataset"),
    "sql": ("lance_duck.integrations.duckdb", "sql"),
    "register": ("lance_duck.integrations.duckdb", "register"),
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'lance_duck' has no attribute {name!r}")

__all__ = [
    "__version__",
    "dataset",
    "LanceDataset",
    "sql",
    "register",
    "LanceDuckError",
    "NotFoundError",
    "VersionNotFoundError",
    "TagNotFoundError",
    "BranchNotFoundError",
    "UnsupportedFeatureError",
    "CorruptFileError",
    "InvalidArgumentError",
]
