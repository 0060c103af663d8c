"""``SELECT count(*) FROM <lance ref> WHERE ...`` counted by the Lance scan (exact indices first).

:func:`count_filter` translates a ``WHERE`` into lance_duck's filter model (the bound tree of
:mod:`lance_duck.predicate.bound`, compiled by ``predicate.compile_bound``) only where DuckDB's
meaning and the model's SQL meaning are the same: ANDs and ORs of ``col op literal`` (``=``, ``<>``, ``<``, ``<=``, ``>``,
``>=``, either way round), ``col BETWEEN a AND b``, ``col [NOT] IN (literals)`` (no NULL among them),
``col IS [NOT] NULL``, on a top-level column bound as DuckDB binds it (case-insensitively, one match)
that is an integer column with an integer literal in its range, or a string column with a string
literal (both engines compare bytes; not under a connection whose ``default_collation`` is set,
``nocase`` say, where DuckDB compares by it). Anything else -- floats (DuckDB orders NaN, Arrow does not),
casts, functions, other tables -- gives None, and DuckDB runs the query as usual. The count is then
``LanceDataset.count_rows(filter)``: from BTREE / BITMAP alone when exact indices answer the whole
filter -- ANDs and ORs across indexed columns: the union / intersection of their rows, minus
deletions -- on the fragments they cover, by reading the filter's columns elsewhere.
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa
from sqlglot import exp

from ...predicate import CompiledFilter, compile_bound
from ...predicate.bound import BAnd, BCompare, BIn, BIsNull, BLit, BNot, BOr, BRef, BoundExpr

_OPS: dict[type[exp.Expression], str] = {exp.EQ: "==", exp.NEQ: "!=", exp.GT: ">", exp.GTE: ">=",
                                        exp.LT: "<", exp.LTE: "<="}
_MIRRORED = {"==": "==", "!=": "!=", ">": "<", ">=": "<=", "<": ">", "<=": ">="}


#: Deeper conditions are left to DuckDB (which has its own depth limit and error).
MAX_DEPTH = 64


class _Untranslatable(Exception):
    pass


def _integer_range(t: pa.DataType) -> tuple[int, int] | None:
    if not pa.types.is_integer(t):
        return None
    bits = t.bit_width
    return (0, 2 ** bits - 1) if pa.types.is_unsigned_integer(t) else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


class _Translator:
    def __init__(self, schema: pa.Schema, qualifiers: set[str], binary_strings: bool = True):
        self.schema = schema
        self.qualifiers = qualifiers
        self.binary_strings = binary_strings

    def column(self, node: exp.Expression) -> pa.Field:
        if not isinstance(node, exp.Column) or node.args.get("db") or node.args.get("catalog"):
            raise _Untranslatable
        if node.table and node.table not in self.qualifiers:
            raise _Untranslatable
        fields = [f for f in self.schema if f.name.lower() == node.name.lower()]
        if len(fields) != 1:
            raise _Untranslatable
        return fields[0]

    def literal(self, node: exp.Expression, t: pa.DataType) -> pa.Scalar:
        negative = isinstance(node, exp.Neg)
        if negative:
            node = node.this
        if not isinstance(node, exp.Literal):
            raise _Untranslatable
        text = str(node.this)
        if node.is_string:
            if negative or not self.binary_strings or not (pa.types.is_string(t) or pa.types.is_large_string(t)):
                raise _Untranslatable
            return pa.scalar(text, t)
        bounds = _integer_range(t)
        if bounds is None or not text.isdigit():
            raise _Untranslatable
        v = -int(text) if negative else int(text)
        if not bounds[0] <= v <= bounds[1]:
            raise _Untranslatable
        return pa.scalar(v, t)

    def ref(self, node: exp.Expression) -> tuple[BRef, pa.DataType]:
        f = self.column(node)
        return BRef((f.name,), f.type), f.type

    def convert(self, node: exp.Expression, depth: int = 0) -> BoundExpr:  # noqa: C901 - one case per form
        if depth > MAX_DEPTH:
            raise _Untranslatable
        if isinstance(node, exp.Paren):
            return self.convert(node.this, depth + 1)
        if isinstance(node, exp.And):
            return BAnd((self.convert(node.this, depth + 1), self.convert(node.expression, depth + 1)))
        if isinstance(node, exp.Or):
            return BOr((self.convert(node.this, depth + 1), self.convert(node.expression, depth + 1)))
        op = _OPS.get(type(node))
        if op is not None:
            left, right = node.this, node.expression
            if not isinstance(left, exp.Column):
                left, right, op = right, left, _MIRRORED[op]
            ref, t = self.ref(left)
            return BCompare(op, ref, BLit(self.literal(right, t)))
        if isinstance(node, exp.Between):
            ref, t = self.ref(node.this)
            lo, hi = self.literal(node.args["low"], t), self.literal(node.args["high"], t)
            return BAnd((BCompare(">=", ref, BLit(lo)), BCompare("<=", ref, BLit(hi))))
        if isinstance(node, exp.In):
            if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
                raise _Untranslatable
            ref, t = self.ref(node.this)
            values = [self.literal(v, t).as_py() for v in node.expressions]
            if not values:
                raise _Untranslatable
            return BIn(ref, pa.array(values, t), False)
        if isinstance(node, exp.Not):
            inner = node.this
            if isinstance(inner, exp.Paren):
                inner = inner.this
            if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
                return BNot(BIsNull(self.ref(inner.this)[0]))
            if isinstance(inner, exp.In):          # SQL: NOT IN is null (dropped) on a null
                return BNot(self.convert(inner, depth + 1))
            raise _Untranslatable
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            return BIsNull(self.ref(node.this)[0])
        raise _Untranslatable


def count_filter(where: exp.Expression, schema: pa.Schema, qualifiers: set[str],
                 collation: str = "") -> CompiledFilter | None:
    """The ``WHERE`` condition ``where`` (its ``this``) as lance_duck's filter model with DuckDB's
    meaning, or None (see the module notes). ``qualifiers``: the names a column may be qualified with;
    ``collation``: the connection's ``default_collation`` (string literals only without one)."""
    node: Any = where.this if isinstance(where, exp.Where) else where
    try:
        bound = _Translator(schema, qualifiers, collation.lower() in ("", "binary")).convert(node)
    except _Untranslatable:
        return None
    return compile_bound(bound, schema)


__all__ = ["count_filter"]
