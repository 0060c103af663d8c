"""The Spark data source reads what pylance reads: one partition per fragment, time travel, pushdown."""
from __future__ import annotations

import lance
import pyarrow as pa
import pytest

from lance_duck.integrations.spark_types import conform, spark_arrow_schema


def _expected(path, version=None, columns=None, filter=None) -> pa.Table:
    t = lance.dataset(path, version=version).to_table(columns=columns, filter=filter)
    target = spark_arrow_schema(t.schema)
    batches = [conform(b, target) for b in t.to_batches()]
    return pa.Table.from_batches(batches, schema=target)


def _compare(df, expected: pa.Table):
    got = df.toArrow()
    assert got.num_rows == expected.num_rows
    assert got.column_names == expected.column_names
    for name in expected.column_names:
        g = got[name].combine_chunks()
        e = expected[name].combine_chunks()
        if not g.type.equals(e.type):
            e = e.cast(g.type)  # Spark may rename list items ('element') or change nullability only
        assert g.equals(e), name


def test_reads_latest_version_like_pylance(spark, history_table):
    df = spark.read.format("lance_duck").load(history_table)
    _compare(df, _expected(history_table))


def test_one_partition_per_fragment(spark, history_table):
    df = spark.read.format("lance_duck").load(history_table)
    assert df.rdd.getNumPartitions() == len(lance.dataset(history_table).get_fragments())


@pytest.mark.parametrize("version", [1, 2, 3, "after_drop"])
def test_time_travel_by_version_and_tag(spark, history_table, version):
    ds = lance.dataset(history_table)
    if isinstance(version, str) and version not in ds.tags.list():
        pytest.fail(f"fixture lost its tag {version!r}: {ds.tags.list()}")
    df = spark.read.format("lance_duck").option("version", str(version)).load(history_table)
    _compare(df, _expected(history_table, version=version))


def test_columns_option_reads_only_those_columns(spark, history_table):
    df = spark.read.format("lance_duck").option("columns", "id, s").load(history_table)
    assert df.columns == ["id", "s"]
    _compare(df, _expected(history_table, columns=["id", "s"]))


def test_user_schema_subset_is_honoured(spark, history_table):
    df = spark.read.format("lance_duck").schema("id long, label string").load(history_table)
    _compare(df, _expected(history_table, columns=["id", "label"]))


def test_types_spark_cannot_hold_are_widened(spark, types_table):
    df = spark.read.format("lance_duck").load(types_table)
    _compare(df, _expected(types_table))


@pytest.mark.parametrize("where, lance_filter", [
    ("id < 20 and s.a >= 3", "id < 20 and s.a >= 3"),
    ("label like 'name-1%'", "label like 'name-1%'"),
    ("label is null", "label is null"),
    ("id in (5, 6, 7, 3000)", "id in (5, 6, 7, 3000)"),
    ("not (id > 10)", "not (id > 10)"),
    ("id = 4 or id = 9", "id = 4 or id = 9"),
])
def test_pushed_filters_are_applied_exactly(spark, history_table, where, lance_filter):
    df = (spark.read.format("lance_duck").option("pushFilters", "true").load(history_table)
          .where(where))
    expected = _expected(history_table, filter=lance_filter)
    _compare(df, expected)


def test_pushed_filters_on_timestamps_and_unsigned(spark, types_table):
    df = (spark.read.format("lance_duck").option("pushFilters", "true").load(types_table)
          .where("u32 > 700 and ts >= timestamp '1970-01-01 00:03:00' and u8 != 5"))
    import datetime as dt

    import pyarrow.compute as pc

    full = _expected(types_table)
    cutoff = pa.scalar(dt.datetime(1970, 1, 1, 0, 3, tzinfo=dt.timezone.utc), pa.timestamp("us", "UTC"))
    expected = full.filter((pc.field("u32") > 700) & (pc.field("ts") >= cutoff) & (pc.field("u8") != 5))
    assert 0 < expected.num_rows < full.num_rows
    _compare(df, expected)


def test_reused_dataframe_without_pushdown_counts_correctly(spark, history_table):
    # Spark 4.3.0 can reuse stale pushed filters on a reused DataFrame; without pushFilters
    # (the default) every count is right.
    df = spark.read.format("lance_duck").load(history_table)
    total = lance.dataset(history_table).count_rows()
    assert df.where("id < 10").count() == lance.dataset(history_table).count_rows("id < 10")
    assert df.count() == total


def test_missing_version_is_a_clear_error(spark, history_table):
    with pytest.raises(Exception, match="999"):
        spark.read.format("lance_duck").option("version", "999").load(history_table).count()


def test_pushdown_reader_keeps_translatable_filters_and_returns_the_rest(history_table):
    from pyspark.sql import datasource as sds
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from lance_duck.integrations.spark import PushdownLanceReader

    schema = StructType([StructField("id", LongType()), StructField("label", StringType())])
    reader = PushdownLanceReader({"path": history_table}, schema)
    filters = [sds.LessThan(("id",), 10), sds.IsNotNull(("label",)), sds.In(("id",), (1, None)),
               sds.EqualTo(("nope",), 1), sds.EqualTo(("id",), "not a number")]
    rejected = list(reader.pushFilters(filters))
    assert rejected == filters[2:]
    assert reader.filters == filters[:2]
