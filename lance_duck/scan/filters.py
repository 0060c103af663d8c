"""Binding a scan filter to a dataset: :func:`bind_filter` gives the one filter model,
:class:`~lance_duck.predicate.CompiledFilter`, over the dataset's columns and its virtual ones.

A filter is ``None``, a SQL string or a ``pyarrow.compute.Expression`` (DuckDB's pushed filters),
compiled by :func:`lance_duck.predicate.compile_filter`, or a ``CompiledFilter`` an engine's
translator built (used as it is). Whatever the source, the scan evaluates
it *exactly* (SQL three-valued logic: a null result drops the row), because DuckDB does not
re-check what it pushed.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from .. import _state
from ..errors import InvalidArgumentError, LanceDuckError
from ..predicate.compiled import CompiledFilter, and_filters, compile_arrow_expression, compile_duckdb_expression, \
    compile_filter
from ..predicate.compiled import evaluate_expression as evaluate
from ..predicate.long_filters import cached_plan, on_big_stack

#: one remembered binding: the filter as given, the schema object, the result
_Bound = tuple[Any, pa.Schema, "CompiledFilter | None"]

ROW_ID = "_rowid"
ROW_ADDR = "_rowaddr"
ROW_CREATED = "_row_created_at_version"
ROW_UPDATED = "_row_last_updated_at_version"
#: columns every scan can return and filter on (uint64), as pylance's scanner offers them
VIRTUAL_COLUMNS = (ROW_ID, ROW_ADDR, ROW_CREATED, ROW_UPDATED)


def bind_filter(filter: Any, schema: pa.Schema) -> CompiledFilter | None:
    """Bind a user or engine filter to ``schema`` (the dataset's Arrow schema).

    The last bindings are remembered per schema object (``lance_duck.configure(filter_cache_entries=...)``) (an engine
    pushes the same filter to every scan of a query it repeats; binding costs ~0.1 ms)."""
    if filter is None:
        return None
    if isinstance(filter, CompiledFilter):      # compiled by an engine's translator (the same model)
        return None if filter.is_empty else filter
    if isinstance(filter, pc.Expression):
        known = _shallow_hit(filter, schema)
        if known is not None:
            return known[0]
        # printing, comparing and decoding an Expression recurse in C++ along its depth: first
        # seen, it is bound on the big-stack worker thread
        return on_big_stack(lambda: _bind_expression(filter, schema))
    return _memo_bind(filter, schema)


def bind_duckdb_expression(filter: pc.Expression, schema: pa.Schema) -> CompiledFilter | None:
    """Bind an Expression DuckDB 1.x pushed into a scan to ``schema`` in DuckDB's meaning (floats in
    its total order: :func:`~lance_duck.predicate.compiled.compile_duckdb_expression`), after
    refusing the forms DuckDB 1.x's translation loses (:func:`~.duckdb_v1.refuse_lossy`).

    Bound on the big-stack worker thread (DuckDB pushes long chains); a shallow one is remembered
    apart from :func:`bind_filter`'s bindings (one Expression, two meanings) and found again on the
    calling thread."""
    return _bind_engine_expression("duckdb", _compile_duckdb_v1, filter, schema)


def _compile_duckdb_v1(filter: pc.Expression, schema: pa.Schema) -> CompiledFilter:
    """DuckDB 1.x's pushed Expression, refused first where its translation lost the predicate's
    meaning (:func:`~.duckdb_v1.refuse_lossy`), on the big-stack worker with the binding."""
    from .duckdb_v1 import refuse_lossy
    refuse_lossy(filter, schema)
    return compile_duckdb_expression(filter, schema)


def bind_arrow_expression(filter: pc.Expression, schema: pa.Schema, shallow: bool = False) -> CompiledFilter | None:
    """Bind an Expression an engine built in Arrow's meaning (DuckDB 2's translation of the
    predicates its pyarrow-dataset source pushes) to ``schema``, evaluated as given
    (:func:`~lance_duck.predicate.compiled.compile_arrow_expression`); a user's Expression means
    pylance's order instead (:func:`bind_filter`). Remembered as :func:`bind_duckdb_expression`'s;
    ``shallow``: the caller knows ``filter`` nests a few levels only (bound on the calling thread)."""
    return _bind_engine_expression("arrow", compile_arrow_expression, filter, schema, shallow)


def _bind_engine_expression(meaning: str, compile_fn: Callable[[pc.Expression, pa.Schema], CompiledFilter],
                            filter: pc.Expression, schema: pa.Schema, shallow: bool = False
                            ) -> CompiledFilter | None:
    """``compile_fn(filter)`` over ``schema`` and its virtual columns, bound on the big-stack worker
    (unless ``shallow``: the caller knows it nests a few levels only); a shallow Expression's binding is
    remembered under ``(meaning, schema)`` and found again on the calling thread (``equals`` recurses
    no deeper than the shallower Expression)."""
    key = (meaning, id(schema))
    for f, sch, known in _BOUND_MEMO.peek(key, ()):
        if sch is schema and f.equals(filter):
            return cast("CompiledFilter | None", known)

    def bind() -> CompiledFilter | None:
        compiled = compile_fn(filter, _with_virtual(schema))
        bound = None if compiled.is_empty else compiled
        if len(str(filter)) <= SHALLOW_TEXT:
            _BOUND_MEMO.put(key, ((filter, schema, bound), *_BOUND_MEMO.peek(key, ()))[:SHALLOW_KEPT])
        return bound
    return bind() if shallow else on_big_stack(bind)


#: An Expression printing to at most this many characters is at most a quarter as deep (every
#: level prints an operator or a name and parentheses): comparing one with ``equals``, which
#: recurses only as deep as the shallower of the two, is safe on any thread
SHALLOW_TEXT = 8_000
#: shallow bound Expressions kept per schema for the check on the calling thread
SHALLOW_KEPT = 16


def _shallow_hit(filter: pc.Expression, schema: pa.Schema) -> tuple[CompiledFilter | None] | None:
    """The binding of an Expression equal to one bound before and known to be shallow, on the
    calling thread (no recursion deeper than that one's depth), or None."""
    for f, sch, bound in _BOUND_MEMO.peek(("shallow", id(schema)), ()):
        if sch is schema and f.equals(filter):
            return (bound,)
    return None


def _bind_expression(filter: pc.Expression, schema: pa.Schema) -> CompiledFilter | None:
    """On the big-stack worker: bind, note a shallow Expression for :func:`_shallow_hit`, and work
    out how it is evaluated (:func:`~lance_duck.predicate.long_filters.cached_plan`) while here."""
    text = str(filter)
    bound = _memo_bind(filter, schema, text)
    if bound is not None and bound.expression is not None:
        try:
            cached_plan(bound.expression)
        except LanceDuckError:      # too long to evaluate: said when it is evaluated, as before
            pass
    if len(text) <= SHALLOW_TEXT and _nan_free(text):
        key = ("shallow", id(schema))
        kept = _BOUND_MEMO.peek(key, ())
        if not any(sch is schema and f.equals(filter) for f, sch, _ in kept):
            _BOUND_MEMO.put(key, ((filter, schema, bound), *kept)[:SHALLOW_KEPT])
    return bound


def _nan_free(text: str) -> bool:
    """An Expression printing as ``text`` holds no NaN literal: ``equals`` takes every NaN literal
    for any other (``x == nan`` and ``x == -nan`` differ in Lance's float order)."""
    return "nan" not in text.lower()


def _memo_bind(filter: Any, schema: pa.Schema, text: str | None = None) -> CompiledFilter | None:
    key = (id(schema), filter if isinstance(filter, str) else text if text is not None else str(filter))
    if isinstance(filter, pc.Expression) and not _nan_free(str(key[1])):
        return _bind(filter, schema)
    seen = _BOUND_MEMO.get(key, ())
    for f, sch, bound in seen:
        if sch is schema and (f == filter if isinstance(filter, str) else
                              isinstance(f, pc.Expression) and f.equals(filter)):
            return cast("CompiledFilter | None", bound)
    bound = _bind(filter, schema)
    _BOUND_MEMO.put(key, (*seen, (filter, schema, bound)))
    return bound


#: filter bindings remembered (keyed by schema identity and the filter's text; an Expression
#: is matched with ``equals``, which compares literal types too)
# keys: (schema id, filter text) -> its bindings; ("shallow", schema id) -> shallow Expressions bound
_BOUND_MEMO: _state.ByteLRU[tuple[int | str, int | str], tuple[Any, ...]] = _state.cache("filter_bindings")


def _bind(filter: Any, schema: pa.Schema) -> CompiledFilter | None:
    if not isinstance(filter, (str, pc.Expression)):
        raise InvalidArgumentError(
            f"filter must be a SQL string or a pyarrow Expression, got {type(filter).__name__}")
    compiled = compile_filter(filter, _with_virtual(schema))
    return None if compiled.is_empty else compiled


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


__all__ = ["ROW_ADDR", "ROW_CREATED", "ROW_ID", "ROW_UPDATED", "VIRTUAL_COLUMNS", "CompiledFilter", "and_filters",
           "bind_arrow_expression", "bind_duckdb_expression", "bind_filter", "evaluate", "expression_columns"]
