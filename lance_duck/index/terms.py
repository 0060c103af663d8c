"""What a filter asks an index reader, as the readers see it, and their shared limits.

A reader is given *terms*: every term must hold, and a term is a few predicates on the indexed
column of which one must hold (``predicate.pruning``'s ``ColumnPredicate`` has this shape). A
reader that cannot answer raises :class:`Unsupported` and the caller scans instead.
"""
from __future__ import annotations

from typing import Any, Protocol, Sequence


class ColumnPred(Protocol):
    """One predicate on an indexed column: ``op`` (``==``, ``<``, ``in``, ``is_null``, ...) and its
    operand (a ``pa.Scalar``, a ``pa.Array`` for ``in``, None for ``is_null``)."""

    @property
    def op(self) -> str: ...
    @property
    def value(self) -> Any: ...


#: the predicates of one term, of which one must hold
Term = Sequence[ColumnPred]
#: terms that must all hold
Terms = Sequence[Term]

# Zone-based readers (zone maps, bloom filters, n-grams) are used only when they keep at most this
# share of the zones / rows: a predicate that keeps most of them is cheaper to scan.
MAX_ZONE_SHARE = 1 / 2


class Unsupported(Exception):
    """This index cannot answer this predicate (the caller scans normally)."""
