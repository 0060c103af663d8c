"""DuckDB's predicates (``duckdb._sources.nodes``) as filters a dataset applies exactly, in DuckDB's
meaning (see :mod:`.duckdb_source`); loaded by the first predicate DuckDB offers a dataset, so that
opening a dataset loads no filter machinery.

``to_arrow`` / ``nan_may_satisfy`` are DuckDB's own translation to a pyarrow Expression and its test
for predicates a NaN could satisfy (None without DuckDB's protocol).
"""
from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from ..predicate import CompiledFilter, compile_bound
from ..predicate.bound import BAnd, BCompare, BIn, BIsNull, BLit, BNot, BOr, BRef, BoundExpr
from ..predicate.compiled import and_filters
from .filters import bind_arrow_expression


class NotPushable(Exception):
    """A DuckDB predicate with no exact translation here (DuckDB keeps applying it)."""


def duckdb_filter(filters: Sequence[Any], schema: pa.Schema, to_arrow: Any, nan_may_satisfy: Any
              ) -> CompiledFilter | None:
    """The AND of DuckDB's accepted predicates (None for none), one compiled filter: the pyarrow
    Expression DuckDB's pyarrow-dataset source would pass is bound in Arrow's meaning (a user's
    Expression means pylance's float order, where a NaN with its sign bit set sorts below -inf;
    DuckDB's NaNs are all above every number, and none of these predicates holds for a NaN)."""
    expressions: list[pc.Expression] = []
    bound: list[BoundExpr] = []
    for predicate in filters:
        try:
            kind, part = pushed(predicate, schema, to_arrow, nan_may_satisfy)
        except NotPushable as exc:
            raise InvalidArgumentError(f"DuckDB's predicate {predicate!r:.80} cannot be applied exactly; "
                                       "accepts() refuses it") from exc
        if kind == "arrow":
            expressions.append(part)
        else:
            bound.append(part)
    mask = None
    for e in expressions:
        mask = e if mask is None else mask & e
    shallow = len(expressions) <= _FEW and all(_shallow(p) for p in filters)
    arrow = None if mask is None else bind_arrow_expression(mask, schema, shallow)
    if not bound:
        return arrow
    compiled = compile_bound(bound[0] if len(bound) == 1 else BAnd(tuple(bound)), schema)
    return and_filters(compiled, arrow)

#: predicates (and levels in one) whose Expression is bound on the calling thread; deeper ones go to
#: the big-stack worker (pyarrow recurses in C++ along an Expression's depth)
_FEW = 16


def _shallow(predicate: Any) -> bool:
    """Whether DuckDB's predicate tree nests at most :data:`_FEW` levels (walked level by level)."""
    level = [predicate]
    for _ in range(_FEW):
        below = []
        for node in level:
            children = getattr(node, "_children", None)
            if children is None:
                return False
            below.extend(children())
        if not below:
            return True
        level = below
    return False


def pushed(predicate: Any, schema: pa.Schema, to_arrow: Any, nan_may_satisfy: Any) -> tuple[str, Any]:
    """("arrow", Expression) when DuckDB's pyarrow-dataset source would push ``predicate``,
    else ("bound", tree) in DuckDB's meaning; NotPushable when neither is exact."""
    if to_arrow is not None:
        try:
            expression = to_arrow(predicate, schema)
        except ValueError:          # DuckDB's Untranslatable
            pass
        else:
            if not nan_may_satisfy(predicate, schema):
                return "arrow", expression
    try:
        return "bound", duckdb_predicate(predicate, schema)
    except RecursionError as exc:
        raise NotPushable(predicate) from exc


# -- DuckDB's predicate nodes -> the bound model -------------------------------------------------------

_OPS = {"=": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

_INTEGERS = {"int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT",
             "uint8": "UTINYINT", "uint16": "USMALLINT", "uint32": "UINTEGER", "uint64": "UBIGINT"}
_NAIVE = {"s": "TIMESTAMP_S", "ms": "TIMESTAMP_MS", "us": "TIMESTAMP"}
_MICROS_PER = {"s": 1_000_000, "ms": 1_000, "us": 1}


def duckdb_predicate(node: Any, schema: pa.Schema) -> BoundExpr:
    """DuckDB's predicate tree (``duckdb._sources.nodes``) as a bound tree over ``schema``, with
    DuckDB's meaning (the bound model's: SQL three-valued logic, floats totally ordered with NaN
    above every number).

    Raises:
        NotPushable: a node, a column type or a literal without an exact translation.
    """
    kind = type(node).__name__
    if kind == "Binary" and node.op in ("AND", "OR"):
        parts = (duckdb_predicate(node.left, schema), duckdb_predicate(node.right, schema))
        return BAnd(parts) if node.op == "AND" else BOr(parts)
    if kind == "Unary" and node.op == "NOT":
        return BNot(duckdb_predicate(node.operand, schema))
    if kind == "Postfix" and node.op in ("IS NULL", "IS NOT NULL"):
        ref, _ = _column(node.operand, schema)
        return BIsNull(ref) if node.op == "IS NULL" else BNot(BIsNull(ref))
    if kind == "Binary" and node.op in _OPS:
        ref, t = _column(node.left, schema)
        return BCompare(_OPS[node.op], ref, BLit(_literal(node.right, t)))
    if kind == "In" and node.values:
        ref, t = _column(node.operand, schema)
        scalars = [_literal(v, t) for v in node.values]
        return BIn(ref, pa.array(scalars, t), False)
    raise NotPushable(node)


def _column(node: Any, schema: pa.Schema) -> tuple[BRef, pa.DataType]:
    if type(node).__name__ != "Col" or not node.parts:
        raise NotPushable(node)
    parts = tuple(node.parts)
    index = schema.get_field_index(parts[0])      # -1 for a missing or repeated name
    if index < 0:
        raise NotPushable(parts)
    t = schema.field(index).type
    for name in parts[1:]:
        child = t.get_field_index(name) if pa.types.is_struct(t) else -1
        if child < 0:
            raise NotPushable(parts)
        t = t.field(child).type
    if _engine_type(t) is None:
        raise NotPushable(t)
    return BRef(parts, t), t


def _engine_type(t: pa.DataType) -> str | None:
    """DuckDB's name for the type it reads ``t`` as, for the types translated here."""
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_integer(t):
        return _INTEGERS[str(t)]
    if pa.types.is_float32(t):
        return "FLOAT"
    if pa.types.is_float64(t):
        return "DOUBLE"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "VARCHAR"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "BLOB"
    if pa.types.is_date32(t):
        return "DATE"
    if pa.types.is_timestamp(t) and t.unit in _MICROS_PER:
        return _NAIVE[t.unit] if t.tz is None else "TIMESTAMP WITH TIME ZONE"
    if pa.types.is_decimal128(t):
        return f"DECIMAL({t.precision},{t.scale})"
    return None


def _literal(node: Any, t: pa.DataType) -> pa.Scalar:
    """The constant as a scalar of the column's type, holding exactly its value."""
    if type(node).__name__ != "Lit" or node.type != _engine_type(t):
        raise NotPushable(node)
    v = node.value
    ok = False
    if pa.types.is_boolean(t):
        ok = isinstance(v, bool)
    elif pa.types.is_integer(t):
        ok = isinstance(v, int) and not isinstance(v, bool)
    elif pa.types.is_floating(t):
        ok = isinstance(v, float) and not math.isnan(v)
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        ok = isinstance(v, str)
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
        ok = isinstance(v, bytes)
    elif pa.types.is_date32(t):
        ok = isinstance(v, datetime.date) and not isinstance(v, datetime.datetime)
    elif pa.types.is_timestamp(t) and t.tz is None:
        ok = isinstance(v, datetime.datetime) and v.tzinfo is None and v.microsecond % _MICROS_PER[t.unit] == 0
    elif pa.types.is_timestamp(t):
        # an instant: an int of microseconds since the epoch, on the column's grid
        ok = isinstance(v, int) and not isinstance(v, bool) and v % _MICROS_PER[t.unit] == 0
        if ok:
            v = v // _MICROS_PER[t.unit]
    elif pa.types.is_decimal128(t):
        ok = isinstance(v, decimal.Decimal) and v.is_finite()
    if not ok:
        raise NotPushable(node)
    try:
        scalar = pa.scalar(v, t)
    except (pa.ArrowException, OverflowError, TypeError, ValueError) as exc:
        raise NotPushable(node) from exc
    held = scalar.value if pa.types.is_timestamp(t) and t.tz is not None else scalar.as_py()
    if held != v:           # rounded (a float32, a decimal's scale) or wrapped: not the same value
        raise NotPushable(node)
    return scalar


__all__ = ["NotPushable", "duckdb_filter", "duckdb_predicate", "pushed"]
