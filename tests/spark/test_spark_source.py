"""The Spark data source reads what pylance reads: every version of a table history, row-range
partitions, the columns/filter options, pushed filters, every option name, SQL views, errors.

The history table holds only types Spark represents as they are (int64, string, double, struct,
timestamp with a zone), so pylance's values are compared with Spark's as they are.
"""
from __future__ import annotations

import datetime as dt
import math
import os

import lance
import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException, PythonException

from lance_duck.errors import InvalidArgumentError


def _pylance(path, version=None, columns=None, filter=None) -> pa.Table:
    return lance.dataset(path, version=version).to_table(columns=columns, filter=filter)


def _compare(df, expected: pa.Table):
    got = df.toArrow()
    assert got.column_names == expected.column_names
    assert got.num_rows == expected.num_rows
    for name in expected.column_names:
        assert got[name].to_pylist() == expected[name].to_pylist(), name


def _read(spark, path, **options):
    r = spark.read.format("lance_duck")
    for k, v in options.items():
        r = r.option(k, str(v))
    return r.load(path)


def _versions(path):
    return [v["version"] for v in lance.dataset(path).versions()]


def _first_version_with_deletions(path) -> int:
    for v in _versions(path):
        ds = lance.dataset(path, version=v)
        if sum(f.metadata.physical_rows for f in ds.get_fragments()) > ds.count_rows():
            return v
    raise AssertionError("the history fixture has no version with deleted rows")


# -- versions, tags, branches -------------------------------------------------------------------

def test_latest_and_every_version_of_the_history_read_like_pylance(spark, history_table):
    _compare(_read(spark, history_table), _pylance(history_table))
    versions = _versions(history_table)
    assert len(versions) >= 8
    for v in versions[:-1]:
        _compare(_read(spark, history_table, version=v), _pylance(history_table, version=v))


@pytest.mark.parametrize("option, tag", [("version", "after_drop"), ("versionAsOf", "compacted"),
                                         ("tag", "after_drop"), ("tag", "compacted")])
def test_tags_by_every_option_name(spark, history_table, option, tag):
    assert tag in lance.dataset(history_table).tags.list(), "fixture lost its tags"
    _compare(_read(spark, history_table, **{option: tag}), _pylance(history_table, version=tag))


def test_version_as_of_a_number(spark, history_table):
    _compare(_read(spark, history_table, versionAsOf=2), _pylance(history_table, version=2))


def test_branch_option_reads_the_branch_tip(spark, history_table):
    expected = lance.dataset(history_table).checkout_version(("dev", None)).to_table()
    assert expected.num_rows != lance.dataset(history_table).count_rows()
    _compare(_read(spark, history_table, branch="dev"), expected)


@pytest.mark.parametrize("option", ["asof", "timestampAsOf"])
def test_as_of_a_time_reads_the_version_current_then(spark, history_table, option):
    versions = lance.dataset(history_table).versions()
    v3, v4 = versions[2], versions[3]
    t3, t4 = v3["timestamp"], v4["timestamp"]
    if t4 <= t3:
        pytest.fail("versions 3 and 4 share a timestamp; cannot pick a time between them")
    between = t3 + (t4 - t3) / 2
    if between.tzinfo is None:
        between = between.astimezone()
    iso = between.astimezone(dt.timezone.utc).isoformat()
    _compare(_read(spark, history_table, **{option: iso}), _pylance(history_table, version=v3["version"]))


# -- options -------------------------------------------------------------------------------------

def test_unknown_option_is_refused_naming_the_valid_ones(spark, history_table):
    with pytest.raises(AnalysisException, match=r"InvalidArgumentError: lance_duck: unknown option.*'verison'.*versionAsOf"):
        _read(spark, history_table, verison=3).collect()


def test_version_and_tag_together_are_refused(spark, history_table):
    with pytest.raises(AnalysisException, match="InvalidArgumentError: lance_duck: give either version"):
        _read(spark, history_table, version=3, tag="compacted").collect()


def test_missing_version_is_a_clear_error(spark, history_table):
    with pytest.raises(AnalysisException, match="VersionNotFoundError: .*999"):
        _read(spark, history_table, version=999).count()


def test_columns_option_reads_only_those_columns(spark, history_table):
    df = _read(spark, history_table, columns="id, s")
    assert df.columns == ["id", "s"]
    _compare(df, _pylance(history_table, columns=["id", "s"]))


def test_user_schema_subset_is_honoured(spark, history_table):
    df = spark.read.format("lance_duck").schema("id long, label string").load(history_table)
    _compare(df, _pylance(history_table, columns=["id", "label"]))


def test_user_schema_naming_a_missing_column_is_refused(spark, history_table):
    with pytest.raises(AnalysisException, match="InvalidArgumentError: .*'nope'"):
        spark.read.format("lance_duck").schema("id long, nope string").load(history_table).collect()


@pytest.mark.parametrize("flt", ["id < 3000 and s.a >= 500", "label is null", "label like 'name-1%'",
                                 "id in (5, 6, 7, 3000) or double_id > 30000"])
def test_filter_option_is_applied_exactly(spark, history_table, flt):
    df = _read(spark, history_table, filter=flt)
    expected = _pylance(history_table, filter=flt)
    assert 0 < expected.num_rows < lance.dataset(history_table).count_rows()
    _compare(df, expected)


def test_filter_and_columns_options_together(spark, history_table):
    df = _read(spark, history_table, columns="label", filter="id % 3 = 0")
    _compare(df, _pylance(history_table, columns=["label"], filter="id % 3 = 0"))


def test_bad_filter_fails_at_planning_naming_it(spark, history_table):
    with pytest.raises(AnalysisException, match="InvalidArgumentError: unknown column .no_such_col. in filter"):
        _read(spark, history_table, filter="no_such_col > 1").collect()


def test_batch_size_option_keeps_rows_and_order(spark, history_table):
    _compare(_read(spark, history_table, batch_size=333), _pylance(history_table))


def test_storage_options_are_accepted(spark, history_table):
    _compare(_read(spark, history_table, **{"storage_options.auto_mkdir": "false"}), _pylance(history_table))


def test_sql_temporary_view_with_options(spark, history_table):
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW hist_v3 USING lance_duck "
              f"OPTIONS (path '{history_table}', version '3')")
    _compare(spark.sql("SELECT * FROM hist_v3"), _pylance(history_table, version=3))
    n = spark.sql("SELECT count(*) AS n FROM hist_v3 WHERE id < 100").collect()[0].n
    assert n == lance.dataset(history_table, version=3).count_rows("id < 100")


# -- partitions ----------------------------------------------------------------------------------

def _expected_partitions(path, target_rows, version=None):
    """The documented rule: split fragments above the target, group consecutive smaller ones."""
    count, group = 0, 0
    for f in lance.dataset(path, version=version).get_fragments():
        n = f.metadata.physical_rows
        if n == 0 or f.count_rows() == 0:
            continue
        if n > target_rows:
            count += (1 if group else 0) + math.ceil(n / target_rows)
            group = 0
            continue
        if group and group + n > target_rows:
            count += 1
            group = 0
        group += n
    return count + (1 if group else 0)


def test_large_fragments_split_into_row_ranges(spark, history_table):
    v = _first_version_with_deletions(history_table)
    df = _read(spark, history_table, partition_rows=4000, version=v)
    frags = lance.dataset(history_table, version=v).get_fragments()
    assert df.rdd.getNumPartitions() == _expected_partitions(history_table, 4000, v) > len(frags)
    _compare(df, _pylance(history_table, version=v))   # deletions across range boundaries, row order kept


def test_small_fragments_are_grouped(spark, small_fragments_table):
    df = _read(spark, small_fragments_table, partition_rows=450)
    assert len(lance.dataset(small_fragments_table).get_fragments()) == 20
    assert df.rdd.getNumPartitions() == 5
    _compare(df, _pylance(small_fragments_table))


def test_partition_bytes_targets_data_file_sizes(spark, small_fragments_table):
    one = _read(spark, small_fragments_table, partition_bytes="1g")
    assert one.rdd.getNumPartitions() == 1
    sizes = [f.data_files()[0].file_size_bytes for f in lance.dataset(small_fragments_table).get_fragments()]
    each = _read(spark, small_fragments_table, partition_bytes=str(max(sizes)))
    assert each.rdd.getNumPartitions() == 20
    _compare(each, _pylance(small_fragments_table))


def test_default_partitions_keep_every_core_busy_on_one_fragment(spark, one_fragment_table):
    assert len(lance.dataset(one_fragment_table).get_fragments()) == 1
    df = _read(spark, one_fragment_table)
    cores = spark.sparkContext.defaultParallelism
    assert df.rdd.getNumPartitions() >= cores
    _compare(df, _pylance(one_fragment_table))


def test_partition_descriptors_are_small(history_table):
    import pickle

    from lance_duck.integrations.spark import parse_options, plan_partitions
    from lance_duck.integrations.spark.reader import open_dataset

    ds = open_dataset(parse_options({"path": history_table}))
    parts = plan_partitions(ds._snapshot.fragments, target_rows=1000)
    assert max(len(pickle.dumps(p)) for p in parts) < 400


# -- Spark's filter pushdown ---------------------------------------------------------------------

WHERES = ["id < 20 and s.a >= 3", "label like 'name-1%'", "label is null", "id in (5, 6, 7, 3000)",
          "not (id > 10)", "id = 4 or id = 9", "ts >= timestamp '1970-01-01 01:00:00'"]


@pytest.mark.parametrize("where", WHERES)
def test_pushed_and_unpushed_filters_give_the_same_rows(spark, history_table, where):
    pushed = _read(spark, history_table, pushFilters="true").where(where).toArrow()
    plain = _read(spark, history_table).where(where).toArrow()
    assert pushed.num_rows == plain.num_rows > 0
    assert pushed.equals(plain)
    # the history's ts is id seconds after the epoch (UTC)
    lance_filter = "id >= 3600" if where.startswith("ts") else where
    assert pushed.num_rows == lance.dataset(history_table).count_rows(lance_filter)


def test_pushed_filters_on_unsigned_and_timestamps(spark, types_table):
    where = "u32 > 4294000000 and ts_tz >= timestamp '1970-01-01 00:03:00' and u8 != 5"
    pushed = _read(spark, types_table, pushFilters="true", columns="id, u32, ts_tz, u8").where(where)
    plain = _read(spark, types_table, columns="id, u32, ts_tz, u8").where(where)
    a, b = pushed.toArrow(), plain.toArrow()
    assert 0 < a.num_rows < lance.dataset(types_table).count_rows()
    assert a.equals(b)


def test_spark_reuses_stale_pushed_filters_on_a_reused_dataframe(spark, history_table):
    """Pins Spark 4.3's behaviour that keeps pushdown opt-in (see integrations/spark/__init__.py):
    the provider keeps the read info of its last pushdown, and a later query with no pushable
    filter re-uses it. If this starts failing, Spark fixed it: make pushdown the default."""
    total = lance.dataset(history_table).count_rows()
    small = lance.dataset(history_table).count_rows("id < 10")
    pushed = _read(spark, history_table, pushFilters="true")
    assert pushed.where("id < 10").count() == small
    assert pushed.count() == small          # stale: Spark re-used the previous query's filter
    pushed.createOrReplaceTempView("stale_pushed")
    assert spark.table("stale_pushed").count() == small   # a view of it too
    cached = pushed.cache()
    try:
        assert cached.count() == small                     # and what cache() materialises
    finally:
        cached.unpersist()
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW stale_sql USING lance_duck "
              f"OPTIONS (path '{history_table}', pushFilters 'true')")
    assert spark.sql("select count(*) from stale_sql where id < 10").first()[0] == small
    assert spark.sql("select count(*) from stale_sql").first()[0] == small   # a SQL view as well
    plain = _read(spark, history_table)     # the default (no pushdown) is right
    assert plain.where("id < 10").count() == small
    assert plain.count() == total


def test_spark_runs_the_last_pushdown_for_every_scan_of_a_union(spark, history_table):
    """Pins why no source can make Spark 4.3's pushdown safe: in a union of one fresh DataFrame
    with two filters, both scans run the reader of the last pushdown (their tasks get identical
    pickled readers and partitions). Without pushdown the union is right."""
    low, high = "id < 10", "id >= 1000"
    ds = lance.dataset(history_table)
    want = sorted(ds.to_table(filter=low)["id"].to_pylist() + ds.to_table(filter=high)["id"].to_pylist())
    wrong = sorted(ds.to_table(filter=high)["id"].to_pylist() * 2)
    assert want != wrong and len(want) > 10

    def ids(df):
        return sorted(df.where(low).union(df.where(high)).toArrow()["id"].to_pylist())

    assert ids(_read(spark, history_table, pushFilters="true")) == wrong
    assert ids(_read(spark, history_table)) == want


def test_push_filters_with_spark_pushdown_conf_off_reads_without_pushdown(spark, history_table):
    """register() reads the session's setting: with it off, pushFilters=true takes the plain reader (Spark
    filters the rows) instead of failing; a setting changed after register() is refused by Spark, naming it."""
    from lance_duck.integrations.spark import register

    conf = "spark.sql.python.filterPushdown.enabled"
    spark.conf.set(conf, "false")
    try:
        with pytest.raises(Exception, match=conf.replace(".", r"\.")):
            _read(spark, history_table, pushFilters="true").where("id < 10").count()
        register(spark)
        pushed = _read(spark, history_table, pushFilters="true").where("id < 10")
        assert pushed.count() == lance.dataset(history_table).count_rows("id < 10")
        assert sorted(r.id for r in pushed.select("id").collect()) == \
            sorted(lance.dataset(history_table).to_table(columns=["id"], filter="id < 10")["id"].to_pylist())
    finally:
        spark.conf.set(conf, "true")
        register(spark)


def test_the_short_name_lance_reads_like_lance_duck(spark, history_table):
    from lance_duck.integrations.spark import register

    assert register(spark) == ["lance_duck", "lance"]
    got = spark.read.format("lance").option("version", "2").load(history_table)
    _compare(got.orderBy("id"), _pylance(history_table, version=2).sort_by("id"))


def test_reader_class_follows_the_session_settings():
    from lance_duck.integrations.spark import LanceReader, LimitLanceReader, PushdownLanceReader, reader_class
    from lance_duck.integrations.spark.reader import PushdownLimitLanceReader

    assert reader_class(False, False) is LanceReader
    assert reader_class(True, False) is PushdownLanceReader and not hasattr(PushdownLanceReader, "pushLimit")
    assert reader_class(False, True) is LimitLanceReader and "pushFilters" not in vars(LimitLanceReader)
    assert reader_class(True, True) is PushdownLimitLanceReader
    assert hasattr(PushdownLimitLanceReader, "pushLimit") and hasattr(PushdownLimitLanceReader, "pushFilters")


def test_pushed_limit_bounds_each_partition(history_table):
    from pyspark.sql.types import LongType, StructField, StructType

    from lance_duck.integrations.spark import LanceReader, LimitLanceReader, parse_options

    schema = StructType([StructField("id", LongType())])
    reader = LimitLanceReader(parse_options({"path": history_table, "partition_rows": "50"}), schema)
    assert reader.pushLimit(7) is True and reader.pushLimit(-1) is False
    parts = reader.partitions()
    assert len(parts) > 1
    full = LanceReader(parse_options({"path": history_table, "partition_rows": "50"}), schema)
    whole = [pa.Table.from_batches(list(full.read(p)), schema=pa.schema([("id", pa.int64())])) for p in parts]
    assert [i for t in whole for i in t["id"].to_pylist()] == \
        lance.dataset(history_table).to_table(columns=["id"])["id"].to_pylist()
    for p, t in zip(parts, whole):
        got = pa.Table.from_batches(list(reader.read(p)), schema=t.schema)
        assert got["id"].to_pylist() == t["id"].to_pylist()[:7]


def test_prune_columns_narrows_what_is_read(history_table):
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from lance_duck.integrations.spark import LanceReader, parse_options

    schema = StructType([StructField("id", LongType()), StructField("label", StringType())])
    reader = LanceReader(parse_options({"path": history_table}), schema)
    narrow = StructType([StructField("label", StringType())])
    assert reader.pruneColumns(narrow) is narrow
    got = pa.Table.from_batches([b for p in reader.partitions() for b in reader.read(p)])
    assert got.column_names == ["label"]
    assert got["label"].to_pylist() == lance.dataset(history_table).to_table(columns=["label"])["label"].to_pylist()
    with pytest.raises(InvalidArgumentError, match="nope"):
        reader.pruneColumns(StructType([StructField("nope", LongType())]))


def test_pushdown_reader_keeps_translatable_filters_and_returns_the_rest(history_table):
    from pyspark.sql import datasource as sds
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from lance_duck.integrations.spark import PushdownLanceReader, parse_options

    schema = StructType([StructField("id", LongType()), StructField("label", StringType())])
    reader = PushdownLanceReader(parse_options({"path": history_table}), schema)
    filters = [sds.LessThan(("id",), 10), sds.IsNotNull(("label",)), sds.In(("id",), (1, None)),
               sds.EqualTo(("nope",), 1), sds.EqualTo(("id",), "not a number")]
    rejected = list(reader.pushFilters(filters))
    assert rejected == filters[2:]
    assert reader.filters == filters[:2]


# -- errors --------------------------------------------------------------------------------------

def test_worker_error_reaches_the_driver_with_its_type_and_message(spark, tmp_path):
    import glob
    import shutil

    src = str(tmp_path / "t.lance")
    lance.write_dataset(pa.table({"id": pa.array(range(1000), pa.int64())}), src, data_storage_version="2.2")
    df = _read(spark, src)                       # planned: manifest read, version pinned
    for f in glob.glob(os.path.join(src, "data", "*.lance")):
        with open(f, "r+b") as fh:
            fh.truncate(100)
    with pytest.raises(PythonException) as info:
        df.collect()
    msg = str(info.value)
    assert "CorruptFileError:" in msg or "FileNotFoundError" in msg
    last = [line for line in msg.splitlines() if "Error:" in line]
    assert any(line.startswith("lance_duck.errors.CorruptFileError: CorruptFileError:") for line in last), msg
    shutil.rmtree(src)


def test_batches_are_cut_at_the_byte_cap_keeping_rows_and_order(monkeypatch):
    from lance_duck.integrations.spark import reader

    monkeypatch.setattr(reader, "MAX_BATCH_BYTES", 1000)
    batch = pa.record_batch({"x": pa.array(range(1000), pa.int64())})   # 8000 bytes
    parts = list(reader._bounded(batch))
    assert len(parts) == 8 and all(p.nbytes <= 1000 for p in parts)
    assert pa.Table.from_batches(parts).column(0).to_pylist() == list(range(1000))


# -- reads with nothing to return ------------------------------------------------------------------

def test_an_empty_table_reads_as_no_rows(spark, tmp_path):
    path = str(tmp_path / "empty.lance")
    lance.write_dataset(pa.table({"id": pa.array([], pa.int64()), "s": pa.array([], pa.string())}), path,
                        data_storage_version="2.2")
    df = _read(spark, path)
    assert df.columns == ["id", "s"]
    assert df.toArrow().num_rows == 0 == df.count()


@pytest.mark.parametrize("no_column", ["schema", "columns"])
def test_a_read_with_no_column_counts_live_rows(spark, history_table, no_column):
    """``.schema(StructType([]))`` or ``columns=''``: only row counts reach Spark, deletions applied."""
    from pyspark.sql.types import StructType

    def read(**options):
        r = spark.read.format("lance_duck")
        r = r.schema(StructType([])) if no_column == "schema" else r.option("columns", "")
        for k, v in options.items():
            r = r.option(k, str(v))
        return r.load(history_table)

    v = _first_version_with_deletions(history_table)   # the latest is compacted
    ds = lance.dataset(history_table, version=v)
    df = read(version=v)
    assert df.columns == []
    assert df.count() == ds.count_rows()
    flt = "id % 3 = 0"
    assert read(version=v, filter=flt).count() == ds.count_rows(flt) > 0
    assert read().count() == lance.dataset(history_table).count_rows()


def test_columns_option_with_an_empty_name_is_refused():
    from lance_duck.errors import InvalidArgumentError
    from lance_duck.integrations.spark import parse_options

    assert parse_options({"path": "t.lance", "columns": ""}).columns == ()
    with pytest.raises(InvalidArgumentError, match="empty name"):
        parse_options({"path": "t.lance", "columns": "id,,x"})


def test_batches_are_cut_at_batch_size_rows_keeping_rows_and_order():
    from lance_duck.integrations.spark import reader

    batch = pa.record_batch({"x": pa.array(range(1000), pa.int64()), "s": pa.array([str(i) for i in range(1000)])})
    parts = list(reader._bounded(batch, 300))
    assert [p.num_rows for p in parts] == [250, 250, 250, 250]
    assert pa.Table.from_batches(parts).equals(pa.Table.from_batches([batch]))


def test_a_blob_column_reads_as_its_descriptions_with_uint64_as_decimal(spark, tmp_path):
    """pylance reads a blob column as its descriptions (a struct with uint64 position and size);
    Spark holds uint64 as DECIMAL(20,0)."""
    import decimal

    path = str(tmp_path / "blob.lance")
    schema = pa.schema([pa.field("id", pa.int64()),
                        pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    vals = [None if i % 4 == 1 else bytes([i]) * (i * 37) for i in range(12)]
    lance.write_dataset(pa.table({"id": list(range(12)), "b": vals}, schema=schema), path,
                        data_storage_version="2.2")
    ref = lance.dataset(path).to_table()
    btype = ref.schema.field("b").type
    assert pa.types.is_struct(btype) and btype.field("size").type == pa.uint64()
    uint64 = {f.name for f in btype if f.type == pa.uint64()}
    got = _read(spark, path).orderBy("id").toArrow()
    assert got.column("id").to_pylist() == list(range(12))
    expected = [None if d is None else {k: decimal.Decimal(v) if k in uint64 else v for k, v in d.items()}
                for d in ref.column("b").to_pylist()]
    assert got.column("b").to_pylist() == expected
    assert any(d and d["size"] > 0 for d in expected)
