"""Arrow types as Spark accepts them from a Python data source.

Spark checks the first batch against ``to_arrow_schema(spark_schema, timezone="UTC")``. Every
Lance column type is mapped here, at planning, to an Arrow type Spark holds; what Spark cannot
hold is refused with the column's name (:class:`UnsupportedFeatureError`) before any task runs.

======================================  =====================================================
Lance / Arrow type                      Spark type (values)
======================================  =====================================================
bool, int8/16/32/64                     BOOLEAN, TINYINT, SMALLINT, INT, BIGINT
uint8 / uint16 / uint32                 SMALLINT / INT / BIGINT (widened, exact)
uint64                                  DECIMAL(20,0) (exact)
float16 / float32 / float64             FLOAT (exact) / FLOAT / DOUBLE
decimal128/256 up to 38 digits          DECIMAL(p,s); more than 38 digits is refused
string, large_string, string_view       STRING
binary, large_binary, fixed_size_binary BINARY
date32, date64                          DATE
timestamp with a zone                   TIMESTAMP (the instant; s/ms/us exact, ns truncated
                                        toward zero to us, as Spark does for pandas data)
timestamp without a zone                TIMESTAMP_NTZ (same units rule)
duration (any unit)                     INTERVAL DAY TO SECOND (us; ns truncated toward zero)
time32, time64                          TIME(6)
null                                    VOID
list, large_list, fixed_size_list       ARRAY<item>
map                                     MAP<key, item>
struct                                  STRUCT<...>
dictionary<value>                       the value type (decoded)
extension types                         their storage type
======================================  =====================================================

A value outside Spark's range (a second/millisecond timestamp or duration beyond +-292,000 years
in microseconds) fails the read with the column's name rather than wrapping around.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.types as pat

from ...errors import UnsupportedFeatureError

SPARK_MAX_DECIMAL_DIGITS = 38


def spark_arrow_type(t: pa.DataType, name: str = "?") -> pa.DataType:
    """The Arrow type a Lance column of type ``t`` is converted to before Spark sees it.

    Raises :class:`UnsupportedFeatureError` naming ``name`` when Spark cannot hold the type.
    """
    if isinstance(t, pa.ExtensionType):
        return spark_arrow_type(t.storage_type, name)
    if pat.is_uint8(t):
        return pa.int16()
    if pat.is_uint16(t):
        return pa.int32()
    if pat.is_uint32(t):
        return pa.int64()
    if pat.is_uint64(t):
        return pa.decimal128(20, 0)
    if pat.is_float16(t):
        return pa.float32()
    if pat.is_boolean(t) or pat.is_signed_integer(t) or pat.is_float32(t) or pat.is_float64(t) or pat.is_null(t):
        return t
    if pat.is_string(t) or pat.is_large_string(t) or pat.is_string_view(t):
        return pa.string()
    if pat.is_binary(t) or pat.is_large_binary(t) or pat.is_fixed_size_binary(t) or pat.is_binary_view(t):
        return pa.binary()
    if pat.is_date(t):
        return pa.date32()
    if pat.is_timestamp(t):
        return pa.timestamp("us", "UTC" if t.tz else None)
    if pat.is_duration(t):
        return pa.duration("us")
    if pat.is_time(t):
        return pa.time64("ns")
    if pat.is_decimal(t):
        if t.precision > SPARK_MAX_DECIMAL_DIGITS:
            raise UnsupportedFeatureError(
                f"column {name!r}: {t} has {t.precision} digits; Spark decimals hold at most "
                f"{SPARK_MAX_DECIMAL_DIGITS} (read it without this column, e.g. option('columns', ...))")
        return pa.decimal128(t.precision, t.scale)
    if pat.is_dictionary(t):
        return spark_arrow_type(t.value_type, name)
    if pat.is_list(t) or pat.is_large_list(t) or pat.is_fixed_size_list(t) or pat.is_list_view(t) \
            or pat.is_large_list_view(t):
        return pa.list_(pa.field("element", spark_arrow_type(t.value_type, f"{name}[]"), True))
    if pat.is_map(t):
        return pa.map_(spark_arrow_type(t.key_type, f"{name}.key"), spark_arrow_type(t.item_type, f"{name}.value"))
    if pat.is_struct(t):
        if t.num_fields == 0:
            raise UnsupportedFeatureError(f"column {name!r}: a struct without fields has no Spark type")
        # children nullable: a null struct row holds nulls in its children, and PySpark's toArrow
        # refuses those under a non-nullable child (pylance's blob descriptions are such structs)
        return pa.struct([pa.field(f.name, spark_arrow_type(f.type, f"{name}.{f.name}"), True)
                          for f in t])
    raise UnsupportedFeatureError(f"column {name!r}: Arrow type {t} has no Spark equivalent")


def spark_arrow_schema(schema: pa.Schema) -> pa.Schema:
    """:func:`spark_arrow_type` of every field (raises naming the first column Spark cannot hold)."""
    return pa.schema([pa.field(f.name, spark_arrow_type(f.type, f.name), f.nullable) for f in schema])


def conform(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """Convert a batch to the exact schema Spark expects (names and types; see the module table)."""
    arrays = [conform_array(col, field.type, field.name) for col, field in zip(batch.columns, target)]
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def conform_array(a: pa.Array, want: pa.DataType, name: str) -> pa.Array:
    """``a`` converted to ``want`` (a type :func:`spark_arrow_type` produced for ``a.type``)."""
    if isinstance(a.type, pa.ExtensionType):
        a = a.storage
    if pat.is_dictionary(a.type):
        a = a.dictionary_decode()
    t = a.type
    if t.equals(want):
        return a
    if pat.is_struct(t):
        children = [conform_array(a.field(i), want.field(i).type, f"{name}.{want.field(i).name}")
                    for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(want), mask=_null_mask(a))
    if _nested_needs_walk(t):
        # lists / maps whose items are themselves converted with the rules above
        return _conform_nested(a, want, name)
    if (pat.is_timestamp(t) or pat.is_duration(t)) and t.unit == "ns":
        return a.cast(want, safe=False)  # truncation toward zero: exact division, cannot overflow
    try:
        return a.cast(want)
    except pa.ArrowInvalid as exc:
        raise UnsupportedFeatureError(f"column {name!r}: a value of type {t} does not fit Spark's {want}: {exc}") \
            from None


def _nested_needs_walk(t: pa.DataType) -> bool:
    return bool(pat.is_list(t) or pat.is_large_list(t) or pat.is_fixed_size_list(t) or pat.is_list_view(t)
                or pat.is_large_list_view(t) or pat.is_map(t))


def _conform_nested(a: pa.Array, want: pa.DataType, name: str) -> pa.Array:
    t = a.type
    if pat.is_fixed_size_list(t) or pat.is_list_view(t) or pat.is_large_list_view(t):
        a = a.cast(pa.large_list(t.value_field))  # materialise offsets (and drop list-view sharing)
    offs = np.asarray(a.offsets, dtype=np.int64)
    base, end = int(offs[0]), int(offs[-1])
    if end - base > np.iinfo(np.int32).max:
        raise UnsupportedFeatureError(f"column {name!r}: one batch holds more than 2**31 items; lower batch_size")
    offsets = pa.array((offs - base).astype(np.int32))
    if pat.is_map(t):
        keys = conform_array(a.keys.slice(base, end - base), want.key_type, f"{name}.key")
        items = conform_array(a.items.slice(base, end - base), want.item_type, f"{name}.value")
        return pa.MapArray.from_arrays(offsets, keys, items, type=want, mask=_null_mask(a))
    values = conform_array(a.values.slice(base, end - base), want.value_type, f"{name}[]")
    return pa.ListArray.from_arrays(offsets, values, type=want, mask=_null_mask(a))


def _null_mask(a: pa.Array) -> pa.Array | None:
    return a.is_null() if a.null_count else None
