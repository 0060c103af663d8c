"""Predicates: SQL filter strings and pyarrow Expressions -> exact pyarrow filters + pruning.

pyiceberg-style layering: :func:`parse_filter` (sqlglot, pylance's dialect) gives an
unbound tree, :func:`bind` resolves it against an Arrow schema, and one visitor per target
turns the bound tree into a ``pc.Expression`` (:func:`to_arrow`), a batch evaluator for the
residual, or per-column conjuncts for pruning.  :func:`compile_filter` does all of it, giving the
one filter model (:class:`CompiledFilter`) the scan, the index searches and the counts use; a
pyarrow Expression is read into the same bound model (:mod:`.from_arrow`), and engine translators
build bound trees themselves (:func:`compile_bound`).
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import LanceDuckError
from .binding import bind, coerce_value
from .bound import BoundExpr, referenced_columns
from .compiled import CompiledFilter, compile_bound, compile_expression, compile_filter
from .expressions import Expr
from .parser import LanceFilterDialect, parse_filter as _parse_unbound
from .pruning import AnyOf, ColumnPredicate, ColumnStats, Conjunct, conjuncts_from_bound, may_match
from .to_arrow import evaluate, split, to_expression


def parse_filter(sql: str, schema: pa.Schema | None = None) -> Expr | CompiledFilter:
    """Parse a filter. Without ``schema``: the unbound :class:`Expr`; with it: a :class:`CompiledFilter`."""
    if schema is None:
        return _parse_unbound(sql)
    return compile_filter(sql, schema)


def to_arrow(bound: BoundExpr) -> pc.Expression:
    """The exact pyarrow Expression of a bound filter (raises if part needs the residual)."""
    return to_expression(bound)


def extract_conjuncts(filter: BoundExpr | pc.Expression, schema: pa.Schema | None = None) -> list[Conjunct]:
    """Simple per-column conjuncts (for pruning) of a bound filter or a pyarrow Expression (read
    as a scan reads it: in pylance's meaning, :func:`compile_filter`; [] when it cannot be)."""
    if isinstance(filter, pc.Expression):
        if schema is None:
            return []
        try:
            return list(compile_filter(filter, schema).conjuncts)
        except LanceDuckError:
            return []
    return conjuncts_from_bound(filter)


__all__ = [
    "AnyOf", "BoundExpr", "ColumnPredicate", "ColumnStats", "CompiledFilter", "Expr",
    "LanceFilterDialect", "bind", "coerce_value", "compile_bound", "compile_expression", "compile_filter", "evaluate", "extract_conjuncts",
    "may_match", "parse_filter", "referenced_columns", "split", "to_arrow",
]
