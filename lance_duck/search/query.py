"""Full-text query objects with pylance's names and arguments (``lance.query``), re-exported as
``lance_duck.query``. A plain string is a :class:`MatchQuery` on every INVERTED-indexed column
(a :class:`MultiMatchQuery` when there are several); ``{"query": ..., "columns": [...]}`` names
the columns.

Example:
    >>> from lance_duck.query import BooleanQuery, MatchQuery, Occur
    >>> q = BooleanQuery([(Occur.MUST, MatchQuery("fox", "text")),
    ...                   (Occur.MUST_NOT, MatchQuery("lazy", "text"))])
"""
from __future__ import annotations

from enum import Enum
from typing import Any, Callable

from ..errors import InvalidArgumentError


class FullTextOperator(str, Enum):
    """How a match query's terms combine: any term (OR) or all of them (AND)."""

    AND = "AND"
    OR = "OR"


class Occur(str, Enum):
    """A boolean clause's role."""

    SHOULD = "SHOULD"
    MUST = "MUST"
    MUST_NOT = "MUST_NOT"


class FullTextQuery:
    """Base class of the query objects."""


def _op(operator: Any) -> str:
    v = getattr(operator, "value", operator)
    if not isinstance(v, str) or v.upper() not in ("AND", "OR"):
        raise InvalidArgumentError(f"full text operator must be AND or OR, got {operator!r}")
    return v.upper()


def _text(query: Any, what: str) -> str:
    if not isinstance(query, str):
        raise InvalidArgumentError(f"{what}: the query must be a string, got {type(query).__name__}")
    if not query.strip():
        raise InvalidArgumentError(f"{what}: the query is empty")
    return query


class MatchQuery(FullTextQuery):
    """Rows holding the query's terms in ``column`` (any term with OR, all with AND), BM25-scored.

    Args:
        query: the text (tokenized as the column's index was built).
        column: the indexed column.
        boost: multiplies the score.
        fuzziness: each query term also matches the index's terms within this many edits
            (Levenshtein; 0 or None: exact, as pylance 14.0.2).
        max_expansions: at most this many matching terms per query term (the first in byte order).
        operator: ``"OR"`` (default) or ``"AND"`` (or :class:`FullTextOperator`).
        prefix_length: characters at the start a fuzzy match keeps unchanged.

    Example:
        >>> MatchQuery("quick fox", "text", operator="AND").operator
        'AND'
    """

    def __init__(self, query: str, column: str, *, boost: float = 1.0, fuzziness: int | None = 0,
                 max_expansions: int = 50, operator: Any = FullTextOperator.OR, prefix_length: int = 0):
        self.query = _text(query, "MatchQuery")
        self.column = column
        self.boost = float(boost)
        if fuzziness is not None and (isinstance(fuzziness, bool) or not isinstance(fuzziness, int) or fuzziness < 0):
            raise InvalidArgumentError(f"MatchQuery fuzziness must be a non-negative integer, got {fuzziness!r}")
        self.fuzziness = fuzziness
        self.max_expansions = max_expansions
        self.operator = _op(operator)
        self.prefix_length = prefix_length


class PhraseQuery(FullTextQuery):
    """Rows holding the query's terms in order (at most ``slop`` extra positions between them);
    needs an index built with positions.

    Example:
        >>> PhraseQuery("lazy dog", "text", slop=1).slop
        1
    """

    def __init__(self, query: str, column: str, *, slop: int = 0):
        self.query = _text(query, "PhraseQuery")
        self.column = column
        if not isinstance(slop, int) or slop < 0:
            raise InvalidArgumentError(f"PhraseQuery slop must be a non-negative integer, got {slop!r}")
        self.slop = slop


class BoostQuery(FullTextQuery):
    """The ``positive`` query's rows, scored as pylance: the positive score minus
    ``negative_boost`` times the ``negative`` query's score (0 where it does not match).

    Example:
        >>> BoostQuery(MatchQuery("fox", "text"), MatchQuery("dog", "text"), negative_boost=0.2).negative_boost
        0.2
    """

    def __init__(self, positive: FullTextQuery, negative: FullTextQuery, *, negative_boost: float = 0.5):
        self.positive = _check(positive, "BoostQuery positive")
        self.negative = _check(negative, "BoostQuery negative")
        self.negative_boost = float(negative_boost)


class MultiMatchQuery(FullTextQuery):
    """A :class:`MatchQuery` on each of ``columns``; a row scores its best column's score (each
    column's times its boost).

    Example:
        >>> MultiMatchQuery("fox", ["title", "body"], boosts=[2.0, 1.0]).columns
        ['title', 'body']
    """

    def __init__(self, query: str, columns: list[str], *, boosts: list[float] | None = None,
                 operator: Any = FullTextOperator.OR):
        self.query = _text(query, "MultiMatchQuery")
        if not columns:
            raise InvalidArgumentError("MultiMatchQuery needs at least one column")
        self.columns = list(columns)
        if boosts is not None and len(boosts) != len(self.columns):
            raise InvalidArgumentError("MultiMatchQuery: one boost per column")
        self.boosts = None if boosts is None else [float(b) for b in boosts]
        self.operator = _op(operator)


class BooleanQuery(FullTextQuery):
    """Clauses ``(Occur, query)``: rows matching every MUST (or, without MUST, some SHOULD) and no
    MUST_NOT; the score is the sum of the matching MUST and SHOULD clauses' scores.

    Example:
        >>> len(BooleanQuery([(Occur.MUST, MatchQuery("fox", "text"))]).queries)
        1
    """

    def __init__(self, queries: list[tuple[Any, FullTextQuery]]):
        out = []
        for occur, q in queries:
            v = getattr(occur, "value", occur)
            if v not in ("SHOULD", "MUST", "MUST_NOT"):
                raise InvalidArgumentError(f"BooleanQuery: unknown occur {occur!r}")
            out.append((Occur(v), _check(q, "BooleanQuery clause")))
        if not out:
            raise InvalidArgumentError("BooleanQuery needs at least one clause")
        self.queries = out


def _check(q: Any, what: str) -> FullTextQuery:
    if not isinstance(q, FullTextQuery):
        raise InvalidArgumentError(f"{what} must be a lance_duck.query object, got {type(q).__name__}")
    return q


def to_query(value: Any, indexed_columns: Callable[[], list[str]]) -> FullTextQuery:
    """``full_text_query`` (string, dict or query object) as a query object."""
    if isinstance(value, FullTextQuery):
        return value
    if isinstance(value, str):
        text, columns = value, None
    elif isinstance(value, dict):
        unknown = set(value) - {"query", "columns"}
        if unknown or "query" not in value:
            raise InvalidArgumentError("full_text_query dict takes 'query' and optional 'columns', got "
                                       f"{sorted(value)}")
        text, columns = value["query"], value.get("columns")
        if isinstance(columns, str):
            columns = [columns]
    else:
        raise InvalidArgumentError(f"full_text_query must be a string, a dict or a lance_duck.query object, "
                                   f"got {type(value).__name__}")
    text = _text(text, "full_text_query")
    if not columns:
        columns = indexed_columns()
        if not columns:
            raise InvalidArgumentError("full_text_query: the dataset has no INVERTED index")
    if len(columns) == 1:
        return MatchQuery(text, columns[0])
    return MultiMatchQuery(text, list(columns))
