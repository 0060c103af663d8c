"""lance_duck: read Lance tables in Python and query them with DuckDB, pyarrow and Spark.

Entry points:

- :func:`dataset` opens a table at a version, tag, branch or time: a :class:`LanceDataset`, which is a
  ``pyarrow.dataset.Dataset`` (DuckDB queries it by name) with pylance's read methods.
- :func:`sql` runs DuckDB SQL in which ``FROM 't.lance'``, ``FROM 't.lance' AT (VERSION => 3)`` and
  ``lance_scan('t.lance', version => 'tag')`` read Lance tables; :func:`register` names one on a
  connection of yours.
- ``lance-duck`` (or ``python -m lance_duck``) is the command line: ``sql``, ``scan``, ``versions``,
  ``tags``, ``describe``, ``demo``.

Errors derive from :class:`LanceDuckError`; a missing table or file is a ``FileNotFoundError``.

Examples:
    >>> import duckdb, lance_duck
    >>> ds = lance_duck.dataset("sql_examples/data/sample.lance", version=2)
    >>> duckdb.sql("select count(*) from ds").fetchall()
    [(2500,)]
    >>> lance_duck.sql("select count(*) from 'sql_examples/data/sample.lance' AT (VERSION => 1)").fetchall()
    [(2000,)]
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

from ._version import __version__

if TYPE_CHECKING:  # the lazy entry points below, as type checkers see them
    from .integrations.duckdb import register, sql
    from .scan.dataset import LanceDataset, dataset

# Entry points are imported lazily so that `import lance_duck` stays cheap.
_LAZY = {
    "dataset": ("lance_duck.scan.dataset", "dataset"),
    "LanceDataset": ("lance_duck.scan.dataset", "LanceDataset"),
    "sql": ("lance_duck.integrations.duckdb", "sql"),
    "register": ("lance_duck.integrations.duckdb", "register"),
}


def __getattr__(name: str) -> Any:
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
