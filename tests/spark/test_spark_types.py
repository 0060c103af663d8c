"""Every Arrow type Lance stores reaches Spark with the documented type and values.

The expected Spark types and values are written here, independently of the source's own
conversion code: a table of column -> Spark type, and per-column conversions of pylance's read.
"""
from __future__ import annotations

import decimal

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.errors import AnalysisException

# column -> Spark type (DataType.simpleString()), as documented in integrations/spark/types.py
SPARK_TYPES = {
    "id": "bigint", "b": "boolean", "i8": "tinyint", "i16": "smallint", "i32": "int",
    "u8": "smallint", "u16": "int", "u32": "bigint", "u64": "decimal(20,0)",
    "f16": "float", "f32": "float", "f64": "double",
    "d128": "decimal(10,3)", "d256": "decimal(38,2)",
    "s": "string", "ls": "string", "lb": "binary", "fsb": "binary", "dict": "string",
    "date": "date", "d64": "date",
    "ts_tz": "timestamp", "ts_ntz": "timestamp_ntz", "ts_s": "timestamp", "ts_ms_ntz": "timestamp_ntz",
    "dur": "interval day to second", "dur_s": "interval day to second",
    "t64": "time(6)", "t32": "time(6)", "nul": "void",
    "ll": "array<int>", "fsl": "array<float>", "lst": "array<string>", "m": "map<string,int>",
    "st": "struct<a:bigint,u:smallint,l:array<bigint>,ts:timestamp_ntz>",
}

# timestamps / durations: compared as integer microseconds since the epoch / in the interval
MICROS = {"ts_tz": 1000, "ts_ntz": 1000, "dur": 1000, "ts_s": -1_000_000, "dur_s": -1_000_000,
          "ts_ms_ntz": -1000}


def _to_micros(values: np.ndarray, per: int) -> np.ndarray:
    """ns -> us truncated toward zero (``per`` > 0 divides) or s/ms -> us (``per`` < 0 multiplies)."""
    if per < 0:
        return values * -per
    q = np.abs(values) // per
    return np.where(values < 0, -q, q)


def _ints(col) -> list:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    ints = pc.cast(arr.cast(pa.int64()) if not pa.types.is_integer(arr.type) else arr, pa.int64())
    valid = np.asarray(arr.is_valid())
    v = ints.fill_null(0).to_numpy()
    return [int(x) if ok else None for x, ok in zip(v, valid)]


def _expected(name: str, col: pa.ChunkedArray) -> list:
    if name in MICROS:
        raw = _ints(pc.cast(col, pa.int64()))
        per = MICROS[name]
        return [None if x is None else int(_to_micros(np.array([x], dtype=np.int64), per)[0]) for x in raw]
    if name == "u64":
        return [None if v is None else decimal.Decimal(v) for v in col.to_pylist()]
    if name == "fsb":
        return col.to_pylist()
    if name == "st":
        out = []
        for v in col.to_pylist():
            v = dict(v)
            ts = v.pop("ts")
            out.append((v, ts))
        return out
    return col.to_pylist()


def _got(name: str, col: pa.ChunkedArray) -> list:
    if name in MICROS:
        return _ints(col)
    if name == "st":
        return [({k: x for k, x in v.items() if k != "ts"}, v["ts"]) for v in col.to_pylist()]
    return col.to_pylist()


def test_every_type_reads_with_the_documented_spark_type_and_values(spark, types_table):
    df = spark.read.format("lance_duck").load(types_table)
    got_types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert got_types == SPARK_TYPES
    got = df.toArrow()
    exp = lance.dataset(types_table).to_table()
    assert got.num_rows == exp.num_rows > 1000
    assert got.column_names == exp.column_names
    assert got["id"].to_pylist() == exp["id"].to_pylist()  # row order: pylance's
    for name in exp.column_names:
        if name == "st":
            continue
        assert _got(name, got[name]) == _expected(name, exp[name]), name


def test_nested_struct_fields_are_converted_like_top_level_columns(spark, types_table):
    got = spark.read.format("lance_duck").option("columns", "id, st").load(types_table).toArrow()
    exp = lance.dataset(types_table).to_table(columns=["id", "st"])
    st_got = got["st"].combine_chunks()
    st_exp = exp["st"].combine_chunks()
    assert st_got.field("a").to_pylist() == st_exp.field("a").to_pylist()
    assert st_got.field("u").to_pylist() == st_exp.field("u").to_pylist()
    assert st_got.field("l").to_pylist() == st_exp.field("l").to_pylist()
    ns = np.asarray(pc.cast(st_exp.field("ts"), pa.int64()))
    assert _ints(st_got.field("ts")) == [int(x) for x in _to_micros(ns, 1000)]


def test_nanosecond_timestamps_are_truncated_toward_zero(spark, types_table):
    # -1500 ns is -1 us (truncation toward zero), as Spark converts pandas data through Arrow
    got = spark.read.format("lance_duck").option("columns", "id, ts_ntz").load(types_table).toArrow()
    ids = got["id"].to_pylist()
    us = dict(zip(ids, _ints(got["ts_ntz"])))
    assert us[0] == -1 and us[1] == -999_998 and us[2] == -2_000_000


def test_a_type_spark_cannot_hold_is_refused_at_planning_with_the_column_name(spark, wide_decimal_table):
    with pytest.raises(AnalysisException, match=r"UnsupportedFeatureError: column 'big'.*decimal256\(40, 1\)"):
        spark.read.format("lance_duck").load(wide_decimal_table)   # planning: no action yet
    df = spark.read.format("lance_duck").option("columns", "id").load(wide_decimal_table)
    assert [r.id for r in df.collect()] == [1, 2]


def test_user_schema_with_another_type_is_refused_at_planning(spark, types_table):
    with pytest.raises(AnalysisException, match=r"InvalidArgumentError: lance_duck: column 'u32'.*int64.*string"):
        spark.read.format("lance_duck").schema("id long, u32 string").load(types_table).collect()
