"""Lance's float order in the bound model: what pylance means by a float comparison, in a filter
given as a SQL string or as a pyarrow Expression (pylance hands both to DataFusion).

The order is IEEE 754 totalOrder with the zeros equal: -NaN < -inf < ... < -0.0 = 0.0 < ... < +inf
< +NaN, NaNs ordered by sign and payload, so a NaN equals only a NaN of the same bits
(:func:`~.kernels.order_keys`); between two expressions (``a = b``, no literal) pylance keeps the
zeros apart too (-0.0 < 0.0). The bound model's own :class:`~.bound.BCompare` orders every NaN
above every number (DuckDB's meaning, what indices and pruning read), so ``column op number`` stays
one, corrected for NaNs with the sign bit set (``AND NOT is_negative_nan`` for ``>`` / ``>=``, ``OR
is_negative_nan`` for ``<`` / ``<=``; :func:`.pruning.atom` reads both shapes as conjuncts that
zone maps prune by and BTREE / BITMAP indices answer exactly: ``neg_nan``, ``not_neg_nan``, and
``lance>`` / ``lance>=`` inside an OR); other
float comparisons and ``IN`` lists holding a NaN become the batch kernels ``float_order_compare`` /
``float_order_in``.
"""
from __future__ import annotations

from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc

from .bound import BAnd, BCall, BCompare, BIn, BLit, BNot, BOr, BRef, BoundExpr, children
from .expressions import FLIPPED


def is_float(t: pa.DataType) -> bool:
    """``t`` is a float type (its comparisons take Lance's order)."""
    return bool(pa.types.is_floating(t))


def compare(op: str, a: BoundExpr, b: BoundExpr, literal: BLit | None = None) -> BoundExpr:
    """``a op b`` in Lance's order, one of them a float; ``literal``: ``b`` as ``a``'s float type
    when ``a`` is a column and ``b`` a number that type holds exactly."""
    if isinstance(a, BLit) and isinstance(b, BRef) and literal is None:
        a, b, op = b, a, FLIPPED[op]
    lit = literal if literal is not None else b if isinstance(b, BLit) and b.type == a.type else None
    if isinstance(a, BRef) and is_float(a.type) and lit is not None:
        value = lit.scalar.as_py()
        if value is None or value == value:           # null or a number: NaN-last plus -NaN
            node = BCompare(op, a, lit)
            if value is None or op in ("==", "!="):
                return node
            neg_nan = BCall("is_negative_nan", (a,), (), pa.bool_())
            return BAnd((node, BNot(neg_nan))) if op in (">", ">=") else BOr((node, neg_nan))
    if not isinstance(a, BLit) and not isinstance(b, BLit):
        # two expressions: pylance compares them in totalOrder itself, -0.0 below 0.0
        return BCall("float_order_compare", (a, b), (op, True), pa.bool_())
    return BCall("float_order_compare", (a, b), (op,), pa.bool_())


def is_in(arg: BoundExpr, values: pa.Array, has_null: bool) -> BoundExpr:
    """SQL's ``arg IN (values)`` in Lance's order (``values`` without nulls): a :class:`BIn` when
    they hold no NaN and have ``arg``'s type (``-0.0`` and ``0.0`` match alike there), else the
    batch kernel."""
    if isinstance(arg, BRef) and values.type == arg.type and not pc.any(pc.is_nan(values)).as_py():
        return BIn(arg, values, has_null)
    return BCall("float_order_in", (arg,), (values, has_null), pa.bool_())


def rewrite(node: BoundExpr) -> BoundExpr:
    """``node`` (a SQL filter bound in the model's NaN-last order) in Lance's order: its float
    comparisons and float ``IN`` lists holding a NaN replaced (recursive: called where SQL is bound,
    on the deep-stack worker for deep filters)."""
    if isinstance(node, BCompare):
        left, right = rewrite(node.left), rewrite(node.right)
        if is_float(left.type) or is_float(right.type):
            return compare(node.op, left, right)
        return BCompare(node.op, left, right)
    if isinstance(node, BIn):
        arg = rewrite(node.arg)
        if is_float(arg.type) and pc.any(pc.is_nan(node.values)).as_py():
            return is_in(arg, node.values, node.has_null)
        return replace(node, arg=arg)
    kids = children(node)
    if not kids:
        return node
    new = tuple(rewrite(k) for k in kids)
    if all(x is y for x, y in zip(new, kids)):
        return node
    if hasattr(node, "args"):
        return replace(node, args=new)      # type: ignore[type-var]
    return replace(node, arg=new[0])        # type: ignore[type-var]


__all__ = ["compare", "is_float", "is_in", "rewrite"]
