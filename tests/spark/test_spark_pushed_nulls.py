"""Pushed filters keep the rows Spark's own filtering keeps where a value is null: ``NOT (x IN (...))``
(Spark's ``In`` is null on a null, so the negation drops the row), ``NOT`` of comparisons, string
functions, null-safe equality, over a table with nulls in every column, deletions and fragments.

Oracle: the same ``where`` evaluated by Spark over the unpushed read.
"""
from __future__ import annotations

import decimal

import lance
import pyarrow as pa
import pytest

WHERES = [
    "not (x in (1, 2))", "x not in (1, 2)", "not (s in ('a', 'b'))", "not (f in (0.5, 1.5))",
    "not (u64 in (1, 5))", "not (d in (1.5, 2))", "not (dict in ('r', 'g'))", "not (x = 1)",
    "not (startswith(s, 'a'))", "not (x <=> 1)", "not (x > 1 or s = 'a')", "not (x between 1 and 3)",
]


@pytest.fixture(scope="module")
def nulls_table(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("spark_nulls") / "n.lance")
    d = decimal.Decimal
    lance.write_dataset(pa.table({
        "id": pa.array(range(8), pa.int64()),
        "x": pa.array([1, 2, None, 3, 1, None, 5, 0], pa.int32()),
        "s": pa.array(["a", None, "b", "ab", "", "ba", None, "c"]),
        "f": pa.array([0.5, None, float("nan"), -0.0, 0.0, 1.5, None, 2.0]),
        "u64": pa.array([0, 2**64 - 1, None, 2**63, 1, 5, 2**63 - 1, 7], pa.uint64()),
        "d": pa.array([d("1.50"), None, d("-1.25"), d("0.00"), d("1.5"), d("2"), d("9.99"), None], pa.decimal128(5, 2)),
        "dict": pa.array(["r", "g", None, "b", "r", "", "g", None]).dictionary_encode(),
    }), path, max_rows_per_file=3)
    lance.dataset(path).delete("id = 6")
    return path


@pytest.mark.parametrize("where", WHERES)
def test_a_pushed_filter_drops_the_null_rows_spark_drops(spark, nulls_table, where):
    def ids(push: str) -> list[int]:
        df = spark.read.format("lance_duck").option("pushFilters", push).load(nulls_table)
        return sorted(df.where(where).select("id").toArrow()["id"].to_pylist())

    plain = ids("false")
    assert ids("true") == plain
    assert plain


def test_not_in_is_pushed_not_left_to_spark(nulls_table):
    """``Not(In)`` is taken by the source (so the rows above are ours)."""
    from pyspark.sql import datasource as sds
    from pyspark.sql.types import IntegerType, LongType, StructField, StructType

    from lance_duck.integrations.spark import PushdownLanceReader, parse_options

    schema = StructType([StructField("id", LongType()), StructField("x", IntegerType())])
    reader = PushdownLanceReader(parse_options({"path": nulls_table}), schema)
    f = sds.Not(sds.In(("x",), (1, 2)))
    assert list(reader.pushFilters([f])) == []
