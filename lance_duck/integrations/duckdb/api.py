"""DuckDB front-end: Lance table references and time travel inside SQL text.

Python cannot define DuckDB table functions, so :func:`sql` rewrites the query with sqlglot
(duckdb dialect) before DuckDB sees it.  These references are recognised:

* ``FROM 'path.lance'`` (any table name ending in ``.lance``, quoted either way), and a quoted
  path to a local directory that holds ``_versions/`` (a Lance table not named ``*.lance``)
* ``... AT (VERSION => 3)``, ``AT (VERSION => 'tag')``, ``AT (VERSION => 'branch:3')``,
  ``AT (TIMESTAMP => '2024-01-01 00:00:00')``
* ``... VERSION AS OF 3``, ``... TIMESTAMP AS OF '...'``
* ``FROM lance_scan('uri', version => ..., asof => ..., branch => ..., storage_options => {...})``
* ``FROM lance_changes('uri', from => 3, to => 'tag', columns => [...], filter => '...')``: the change
  feed of :func:`lance_duck.changes` (``changes.py``)
* ``DESCRIBE``, ``SHOW``, ``SUMMARIZE`` of a reference, ``EXPLAIN [ANALYZE]`` of a query
* a table name that is a Python variable in the caller's scope (a lance_duck dataset, a
  DataFrame, an Arrow table...), as ``duckdb.sql`` finds them

Each reference is opened once as a :class:`~lance_duck.scan.dataset.LanceDataset` and registered
on the connection under a name derived from the version it resolved to (plus branch and storage
options), so a relation keeps reading that version after later calls, and one query can read
the same table at two versions.  ``SELECT count(*) FROM <lance ref>`` (nothing else) is answered
from metadata.  SQL that sqlglot cannot parse, or that holds nothing to rewrite, goes to DuckDB
unchanged, so DuckDB's own error is what the user sees.

:func:`sql` returns a :class:`LanceRelation`: a DuckDB relation whose methods raise
lance_duck's own error (type and message) when a Lance scan fails while DuckDB pulls batches,
instead of DuckDB's ``InvalidInputException`` wrapping a Python traceback.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
from typing import Any, Iterator, cast

import duckdb
import pyarrow as pa
import pyarrow.dataset as pads
from sqlglot import exp

from ...errors import InvalidArgumentError
from ...predicate.compiled import compile_duckdb_sql
from ...scan.dataset import LanceDataset
from ...scan.duckdb_source import read_to_the_end
from ...scan.params import AsOf, StorageOptions, Version
from .scan_errors import watched
from . import cache, source
from .fts import expand_searches
from .count import count_filter
from . import namespaces
from .search import VectorSearchCall, Values
from .pushdown import Term, arrow_filter, comparison_filter
from .entry import _check_call_args, _default_connection
from .relation import LanceRelation, _lance_errors
from .rewrite import _PREFIX, LanceRef, Lookup, Rewritten, _stem, _version_value, whole_name
from .statements import template as _template


def _pinned_name(ref: LanceRef, ds: LanceDataset) -> str:
    """A registration name that changes whenever what the reference reads changes."""
    key = (ref.uri, ds.version, ds.branch, ref.storage_options, ref.hidden, ref.columns, ref.filter, ref.batch_size)
    digest = hashlib.sha1(repr(key).encode()).hexdigest()[:12]
    stem = re.sub(r"\W", "_", _stem(ref.uri))[:40]
    return f"__lance_{stem}_v{ds.version}_{digest}"


def _registrable(obj: Any) -> bool:
    """Objects DuckDB reads as tables (what ``duckdb.sql`` finds in the caller's scope)."""
    if isinstance(obj, (LanceRelation, duckdb.DuckDBPyRelation, pa.Table, pa.RecordBatch,
                        pa.RecordBatchReader, pads.Dataset, pads.Scanner)):
        return True
    module = type(obj).__module__.split(".")[0]
    return module in ("pandas", "polars") and type(obj).__name__ in ("DataFrame", "LazyFrame")


def _catalog_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.sql("SELECT lower(table_name) FROM duckdb_tables() UNION ALL "
                   "SELECT lower(view_name) FROM duckdb_views()").fetchall()
    return {r[0] for r in rows}


def _frame_values(frame: Any) -> Values:
    """A variable of the caller's scope by name (a search's vector), or None."""
    def value(name: str) -> Any:
        return frame.f_locals.get(name, frame.f_globals.get(name)) if frame is not None else None
    return value


def _frame_lookup(frame: Any, con: duckdb.DuckDBPyConnection) -> Lookup:
    """Finds a table name among the caller's variables, as DuckDB's replacement scans do:
    a table or view of that name on the connection wins."""
    catalog: list[set[str]] = []

    def lookup(name: str) -> Any:
        if frame is None:
            return None
        obj = frame.f_locals.get(name, frame.f_globals.get(name))
        if obj is None or not _registrable(obj):
            return None
        if not catalog:
            catalog.append(_catalog_names(con))
        return None if name.lower() in catalog[0] else obj
    return lookup


#: Caller's variables stay registered (and alive) for this many later registrations per connection;
#: a relation over an older one then reports DuckDB's "table does not exist".
KEPT_VARIABLES = 64


def _forget_old_variables(con: duckdb.DuckDBPyConnection, name: str) -> None:
    cache.forget_older(con, name, "variables", KEPT_VARIABLES)


def run_sql(query: str, connection: duckdb.DuckDBPyConnection | None, storage_options: StorageOptions,
            frame: Any) -> LanceRelation | None:
    """:func:`lance_duck.sql` (:mod:`.entry`) past its metadata-only count: ``frame`` is the caller's,
    whose variables name tables."""
    _check_call_args("sql", connection, storage_options)
    if not isinstance(query, str):
        raise InvalidArgumentError(f"sql: query must be a str of SQL, not {query!r}")
    con = connection if connection is not None else _default_connection()
    resolved = namespaces.resolve(query, con)      # ATTACH ... (TYPE LANCE), ns.main.t
    if isinstance(resolved, namespaces.Handled):
        return None if resolved.relation is None else LanceRelation(resolved.relation)
    query = expand_searches(resolved, con)
    try:
        template = _template(query, _frame_lookup(frame, con), _frame_values(frame))
    finally:
        del frame
    opened: dict[str, LanceDataset] = {}
    names = []
    default_opts = tuple(sorted((str(k), str(v)) for k, v in storage_options.items())) if storage_options else None
    for ref in template.refs:
        if default_opts is not None and ref.storage_options is None:
            ref = dataclasses.replace(ref, storage_options=default_opts)
        ds = ref.cached()
        names.append(_pinned_name(ref, ds))
        opened[names[-1]] = ds
    rw = template.named(names)
    if rw.count_ref is not None:
        n = _count(next(iter(opened.values())), rw, con)
        if n is not None:
            alias = (rw.count_alias or "").replace('"', '""')
            count = f'SELECT CAST({int(n)} AS BIGINT) AS "{alias}"'
            if connection is None:      # the default connection: DuckDB makes the relation when asked for it
                return LanceRelation._known(lambda: con.sql(count), [(int(n),)])
            rel = con.sql(count)            # made at once on the caller's connection, rows known
            return LanceRelation._known(lambda: rel, [(int(n),)])
    text = rw.sql
    elided: dict[str, str] = {}
    for name, (old, terms) in rw.views.items():
        view = _view(name, opened[old], terms)
        if view is None:          # no term applies to the table's columns: the query reads the table
            text = text.replace(f'"{name}"', f'"{old}"')     # (generated names, quoted identifiers)
            elided[name] = old
            continue
        opened[name] = view
        del opened[old]
    for name, old in rw.whole.items():
        base = elided.get(old, old)
        if base != old:           # over an elided view: named for the table itself
            text = text.replace(f'"{name}"', f'"{whole_name(base)}"')
            name = whole_name(base)
        opened[name] = _whole(name, opened.pop(base))
    # a view, and the read-to-the-end dataset over one, are made per distinct filter: registered for
    # a while (cache.register_view); the rest per table version
    per_filter = set(rw.views) | {w for w, old in rw.whole.items() if old in rw.views and old not in elided}
    for name, ds in opened.items():
        if name in per_filter:
            cache.register_view(con, name, watched(ds))
        else:
            cache.register(con, name, watched(ds))
    for name, obj in rw.objects.items():
        if isinstance(obj, VectorSearchCall):
            with _lance_errors():
                obj = obj.run()
        if isinstance(obj, LanceDataset):
            source.register(con, name, watched(obj))
            _forget_old_variables(con, name)
            continue
        if isinstance(obj, LanceRelation):
            obj = obj.relation
        con.register(name, obj)
        _forget_old_variables(con, name)
    searches = [o for o in template.rewritten.objects.values() if isinstance(o, VectorSearchCall)]
    rerunnable = rw.query and not rw.objects and not searches
    if rerunnable and cache.bound_before(con, text):
        return LanceRelation._deferred(lambda: cast("duckdb.DuckDBPyRelation", _relation(con, text)),
                                       lambda: _executed(con, text))
    made = _relation(con, text)
    if made is not None and rerunnable:
        cache.note_bound(con, text)
    if made is None:
        return None
    rel = made
    if searches and _is_explain(query):
        # DuckDB sees the search's rows as an Arrow scan: say how lance_duck found them
        lines = [con.sql("SELECT ?::VARCHAR AS explain_key, ?::VARCHAR AS explain_value",
                         params=["lance_vector_search", s.explain()]) for s in searches]
        for extra in reversed(lines):
            rel = extra.union(rel)
    return LanceRelation(rel)


def _relation(con: duckdb.DuckDBPyConnection, text: str) -> duckdb.DuckDBPyRelation | None:
    """DuckDB's relation for the rewritten ``text`` (None: a statement without a result, run at once)."""
    with _lance_errors(), _not_lance_directories():
        return con.sql(text)


def _executed(con: duckdb.DuckDBPyConnection, text: str) -> list[tuple[Any, ...]]:
    """The rows of the reading statement ``text``, executed directly (no relation bound first)."""
    with _not_lance_directories():
        return con.execute(text).fetchall()


_MISSING_TABLE = re.compile(r"Table with name (.+?) does not exist")


@contextlib.contextmanager
def _not_lance_directories() -> Iterator[None]:
    """DuckDB's "Table with name X does not exist" for a quoted X that is a local directory without
    manifests: say it is not a Lance table, as ``lance_scan`` does, instead of suggesting catalog names."""
    try:
        yield
    except duckdb.CatalogException as e:
        m = _MISSING_TABLE.search(str(e))
        if m is None or not os.path.isdir(m.group(1)):
            raise
        path = os.path.abspath(m.group(1))
        raise FileNotFoundError(
            f"'{m.group(1)}': Not a Lance table: no manifests in {os.path.join(path, '_versions')} (a quoted "
            "name is read as a Lance table when it ends in .lance or is a directory holding _versions/)") from None
def _is_explain(query: str) -> bool:
    m = _PREFIX.match(query)
    return m is not None and m.group(1).lower().startswith("explain")


def _count(ds: LanceDataset, rw: Rewritten, con: duckdb.DuckDBPyConnection) -> int | None:
    """``SELECT count(*) FROM <ref> [WHERE ...]`` counted by lance_duck (metadata, exact indices, or
    the filter's columns: :mod:`.count`), or None: DuckDB runs the query (``con``: the connection it
    runs on, whose ``default_collation`` string comparisons follow)."""
    if rw.count_where is None:
        return ds.count_rows()
    collation = ""
    if any(lit.is_string for lit in rw.count_where.find_all(exp.Literal)):
        rows = con.sql("SELECT current_setting('default_collation')").fetchall()
        collation = str(rows[0][0] or "") if rows else ""
    flt = count_filter(rw.count_where, ds.schema, set(rw.count_qualifiers), collation)
    if flt is None:
        return None
    with _lance_errors():
        return ds.count_rows(filter=flt)


def _view(name: str, base: LanceDataset, terms: list[Term]) -> LanceDataset | None:
    """The filtered view ``name`` of ``base`` (see :mod:`.pushdown`), kept while ``base`` is; None
    when no term applies to ``base``'s columns (``id = 7`` on an integer column: DuckDB pushes that
    itself), so that a query differing only in such a literal registers nothing new."""
    kept = cache.views.get(name)
    if kept is not None and kept[0] is base:
        return kept[1]
    flt = arrow_filter(base.schema, terms)
    cmp = comparison_filter(base.schema, terms)   # DuckDB's meaning: every NaN above every number
    if flt is None and cmp is None:
        return None
    ds = base if flt is None else base.filter(flt)
    ds = watched(ds if cmp is None else ds.filter(compile_duckdb_sql(cmp, ds.schema)))
    cache.views.put(name, (base, ds))
    return ds


def _whole(name: str, base: LanceDataset) -> LanceDataset:
    """``base`` for a query that reads it to the end (:func:`.rewrite.reads_whole`): its DuckDB
    streams take full-size tasks right after the first one; kept while ``base`` is."""
    kept = cache.views.get(name)
    if kept is not None and kept[0] is base:
        return kept[1]
    ds = watched(read_to_the_end(base))
    cache.views.put(name, (base, ds))
    return ds


def register(connection: duckdb.DuckDBPyConnection, name: str, uri_or_dataset: str | os.PathLike[str] | LanceDataset,
             version: Version = None, asof: AsOf = None, *, branch: str | None = None,
             storage_options: StorageOptions = None) -> LanceDataset:
    """Register a Lance table (a uri or an open dataset) on ``connection`` as view ``name``.

    Args:
        connection: a DuckDB connection.
        name: the view name; ``register(con, 'path/t.lance', 'path/t.lance')`` makes
            ``FROM 'path/t.lance'`` work as-is.
        uri_or_dataset: a table uri (local path or fsspec URL) or a dataset from
            :func:`lance_duck.dataset`.
        version: a version number or tag name (default: the latest).
        asof: a datetime or ISO string: the latest version committed before it (uri only).
        branch: a branch name (default: main).
        storage_options: object-store options, as for :func:`lance_duck.dataset` (uri only).

    Returns:
        The registered :class:`LanceDataset`, pinned to the version it resolved to.

    Raises:
        VersionNotFoundError, TagNotFoundError, BranchNotFoundError: no such version, tag or branch.
        InvalidArgumentError: ``asof`` given with an open dataset.

    Examples:
        >>> import duckdb, lance_duck
        >>> from lance_duck.integrations.duckdb import register
        >>> con = duckdb.connect()
        >>> register(con, "orders", lance_duck.sample_path(), version=1).version
        1
        >>> con.sql("select count(*) from orders").fetchall()
        [(2000,)]
    """
    _check_call_args("register", connection, storage_options, required=True)
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"register: name must be a non-empty str, not {name!r}")
    if isinstance(uri_or_dataset, (str, os.PathLike)):   # (any object with __fspath__)
        opts = tuple(sorted((str(k), str(v)) for k, v in storage_options.items())) if storage_options else None
        ref_version, ref_branch = _version_value(version) if version is not None else (None, None)
        ds = LanceRef(str(uri_or_dataset), ref_version, None if asof is None else str(asof),
                      branch or ref_branch, opts).open()
    elif not isinstance(uri_or_dataset, LanceDataset):
        raise InvalidArgumentError(f"register: uri_or_dataset must be a path, URI or LanceDataset, not {uri_or_dataset!r}")
    else:
        ds = uri_or_dataset
        if version is not None or branch is not None:
            ds = ds.checkout_version((branch, version) if branch is not None else version)
        if asof is not None:
            raise InvalidArgumentError("asof applies to a uri; open the dataset with dataset(uri, asof=...)")
    source.register(connection, name, ds)
    return ds
