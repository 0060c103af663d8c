""":func:`lance_duck.sql`, the entry point, and what it needs before any query is parsed.

A process's first query is often ``SELECT count(*) FROM 't.lance'``. That exact text (one quoted
local path ending in ``.lance``, nothing else) is answered here from the table's latest manifest, as
the full path answers it
(:meth:`~lance_duck.scan.dataset.LanceDataset.count_rows`), without importing sqlglot,
``pyarrow.dataset`` (which imports pandas when installed) or the scan layer; on the default
connection, DuckDB itself is imported only when the result is asked for as more than its rows
(``fetchall()`` returns them without it). Everything else, and any reference the manifest cannot
answer alone (an error included), goes to :func:`.api.run_sql`. The count is kept per manifest (in
the ``sql_tables`` cache, keyed by the version and the identity of its manifest file, as the full path
keeps its tables), so a repeated count costs a listing of ``_versions/`` and a ``stat``. The
process-wide default connection lives here too.
"""
from __future__ import annotations

import atexit
import os
import re
import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ... import _state
from ...errors import InvalidArgumentError
from .relation import LanceRelation

if TYPE_CHECKING:
    import duckdb

    from ...scan.params import StorageOptions

_default_lock = threading.Lock()
_default_con: duckdb.DuckDBPyConnection | None = None

# -- the default connection ------------------------------------------------------------------------------------
def _default_connection() -> duckdb.DuckDBPyConnection:
    global _default_con
    with _default_lock:
        if _default_con is None:
            import duckdb
            _default_con = duckdb.connect()
            atexit.register(_close_default_connection)
        return _default_con


def _close_default_connection() -> None:
    global _default_con
    with _default_lock:
        con, _default_con = _default_con, None
    if con is not None:
        con.close()


#: ``SELECT count(*) FROM '<path>.lance'`` and nothing else (a trailing ``;`` allowed), any case.
_PLAIN_COUNT = re.compile(r"\s*select\s+count\s*\(\s*\*\s*\)\s+from\s+'([^']+)'\s*;?\s*", re.IGNORECASE)
_MAYBE_LIMIT = re.compile(r"\blimit\s+\d+\s*(?:offset\s+\d+\s*)?;?\s*$", re.IGNORECASE)
_NAMESPACES = __name__.rsplit(".", 1)[0] + ".namespaces"
# the stores and tables lance_duck.sql keeps (cache.py): a plain count is kept among the tables
_stores = _state.cache("sql_stores")
_tables = _state.cache("sql_tables")


def _manifest_count(query: str, con: duckdb.DuckDBPyConnection | None) -> int | None:
    """The answer of a plain ``SELECT count(*) FROM '<local path>.lance'`` from the latest manifest
    (and deletion files when it does not state their counts), or None: the full path runs it.
    ``con``: the connection it runs on (None: the default one, made or not)."""
    m = _PLAIN_COUNT.fullmatch(query)
    if m is None:
        return None
    path = m.group(1)
    if not path.rstrip("/").lower().endswith(".lance") or "://" in path:
        return None     # other locations: the full path keeps their opened table (object stores)
    namespaces = sys.modules.get(_NAMESPACES)
    con = con if con is not None else _default_con      # (no default connection yet: nothing attached)
    if namespaces is not None and con is not None and namespaces.attached(con):
        return None     # an ATTACHed alias may occur in the text: namespaces resolve it
    if not os.path.isdir(path):
        return None     # FileNotFoundError, named as the full path names it
    try:
        return _latest_count(path)
    except Exception:  # noqa: BLE001 - the full path raises it, naming the reference
        return None


def _latest_count(path: str) -> int | None:
    """Live rows of the latest version of the local table at ``path``, kept per manifest identity."""
    from ...io.fs import open_io
    from ...table.pinned import pinned_manifest
    from ...table.snapshot import open_snapshot
    path = os.path.abspath(path)                        # (a relative path means another table after a chdir)
    store = (path, None)                                # cache.py's key of the table's store
    io, root = _stores.get(store) or _stores.put(store, open_io(path))
    found = pinned_manifest(io, root, None, None, None)
    if found is None:
        return None
    version, ident = found
    key = ("plain count", path, version, ident)
    n = _tables.get(key)
    if n is None:
        snap = open_snapshot(path, version)
        n = snap.count_rows()
        if snap.version == version:
            _tables.put(key, n)
    return int(n)


def sql(query: str, connection: duckdb.DuckDBPyConnection | None = None, *,
        storage_options: StorageOptions = None) -> LanceRelation | None:
    """Run ``query`` on DuckDB with Lance references (and time travel) resolved.

    A Lance reference is a quoted table path (``'t.lance'``, or a local directory holding
    ``_versions/``), optionally with ``AT (VERSION => 3)``, ``AT (VERSION => 'tag')``,
    ``AT (TIMESTAMP => ...)`` or ``VERSION AS OF 3``, or a ``lance_scan('uri', version => ...,
    branch => ..., asof => ...)`` call. Each is opened once, pinned to the version it resolves to,
    and registered on the connection; DuckDB then pushes projections and filters into the scan.
    ``EXPLAIN``, ``DESCRIBE`` / ``SHOW``, ``SUMMARIZE``, ``COPY`` and ``CREATE TABLE ... AS`` work
    over references too; SQL the rewriter cannot parse goes to DuckDB unchanged.

    Args:
        query: DuckDB SQL.
        connection: the DuckDB connection to run on (default: one process-wide connection).
        storage_options: object-store options for every reference that gives none of its own
            (``lance_scan(..., storage_options => {...})`` does), as for :func:`lance_duck.dataset`.

    Returns:
        A lazy :class:`LanceRelation` (``fetchall()``, ``arrow()``, ``df()``, ``.relation`` for
        DuckDB's own relation), or ``None`` for a statement without a result (``CREATE TABLE ...
        AS``, which runs at once). Table names that are variables in the caller's scope
        (lance_duck datasets, DataFrames, Arrow tables) are read like ``duckdb.sql`` reads them; a
        lance_duck dataset goes through lance_duck's scan, with filter pushdown.

    Raises:
        VersionNotFoundError, TagNotFoundError, BranchNotFoundError: the reference names no such
            version, tag or branch (also ``ValueError``s).
        FileNotFoundError: the table does not exist.
        CorruptFileError, UnsupportedFeatureError: raised while DuckDB pulls rows, as themselves
            (not wrapped in a DuckDB exception).
        duckdb.Error: anything DuckDB itself refuses, with DuckDB's message.

    Examples:
        >>> import lance_duck
        >>> sample = lance_duck.sample_path()    # the packaged sample table; any path or URI works
        >>> lance_duck.sql(f"select count(*) from '{sample}' AT (VERSION => 1)").fetchall()
        [(2000,)]
        >>> lance_duck.sql(f"select count(*) from lance_scan('{sample}', version => 'initial_load')").fetchall()
        [(2000,)]
    """
    _check_call_args("sql", connection, storage_options)
    if not isinstance(query, str):
        raise InvalidArgumentError(f"sql: query must be a str of SQL, not {query!r}")
    if storage_options is None:
        n = _manifest_count(query, connection)
        if n is not None:
            count = f'SELECT CAST({int(n)} AS BIGINT) AS "count_star()"'
            if connection is not None:      # made at once (a closed connection fails here), rows known
                rel = connection.sql(count)
                return LanceRelation._known(lambda: rel, [(int(n),)])
            # the default connection (and DuckDB) when more than the rows is asked for
            return LanceRelation._known(lambda: _default_connection().sql(count), [(int(n),)])
        if _MAYBE_LIMIT.search(query) is not None:
            from .limit import plain_limit
            limited = plain_limit(query, connection, _default_con, _default_connection)
            if limited is not None:
                return limited
    from .api import run_sql
    return run_sql(query, connection, storage_options, sys._getframe(1))


def _check_call_args(what: str, connection: Any, storage_options: Any, required: bool = False) -> None:
    """Refuse a connection that is not DuckDB's or storage options that are not a mapping, by name."""
    if connection is not None or required:
        import duckdb
        if not isinstance(connection, duckdb.DuckDBPyConnection):
            raise InvalidArgumentError(f"{what}: connection must be a duckdb.DuckDBPyConnection, not {connection!r}")
    if storage_options is not None and not isinstance(storage_options, Mapping):
        raise InvalidArgumentError(f"{what}: storage_options must be a dict of str -> str, not {storage_options!r}")
