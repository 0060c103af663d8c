"""The bound predicate model: every node knows its Arrow type; columns are resolved.

Built by :func:`.binding.bind`; consumed by the visitors in :mod:`.to_arrow` and
:mod:`.pruning`.  Literals are typed ``pa.Scalar`` values coerced to what they meet.
"""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

BOOL = pa.bool_()


class BoundExpr:
    """Base class of bound nodes; ``type`` is the Arrow type of the node's value."""

    type: pa.DataType


@dataclass(frozen=True, eq=False)
class BRef(BoundExpr):
    path: tuple[str, ...]
    type: pa.DataType
    field_id: int | None = None


@dataclass(frozen=True, eq=False)
class BLit(BoundExpr):
    scalar: pa.Scalar

    @property
    def type(self) -> pa.DataType:  # type: ignore[override]
        return self.scalar.type


@dataclass(frozen=True, eq=False)
class BCall(BoundExpr):
    name: str
    args: tuple[BoundExpr, ...]
    options: tuple
    type: pa.DataType


@dataclass(frozen=True, eq=False)
class BCast(BoundExpr):
    arg: BoundExpr
    type: pa.DataType


@dataclass(frozen=True, eq=False)
class BCompare(BoundExpr):
    op: str
    left: BoundExpr
    right: BoundExpr
    type: pa.DataType = BOOL


@dataclass(frozen=True, eq=False)
class BAnd(BoundExpr):
    args: tuple[BoundExpr, ...]
    type: pa.DataType = BOOL


@dataclass(frozen=True, eq=False)
class BOr(BoundExpr):
    args: tuple[BoundExpr, ...]
    type: pa.DataType = BOOL


@dataclass(frozen=True, eq=False)
class BNot(BoundExpr):
    arg: BoundExpr
    type: pa.DataType = BOOL


@dataclass(frozen=True, eq=False)
class BIsNull(BoundExpr):
    arg: BoundExpr
    type: pa.DataType = BOOL


@dataclass(frozen=True, eq=False)
class BIsBool(BoundExpr):
    arg: BoundExpr
    value: bool
    type: pa.DataType = BOOL


@dataclass(frozen=True, eq=False)
class BIn(BoundExpr):
    """``arg IN (values)``; ``values`` excludes nulls, ``has_null`` says the list had one."""

    arg: BoundExpr
    values: pa.Array
    has_null: bool
    type: pa.DataType = BOOL


@dataclass(frozen=True, eq=False)
class BLike(BoundExpr):
    arg: BoundExpr
    pattern: str
    ignore_case: bool
    type: pa.DataType = BOOL


def walk(node: BoundExpr):
    """All nodes of a bound tree, parents first."""
    yield node
    for child in children(node):
        yield from walk(child)


def children(node: BoundExpr) -> tuple[BoundExpr, ...]:
    if isinstance(node, (BAnd, BOr, BCall)):
        return node.args
    if isinstance(node, BCompare):
        return (node.left, node.right)
    if isinstance(node, (BNot, BIsNull, BIsBool, BIn, BLike, BCast)):
        return (node.arg,)
    return ()


def referenced_columns(node: BoundExpr) -> set[str]:
    """Top-level column names a bound expression reads."""
    return {n.path[0] for n in walk(node) if isinstance(n, BRef)}
