"""Spark's pushed filters (``pyspark.sql.datasource.Filter``) in lance_duck's filter model.

Each filter becomes a bound tree (:mod:`lance_duck.predicate.bound`) in Spark's meaning, compiled
once with the others by :func:`spark_filters` and carried to the scan, its indices and its counts.
Spark does not evaluate a pushed filter again, so the rows must be the ones Spark would keep: floats
compare in Spark's order (every NaN equal to every NaN and above every number, -0.0 = 0.0: the
bound model's :class:`~lance_duck.predicate.bound.BCompare`), and ``IN`` is null on a null, as in
Spark (``NOT (x IN (1, 2))`` drops a null ``x``).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...predicate import CompiledFilter, compile_bound
from ...predicate.bound import BAnd, BCall, BCompare, BIn, BIsNull, BLit, BNot, BRef, BoundExpr
from ...predicate.to_arrow import to_expression


class NotPushable(Exception):
    """A Spark filter with no exact translation (Spark keeps evaluating it)."""


_COMPARISONS = {"EqualTo": "==", "GreaterThan": ">", "GreaterThanOrEqual": ">=", "LessThan": "<",
                "LessThanOrEqual": "<="}
_TEXT = {"StringStartsWith": "starts_with", "StringEndsWith": "ends_with", "StringContains": "contains"}


def spark_filter_to_bound(f: Any, schema: pa.Schema) -> BoundExpr:
    """A pyspark.sql.datasource filter as a bound tree over ``schema`` (raises NotPushable if it has
    no exact translation). Literals are cast (safely) to the Lance column's type, so a Spark value
    that does not fit the column exactly is not pushed; neither is a NaN (nor a float ``IN`` holding
    a zero: Arrow's ``is_in`` tells -0.0 from 0.0)."""
    from pyspark.sql import datasource as sds

    kind = type(f).__name__
    if isinstance(f, sds.Not):
        return BNot(spark_filter_to_bound(f.child, schema))
    path = tuple(f.attribute)
    t = _field_type(schema, path)
    ref = BRef(path, t)
    if isinstance(f, sds.EqualNullSafe):
        if f.value is None:
            return BIsNull(ref)
        return BAnd((BNot(BIsNull(ref)), BCompare("==", ref, _lit(f, f.value, t))))
    if kind in _COMPARISONS and isinstance(f, (sds.EqualTo, sds.GreaterThan, sds.GreaterThanOrEqual,
                                               sds.LessThan, sds.LessThanOrEqual)):
        return BCompare(_COMPARISONS[kind], ref, _lit(f, f.value, t))    # NaN above every number
    if isinstance(f, sds.In):
        if any(v is None for v in f.value):
            raise NotPushable(f)  # IN with NULL has three-valued semantics: let Spark do it
        _check_unit(f, t)
        vt = t.value_type if pa.types.is_dictionary(t) else t
        try:
            values = pa.array(list(f.value)).cast(vt, safe=True)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise NotPushable(f) from exc
        if pa.types.is_floating(vt) and any(v == 0 or math.isnan(v) for v in values.to_pylist()):
            raise NotPushable(f)
        return BIn(ref, values, False)      # SQL's IN, as Spark's: null on a null (so NOT IN drops it too)
    if isinstance(f, sds.IsNull):
        return BIsNull(ref)
    if isinstance(f, sds.IsNotNull):
        return BNot(BIsNull(ref))
    if kind in _TEXT and isinstance(f, (sds.StringStartsWith, sds.StringEndsWith, sds.StringContains)):
        return BCall(_TEXT[kind], (ref, BLit(pa.scalar(str(f.value)))), (), pa.bool_())
    raise NotPushable(f)


def spark_filters(filters: Sequence[Any], schema: pa.Schema) -> CompiledFilter | None:
    """The AND of Spark's pushed ``filters`` as one compiled filter (None for none)."""
    if not filters:
        return None
    parts = tuple(spark_filter_to_bound(f, schema) for f in filters)
    return compile_bound(parts[0] if len(parts) == 1 else BAnd(parts), schema)


def spark_filter_to_expression(f: Any, schema: pa.Schema) -> pc.Expression:
    """A pyspark.sql.datasource filter as an exact pyarrow Expression (raises if not translatable).

    Literals are cast (safely) to the Lance column's type, so a Spark value that does not fit the
    column exactly is not pushed.
    """
    out = to_expression(spark_filter_to_bound(f, schema))
    return pc.scalar(out) if isinstance(out, pa.Scalar) else out


def _lit(f: Any, value: Any, t: pa.DataType) -> BLit:
    if value is None:
        raise NotPushable(value)
    _check_unit(f, t)
    vt = t.value_type if pa.types.is_dictionary(t) else t
    try:
        scalar = pa.scalar(value).cast(vt, safe=True)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise NotPushable(f) from exc
    if isinstance(scalar.as_py(), float) and math.isnan(scalar.as_py()):
        raise NotPushable(f)
    return BLit(scalar)


def _check_unit(f: Any, t: pa.DataType) -> None:
    vt = t.value_type if pa.types.is_dictionary(t) else t
    if (pa.types.is_timestamp(vt) or pa.types.is_duration(vt)) and vt.unit == "ns":
        # Spark compares the values truncated to microseconds; the column holds nanoseconds
        raise NotPushable(f)


def _field_type(schema: pa.Schema, path: tuple[str, ...]) -> pa.DataType:
    if not path or path[0] not in schema.names:
        raise NotPushable(path)
    t = schema.field(path[0]).type
    for name in path[1:]:
        if not pa.types.is_struct(t) or t.get_field_index(name) < 0:
            raise NotPushable(path)
        t = t.field(name).type
    return t
