"""Per-process caches behind :func:`lance_duck.sql`: opened tables, rewritten statements, registrations.

A ``lance_duck.sql`` call parses its text, resolves each Lance reference to a version, opens it and
registers it on the connection. Repeated calls skip most of that:

* **Opened tables** (:data:`TABLES_KEPT`, LRU): one dataset per table version, keyed by the uri,
  storage options, branch, version and the identity of the manifest it was read from (a local
  manifest's size, mtime and inode; an object store's manifest path and listed size, as the io layer's
  manifest cache).
  A reference to the latest version still lists ``_versions/`` on every call (as pylance's
  ``checkout_latest`` does), so a version committed by another writer is seen by the next call;
  a pinned version or a tag costs one ``stat`` (local) or nothing (object store) once cached, a
  tag one small read; ``asof`` and branch references are resolved in full, and the kept dataset is
  reused when its manifest bytes are the ones just read.
  A kept dataset keeps its per-version caches (open data files, index segments) warm.
* **Rewritten statements** (:data:`STATEMENTS_KEPT`, LRU, keyed by the SQL text): the rewrite
  with placeholders where the references' registration names go. Not kept when the text names a
  variable of the caller's scope; a hit re-checks the names that were looked up among the
  caller's variables (none may exist now) and the quoted names probed as table directories.
* **Literal shapes** (:data:`SHAPES_KEPT`, LRU, keyed by the text with its numbers cut out,
  :mod:`.shapes`): a shape's rewrite with marks for its numbers when it reads none of their values,
  so a text differing from an earlier one only in numbers is rewritten without sqlglot
  (:mod:`.statements`).
* **Registrations**: a name already registered on that connection by an earlier call, for the
  very same dataset object, is not registered again. Names encode the uri, version, branch and
  options (and a view's filter), so a relation from an earlier call keeps reading what it read.
* **View registrations**: a filtered view is made and registered per distinct filter (a float
  comparison's or a substring's literal), so the last :data:`VIEWS_REGISTERED` view names registered
  on a connection stay registered and older ones are unregistered (an application's queries would
  otherwise register without end); a relation made over a view more than that many views ago reports
  DuckDB's "table does not exist", and the same query made again registers it again.
* **Bound statements** (:data:`BOUND_KEPT`, LRU, keyed by a weak reference to the connection and the
  literal shape of the text): the rewritten texts of reading statements (a SELECT or set operation)
  that DuckDB bound into a relation on that connection. A text of the same shape names the same
  registrations (a name encodes the version it reads) and binds alike, so that call returns a
  relation made only when first needed, whose ``fetchall()`` executes the text directly (DuckDB's
  ``execute``, no relation bound first: a repeated point lookup's ``lance_duck.sql(...).fetchall()``
  1.56 -> ~1.31 ms on the 2-vCPU VM). An error that only a number causes (an integer too large for
  its type) is raised by the first method that runs the statement instead of by the call.

``clear()`` empties the kept tables, statements, shapes, views and bound statements (tests, or a process that
wants its memory back).
"""
from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable

import duckdb

from ...errors import NotFoundError
from ... import _state
from ..._state import ByteLRU
from ...io.fs import FileIO, open_io
from ...scan.dataset import LanceDataset, same_manifest
from ...table.pinned import pinned_manifest
from . import source
from .shapes import literal_shape

#: Opened table versions kept by default (each holds up to 32 open data files and its index caches);
#: ``lance_duck.configure(sql_table_cache_entries=...)``.
TABLES_KEPT = _state.CACHES["sql_tables"][1]
#: Rewritten SQL texts kept by default (``sql_statement_cache_entries``).
STATEMENTS_KEPT = _state.CACHES["sql_statements"][1]
#: Literal shapes kept by default (``sql_shape_cache_entries``).
SHAPES_KEPT = _state.CACHES["sql_shapes"][1]
#: Filtered views (``lance_duck.sql``'s substring / comparison views) kept by default, over all
#: tables (``sql_view_cache_entries``).
VIEWS_KEPT = _state.CACHES["sql_views"][1]

_tables: ByteLRU[tuple[Any, ...], LanceDataset] = _state.cache("sql_tables")
_ios: ByteLRU[tuple[Any, ...], tuple[FileIO, str]] = _state.cache("sql_stores")
statements: ByteLRU[str, Any] = _state.cache("sql_statements")
shapes: ByteLRU[str, Any] = _state.cache("sql_shapes")
views: ByteLRU[str, tuple[LanceDataset, LanceDataset]] = _state.cache("sql_views")
_registered: "weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, dict[str, Any]]" = weakref.WeakKeyDictionary()
_registered_lock = threading.Lock()
#: View names that stay registered per connection (older ones are unregistered).
VIEWS_REGISTERED = 64
#: per connection and kind of short-lived registration (``forget_older``): its names, oldest first
_recent: "weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, dict[str, OrderedDict[str, None]]]" = \
    weakref.WeakKeyDictionary()
#: Bound statements kept by default, over all connections (``sql_bound_cache_entries``).
BOUND_KEPT = _state.CACHES["sql_bound"][1]
_bound: ByteLRU[tuple[Any, str], bool] = _state.cache("sql_bound")

Options = tuple[tuple[str, str], ...] | None


def clear() -> None:
    """Forget every kept table, statement, literal shape, view and bound statement (registrations stay
    with their connections)."""
    for c in (_tables, _ios, statements, shapes, views, _bound):
        c.clear()


def _io(uri: str, options: Options) -> tuple[FileIO, str]:
    opts = dict(options) if options is not None else None
    # a relative local path names another table after a chdir: keyed as the absolute path it is now
    key = (uri if "://" in uri else os.path.abspath(os.path.expanduser(uri)), options)
    got = _ios.get(key)
    return got if got is not None else _ios.put(key, open_io(uri, opts))


def table(uri: str, version: Any, asof: Any, branch: str | None, options: Options,
          open_version: Callable[[Any], LanceDataset], wrap: Callable[[LanceDataset], LanceDataset]) -> LanceDataset:
    """The dataset a reference names, from the cache when its manifest is the one kept.

    ``open_version(v)`` opens the reference at version ``v`` (None: as the reference says) and
    raises the reference's own errors; ``wrap`` makes the object kept (the registered kind).
    """
    try:
        io, root = _io(uri, options)
        found = pinned_manifest(io, root, version, asof, branch)
    except Exception:  # noqa: BLE001 - a missing table, tag or bad option: the full open says it
        found = None
    if found is not None:
        v, ident = found
        key = (uri, options, branch, v, ident)
        got = _tables.get(key)
        if got is not None:
            return got
        try:
            ds = open_version(v)
        except (NotFoundError, FileNotFoundError):
            if version is not None:
                raise
            ds = None   # the latest listed was cleaned up since (a newer one exists): open afresh
        if ds is not None:
            if ds.version == v:
                return _tables.put(key, wrap(ds))
            return wrap(ds)
    ds = open_version(None)                      # opened in full: kept while its manifest is the same
    full_key = (uri, options, ds.branch, ds.version, "full")
    got = _tables.get(full_key)
    if got is not None and same_manifest(got, ds):
        return got
    return _tables.put(full_key, wrap(ds))


def register(con: duckdb.DuckDBPyConnection, name: str, obj: Any) -> None:
    """``con.register(name, obj)`` unless this very object is registered there under that name."""
    with _registered_lock:
        names = _registered.setdefault(con, {})
        if names.get(name) is obj:
            return
    if isinstance(obj, LanceDataset):
        source.register(con, name, obj)     # with its row count, for DuckDB's join order
    else:
        con.register(name, obj)
    with _registered_lock:
        names[name] = obj


def forget_older(con: duckdb.DuckDBPyConnection, name: str, kind: str, keep: int) -> None:
    """Note ``name`` as the newest registration of ``kind`` on ``con`` and unregister those of that
    kind before the newest ``keep`` (registrations made per call, which would otherwise pile up)."""
    with _registered_lock:
        names = _recent.setdefault(con, {}).setdefault(kind, OrderedDict())
        names[name] = None
        names.move_to_end(name)
        old = [names.popitem(last=False)[0] for _ in range(max(0, len(names) - keep))]
        kept = _registered.get(con, {})
        for n in old:
            kept.pop(n, None)
    for n in old:
        with contextlib.suppress(duckdb.Error):
            con.unregister(n)


def register_view(con: duckdb.DuckDBPyConnection, name: str, obj: Any) -> None:
    """:func:`register` a filtered view; the views registered on ``con`` before the last
    :data:`VIEWS_REGISTERED` are unregistered."""
    register(con, name, obj)
    forget_older(con, name, "views", VIEWS_REGISTERED)


def _bound_key(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[Any, str]:
    shape = literal_shape(sql)
    return weakref.ref(con), sql if shape is None else shape.key


def bound_before(con: duckdb.DuckDBPyConnection, sql: str) -> bool:
    """Whether :func:`note_bound` noted ``sql``, or a text of its literal shape, on ``con`` (and it is
    still kept). A weak reference to a connection that is gone equals no other: a new connection
    never inherits its texts."""
    return _bound.get(_bound_key(con, sql)) is not None


def note_bound(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Note that DuckDB bound the reading statement ``sql`` into a relation on ``con``."""
    _bound.put(_bound_key(con, sql), True)


__all__ = ["BOUND_KEPT", "SHAPES_KEPT", "STATEMENTS_KEPT", "TABLES_KEPT", "VIEWS_KEPT", "VIEWS_REGISTERED", "bound_before", "clear",
           "forget_older", "note_bound", "register", "register_view", "shapes", "statements",
           "table", "views"]
