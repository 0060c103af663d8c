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

from .search import _vector

if TYPE_CHECKING:
    import duckdb

    from ...predicate import CompiledFilter
    from ...scan.dataset import LanceDataset

FTS = "lance_fts"
HYBRID = "lance_hybrid_search"
_FTS_KEYS = {"k", "prefilter", "version", "asof", "timestamp", "branch", "storage_options"}
_HYBRID_KEYS = _FTS_KEYS | {"alpha", "oversample_factor", "nprobs", "refine_factor", "use_index"}


def _literal(node: exp.Expression, what: str, call: str = FTS) -> Any:
    if isinstance(node, exp.Struct):                 # storage_options => {'key': 'value', ...}
        out = {}
        for p in node.expressions:
            if not isinstance(p, (exp.PropertyEQ, exp.EQ, exp.Slice)):
                raise InvalidArgumentError(f"{call}(): {what}: cannot read {p.sql('duckdb')}")
            key = p.this.name if isinstance(p.this, (exp.Identifier, exp.Column)) else _literal(p.this, what, call)
            out[str(key)] = str(_literal(p.expression, what, call))
        return out
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        return node.this if node.is_string else (float(node.this) if "." in node.this else int(node.this))
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return -_literal(node.this, what, call)
    if isinstance(node, exp.Null):
        return None
    raise InvalidArgumentError(f"{call}(): {what} must be a literal, got {node.sql('duckdb')}")


def _call_args(fn: exp.Anonymous, vector_at: int | None = None) -> tuple[list[Any], dict[str, Any]]:
    """The positional and named arguments of a call, as Python values (the vector at position
    ``vector_at`` as a list of floats)."""
    call = HYBRID if vector_at is not None else FTS
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
                raise InvalidArgumentError(f"{call}(): {key} given twice")
            kw[key] = _literal(a.expression, key, call)
        else:
            if kw:
                raise InvalidArgumentError(f"{call}(): positional argument after a named one")
            pos.append(_literal(a, f"argument {len(pos) + 1}", call))
    return pos, kw


def _checked_args(fn: exp.Anonymous, call: str, signature: str, strings: tuple[str | None, ...],
                  keys: set[str]) -> tuple[list[Any], dict[str, Any]]:
    """The arguments of a ``call`` (``FTS`` or ``HYBRID``), checked: as many positional ones as
    ``strings`` names (a name: that argument must be a string; None: not checked here), only named
    ones in ``keys``, ``k`` a positive integer and ``prefilter`` a boolean."""
    pos, kw = _call_args(fn, vector_at=2 if call == HYBRID else None)
    if len(pos) != len(strings):
        raise InvalidArgumentError(f"{call}({signature}): expected {len(strings)} positional arguments, "
                                   f"got {len(pos)}")
    unknown = set(kw) - keys
    if unknown:
        raise InvalidArgumentError(f"{call}(): unknown argument(s) {sorted(unknown)}; expected "
                                   f"{sorted(keys - {'timestamp'})}")
    for name, v in zip(strings, pos):
        if name is not None and not isinstance(v, str):
            raise InvalidArgumentError(f"{call}(): {name} must be a string, got {v!r}")
    k = kw.get("k", 10)
    if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
        raise InvalidArgumentError(f"{call}(): k must be a positive integer, got {k!r}")
    if not isinstance(kw.get("prefilter", False), bool):
        raise InvalidArgumentError(f"{call}(): prefilter must be true or false, got {kw['prefilter']!r}")
    return pos, kw


def _open(uri: str, kw: dict[str, Any]) -> LanceDataset:
    """The dataset a call reads: ``uri`` at the call's ``version`` / ``asof`` / ``branch``."""
    asof = kw.get("asof", kw.get("timestamp"))
    return dataset(uri, version=kw.get("version"), asof=None if asof is None else str(asof),
                   branch=kw.get("branch"), storage_options=kw.get("storage_options"))


def _prefilter(call: str, kw: dict[str, Any], where: exp.Expression | None, ds: LanceDataset,
               qualifiers: set[str]) -> CompiledFilter | None:
    """The filter a call with ``prefilter => true`` searches within: its statement's WHERE (None
    without either); refused when that WHERE cannot be applied before the search."""
    if not kw.get("prefilter", False) or where is None:
        return None
    flt = count_filter(where, ds.schema, qualifiers)
    if flt is None:
        raise UnsupportedFeatureError(f"{call}(..., prefilter => true): cannot apply this WHERE before "
                                      f"the search: {where.this.sql('duckdb')}")
    return flt


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
    pos, kw = _checked_args(fn, FTS, "uri, column, query, k => ..., prefilter => ...",
                            ("uri", "column", "query"), _FTS_KEYS)
    uri, column, text = pos
    ds = _open(uri, kw)
    prefilter = kw.get("prefilter", False)
    table = ds.to_table(full_text_query={"query": text, "columns": [column]}, limit=kw.get("k", 10),
                        filter=_prefilter(FTS, kw, where, ds, qualifiers), prefilter=prefilter)
    return table, ds.version


def run_hybrid_call(fn: exp.Anonymous, where: exp.Expression | None, qualifiers: set[str]) -> tuple[pa.Table, int]:
    """The Arrow result of one ``lance_hybrid_search(...)`` call and the version it read."""
    from ...scan.hybrid import hybrid_search
    pos, kw = _checked_args(fn, HYBRID, "uri, vector_column, vector, text_column, query, ...",
                            ("uri", "vector_column", None, "text_column", "query"), _HYBRID_KEYS)
    uri, vcol, vec, tcol, text = pos
    ds = _open(uri, kw)
    table = hybrid_search(ds, vcol, vec, tcol, text, k=kw.get("k", 10), alpha=kw.get("alpha", 0.5),
                          oversample_factor=kw.get("oversample_factor", 4), nprobs=kw.get("nprobs"),
                          refine_factor=kw.get("refine_factor"), prefilter=kw.get("prefilter", False),
                          use_index=kw.get("use_index", True),
                          filter=_prefilter(HYBRID, kw, where, ds, qualifiers))
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
