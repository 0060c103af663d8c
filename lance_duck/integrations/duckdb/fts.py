"""Search table functions in :func:`lance_duck.sql`, named as DuckDB's Lance extension names them
(``lance_vector_search`` is :mod:`.search`'s):

``lance_fts(uri, column, query, k => 10, prefilter => false, version => ..., asof => ..., branch => ...,
storage_options => {...})``
returns the table's columns plus ``_score`` for the ``k`` best rows of a full-text match query on
``column`` (BM25 as pylance). With ``prefilter => true`` the statement's ``WHERE`` (when the call
is its only table) picks the rows searched; otherwise ``WHERE`` filters the ``k`` rows found.

``lance_hybrid_search(uri, vector_column, vector, text_column, query, k => 10, alpha => 0.5,
oversample_factor => 4, nprobs =>, refine_factor =>, prefilter =>, use_index =>, version =>, asof =>,
branch =>)`` returns :func:`lance_duck.hybrid_search`'s rows (columns, ``_hybrid_score``,
``_distance``, ``_score``).

Each call is run before DuckDB sees the statement: the result is registered on the connection
under a name derived from the call and the version it resolved to, and the call is replaced by
that name.
"""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import sqlglot
from sqlglot import exp

from ...errors import InvalidArgumentError, UnsupportedFeatureError
from ...scan.dataset import dataset
from . import cache
from .count import count_filter

if TYPE_CHECKING:
    import duckdb
from .search import _vector

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

FTS = "lance_fts"
HYBRID = "lance_hybrid_search"
_FTS_KEYS = {"k", "prefilter", "version", "asof", "timestamp", "branch", "storage_options"}
_HYBRID_KEYS = _FTS_KEYS | {"alpha", "oversample_factor", "nprobs", "refine_factor", "use_index"}


def _literal(node: exp.Expression, what: str) -> Any:
    if isinstance(node, exp.Struct):                 # storage_options => {'key': 'value', ...}
        out = {}
        for p in node.expressions:
            if not isinstance(p, (exp.PropertyEQ, exp.EQ, exp.Slice)):
                raise InvalidArgumentError(f"{what}: cannot read {p.sql('duckdb')}")
            key = p.this.name if isinstance(p.this, (exp.Identifier, exp.Column)) else _literal(p.this, what)
            out[str(key)] = str(_literal(p.expression, what))
        return out
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        return node.this if node.is_string else (float(node.this) if "." in node.this else int(node.this))
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return -_literal(node.this, what)
    if isinstance(node, exp.Null):
        return None
    raise InvalidArgumentError(f"{FTS}(): {what} must be a literal, got {node.sql('duckdb')}")


def _call_args(fn: exp.Anonymous, vector_at: int | None = None) -> tuple[list[Any], dict[str, Any]]:
    pos: list[Any] = []
    kw: dict[str, Any] = {}
    for a in fn.expressions:
        if vector_at is not None and len(pos) == vector_at and not kw and \
                not isinstance(a, (exp.Kwarg, exp.PropertyEQ)):
            pos.append(_vector(a, None))
            continue
        if isinstance(a, (exp.Kwarg, exp.PropertyEQ)):
            key = a.this.name.lower()
            if key in kw:
                raise InvalidArgumentError(f"{FTS}(): {key} given twice")
            kw[key] = _literal(a.expression, key)
        else:
            if kw:
                raise InvalidArgumentError(f"{FTS}(): positional argument after a named one")
            pos.append(_literal(a, f"argument {len(pos) + 1}"))
    return pos, kw


def _where_of(table: exp.Table) -> exp.Expression | None:
    """The WHERE of the SELECT whose only table is ``table`` (None: no WHERE); refuses others."""
    select = table.find_ancestor(exp.Select)
    if select is None or select.args.get("joins") or select.args.get("from_") is None \
            or select.args["from_"].this is not table:
        raise UnsupportedFeatureError(f"{FTS}(..., prefilter => true) needs the call to be the only table "
                                      "of its SELECT (its WHERE is the prefilter)")
    return select.args.get("where")


def run_fts_call(fn: exp.Anonymous, where: exp.Expression | None, qualifiers: set[str]) -> tuple[pa.Table, int]:
    """The Arrow result of one ``lance_fts(...)`` call and the version it read."""
    pos, kw = _call_args(fn)
    if len(pos) != 3:
        raise InvalidArgumentError(f"{FTS}(uri, column, query, k => ..., prefilter => ...): "
                                   f"expected 3 positional arguments, got {len(pos)}")
    unknown = set(kw) - _FTS_KEYS
    if unknown:
        raise InvalidArgumentError(f"{FTS}(): unknown argument(s) {sorted(unknown)}; expected "
                                   f"{sorted(_FTS_KEYS - {'timestamp'})}")
    uri, column, text = pos
    for name, v in (("uri", uri), ("column", column), ("query", text)):
        if not isinstance(v, str):
            raise InvalidArgumentError(f"{FTS}(): {name} must be a string, got {v!r}")
    k = kw.get("k", 10)
    if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
        raise InvalidArgumentError(f"{FTS}(): k must be a positive integer, got {k!r}")
    prefilter = kw.get("prefilter", False)
    if not isinstance(prefilter, bool):
        raise InvalidArgumentError(f"{FTS}(): prefilter must be true or false, got {prefilter!r}")
    asof = kw.get("asof", kw.get("timestamp"))
    ds = dataset(uri, version=kw.get("version"), asof=None if asof is None else str(asof),
                 branch=kw.get("branch"), storage_options=kw.get("storage_options"))
    flt = None
    if prefilter and where is not None:
        flt = count_filter(where, ds.schema, qualifiers)
        if flt is None:
            raise UnsupportedFeatureError(f"{FTS}(..., prefilter => true): cannot apply this WHERE before "
                                          f"the search: {where.this.sql('duckdb')}")
    table = ds.to_table(full_text_query={"query": text, "columns": [column]}, limit=k, filter=flt,
                        prefilter=prefilter)
    return table, ds.version


def run_hybrid_call(fn: exp.Anonymous, where: exp.Expression | None, qualifiers: set[str]) -> tuple[pa.Table, int]:
    """The Arrow result of one ``lance_hybrid_search(...)`` call and the version it read."""
    from ...scan.hybrid import hybrid_search
    pos, kw = _call_args(fn, vector_at=2)
    if len(pos) != 5:
        raise InvalidArgumentError(f"{HYBRID}(uri, vector_column, vector, text_column, query, ...): "
                                   f"expected 5 positional arguments, got {len(pos)}")
    unknown = set(kw) - _HYBRID_KEYS
    if unknown:
        raise InvalidArgumentError(f"{HYBRID}(): unknown argument(s) {sorted(unknown)}; expected "
                                   f"{sorted(_HYBRID_KEYS - {'timestamp'})}")
    uri, vcol, vec, tcol, text = pos
    asof = kw.get("asof", kw.get("timestamp"))
    ds = dataset(uri, version=kw.get("version"), asof=None if asof is None else str(asof), branch=kw.get("branch"),
                 storage_options=kw.get("storage_options"))
    prefilter = kw.get("prefilter", False)
    flt = None
    if prefilter is True and where is not None:
        flt = count_filter(where, ds.schema, qualifiers)
        if flt is None:
            raise UnsupportedFeatureError(f"{HYBRID}(..., prefilter => true): cannot apply this WHERE before "
                                          f"the search: {where.this.sql('duckdb')}")
    table = hybrid_search(ds, vcol, vec, tcol, text, k=kw.get("k", 10), alpha=kw.get("alpha", 0.5),
                          oversample_factor=kw.get("oversample_factor", 4), nprobs=kw.get("nprobs"),
                          refine_factor=kw.get("refine_factor"), prefilter=bool(prefilter),
                          use_index=kw.get("use_index", True), filter=flt)
    return table, ds.version


def expand_searches(query: str, connection: duckdb.DuckDBPyConnection) -> str:
    """``query`` with each ``lance_fts(...)`` / ``lance_hybrid_search(...)`` call run and replaced by
    its registered result."""
    if not isinstance(query, str) or (FTS not in query.lower() and HYBRID not in query.lower()):
        return query
    try:
        statements = sqlglot.parse(query, read="duckdb")
    except sqlglot.errors.ParseError:
        return query
    changed = False
    for st in statements:
        if st is None:
            continue
        for table in list(st.find_all(exp.Table)):
            fn = table.this
            kind = str(fn.this).lower() if isinstance(fn, exp.Anonymous) else ""
            if kind not in (FTS, HYBRID):
                continue
            _, kw = _call_args(fn, vector_at=2 if kind == HYBRID else None)
            alias = table.alias_or_name
            where = _where_of(table) if kw.get("prefilter") is True else None
            run = run_fts_call if kind == FTS else run_hybrid_call
            result, version = run(fn, where, {alias, kind} if alias else {kind})
            digest = hashlib.sha1(f"{fn.sql('duckdb')}|{version}|{where}".encode()).hexdigest()[:16]
            name = f"__{kind}_{digest}"
            cache.register(connection, name, result)
            new = exp.Table(this=exp.to_identifier(name, quoted=True))
            new.set("alias", table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(kind)))
            table.replace(new)
            changed = True
    if not changed:
        return query
    return ";\n".join(s.sql(dialect="duckdb") for s in statements if s is not None)
