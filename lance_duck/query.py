"""Full-text query objects with pylance's names (``lance.query``): pass one as ``full_text_query``.

Example:
    >>> from lance_duck.query import MatchQuery, PhraseQuery, BooleanQuery, Occur
    >>> q = BooleanQuery([(Occur.MUST, MatchQuery("fox", "text")), (Occur.SHOULD, PhraseQuery("lazy dog", "text"))])
"""
from __future__ import annotations

from .search.query import (BooleanQuery, BoostQuery, FullTextOperator, FullTextQuery, MatchQuery,
                           MultiMatchQuery, Occur, PhraseQuery)

__all__ = ["BooleanQuery", "BoostQuery", "FullTextOperator", "FullTextQuery", "MatchQuery",
           "MultiMatchQuery", "Occur", "PhraseQuery"]
