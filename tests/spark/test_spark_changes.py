"""``readChangeFeed`` reads ``lance_duck.changes``'s rows through Spark (Delta's option names:
startingVersion / endingVersion inclusive, timestamps), cut into partitions of the changed rows."""
from __future__ import annotations

from datetime import timedelta, timezone

import pytest

import lance_duck
from lance_duck.errors import InvalidArgumentError
from lance_duck.integrations.spark.options import parse_options
from tests.changes.histories import make_history


@pytest.fixture(scope="module")
def feed_table(tmp_path_factory) -> str:
    return make_history(str(tmp_path_factory.mktemp("spark-changes") / "stable.lance"), stable=True)


def _python_rows(table):
    out = []
    for r in table.to_pylist():
        r["_commit_timestamp"] = r["_commit_timestamp"].astimezone(timezone.utc).replace(tzinfo=None)
        out.append(tuple(r.values()))
    return out


def _spark_rows(df):
    return [tuple(int(v) if k == "_rowid" else v for k, v in row.asDict().items()) for row in df.collect()]


def test_a_version_range_reads_the_python_feeds_rows(spark, feed_table):
    df = (spark.read.format("lance_duck").option("readChangeFeed", "true").option("startingVersion", 3)
          .option("endingVersion", 5).load(feed_table))
    assert df.columns[-4:] == ["_change_type", "_commit_version", "_commit_timestamp", "_rowid"]
    want = _python_rows(lance_duck.changes(feed_table, 2, 5).read_all())
    assert _spark_rows(df) == want and len(want) > 10


def test_timestamps_columns_filter_and_small_partitions_keep_the_rows_and_their_order(spark, feed_table):
    import lance
    stamps = {v["version"]: v["timestamp"] for v in lance.dataset(feed_table).versions()}   # naive local
    us = timedelta(microseconds=1)        # pylance rounds the manifests' nanoseconds, lance_duck truncates
    df = (spark.read.format("lance_duck").option("readChangeFeed", "true")
          .option("startingTimestamp", (stamps[2] - us).isoformat())
          .option("endingTimestamp", (stamps[12] + us).isoformat())
          .option("columns", "id, y").option("filter", "_change_type <> 'update_preimage'")
          .option("partition_rows", 7).load(feed_table))
    assert df.rdd.getNumPartitions() > 5
    want = _python_rows(lance_duck.changes(feed_table, 1, 12, columns=["id", "y"],
                                           filter="_change_type <> 'update_preimage'").read_all())
    assert _spark_rows(df) == want and len(want) > 50


@pytest.mark.parametrize("options, message", [
    ({"readChangeFeed": "true"}, "needs startingVersion or startingTimestamp"),
    ({"readChangeFeed": "true", "startingVersion": "0"}, "startingVersion must be >= 1"),
    ({"readChangeFeed": "true", "startingVersion": "2", "version": "3"}, "not version, tag or asof"),
    ({"startingVersion": "2"}, "need\\(s\\) option readChangeFeed=true"),
    ({"readChangeFeed": "true", "startingVersion": "2", "startingTimestamp": "2020-01-01"}, "not both"),
    ({"readChangeFeed": "true", "startingVersion": "x"}, "must be a version number"),
])
def test_bad_change_feed_options_are_refused_naming_them(options, message):
    with pytest.raises(InvalidArgumentError, match=message):
        parse_options({"path": "t.lance", **options})


def test_a_range_of_rewrites_only_reads_no_rows(spark, feed_table):
    df = (spark.read.format("lance_duck").option("readChangeFeed", "true").option("startingVersion", 7)
          .option("endingVersion", 9).load(feed_table))            # reserve ids, compaction, index build
    assert df.count() == 0 and df.collect() == []
