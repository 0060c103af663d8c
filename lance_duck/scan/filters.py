"""Binding a scan filter to a dataset: the exact pyarrow Expression, its columns, a residual.

A filter is ``None``, a SQL string (compiled by :mod:`lance_duck.predicate`) or a
``pyarrow.compute.Expression`` (DuckDB's pushed filters). Whatever the source, the scan
evaluates the expression *exactly* (SQL three-valued logic: a null result drops the row),
because DuckDB does not re-check what it pushed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.acero as acero
import pyarrow.compute as pc

from .. import _state
from ..errors import InvalidArgumentError, UnsupportedFeatureError
from ..predicate.long_filters import cached_plan, on_big_stack

ROW_ID = "_rowid"
ROW_ADDR = "_rowaddr"
ROW_CREATED = "_row_created_at_version"
ROW_UPDATED = "_row_last_updated_at_version"
#: columns every scan can return and filter on (uint64), as pylance's scanner offers them
VIRTUAL_COLUMNS = (ROW_ID, ROW_ADDR, ROW_CREATED, ROW_UPDATED)


@dataclass(frozen=True)
class BoundFilter:
    """A filter ready to run on batches holding ``columns`` (top-level names)."""

    expression: pc.Expression | None
    columns: tuple[str, ...]
    residual: Callable[[pa.RecordBatch], pa.Array | np.ndarray] | None = None
    conjuncts: tuple = ()      # per-column terms that must all hold (predicate.pruning), for indices
    conjuncts_complete: bool = False   # the filter is exactly the AND of ``conjuncts``

    def mask(self, batch: pa.RecordBatch) -> np.ndarray:
        """Boolean numpy mask of the rows that pass (null -> dropped).

        A filter that cannot be evaluated on the rows' values (e.g. a failing cast) raises
        InvalidArgumentError naming the filter."""
        keep = np.ones(batch.num_rows, dtype=bool)
        try:
            if self.expression is not None:
                keep &= _to_bool(evaluate(batch, self.expression))
            if self.residual is not None:
                keep &= _to_bool(self.residual(batch))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise InvalidArgumentError(f"filter {_shown(self.expression)} failed on the data: {exc}") from exc
        return keep


def evaluate(batch: pa.RecordBatch, expression: pc.Expression) -> pa.Array:
    """Evaluate one Expression on a batch (Acero project: ~10x cheaper than batch.filter); a long
    AND / OR chain in pieces (:mod:`lance_duck.predicate.long_filters`: Arrow overflows its stack
    on it whole)."""
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


def _to_bool(values) -> np.ndarray:
    if isinstance(values, np.ndarray):
        return values.astype(bool, copy=False)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Scalar):
        raise InvalidArgumentError("filter did not evaluate to one value per row")
    if not pa.types.is_boolean(values.type):
        raise InvalidArgumentError(f"filter must be boolean, got {values.type}")
    return values.fill_null(False).to_numpy(zero_copy_only=False)


def bind_filter(filter, schema: pa.Schema) -> BoundFilter | None:
    """Bind a user or engine filter to ``schema`` (the dataset's Arrow schema).

    The last bindings are remembered per schema object (``lance_duck.configure(filter_cache_entries=...)``) (an engine
    pushes the same filter to every scan of a query it repeats; binding costs ~0.1 ms)."""
    if filter is None:
        return None
    if isinstance(filter, pc.Expression):
        # printing, comparing and decoding an Expression recurse in C++ along its depth
        return on_big_stack(lambda: _memo_bind(filter, schema))
    return _memo_bind(filter, schema)


def _memo_bind(filter, schema: pa.Schema) -> BoundFilter | None:
    key = (id(schema), filter if isinstance(filter, str) else str(filter))
    seen = _BOUND_MEMO.get(key, ())
    for f, sch, bound in seen:
        if sch is schema and (f == filter if isinstance(filter, str) else
                              isinstance(f, pc.Expression) and f.equals(filter)):
            return bound
    bound = _bind(filter, schema)
    _BOUND_MEMO.put(key, (*seen, (filter, schema, bound)))
    return bound


#: filter bindings remembered (keyed by schema identity and the filter's text; an Expression
#: is matched with ``equals``, which compares literal types too)
_BOUND_MEMO = _state.cache("filter_bindings")


def _bind(filter, schema: pa.Schema) -> BoundFilter | None:
    if isinstance(filter, str):
        return _bind_sql(filter, schema)
    if isinstance(filter, pc.Expression):
        compiled = _compile(filter, schema)
        if compiled is not None:
            return compiled
        return BoundFilter(filter, expression_columns(filter, schema))
    raise InvalidArgumentError(f"filter must be a SQL string or a pyarrow Expression, got {type(filter).__name__}")


def _bind_sql(sql: str, schema: pa.Schema) -> BoundFilter | None:
    compiled = _compile(sql, schema)
    if compiled is None:
        raise UnsupportedFeatureError("SQL string filters need lance_duck.predicate.compile_filter")
    return compiled


def _compile(filter, schema: pa.Schema) -> BoundFilter | None:
    """Through lance_duck.predicate when it is available (None when it is not)."""
    try:
        from ..predicate import compile_filter  # type: ignore[attr-defined]
    except ImportError:
        return None
    c = compile_filter(filter, _with_virtual(schema))
    if c is None:
        return None
    expr = getattr(c, "expression", None)
    residual = getattr(c, "residual", None)
    if expr is None and residual is None:
        return None
    cols = tuple(getattr(c, "columns", ()) or ())
    if not cols and expr is not None:
        cols = expression_columns(expr, schema)
    conj = tuple(getattr(c, "conjuncts", ()) or ())
    return BoundFilter(expr, tuple(_top_level(cols)), residual, conj, _complete(c, conj))


def _complete(c, conj: tuple) -> bool:
    """A filter whose every top-level AND operand became a conjunct (nothing left over; in SQL,
    list membership, evaluated on batches, becomes has_any / has_all conjuncts too)."""
    bound = getattr(c, "bound", None)
    if not conj:
        return False
    if bound is None:
        source = getattr(c, "source", None)
        if not isinstance(source, pc.Expression):
            return False
        from ..predicate.pruning import expression_is_conjuncts
        return expression_is_conjuncts(source, len(conj))
    from ..predicate.expressions import conjuncts as and_operands
    return len(and_operands(bound)) == len(conj)


def _top_level(cols: Sequence) -> list[str]:
    out: list[str] = []
    for c in cols:
        name = c[0] if isinstance(c, (tuple, list)) else str(c)
        if name not in out:
            out.append(name)
    return out


def _with_virtual(schema: pa.Schema) -> pa.Schema:
    extra = [pa.field(n, pa.uint64()) for n in VIRTUAL_COLUMNS if n not in schema.names]
    return pa.schema(list(schema) + extra, metadata=schema.metadata)


def expression_columns(expr: pc.Expression, schema: pa.Schema) -> tuple[str, ...]:
    """Top-level columns an Expression references (exact, by trial binding).

    pyarrow has no public walker, so candidates are the names that occur in the
    Expression's text; each is then confirmed by binding without it.
    """
    full = _with_virtual(schema)
    text = str(expr)
    cands = [f for f in full if f.name in text]
    if not _binds(expr, cands):
        try:
            _bind_or_raise(expr, list(full))
        except pa.ArrowException as e:  # the filter names something the schema lacks
            raise InvalidArgumentError(f"filter {text} does not match the dataset schema: {e}") from e
        cands = list(full)
    needed = [f for f in cands if not _binds(expr, [g for g in cands if g is not f])]
    return tuple(f.name for f in needed)


def _binds(expr: pc.Expression, fields: list[pa.Field]) -> bool:
    try:
        _bind_or_raise(expr, fields)
        return True
    except pa.ArrowException:
        return False


def _bind_or_raise(expr: pc.Expression, fields: list[pa.Field]) -> None:
    empty = pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in fields], schema=pa.schema(fields))
    evaluate(empty, expr)


def and_filters(a: BoundFilter | None, b: BoundFilter | None) -> BoundFilter | None:
    """Both filters must pass."""
    if a is None or b is None:
        return a if b is None else b
    if a.expression is None or b.expression is None:
        expr = a.expression if b.expression is None else b.expression
    else:
        expr = a.expression & b.expression
    residual = a.residual if b.residual is None else b.residual
    if a.residual is not None and b.residual is not None:
        ra, rb = a.residual, b.residual
        residual = lambda batch: _to_bool(ra(batch)) & _to_bool(rb(batch))  # noqa: E731
    cols = tuple(dict.fromkeys(a.columns + b.columns))
    return BoundFilter(expr, cols, residual, a.conjuncts + b.conjuncts,
                       a.conjuncts_complete and b.conjuncts_complete)
