"""``lance_vector_search(uri, column, vector, k => 10, ...)`` in :func:`lance_duck.sql`.

The call is a FROM item; :func:`lance_duck.sql` replaces it with a generated name and registers the
search's rows there (pylance's ``to_table(nearest=...)``: every column and ``_distance``), so the rest
of the query runs in DuckDB. Argument names follow DuckDB's Lance extension (``k``, ``nprobs``,
``refine_factor``, ``prefilter``, ``use_index``), with ``nprobes``, ``metric`` and lance_duck's time
travel (``version``, ``asof``, ``branch``, ``storage_options``) too. The vector is a list literal, a
``FLOAT[n]`` / ``DOUBLE[n]`` cast of one, or a variable of the caller's scope (``$q`` or ``q``).

``WHERE`` conjuncts on the search (not on ``_distance``) are its filter: with ``prefilter => true``
they select the rows searched; otherwise DuckDB applies them to the k rows found, which is pylance's
post-filter.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa
from sqlglot import exp

from ...errors import InvalidArgumentError
from ...predicate.compiled import compile_duckdb_sql
from .count import count_filter

if TYPE_CHECKING:
    from .rewrite import LanceRef

SEARCH_FUNCTION = "lance_vector_search"
REF_ARGUMENTS = ("version", "asof", "timestamp", "branch", "storage_options")
SEARCH_ARGUMENTS = ("k", "nprobs", "nprobes", "refine_factor", "prefilter", "use_index", "metric")
Values = Callable[[str], Any]


@dataclass
class VectorSearchCall:
    """One ``lance_vector_search(...)`` of a query, run when :func:`lance_duck.sql` registers it."""

    ref: LanceRef
    nearest: dict[str, Any]
    prefilter: bool
    where: list[exp.Expression]       # WHERE conjuncts searched with (prefilter only)
    qualifiers: frozenset[str]

    def run(self) -> pa.Table:
        """The search's rows (the dataset's columns, then ``_distance``)."""
        ds = self.ref.cached()
        flt = self._filter(ds.schema) if self.prefilter and self.where else None
        return _for_duckdb(ds.to_table(nearest=self.nearest, filter=flt, prefilter=self.prefilter))

    def explain(self) -> str:
        """How lance_duck searches (index or flat KNN), for EXPLAIN."""
        ds = self.ref.cached()
        flt = self._filter(ds.schema) if self.prefilter and self.where else None
        return str(ds.scanner(nearest=self.nearest, filter=flt, prefilter=self.prefilter).explain_plan())

    def _filter(self, schema: pa.Schema) -> Any:
        cond = cast(exp.Expression, exp.and_(*[c.copy() for c in self.where]) if len(self.where) > 1
                    else self.where[0].copy())
        arrow = count_filter(cond, schema, set(self.qualifiers))
        if arrow is not None:
            return arrow
        if any(isinstance(i, exp.Identifier) and i.quoted for i in cond.find_all(exp.Identifier)):
            raise InvalidArgumentError(f"{SEARCH_FUNCTION}(..., prefilter => true): cannot search with WHERE "
                                       f"{cond.sql('duckdb')} (quoted identifiers); use prefilter => false")
        for col in cond.find_all(exp.Column):
            col.set("table", None)
        return compile_duckdb_sql(cond.sql("duckdb"), schema)     # floats in DuckDB's meaning


def _widen(t: pa.DataType) -> pa.DataType:
    """``t`` with float16 (which DuckDB cannot read) as float32, at any depth."""
    if t == pa.float16():
        return pa.float32()
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(_widen(t.value_type)), t.list_size)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        make = pa.list_ if pa.types.is_list(t) else pa.large_list
        return make(t.value_field.with_type(_widen(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_widen(f.type)) for f in t])
    return t


def _for_duckdb(table: pa.Table) -> pa.Table:
    """The search's rows with float16 values widened to float32 (DuckDB has no half floats)."""
    schema = pa.schema([f.with_type(_widen(f.type)) for f in table.schema], metadata=table.schema.metadata)
    return table if schema == table.schema else table.cast(schema)


def is_search(table: exp.Table) -> bool:
    """``table`` is a ``lance_vector_search(...)`` FROM item."""
    return isinstance(table.this, exp.Anonymous) and str(table.this.this).lower() == SEARCH_FUNCTION


def parse_search(table: exp.Table, values: Values | None,
                 make_ref: Callable[[list[exp.Expression]], Any]) -> VectorSearchCall:
    """The :class:`VectorSearchCall` of a FROM item; ``make_ref(args)`` builds the table reference
    from ``lance_scan``-style arguments (uri, then version / asof / branch / storage_options)."""
    args = list(table.this.expressions)
    positional = [a for a in args if not isinstance(a, (exp.Kwarg, exp.PropertyEQ, exp.EQ))]
    named = [a for a in args if isinstance(a, (exp.Kwarg, exp.PropertyEQ, exp.EQ))]
    if len(positional) != 3 or args[:3] != positional:
        raise InvalidArgumentError(f"{SEARCH_FUNCTION}(uri, column, vector, k => ..., ...): "
                                   f"three positional arguments first, got {len(positional)}")
    column = _string(positional[1], "column")
    kw: dict[str, exp.Expression] = {}
    for a in named:
        key = a.this.name.lower()
        if key in kw:
            raise InvalidArgumentError(f"{SEARCH_FUNCTION}: {key} given twice")
        if key not in REF_ARGUMENTS + SEARCH_ARGUMENTS:
            raise InvalidArgumentError(f"{SEARCH_FUNCTION}: unknown argument {key!r} (known: "
                                       f"{', '.join(SEARCH_ARGUMENTS + REF_ARGUMENTS)})")
        kw[key] = a.expression
    ref = make_ref([positional[0]] + [a for a in named if a.this.name.lower() in REF_ARGUMENTS])
    nearest: dict[str, Any] = {"column": column, "q": _vector(positional[2], values)}
    if "k" in kw:
        nearest["k"] = _constant(kw["k"], "k")
    probes = kw.get("nprobes", kw.get("nprobs"))
    if "nprobes" in kw and "nprobs" in kw:
        raise InvalidArgumentError(f"{SEARCH_FUNCTION}: give nprobs or nprobes, not both")
    if probes is not None:
        nearest["nprobes"] = _constant(probes, "nprobs")
    for key in ("refine_factor", "use_index", "metric"):
        if key in kw:
            nearest[key] = _constant(kw[key], key)
    prefilter = _constant(kw["prefilter"], "prefilter") if "prefilter" in kw else False
    if not isinstance(prefilter, bool):
        raise InvalidArgumentError(f"{SEARCH_FUNCTION}: prefilter must be true or false, got {prefilter!r}")
    alias = table.alias_or_name if table.args.get("alias") else SEARCH_FUNCTION
    return VectorSearchCall(ref, nearest, prefilter, _conjuncts(table) if prefilter else [],
                            frozenset({alias}))


def _conjuncts(table: exp.Table) -> list[exp.Expression]:
    """The WHERE conjuncts of the SELECT reading only ``table`` that do not use ``_distance``."""
    select = table.parent.parent if isinstance(table.parent, exp.From) else None
    if not isinstance(select, exp.Select) or select.args.get("joins"):
        return []
    where = select.args.get("where")
    if where is None:
        return []
    out: list[exp.Expression] = []
    for c in where.this.flatten() if isinstance(where.this, exp.And) else [where.this]:
        if any(col.name.lower() == "_distance" for col in c.find_all(exp.Column)):
            continue
        out.append(cast(exp.Expression, c))
    return out


def _string(node: exp.Expression, what: str) -> str:
    if isinstance(node, exp.Literal) and node.is_string:
        return str(node.this)
    raise InvalidArgumentError(f"{SEARCH_FUNCTION}: {what} must be a string literal, got {node.sql('duckdb')}")


def _constant(node: exp.Expression, what: str) -> Any:
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return str(node.this)
        text = str(node.this)
        return int(text) if text.lstrip("-").isdigit() else float(text)
    if isinstance(node, exp.Neg):
        return -_constant(node.this, what)
    raise InvalidArgumentError(f"{SEARCH_FUNCTION}: {what} must be a constant, got {node.sql('duckdb')}")


def _vector(node: exp.Expression, values: Values | None) -> np.ndarray:
    """The query vector: a list literal, a FLOAT[n] / DOUBLE[n] cast, or a caller's variable."""
    size = None
    if isinstance(node, exp.Cast):
        to = node.to
        if to.this not in (exp.DataType.Type.ARRAY, exp.DataType.Type.LIST) or not to.expressions or \
                to.expressions[0].this not in (exp.DataType.Type.FLOAT, exp.DataType.Type.DOUBLE):
            raise InvalidArgumentError(f"{SEARCH_FUNCTION}: the vector must be FLOAT[n] or DOUBLE[n], "
                                       f"got {to.sql('duckdb')}")
        dims = to.args.get("values") or []
        size = int(dims[0].this) if dims and isinstance(dims[0], exp.Literal) else None
        node = node.this
    if isinstance(node, exp.Array):
        vec = np.array([_number(e) for e in node.expressions], dtype=np.float64)
    elif isinstance(node, (exp.Placeholder, exp.Column, exp.Parameter)):
        name = node.name if not isinstance(node, exp.Parameter) else node.this.name
        if not name:
            raise InvalidArgumentError(f"{SEARCH_FUNCTION}: lance_duck.sql takes no parameters; name a "
                                       "variable ($q) or write the vector")
        value = values(name) if values is not None else None
        if value is None:
            raise InvalidArgumentError(f"{SEARCH_FUNCTION}: no variable {name!r} in the caller's scope")
        try:
            vec = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"{SEARCH_FUNCTION}: variable {name!r} is not a vector of numbers") from None
    else:
        raise InvalidArgumentError(f"{SEARCH_FUNCTION}: the vector must be a list literal, a FLOAT[n] cast or a "
                                   f"variable, got {node.sql('duckdb')}")
    if size is not None and vec.shape[-1:] != (size,):
        raise InvalidArgumentError(f"{SEARCH_FUNCTION}: the vector has {vec.shape[-1] if vec.ndim else 0} values, "
                                   f"cast to {size}")
    return vec


def _number(node: exp.Expression) -> float:
    v = _constant(node, "a vector value")
    if isinstance(v, (str, bool)):
        raise InvalidArgumentError(f"{SEARCH_FUNCTION}: vector values must be numbers, got {node.sql('duckdb')}")
    return float(v)
