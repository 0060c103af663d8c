"""A filter as ANDs and ORs of per-column conjuncts (for answers from exact indices).

:func:`tree_from_bound` reads a bound filter (:mod:`.bound`, from SQL or from a pyarrow Expression)
whole: every node must be an AND, an OR or a per-column conjunct (:func:`.pruning.atom`); anything
else gives None. Under SQL's three-valued logic a row passes an AND when every operand is true and
an OR when one operand is true, so the rows passing the tree are the intersections and unions of
the rows passing its leaves -- what exact indices answer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Union

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from .bound import BAnd, BOr, BoundExpr
from .from_arrow import Untranslatable, from_expression
from .pruning import Conjunct, atom

#: Deeper trees give None (the caller scans)
MAX_DEPTH = 64


@dataclass(frozen=True)
class AllOf:
    """Every part holds."""

    parts: tuple[FilterTree, ...]
    kind: ClassVar[str] = "and"


@dataclass(frozen=True)
class EitherOf:
    """At least one part holds."""

    parts: tuple[FilterTree, ...]
    kind: ClassVar[str] = "or"


FilterTree = Union[Conjunct, AllOf, EitherOf]


class _NotATree(Exception):
    pass


def tree_from_bound(bound: BoundExpr) -> FilterTree | None:
    """``bound`` as a :data:`FilterTree`, or None when some part of it is not an AND, an OR or a
    per-column conjunct."""
    try:
        return _tree(bound, 0)
    except _NotATree:
        return None


def tree_from_expression(expr: pc.Expression, schema: pa.Schema) -> FilterTree | None:
    """A user's pyarrow Expression as a :data:`FilterTree` of the columns of ``schema`` (None as
    :func:`tree_from_bound`, or when it cannot be read)."""
    try:
        return tree_from_bound(from_expression(expr, schema))
    except (Untranslatable, InvalidArgumentError):
        return None


def _tree(node: BoundExpr, depth: int) -> FilterTree:
    if depth > MAX_DEPTH:
        raise _NotATree
    if isinstance(node, BAnd):
        return AllOf(tuple(_tree(a, depth + 1) for a in node.args))
    leaf = atom(node)                       # an OR on one column: one conjunct
    if leaf is not None:
        return leaf
    if isinstance(node, BOr):
        return EitherOf(tuple(_tree(a, depth + 1) for a in node.args))
    raise _NotATree


__all__ = ["AllOf", "EitherOf", "FilterTree", "tree_from_bound", "tree_from_expression"]
