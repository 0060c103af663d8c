"""Spark's pushed filters (``pyspark.sql.datasource.Filter``) as exact pyarrow Expressions."""
from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc


class NotPushable(Exception):
    """A Spark filter with no exact translation (Spark keeps evaluating it)."""


def spark_filter_to_expression(f, schema: pa.Schema) -> pc.Expression:
    """A pyspark.sql.datasource filter as an exact pyarrow Expression (raises if not translatable).

    Literals are cast (safely) to the Lance column's type, so a Spark value that does not fit the
    column exactly is not pushed.
    """
    from pyspark.sql import datasource as sds

    def col(attr: tuple[str, ...]) -> pc.Expression:
        return pc.field(*attr)

    def _lit(value: Any) -> pc.Expression:
        if value is None:
            raise NotPushable(value)
        t = _field_type(schema, f.attribute if hasattr(f, "attribute") else ())
        if pa.types.is_dictionary(t):
            t = t.value_type
        if (pa.types.is_timestamp(t) or pa.types.is_duration(t)) and t.unit == "ns":
            # Spark compares the values truncated to microseconds; the column holds nanoseconds
            raise NotPushable(f)
        try:
            return pc.scalar(pa.scalar(value).cast(t, safe=True))
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise NotPushable(f) from exc

    if isinstance(f, sds.EqualTo):
        return col(f.attribute) == _lit(f.value)
    if isinstance(f, sds.EqualNullSafe):
        if f.value is None:
            return col(f.attribute).is_null()
        return pc.if_else(col(f.attribute).is_null(), False, col(f.attribute) == _lit(f.value))
    if isinstance(f, sds.GreaterThan):
        return col(f.attribute) > _lit(f.value)
    if isinstance(f, sds.GreaterThanOrEqual):
        return col(f.attribute) >= _lit(f.value)
    if isinstance(f, sds.LessThan):
        return col(f.attribute) < _lit(f.value)
    if isinstance(f, sds.LessThanOrEqual):
        return col(f.attribute) <= _lit(f.value)
    if isinstance(f, sds.In):
        if any(v is None for v in f.value):
            raise NotPushable(f)  # IN with NULL has three-valued semantics: let Spark do it
        t = _field_type(schema, f.attribute)
        if (pa.types.is_timestamp(t) or pa.types.is_duration(t)) and t.unit == "ns":
            raise NotPushable(f)
        try:
            values = pa.array(list(f.value)).cast(t.value_type if pa.types.is_dictionary(t) else t, safe=True)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise NotPushable(f) from exc
        return col(f.attribute).isin(values)
    if isinstance(f, sds.IsNull):
        return col(f.attribute).is_null()
    if isinstance(f, sds.IsNotNull):
        return col(f.attribute).is_valid()
    if isinstance(f, sds.Not):
        return ~spark_filter_to_expression(f.child, schema)
    if isinstance(f, sds.StringStartsWith):
        _field_type(schema, f.attribute)
        return pc.starts_with(col(f.attribute), pattern=f.value)
    if isinstance(f, sds.StringEndsWith):
        return pc.ends_with(col(f.attribute), pattern=f.value)
    if isinstance(f, sds.StringContains):
        return pc.match_substring(col(f.attribute), pattern=f.value)
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
