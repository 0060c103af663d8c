"""Float comparisons pushed to the Spark source keep Spark's meaning: Spark does not evaluate a pushed
filter again, so a NaN row (above every number for Spark, whatever its sign) must come back for
``x > c`` exactly as when Spark filters the rows itself.

Oracle: the same ``where`` evaluated by Spark over the unpushed read (which reads what pylance reads).
"""
from __future__ import annotations

import struct

import lance
import pyarrow as pa
import pytest

NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
X = [0.1, 0.7, float("nan"), None, -0.0, 0.0, float("inf"), -float("inf"), 0.5, NEG_NAN, 2.5, -3.0]


@pytest.fixture(scope="module")
def float_table(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("spark_floats") / "f.lance")
    n = len(X)
    lance.write_dataset(pa.table({
        "id": pa.array(range(n), pa.int64()),
        "x": pa.array(X, pa.float64()),
        "h": pa.array([None if v is None else v for v in X], pa.float32()),
        "s": pa.array([{"a": v} for v in X], pa.struct([("a", pa.float64())])),
    }), path)
    return path


WHERES = ["x > 0.5", "x >= 0.5", "x < 0.5", "x <= 0.5", "x = 0.0", "x <=> 0.0", "not (x > 0.5)",
          "not (x <= -1.0)", "x > 0.5 or x < -1.0", "x != 0.5", "h > 0.5", "h <= 0.5", "not (h >= 2.5)",
          "s.a > 0.5", "not (s.a < 0.5)", "x > -1e308 and h < 1e30"]


@pytest.mark.parametrize("where", WHERES)
def test_a_pushed_float_comparison_keeps_the_rows_spark_keeps(spark, float_table, where):
    def ids(**options):
        r = spark.read.format("lance_duck")
        for k, v in options.items():
            r = r.option(k, v)
        return r.load(float_table).where(where).select("id").toArrow()["id"].to_pylist()

    plain = ids()
    assert ids(pushFilters="true") == plain
    assert 0 < len(plain) < len(X)


@pytest.mark.parametrize("make", [
    lambda sds: sds.GreaterThan(("x",), 0.5), lambda sds: sds.LessThanOrEqual(("x",), 0.5),
    lambda sds: sds.Not(sds.GreaterThanOrEqual(("h",), 2.5)), lambda sds: sds.EqualTo(("s", "a"), 0.0),
])
def test_float_comparisons_are_pushed_not_left_to_spark(float_table, make):
    """The comparisons above are taken by the source (the equality of results is then ours)."""
    from pyspark.sql import datasource as sds
    from pyspark.sql.types import DoubleType, FloatType, LongType, StructField, StructType

    from lance_duck.integrations.spark import PushdownLanceReader, parse_options

    schema = StructType([StructField("id", LongType()), StructField("x", DoubleType()),
                         StructField("h", FloatType()),
                         StructField("s", StructType([StructField("a", DoubleType())]))])
    reader = PushdownLanceReader(parse_options({"path": float_table}), schema)
    f = make(sds)
    assert list(reader.pushFilters([f])) == []
    assert reader.filters == [f]
