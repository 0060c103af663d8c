"""``compile_filter``: one entry point from a user/engine filter to what the scanner needs."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from . import arrow_introspect as ai
from ._deep import call_deep
from .binding import bind
from .bound import BoundExpr, referenced_columns
from .parser import parse_filter
from .pruning import Conjunct, conjuncts_from_bound, conjuncts_from_expression
from .to_arrow import make_residual, split

Residual = Callable[[pa.RecordBatch], pa.BooleanArray]


@dataclass(frozen=True)
class CompiledFilter:
    """A filter ready for a scan.

    ``expression`` (exact, SQL null semantics) is applied first, e.g. ``batch.filter(expression)``;
    then ``residual(batch)`` gives the keep-mask for what pyarrow Expressions cannot express.
    ``columns`` are the top-level columns both need; ``conjuncts`` may be used to skip data.
    """

    expression: pc.Expression | None
    residual: Residual | None
    columns: frozenset[str]
    conjuncts: tuple[Conjunct, ...] = ()
    bound: BoundExpr | None = None
    source: str | pc.Expression | None = None
    residual_columns: frozenset[str] = field(default=frozenset())

    @property
    def is_empty(self) -> bool:
        return self.expression is None and self.residual is None

    def to_arrow(self) -> pc.Expression | None:
        return self.expression

    def apply(self, batch: pa.RecordBatch | pa.Table) -> pa.RecordBatch | pa.Table:
        """``batch`` filtered exactly (expression, then residual)."""
        if self.expression is not None:
            batch = batch.filter(self.expression)
        if self.residual is not None:
            batch = batch.filter(self.residual(batch))
        return batch


def _expression_columns(expr: pc.Expression, schema: pa.Schema) -> frozenset[str]:
    try:
        tree = ai.decode(expr)
    except ai.IntrospectionError:
        return frozenset(schema.names)  # unknown: read everything, still exact
    names: set[str] = set()
    stack = [tree]
    while stack:
        n = stack.pop()
        if isinstance(n, ai.XField):
            names.add(n.path[0])
        elif isinstance(n, ai.XCall):
            stack.extend(n.args)
    missing = sorted(names - set(schema.names))
    if missing:
        raise InvalidArgumentError(f"filter refers to unknown column(s) {missing}: {expr}")
    return frozenset(names)


def compile_filter(filter: str | pc.Expression | None, schema: pa.Schema) -> CompiledFilter:
    """Compile a SQL string (pylance's dialect) or a pyarrow Expression against ``schema``."""
    if filter is None:
        return CompiledFilter(None, None, frozenset())
    if isinstance(filter, pc.Expression):
        return CompiledFilter(filter, None, _expression_columns(filter, schema),
                              tuple(conjuncts_from_expression(filter, schema)), None, filter)
    if not isinstance(filter, str):
        raise InvalidArgumentError(
            f"filter must be a SQL string or a pyarrow.compute.Expression, got {type(filter).__name__}")
    text = filter
    return call_deep(lambda: _compile_sql(text, schema), f"filter {_short(text)}")


def _short(text: str) -> str:
    return repr(text) if len(text) <= 200 else repr(text[:200]) + "..."


def _bind_text(text: str, schema: pa.Schema) -> BoundExpr:
    """Parse and bind; bind errors quote the user's filter."""
    unbound = parse_filter(text)
    try:
        return bind(unbound, schema)
    except InvalidArgumentError as e:
        msg = str(e)
        if repr(text) in msg:
            raise
        raise type(e)(f"{msg}; filter: {_short(text)}") from None


def _compile_sql(filter: str, schema: pa.Schema) -> CompiledFilter:
    bound = _bind_text(filter, schema)
    if not pa.types.is_boolean(bound.type) and bound.type != pa.null():
        raise InvalidArgumentError(f"filter {_short(filter)} is {bound.type}, not boolean")
    expression, rest = split(bound)
    residual = make_residual(rest)
    res_cols = frozenset(c for r in rest for c in referenced_columns(r))
    return CompiledFilter(expression, residual, frozenset(referenced_columns(bound)),
                          tuple(conjuncts_from_bound(bound)), bound, filter, res_cols)


def compile_expression(sql: str, schema: pa.Schema) -> pc.Expression:
    """A SQL value expression (a projected column such as ``lower(name)``) as a pyarrow Expression."""
    from ..errors import UnsupportedFeatureError
    from .kernels import NotExpressible
    from .to_arrow import to_expression

    bound = call_deep(lambda: _bind_text(sql, schema), f"expression {_short(sql)}")
    try:
        return to_expression(bound)
    except NotExpressible:
        raise UnsupportedFeatureError(f"expression {sql!r} has no pyarrow form (list membership)") from None
