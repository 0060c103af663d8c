"""The one filter model: :class:`CompiledFilter`, made once by :func:`compile_filter` from a SQL
string or a pyarrow Expression, carried to the scan, the index searches and the counts."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.acero as acero
import pyarrow.compute as pc

from ..encodings.bitmap import unpack_bits
from ..errors import InvalidArgumentError, UnsupportedFeatureError
from ._deep import call_deep
from . import float_order
from .binding import bind
from .bool_tree import FilterTree, tree_from_bound
from .bound import BAnd, BOpaque, BoundExpr, BRef, referenced_columns, walk
from .expressions import conjuncts as and_operands
from .from_arrow import Untranslatable, from_expression, from_lance_order
from .kernels import NotExpressible
from .long_filters import cached_plan, on_big_stack
from .parser import parse_filter
from .pruning import Conjunct, conjuncts_from_bound
from .to_arrow import make_residual, split, to_expression

Residual = Callable[[pa.RecordBatch], pa.BooleanArray]


@dataclass(frozen=True)
class CompiledFilter:
    """A filter ready for a scan, its index searches and its counts.

    ``expression`` (exact, SQL null semantics) is applied first; then ``residual(batch)`` gives
    the keep-mask for what pyarrow Expressions cannot express (:meth:`mask` does both).
    ``columns`` are the top-level columns both need, in the schema's order. ``bound`` is the whole filter in the bound
    model (:mod:`.bound`; None for an Expression that could not be read); ``conjuncts``, its
    per-column terms that must all hold, may be used to skip data, and ``conjuncts_complete``
    says the filter is exactly their AND.
    """

    expression: pc.Expression | None
    residual: Residual | None
    columns: tuple[str, ...]
    conjuncts: tuple[Conjunct, ...] = ()
    bound: BoundExpr | None = None
    source: str | pc.Expression | None = None
    residual_columns: frozenset[str] = field(default=frozenset())
    conjuncts_complete: bool = False

    @property
    def is_empty(self) -> bool:
        """No filter at all (every row passes)."""
        return self.expression is None and self.residual is None

    def to_arrow(self) -> pc.Expression | None:
        """The exact pyarrow Expression part (None: none)."""
        return self.expression

    def tree(self) -> FilterTree | None:
        """The whole filter as ANDs and ORs of per-column conjuncts (what exact indices count),
        or None when it is not one."""
        return None if self.bound is None else tree_from_bound(self.bound)

    def apply(self, batch: pa.RecordBatch | pa.Table) -> pa.RecordBatch | pa.Table:
        """``batch`` filtered exactly (expression, then residual)."""
        if self.expression is not None:
            batch = batch.filter(self.expression)
        if self.residual is not None:
            batch = batch.filter(self.residual(batch))
        return batch

    def mask(self, batch: pa.RecordBatch) -> np.ndarray:
        """Boolean numpy mask of the rows that pass (null -> dropped).

        A filter that cannot be evaluated on the rows' values (e.g. a failing cast) raises
        InvalidArgumentError naming the filter."""
        keep = np.ones(batch.num_rows, dtype=bool)
        try:
            if self.expression is not None:
                keep &= to_bool(evaluate_expression(batch, self.expression))
            if self.residual is not None:
                keep &= to_bool(self.residual(batch))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise InvalidArgumentError(f"filter {_shown(self.expression)} failed on the data: {exc}") from exc
        return keep

    def and_(self, other: CompiledFilter | None) -> CompiledFilter:
        """Both filters must pass."""
        if other is None or other.is_empty:
            return self
        if self.is_empty:
            return other
        a, b = self, other
        if a.expression is None or b.expression is None:
            expr = a.expression if b.expression is None else b.expression
        else:
            expr = a.expression & b.expression
        residual = a.residual if b.residual is None else b.residual
        if a.residual is not None and b.residual is not None:
            ra, rb = a.residual, b.residual

            def residual(batch: pa.RecordBatch) -> pa.BooleanArray:
                return pa.array(to_bool(ra(batch)) & to_bool(rb(batch)))
        bound = BAnd((a.bound, b.bound)) if a.bound is not None and b.bound is not None else None
        return CompiledFilter(expr, residual, tuple(dict.fromkeys(a.columns + b.columns)), a.conjuncts + b.conjuncts, bound, None,
                              a.residual_columns | b.residual_columns,
                              a.conjuncts_complete and b.conjuncts_complete)


def and_filters(a: CompiledFilter | None, b: CompiledFilter | None) -> CompiledFilter | None:
    """Both filters must pass (either may be None: no filter)."""
    if a is None or b is None:
        return a if b is None else b
    return a.and_(b)


def evaluate_expression(batch: pa.RecordBatch, expression: pc.Expression) -> pa.Array:
    """Evaluate one Expression on a batch (Acero project: ~10x cheaper than batch.filter); a long
    AND / OR chain in pieces (:mod:`.long_filters`: Arrow overflows its stack on it whole)."""
    pieces = cached_plan(expression)
    if pieces is not None:
        return pieces.evaluate(batch, _evaluate_whole)
    return _evaluate_whole(batch, expression)


def _evaluate_whole(batch: pa.RecordBatch, expression: pc.Expression) -> pa.Array:
    decl = acero.Declaration.from_sequence([
        acero.Declaration("table_source", acero.TableSourceNodeOptions(pa.Table.from_batches([batch]))),
        acero.Declaration("project", acero.ProjectNodeOptions([expression], ["v"])),
    ])
    col = decl.to_table(use_threads=False).column(0)
    return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)


def _shown(expression: pc.Expression | None) -> str:
    text = on_big_stack(lambda: str(expression))
    return text if len(text) <= 300 else text[:300] + "..."


def to_bool(values: pa.Array | pa.ChunkedArray | pa.Scalar | np.ndarray) -> np.ndarray:
    """A filter's result as a numpy keep-mask (null -> False)."""
    if isinstance(values, np.ndarray):
        return values.astype(bool, copy=False)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Scalar):
        raise InvalidArgumentError("filter did not evaluate to one value per row")
    if not pa.types.is_boolean(values.type):
        raise InvalidArgumentError(f"filter must be boolean, got {values.type}")
    return bool_mask(values)


def bool_mask(values: pa.Array) -> np.ndarray:
    """A boolean Arrow array as a writable numpy mask, null -> False: its bitmaps unpacked
    (``to_numpy`` of a boolean array converts bit by bit, ~6x slower)."""
    validity, data = values.buffers()[:2]
    n, offset = len(values), values.offset
    if data is None:                 # (a null-typed or empty array)
        return np.zeros(n, dtype=bool)
    out = unpack_bits(data, n, offset)
    if values.null_count:
        out &= unpack_bits(validity, n, offset)
    return out


def compile_filter(filter: str | pc.Expression | None, schema: pa.Schema) -> CompiledFilter:
    """Compile a SQL string (pylance's dialect) or a pyarrow Expression against ``schema``.

    Args:
        filter: the filter; None gives an empty filter.
        schema: the Arrow schema of the rows it runs on.

    Returns:
        The :class:`CompiledFilter`.

    Examples:
        >>> import lance_duck
        >>> from lance_duck.predicate import compile_filter
        >>> schema = lance_duck.dataset(lance_duck.sample_path()).schema
        >>> sorted(compile_filter("order_id < 2", schema).columns)
        ['order_id']
    """
    if filter is None:
        return CompiledFilter(None, None, ())
    if isinstance(filter, pc.Expression):
        return _compile_expression_filter(filter, schema)
    if not isinstance(filter, str):
        raise InvalidArgumentError(
            f"filter must be a SQL string or a pyarrow.compute.Expression, got {type(filter).__name__}")
    text = filter
    return call_deep(lambda: _compile_sql(text, schema), f"filter {_short(text)}")


def _compile_expression_filter(expr: pc.Expression, schema: pa.Schema) -> CompiledFilter:
    """A user's Expression in pylance's meaning: one comparing floats or holding an ``is_in`` is read
    in Lance's float order with SQL's ``IN`` (:func:`~.from_arrow.from_lance_order`) and compiled
    from the bound model as a SQL filter is;
    any other is evaluated as given (Arrow's meaning is pylance's there) and read into the bound
    model for the rest."""
    try:
        lance_bound = from_lance_order(expr, schema)
    except Untranslatable:
        if any(pa.types.is_floating(t) for t in _leaf_types(schema)):
            raise UnsupportedFeatureError(f"filter {_shown(expr)} cannot be read in Lance's float order "
                                          "(pylance's meaning of a float comparison)") from None
        return CompiledFilter(expr, None, tuple(schema.names), (), None, expr)  # read everything, still exact
    if lance_bound is not None:
        if not pa.types.is_boolean(lance_bound.type) and lance_bound.type != pa.null():
            raise InvalidArgumentError(f"filter {_shown(expr)} is {lance_bound.type}, not boolean")
        return _compiled_bound(lance_bound, schema, expr)
    return _arrow_filter(expr, schema)


def compile_arrow_expression(expr: pc.Expression, schema: pa.Schema) -> CompiledFilter:
    """An Expression an engine built in Arrow's meaning (DuckDB 2's own pyarrow translation of the
    predicates its pyarrow-dataset source pushes: none a NaN could satisfy), evaluated as given.

    Args:
        expr: the Expression.
        schema: the Arrow schema of the rows it runs on.

    Returns:
        The :class:`CompiledFilter`.

    Examples:
        >>> import pyarrow as pa, pyarrow.compute as pc
        >>> from lance_duck.predicate.compiled import compile_arrow_expression
        >>> f = compile_arrow_expression(pc.field("x") < 0.5, pa.schema([("x", pa.float64())]))
        >>> f.apply(pa.table({"x": [0.1, 0.9, float("nan")]})).column(0).to_pylist()
        [0.1]
    """
    return _arrow_filter(expr, schema)


def _arrow_filter(expr: pc.Expression, schema: pa.Schema) -> CompiledFilter:
    """An Expression evaluated as given (Arrow's meaning), read into the bound model for the rest."""
    try:
        bound = from_expression(expr, schema)
    except Untranslatable:
        return CompiledFilter(expr, None, tuple(schema.names), (), None, expr)  # read everything, still exact
    return _made(expr, None, bound, expr, frozenset(), schema)


def compile_duckdb_expression(expr: pc.Expression, schema: pa.Schema) -> CompiledFilter:
    """An Expression DuckDB 1.x pushed into a dataset's scan, compiled in DuckDB's meaning: floats in
    its total order (NaN equals NaN and sorts above every number, ``-0.0 = 0.0``), where Arrow's
    kernels would compare a NaN false (:func:`~.from_arrow.from_expression` with ``total_order``).

    Args:
        expr: the pushed Expression (DuckDB's forms: ``col op literal``, ``is_in``, ``is_nan``,
            ``is_null`` / ``is_valid``, ``AND`` / ``OR``, boolean literals).
        schema: the Arrow schema of the rows it runs on.

    Returns:
        The :class:`CompiledFilter`; without a float column in it, the Expression as given (both
        meanings agree there).

    Raises:
        UnsupportedFeatureError: a part lance_duck cannot read touches a float column (its meaning
            would be Arrow's, not DuckDB's).

    Examples:
        >>> import pyarrow as pa, pyarrow.compute as pc
        >>> from lance_duck.predicate.compiled import compile_duckdb_expression
        >>> f = compile_duckdb_expression(pc.field("x") > 0.5, pa.schema([("x", pa.float64())]))
        >>> f.apply(pa.table({"x": [0.1, 0.9, float("nan")]})).column(0).to_pylist()
        [0.9, nan]
    """
    try:
        bound = from_expression(expr, schema, total_order=True)
    except Untranslatable:
        if not any(pa.types.is_floating(t) for t in _leaf_types(schema)):
            return _arrow_filter(expr, schema)
        raise UnsupportedFeatureError(f"DuckDB's pushed filter {_shown(expr)} cannot be read in DuckDB's "
                                      "meaning (its floats ordered NaN last)") from None
    nodes = list(walk(bound))
    if not any(isinstance(n, BRef) and pa.types.is_floating(n.type) for n in nodes):
        return _arrow_filter(expr, schema)     # no float: Arrow's meaning is DuckDB's
    if any(isinstance(n, BOpaque) for n in nodes):
        raise UnsupportedFeatureError(f"DuckDB's pushed filter {_shown(expr)} has a part lance_duck does "
                                      "not read in DuckDB's meaning (its floats ordered NaN last)")
    return _compiled_bound(bound, schema, None)


def _leaf_types(schema: pa.Schema) -> list[pa.DataType]:
    out, stack = [], [f.type for f in schema]
    while stack:
        t = stack.pop()
        if pa.types.is_struct(t):
            stack.extend(t.field(i).type for i in range(t.num_fields))
        else:
            out.append(t)
    return out


def _made(expression: pc.Expression | None, residual: Residual | None, bound: BoundExpr,
          source: str | pc.Expression | None, residual_columns: frozenset[str], schema: pa.Schema) -> CompiledFilter:
    conj = tuple(conjuncts_from_bound(bound))
    # complete: every top-level AND operand became a conjunct (in SQL, list membership,
    # evaluated on batches, becomes has_any / has_all conjuncts too)
    complete = bool(conj) and len(and_operands(bound)) == len(conj)
    used = referenced_columns(bound)
    columns = tuple(n for n in schema.names if n in used)
    return CompiledFilter(expression, residual, columns, conj, bound, source,
                          residual_columns, complete)


def _short(text: str) -> str:
    return repr(text) if len(text) <= 200 else repr(text[:200]) + "..."


def _bind_text(text: str, schema: pa.Schema, exact_time: bool = False) -> BoundExpr:
    """Parse and bind (``exact_time``: see :func:`~.binding.bind`); bind errors quote the user's filter."""
    unbound = parse_filter(text)
    try:
        return bind(unbound, schema, exact_time)
    except InvalidArgumentError as e:
        msg = str(e)
        if repr(text) in msg:
            raise
        raise type(e)(f"{msg}; filter: {_short(text)}") from None


def compile_duckdb_sql(filter: str, schema: pa.Schema) -> CompiledFilter:
    """A SQL filter (pylance's dialect) an engine wrote for DuckDB, compiled in DuckDB's meaning of
    floats (every NaN equal to NaN and above every number, ``-0.0 = 0.0``), where a user's SQL
    filter means Lance's order (:func:`compile_filter`: a NaN with its sign bit set below -inf).

    Args:
        filter: the SQL filter.
        schema: the Arrow schema of the rows it runs on.

    Returns:
        The :class:`CompiledFilter`.

    Examples:
        >>> import numpy as np, pyarrow as pa
        >>> from lance_duck.predicate.compiled import compile_duckdb_sql
        >>> x = pa.array(np.array([0.1, 0.9, -np.nan]))
        >>> compile_duckdb_sql("x > 0.5", pa.schema([("x", pa.float64())])).apply(pa.table({"x": x})).num_rows
        2
    """
    def run() -> CompiledFilter:
        bound = _bind_text(filter, schema, exact_time=True)
        if not pa.types.is_boolean(bound.type) and bound.type != pa.null():
            raise InvalidArgumentError(f"filter {_short(filter)} is {bound.type}, not boolean")
        return _compiled_bound(bound, schema, filter)
    return call_deep(run, f"filter {_short(filter)}")


def _compile_sql(filter: str, schema: pa.Schema) -> CompiledFilter:
    """A user's SQL filter in pylance's meaning: floats in Lance's order (:mod:`.float_order`)."""
    bound = _bind_text(filter, schema)
    if not pa.types.is_boolean(bound.type) and bound.type != pa.null():
        raise InvalidArgumentError(f"filter {_short(filter)} is {bound.type}, not boolean")
    return _compiled_bound(float_order.rewrite(bound), schema, filter)


def compile_bound(bound: BoundExpr, schema: pa.Schema) -> CompiledFilter:
    """A filter built in the bound model (by an engine's translator: DuckDB's ``WHERE``) compiled
    as a SQL filter is: the exact Expression of what has one, the residual for the rest.

    Args:
        bound: the filter's bound tree (:mod:`lance_duck.predicate.bound`), over ``schema``.
        schema: the Arrow schema of the rows it runs on.

    Returns:
        The :class:`CompiledFilter`.

    Examples:
        >>> import pyarrow as pa
        >>> import lance_duck
        >>> from lance_duck.predicate import compile_bound
        >>> from lance_duck.predicate.bound import BCompare, BLit, BRef
        >>> schema = lance_duck.dataset(lance_duck.sample_path()).schema
        >>> f = compile_bound(BCompare("<", BRef(("order_id",), pa.int64()), BLit(pa.scalar(2))), schema)
        >>> f.columns
        ('order_id',)
    """
    return call_deep(lambda: _compiled_bound(bound, schema, None), "filter")


def _compiled_bound(bound: BoundExpr, schema: pa.Schema, source: str | pc.Expression | None) -> CompiledFilter:
    expression, rest = split(bound)
    residual = make_residual(rest)
    res_cols = frozenset(c for r in rest for c in referenced_columns(r))
    return _made(expression, residual, bound, source, res_cols, schema)


def compile_expression(sql: str, schema: pa.Schema) -> pc.Expression:
    """A SQL value expression (a projected column such as ``lower(name)``) as a pyarrow Expression."""
    bound = call_deep(lambda: _bind_text(sql, schema), f"expression {_short(sql)}")
    try:
        return to_expression(bound)
    except NotExpressible:
        raise UnsupportedFeatureError(f"expression {sql!r} has no pyarrow form (list membership)") from None
