"""A filter as ANDs and ORs of per-column conjuncts (for answers from exact indices).

:func:`tree_from_expression` reads a ``pyarrow.compute.Expression`` whole: every node must be an
AND, a Kleene OR, or a per-column conjunct (:mod:`.pruning`); anything else gives None. Under
SQL's three-valued logic a row passes an AND when every operand is true and a Kleene OR when one
operand is true, so the rows passing the tree are the intersections and unions of the rows
passing its leaves -- what exact indices answer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import pyarrow as pa
import pyarrow.compute as pc

from . import arrow_introspect as ai
from .pruning import Conjunct, _x_atom

#: Deeper trees give None (the caller scans)
MAX_DEPTH = 64
_AND = frozenset({"and", "and_", "and_kleene"})
_PLAIN_OR = frozenset({"or", "or_"})       # null when an operand is null, even with a true one


@dataclass(frozen=True)
class AllOf:
    """Every part holds."""

    parts: tuple[FilterTree, ...]
    kind = "and"


@dataclass(frozen=True)
class EitherOf:
    """At least one part holds."""

    parts: tuple[FilterTree, ...]
    kind = "or"


FilterTree = Union[Conjunct, AllOf, EitherOf]


class _NotATree(Exception):
    pass


def tree_from_expression(expr: pc.Expression, schema: pa.Schema) -> FilterTree | None:
    """``expr`` as a :data:`FilterTree` of the columns of ``schema``, or None when some part of it
    is not an AND, a Kleene OR or a per-column conjunct."""
    try:
        node = ai.decode(expr)
    except ai.IntrospectionError:
        return None
    try:
        return _tree(node, schema, 0)
    except _NotATree:
        return None


def _tree(node: ai.XNode, schema: pa.Schema, depth: int) -> FilterTree:
    if depth > MAX_DEPTH or not isinstance(node, ai.XCall) or node.name in _PLAIN_OR:
        raise _NotATree
    if node.name in _AND:
        return AllOf(tuple(_tree(a, schema, depth + 1) for a in node.args))
    if node.name == "or_kleene":
        _check_no_plain_or(node, depth)
        leaf = _x_atom(node, schema)            # an OR on one column: one conjunct
        if leaf is not None:
            return leaf
        return EitherOf(tuple(_tree(a, schema, depth + 1) for a in node.args))
    _check_no_plain_or(node, depth)
    leaf = _x_atom(node, schema)
    if leaf is None:
        raise _NotATree
    return leaf


def _check_no_plain_or(node: ai.XNode, depth: int) -> None:
    """A conjunct read from ``node`` treats a plain OR as Kleene's: refuse it."""
    if depth > MAX_DEPTH:
        raise _NotATree
    if isinstance(node, ai.XCall):
        if node.name in _PLAIN_OR:
            raise _NotATree
        for a in node.args:
            _check_no_plain_or(a, depth + 1)


__all__ = ["AllOf", "EitherOf", "FilterTree", "tree_from_expression"]
