"""lance_duck: read Lance tables in Python and query them with DuckDB, pyarrow and Spark.

Entry points:

- :func:`dataset` opens a table at a version, tag, branch or time: a :class:`LanceDataset`, which is a
  ``pyarrow.dataset.Dataset`` (DuckDB queries it by name) with pylance's read methods.
- :func:`sql` runs DuckDB SQL in which ``FROM 't.lance'``, ``FROM 't.lance' AT (VERSION => 3)`` and
  ``lance_scan('t.lance', version => 'tag')`` read Lance tables; :func:`register` names one on a
  connection of yours.
- :func:`changes` is the change feed: every row inserted, updated (pre- and post-image) or deleted by the
  commits of a version range, Delta-CDF style (``lance_changes(...)`` in SQL, ``readChangeFeed`` in Spark);
  ``LanceDataset.delta()`` is pylance's ``delta()``.
- ``lance-duck`` (or ``python -m lance_duck``) is the command line: ``sql``, ``scan``, ``versions``,
  ``tags``, ``describe``, ``demo``.

Errors derive from :class:`LanceDuckError`; a missing table or file is a ``FileNotFoundError``, an
object-store request that still fails after its retries an :class:`ObjectStoreError`.

The process's thread pools and caches (shared by every table) are sized by :func:`configure` and
emptied by :func:`clear_caches`.

Examples:
    >>> import duckdb, lance_duck
    >>> ds = lance_duck.dataset(lance_duck.sample_path(), version=2)
    >>> duckdb.sql("select count(*) from ds").fetchall()
    [(2500,)]
    >>> lance_duck.sql(f"select count(*) from '{lance_duck.sample_path()}' AT (VERSION => 1)").fetchall()
    [(2000,)]
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import (
    BranchNotFoundError,
    CorruptFileError,
    CredentialsError,
    InvalidArgumentError,
    LanceDuckError,
    NotFoundError,
    RowIndexError,
    ObjectStoreError,
    TagNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)

from ._lazy import lazy_attributes
from ._state import clear_caches, configure
from ._version import __version__

if TYPE_CHECKING:  # the lazy entry points below, as type checkers see them
    from .changefeed import changes
    from .integrations.duckdb import register, sql
    from ._open import dataset
    from .scan.dataset import LanceDataset
    from .scan.hybrid import hybrid_search
    from .scan.namespace import connect

# Entry points are imported lazily so that `import lance_duck` stays cheap.
__getattr__ = lazy_attributes(__name__, {
    "dataset": "._open",
    "LanceDataset": ".scan.dataset",
    "sql": ".integrations.duckdb",
    "register": ".integrations.duckdb",
    "changes": ".changefeed",
    "hybrid_search": ".scan.hybrid",
    "connect": ".scan.namespace",
})


def sample_path() -> str:
    """The path of the sample table shipped inside the package (an order table with 6 versions and tags).

    It is where the docstring examples and ``lance-duck demo`` read from, so they run from any directory
    after ``pip install lance-duck``.

    Returns:
        The absolute path of ``lance_duck/_sample/sample.lance``, as a string.

    Examples:
        >>> import lance_duck
        >>> lance_duck.dataset(lance_duck.sample_path()).count_rows()
        1902
    """
    from ._sample import TABLE

    return str(TABLE)

__all__ = [
    "__version__",
    "dataset",
    "LanceDataset",
    "sql",
    "register",
    "changes",
    "hybrid_search",
    "connect",
    "configure",
    "clear_caches",
    "sample_path",
    "LanceDuckError",
    "NotFoundError",
    "VersionNotFoundError",
    "TagNotFoundError",
    "BranchNotFoundError",
    "UnsupportedFeatureError",
    "CorruptFileError",
    "CredentialsError",
    "InvalidArgumentError",
    "RowIndexError",
    "ObjectStoreError",
]
