"""The scanner DuckDB 1.x calls: the filter it pushes read in DuckDB's meaning.

DuckDB before 2.0 scans any ``pyarrow.dataset.Dataset`` by looking ``scanner`` up on the dataset's
*class* and calling ``type(ds).scanner(ds, columns=..., filter=...)``, its ``WHERE`` translated into a
pyarrow Expression -- which still means DuckDB's semantics: ``f > 0.5`` on a float column holds for
every NaN (DuckDB orders NaN, whatever its sign bit, above every number, NaN equals NaN). A user of
pyarrow's API calls ``ds.scanner(...)`` on the *instance* and means pylance's semantics, which
lance_duck keeps for them: Lance's float order (IEEE 754 totalOrder with the zeros equal), where a
NaN with its sign bit set -- what x86 makes of ``0.0 / 0.0`` -- sorts below -inf and fails
``f > 0.5``, and NaNs equal only NaNs of the same bits (:func:`~lance_duck.predicate.from_arrow.from_lance_order`).

So ``scanner`` on :class:`~.dataset.LanceDataset` and every subclass is a :class:`ClassLookupScanner`:
looked up on an instance it is the plain method; looked up on the class while DuckDB 1.x is running
(no Arrow-source protocol, :func:`~.duckdb_source.has_protocol` false) -- DuckDB's call -- a pyarrow
Expression filter is first bound in DuckDB's meaning (:func:`~.filters.bind_duckdb_expression`) and
handed on as the filter model. With DuckDB 2 (the dataset is its own source, :mod:`.duckdb_source`),
or no DuckDB imported, the class lookup is the plain function too.

DuckDB 1.x's own translation loses a predicate's meaning in three forms, and DuckDB does not filter
the rows again; :func:`refuse_lossy` refuses them (:class:`~lance_duck.errors.UnsupportedFeatureError`)
rather than return wrong rows: ``x <= NaN`` arrives as ``true`` (null rows kept, and which column is
lost); a timestamp ``IN`` list on a nanosecond column arrives rounded to microseconds (a value set of
another unit); and a zoned timestamp column of a unit other than microseconds is DuckDB's
``TIMESTAMPTZ`` (microseconds) while the literal arrives cut to the column's unit (seconds,
milliseconds) or the column's nanoseconds are compared where DuckDB compares microseconds.
"""
from __future__ import annotations

import functools
import sys
import types
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import UnsupportedFeatureError
from .duckdb_source import has_protocol


def active() -> bool:
    """Whether a class-level ``scanner`` lookup is DuckDB 1.x's call: DuckDB is running (imported)
    without the Arrow-source protocol. Decided at the lookup, so opening a dataset imports no DuckDB."""
    return "duckdb" in sys.modules and not has_protocol()


class ClassLookupScanner:
    """``scanner`` of a dataset class under DuckDB 1.x: the method on an instance; on the class, the
    function DuckDB calls, reading a pyarrow Expression filter in DuckDB's meaning."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func
        self.__doc__ = func.__doc__

        @functools.wraps(func)
        def engine_scanner(ds: Any, columns: Any = None, filter: Any = None, *args: Any, **kwargs: Any) -> Any:
            if isinstance(filter, pc.Expression):
                from .filters import bind_duckdb_expression
                filter = bind_duckdb_expression(filter, ds._snapshot.arrow_schema)
            if args:
                return func(ds, columns, filter, *args, **kwargs)
            return func(ds, columns=columns, filter=filter, **kwargs)   # DuckDB passes keywords
        self.engine_scanner = engine_scanner

    def __get__(self, obj: Any, owner: type | None = None) -> Callable[..., Any]:
        if obj is None:
            return self.engine_scanner if active() else self.func
        return types.MethodType(self.func, obj)


_CONNECTIVES = frozenset({"and", "and_kleene", "or", "or_kleene", "invert"})
_WHY = "DuckDB 1.x cannot push it exactly and would not filter the rows again; DuckDB 2 can, or cast the column"


def _field_type(schema: pa.Schema, path: tuple[str, ...]) -> pa.DataType | None:
    t: pa.DataType | None = schema.field(path[0]).type if path and path[0] in schema.names else None
    for name in path[1:]:
        if t is None or not pa.types.is_struct(t) or t.get_field_index(name) < 0:
            return None
        t = t.field(t.get_field_index(name)).type
    return t


def refuse_lossy(filter: pc.Expression, schema: pa.Schema) -> None:
    """Raise :class:`~lance_duck.errors.UnsupportedFeatureError` when DuckDB 1.x's pushed ``filter``
    holds a form whose meaning its translation lost (see the module notes); an Expression that
    cannot be read is left to the binder."""
    from ..predicate import arrow_introspect as ai     # loaded by the first pushed filter
    try:
        tree = ai.decode(filter)
    except ai.IntrospectionError:
        return
    stack: list[tuple[Any, bool]] = [(tree, True)]      # (node, whether it stands as a condition)
    while stack:
        node, condition = stack.pop()
        if condition and isinstance(node, ai.XLiteral) and node.scalar.type == pa.bool_() \
                and node.scalar.as_py() is True:
            raise UnsupportedFeatureError(f"a comparison with NaN (x <= NaN) in {str(filter):.120}: {_WHY}")
        if not isinstance(node, ai.XCall):
            continue
        stack.extend((a, node.name in _CONNECTIVES) for a in node.args)
        for arg in node.args:
            if not isinstance(arg, ai.XField):
                continue
            t = _field_type(schema, arg.path)
            if t is None or not pa.types.is_timestamp(t):
                continue
            name = ".".join(arg.path)
            if t.tz is not None and t.unit != "us":
                raise UnsupportedFeatureError(f"a filter on {name} ({t}) in {str(filter):.120}: {_WHY}")
            values = ai.option(node.options, "value_set") if node.name == "is_in" else None
            if values is not None and values.type.value_type != t:
                raise UnsupportedFeatureError(f"an IN list on {name} ({t}) in {str(filter):.120}: {_WHY}")


def install(cls: type) -> None:
    """Make ``cls.scanner`` (when ``cls`` defines one) a :class:`ClassLookupScanner` (DuckDB 1.x's call)."""
    func = cls.__dict__.get("scanner")
    if callable(func) and not isinstance(func, ClassLookupScanner):
        setattr(cls, "scanner", ClassLookupScanner(func))


__all__ = ["ClassLookupScanner", "active", "install", "refuse_lossy"]
