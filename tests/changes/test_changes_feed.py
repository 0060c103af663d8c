"""``lance_duck.changes``: every commit's row changes equal a diff of pylance's full reads of the
two versions (by stable row id and row version, or by row address and values), with the decided
semantics of issue 31 (range, columns as of ``to``, rewrites without rows, filter per row)."""
from __future__ import annotations

from datetime import timedelta, timezone

import lance
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.changefeed.feed import META_FIELDS
from lance_duck.errors import InvalidArgumentError, TagNotFoundError, VersionNotFoundError

from .histories import LAST_VERSION
from .oracle import expected, expected_commit, rows_of


def test_each_commit_equals_the_diff_of_pylances_reads(history):
    total = 0
    for v in range(1, LAST_VERSION + 1):
        got = lance_duck.changes(history, v - 1, v).read_all()
        assert rows_of(got) == expected_commit(history, v, lance.dataset(history, version=v).schema.names), v
        total += got.num_rows
    assert total > 150


@pytest.mark.parametrize("start, end", [(0, LAST_VERSION), (2, 5), (5, 11), (6, 9), (9, 12)])
def test_a_range_is_its_commits_in_order_with_the_end_versions_columns(history, start, end):
    got = lance_duck.changes(history, start, end).read_all()
    assert got.schema == pa.schema([*lance.dataset(history, version=end).schema, *META_FIELDS])
    assert rows_of(got) == expected(history, start, end)


def test_commit_timestamps_are_the_manifests_times_in_utc_microseconds(stable_table):
    got = lance_duck.changes(stable_table, 0).read_all()
    stamps = {v["version"]: v["timestamp"].astimezone(timezone.utc) for v in lance.dataset(stable_table).versions()}
    for version, ts in zip(got.column("_commit_version").to_pylist(), got.column("_commit_timestamp").to_pylist()):
        assert abs(ts - stamps[version]) <= timedelta(microseconds=1)   # pylance rounds, we truncate ns


def test_rewrites_and_index_builds_produce_no_rows(history):
    for v in (7, 8, 9):         # reserve fragments, compaction, BTREE build
        assert lance_duck.changes(history, v - 1, v).read_all().num_rows == 0


def test_adding_a_column_updates_every_row_with_a_null_preimage(stable_table):
    t = lance_duck.changes(stable_table, 5, 6).read_all()
    n = lance.dataset(stable_table, version=6).count_rows()
    pre = t.filter(pa.compute.equal(t.column("_change_type"), "update_preimage"))
    post = t.filter(pa.compute.equal(t.column("_change_type"), "update_postimage"))
    assert pre.num_rows == post.num_rows == n
    assert pre.column("y").null_count == n and post.column("y").null_count == 0


def test_an_empty_range_has_the_schema_and_no_rows(stable_table):
    r = lance_duck.changes(stable_table, 4, 4)
    assert r.read_all().num_rows == 0
    assert r.schema.names[-4:] == ["_change_type", "_commit_version", "_commit_timestamp", "_rowid"]


def test_columns_and_filter_apply_to_each_output_row(history):
    whole = lance_duck.changes(history, 0).read_all()
    got = lance_duck.changes(history, 0, columns=["s"], filter="id < 5 AND _change_type <> 'insert'").read_all()
    want = [{"s": r["s"], **{k: r[k] for k in ("_change_type", "_commit_version", "_commit_timestamp", "_rowid")}}
            for r in whole.to_pylist() if r["id"] is not None and r["id"] < 5 and r["_change_type"] != "insert"]
    assert got.column_names == ["s", "_change_type", "_commit_version", "_commit_timestamp", "_rowid"]
    assert got.to_pylist() == want and len(want) > 4


def test_a_filter_can_keep_a_postimage_and_drop_its_preimage(stable_table):
    got = lance_duck.changes(stable_table, 3, 4, columns=["id", "s"], filter="s = 'upd'").read_all()
    assert set(got.column("_change_type").to_pylist()) == {"update_postimage"}
    assert sorted(got.column("id").to_pylist()) == [0, 1, 2, 4]


def test_tags_and_times_name_the_range_ends(stable_table):
    by_tag = lance_duck.changes(stable_table, "release-2", "after-merge").read_all()
    assert by_tag.equals(lance_duck.changes(stable_table, 2, 5).read_all())
    # naive local times; pylance rounds the manifests' nanoseconds where we truncate: 1 us of slack
    stamps = {v["version"]: v["timestamp"] for v in lance.dataset(stable_table).versions()}
    start, end = stamps[3] - timedelta(microseconds=1), stamps[5] + timedelta(microseconds=1)
    by_time = lance_duck.changes(stable_table, start, end).read_all()
    assert by_time.equals(lance_duck.changes(stable_table, 2, 5).read_all())
    by_iso = lance_duck.changes(stable_table, start.isoformat(), end.isoformat()).read_all()
    assert by_iso.equals(by_time)


@pytest.mark.parametrize("args, error, message", [
    ((5, 3), InvalidArgumentError, r"from_version 5 \(version 5\) is newer than to_version 3"),
    ((1, 40), VersionNotFoundError, "version 14 of .* is needed for the changes in"),
    (("no-such-tag",), TagNotFoundError, "no tag 'no-such-tag'"),
    ((-1,), InvalidArgumentError, "must be a version >= 0"),
    ((1.5,), InvalidArgumentError, "must be a version number, a tag name or a datetime"),
])
def test_bad_ranges_are_refused_naming_what_is_wrong(stable_table, args, error, message):
    with pytest.raises(error, match=message):
        lance_duck.changes(stable_table, *args)


def test_unknown_columns_and_bad_filters_are_refused(stable_table):
    with pytest.raises(InvalidArgumentError, match=r"columns \['nope'\]"):
        lance_duck.changes(stable_table, 0, columns=["nope"])
    with pytest.raises(InvalidArgumentError):
        lance_duck.changes(stable_table, 0, filter="nope > 1")


def test_a_cleaned_up_version_is_named(tmp_path):
    uri = str(tmp_path / "c.lance")
    ds = lance.write_dataset(pa.table({"a": [1, 2, 3]}), uri, enable_stable_row_ids=True)
    for i in range(3):
        ds = lance.write_dataset(pa.table({"a": [10 + i]}), uri, mode="append")
    ds.cleanup_old_versions(older_than=timedelta(0))
    assert [v["version"] for v in lance.dataset(uri).versions()] == [4]
    with pytest.raises(VersionNotFoundError, match=r"version 2 .* was cleaned up \(the oldest version kept is 4\)"):
        lance_duck.changes(uri, 2)
    assert lance_duck.changes(uri, 4).read_all().num_rows == 0


def _evolving(path: str, stable: bool) -> str:
    """v1 write (3 fragments), v2 delete a whole fragment, v3 rename s -> name, v4 update name,
    v5 drop x, v6 overwrite, v7 append."""
    ds = lance.write_dataset(pa.table({"id": pa.array(range(30), pa.int64()), "s": [f"s{i}" for i in range(30)],
                                       "x": pa.array(range(30), pa.float64())}), path,
                             enable_stable_row_ids=stable, max_rows_per_file=10)
    ds.delete("id >= 10 AND id < 20")
    ds.alter_columns({"path": "s", "name": "name"})
    ds.update({"name": "'renamed'"}, "id IN (2, 25)")
    ds.drop_columns(["x"])
    ds = lance.write_dataset(pa.table({"id": pa.array([7, 8], pa.int64()), "name": ["a", "b"]}), path,
                             mode="overwrite")
    lance.write_dataset(pa.table({"id": pa.array([9], pa.int64()), "name": ["c"]}), path, mode="append")
    return path


@pytest.mark.parametrize("stable", [True, False])
def test_vanished_fragments_renames_drops_and_overwrites_match_pylances_reads(tmp_path, stable):
    uri = _evolving(str(tmp_path / "e.lance"), stable)
    assert lance.dataset(uri).version == 7
    for start, end in [(0, 7), (1, 2), (2, 4), (3, 5), (4, 6), (0, 3)]:
        got = lance_duck.changes(uri, start, end).read_all()
        assert got.schema.names[:-4] == lance.dataset(uri, version=end).schema.names
        assert rows_of(got) == expected(uri, start, end), (start, end)
    renamed = lance_duck.changes(uri, 0, 4, filter="_commit_version = 1 AND id = 2").read_all()
    assert renamed.column("name").to_pylist() == ["s2"]      # read by field id from before the rename
