"""Arrow types as Spark accepts them from a Python data source.

Spark checks the first batch against ``to_arrow_schema(spark_schema, timezone="UTC")``; Lance types
Spark cannot hold are widened losslessly where possible (unsigned ints, float16, large_* types,
fixed-size lists, dictionaries, date64, ns timestamps/durations) and refused otherwise.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.types as pat

from ..errors import UnsupportedFeatureError


def spark_arrow_type(t: pa.DataType, name: str = "?") -> pa.DataType:
    """The Arrow type a Lance column of type ``t`` is converted to before Spark sees it."""
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
    if pat.is_large_string(t) or pat.is_string_view(t):
        return pa.string()
    if pat.is_large_binary(t) or pat.is_fixed_size_binary(t) or pat.is_binary_view(t):
        return pa.binary()
    if pat.is_date64(t):
        return pa.date32()
    if pat.is_timestamp(t):
        return pa.timestamp("us", "UTC" if t.tz else None)
    if pat.is_duration(t):
        return pa.duration("us")
    if pat.is_time(t):
        return pa.time64("ns")
    if pat.is_decimal256(t):
        if t.precision > 38:
            raise UnsupportedFeatureError(
                f"column {name!r}: {t} has precision {t.precision}; Spark decimals hold at most 38 digits")
        return pa.decimal128(t.precision, t.scale)
    if pat.is_dictionary(t):
        return spark_arrow_type(t.value_type, name)
    if pat.is_list(t) or pat.is_large_list(t) or pat.is_fixed_size_list(t) or pat.is_list_view(t):
        item = t.value_field
        return pa.list_(pa.field("element", spark_arrow_type(item.type, name), True))
    if pat.is_map(t):
        return pa.map_(spark_arrow_type(t.key_type, name), spark_arrow_type(t.item_type, name))
    if pat.is_struct(t):
        return pa.struct([pa.field(f.name, spark_arrow_type(f.type, f"{name}.{f.name}"), f.nullable)
                          for f in t])
    return t


def spark_arrow_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, spark_arrow_type(f.type, f.name), f.nullable) for f in schema])


def conform(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """Cast a batch to the exact schema Spark expects (names and types)."""
    arrays = []
    for col, field in zip(batch.columns, target):
        if isinstance(col.type, pa.ExtensionType):
            col = col.storage
        if pat.is_dictionary(col.type):
            col = col.dictionary_decode()
        arrays.append(col if col.type.equals(field.type) else col.cast(field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=target)
