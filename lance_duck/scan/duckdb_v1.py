"""The scanner DuckDB 1.x calls: the filter it pushes read in DuckDB's meaning.

DuckDB before 2.0 scans any ``pyarrow.dataset.Dataset`` by looking ``scanner`` up on the dataset's
*class* and calling ``type(ds).scanner(ds, columns=..., filter=...)``, its ``WHERE`` translated into a
pyarrow Expression -- which still means DuckDB's semantics: ``f > 0.5`` on a float column holds for
every NaN (DuckDB orders NaN, whatever its sign bit, above every number, NaN equals NaN). A user of
pyarrow's API calls ``ds.scanner(...)`` on the *instance* and means pylance's semantics, which
lance_duck keeps for them: Lance's float order (IEEE 754 totalOrder with the zeros equal), where a
NaN with its sign bit set -- what x86 makes of ``0.0 / 0.0`` -- sorts below -inf and fails
``f > 0.5``, and NaNs equal only NaNs of the same bits (:func:`~lance_duck.predicate.from_arrow.from_lance_order`).

So with DuckDB 1.x (no Arrow-source protocol, :data:`~.duckdb_source.HAS_PROTOCOL` false) ``scanner``
on :class:`~.dataset.LanceDataset` and every subclass is a :class:`ClassLookupScanner`: looked up on an
instance it is the plain method; looked up on the class -- DuckDB's call -- a pyarrow Expression filter
is first bound in DuckDB's meaning (:func:`~.filters.bind_duckdb_expression`) and handed on as the
filter model. With DuckDB 2 the dataset is its own source (:mod:`.duckdb_source`) and ``scanner`` stays
a plain method.
"""
from __future__ import annotations

import functools
import types
from typing import Any, Callable

import pyarrow.compute as pc

from .duckdb_source import HAS_PROTOCOL

#: ``scanner`` on a dataset class reads a class-level lookup as DuckDB 1.x's call
ACTIVE = not HAS_PROTOCOL


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
            return self.engine_scanner
        return types.MethodType(self.func, obj)


def install(cls: type) -> None:
    """Make ``cls.scanner`` (when ``cls`` defines one) a :class:`ClassLookupScanner` under DuckDB 1.x."""
    func = cls.__dict__.get("scanner")
    if ACTIVE and callable(func) and not isinstance(func, ClassLookupScanner):
        setattr(cls, "scanner", ClassLookupScanner(func))


__all__ = ["ACTIVE", "ClassLookupScanner", "install"]
