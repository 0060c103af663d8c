"""The bound predicate model: every node knows its Arrow type; columns are resolved.

Built by :func:`.binding.bind`; consumed by the visitors in :mod:`.to_arrow` and
:mod:`.pruning`.  Literals are typed ``pa.Scalar`` values coerced to what they meet.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

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
    def type(self) -> pa.DataType:
        return self.scalar.type


@dataclass(frozen=True, eq=False)
class BCall(BoundExpr):
    name: str
    args: tuple[BoundExpr, ...]
    options: tuple[Any, ...]
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


@dataclass(frozen=True, eq=False)
class BOpaque(BoundExpr):
    """A part of a user's pyarrow Expression this model does not read (:mod:`.from_arrow`): the
    function's name and its arguments; nothing is inferred from it (no pruning, no index answer).
    ``options`` (its ``FunctionOptions``, read back) and ``type`` are set where the filter is
    evaluated from the model (an Expression read in Lance's float order): Arrow's own function
    is then called on its evaluated arguments."""

    name: str
    args: tuple[BoundExpr, ...]
    type: pa.DataType = BOOL
    options: Any = None


def walk(node: BoundExpr) -> Iterator[BoundExpr]:
    """All nodes of a bound tree, parents first (iterative: user Expressions may be deep)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(children(n)))


def children(node: BoundExpr) -> tuple[BoundExpr, ...]:
    """The direct operands of ``node``."""
    if isinstance(node, (BAnd, BOr, BCall, BOpaque)):
        return node.args
    if isinstance(node, BCompare):
        return (node.left, node.right)
    if isinstance(node, (BNot, BIsNull, BIsBool, BIn, BLike, BCast)):
        return (node.arg,)
    return ()


def referenced_columns(node: BoundExpr) -> set[str]:
    """Top-level column names a bound expression reads."""
    return {n.path[0] for n in walk(node) if isinstance(n, BRef)}
