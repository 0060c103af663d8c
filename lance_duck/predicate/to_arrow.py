"""Bound predicates -> pyarrow: a ``pc.Expression`` and/or batch evaluation (the residual).

One visitor, two leaf strategies: in expression mode columns become ``pc.field(...)``; in
batch mode they are the batch's arrays.  Kernels that have no Expression form (list
membership) raise :class:`~.kernels.NotExpressible` in expression mode, so the conjunct
holding them is evaluated on batches instead.
"""
from __future__ import annotations

from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

from . import kernels
from .bound import (
    BAnd, BCall, BCast, BCompare, BIn, BIsBool, BIsNull, BLike, BLit, BNot, BOpaque, BOr, BRef, BoundExpr,
)
from .bound import children
from .expressions import conjuncts

NULL_BOOL = pa.scalar(None, pa.bool_())


class _Builder:
    """Builds the value of a bound tree from leaves supplied by :meth:`ref`."""

    def visit(self, node: BoundExpr) -> Any:
        return getattr(self, "_" + type(node).__name__)(node)

    def ref(self, node: BRef) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def lit(self, node: BLit) -> Any:
        return node.scalar

    def _BRef(self, n: BRef) -> Any:
        return self.ref(n)

    def _BLit(self, n: BLit) -> Any:
        return self.lit(n)

    def _BAnd(self, n: BAnd) -> Any:
        return _balanced(pc.and_kleene, [self.visit(a) for a in n.args])

    def _BOr(self, n: BOr) -> Any:
        return _balanced(pc.or_kleene, [self.visit(a) for a in n.args])

    def _BNot(self, n: BNot) -> Any:
        return pc.invert(self.visit(n.arg))

    def _BIsNull(self, n: BIsNull) -> Any:
        return pc.is_null(self.visit(n.arg), nan_is_null=False)

    def _BIsBool(self, n: BIsBool) -> Any:
        v = self.visit(n.arg)
        value = v if n.value else pc.invert(v)
        return pc.if_else(pc.is_null(v), False, value)

    def _BCompare(self, n: BCompare) -> Any:
        return kernels.call_compare(n.op, self.visit(n.left), self.visit(n.right),
                                    n.left.type, n.right.type)

    def _BIn(self, n: BIn) -> Any:
        v = self.visit(n.arg)
        values = n.values
        nan = False
        if kernels.signed_zeros(n.arg.type):
            # ``-0.0 IN (0.0)`` is true (``=`` is); Arrow's hashed ``is_in`` tells the zeros apart
            v, values = kernels.unsigned_zero(v, n.arg.type), kernels.unsigned_zero(values, values.type)
            # a NaN in the list matches every NaN (``=`` does); Arrow's hash tells their bits apart
            is_nan = pc.is_nan(values)
            nan = bool(pc.any(is_nan).as_py())
            values = values.filter(pc.invert(is_nan)) if nan else values
        found = pc.is_in(v, value_set=values)
        if nan:
            found = pc.or_kleene(found, pc.is_nan(v))
        if n.has_null:  # x IN (.., NULL): true on a match, otherwise unknown
            found = pc.if_else(found, True, NULL_BOOL)
        return pc.if_else(pc.is_valid(v), found, NULL_BOOL)

    def _BLike(self, n: BLike) -> Any:
        if "\\" in n.pattern:  # Arrow's match_like reads an escaped backslash as two
            return pc.match_substring_regex(self.visit(n.arg), pattern=kernels.like_to_regex(n.pattern),
                                            ignore_case=n.ignore_case)
        return pc.match_like(self.visit(n.arg), pattern=n.pattern, ignore_case=n.ignore_case)

    def _BCast(self, n: BCast) -> Any:
        v = self.visit(n.arg)
        return v.cast(n.type) if isinstance(v, (pc.Expression, pa.Scalar)) else pc.cast(v, n.type)

    def _BCall(self, n: BCall) -> Any:
        return kernels.call(n.name, [self.visit(a) for a in n.args], n.options)

    def _BOpaque(self, n: BOpaque) -> Any:
        # Arrow's own function (a user's Expression read in Lance's float order, :mod:`.from_arrow`)
        args = [self.visit(a) for a in n.args]
        if any(isinstance(a, pc.Expression) for a in args):
            return pc.Expression._call(n.name, [a if isinstance(a, pc.Expression) else pc.scalar(a)
                                                for a in args], n.options)
        return pc.call_function(n.name, args, n.options)


def _balanced(fn: Callable[[Any, Any], Any], parts: list[Any]) -> Any:
    """``fn`` folded over ``parts`` as a balanced tree (depth log2(n), so long OR chains evaluate);
    a constant beside an Expression (``true AND x IN (...)``) becomes an Expression literal."""
    if any(isinstance(p, pc.Expression) for p in parts):
        parts = [p if isinstance(p, pc.Expression) else pc.scalar(p) for p in parts]
    while len(parts) > 1:
        paired = [fn(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
        if len(parts) % 2:
            paired.append(parts[-1])
        parts = paired
    return parts[0]


class _ExpressionBuilder(_Builder):
    def ref(self, node: BRef) -> pc.Expression:
        return pc.field(*node.path)



class _BatchBuilder(_Builder):
    def __init__(self, batch: pa.RecordBatch | pa.Table):
        self.batch = batch

    def ref(self, node: BRef) -> pa.Array:
        col = self.batch.column(node.path[0])
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        if len(node.path) > 1:
            col = pc.struct_field(col, list(node.path[1:]))
        return col


def to_expression(bound: BoundExpr) -> pc.Expression:
    """The exact pyarrow Expression of ``bound``; raises NotExpressible if it has none."""
    out = _ExpressionBuilder().visit(bound)
    return pc.scalar(out) if isinstance(out, pa.Scalar) else out


def evaluate(bound: BoundExpr, batch: pa.RecordBatch | pa.Table) -> pa.Array:
    """Evaluate ``bound`` on a batch; the result has one value per row."""
    out = _BatchBuilder(batch).visit(bound)
    if isinstance(out, pa.Scalar):
        return pa.repeat(out, batch.num_rows)
    if isinstance(out, pa.ChunkedArray):
        return out.combine_chunks()
    return out


#: Larger conjuncts, and the conjuncts beyond this many nodes in all, are evaluated on batches:
#: Arrow's Expression machinery recurses on them (a chain of ~10,000 terms overflows its stack).
MAX_EXPRESSION_NODES = 2000


def _size(node: BoundExpr) -> int:
    n, stack = 0, [node]
    while stack:
        x = stack.pop()
        n += 1
        stack.extend(children(x))
    return n


def split(bound: BoundExpr) -> tuple[pc.Expression | None, list[BoundExpr]]:
    """Top-level conjuncts with an Expression form, ANDed; the others, left for batches."""
    exprs: list[pc.Expression] = []
    residual: list[BoundExpr] = []
    total = 0
    for c in conjuncts(bound):
        n = _size(c)
        if n > MAX_EXPRESSION_NODES or total + n > MAX_EXPRESSION_NODES:
            residual.append(c)          # Arrow canonicalises the conjuncts' AND into one long chain
            continue
        try:
            exprs.append(to_expression(c))
            total += n
        except kernels.NotExpressible:
            residual.append(c)
    expression = _balanced(pc.and_kleene, exprs) if exprs else None
    return expression, residual


def make_residual(parts: list[BoundExpr]) -> Callable[[pa.RecordBatch], pa.BooleanArray] | None:
    """A callable giving the keep-mask (nulls -> False) of the conjuncts in ``parts``."""
    if not parts:
        return None
    node = parts[0] if len(parts) == 1 else BAnd(tuple(parts))

    def residual(batch: pa.RecordBatch) -> pa.BooleanArray:
        return pc.fill_null(evaluate(node, batch), False)

    return residual
