"""The change feed reads what changed: unchanged fragments are never opened, rewrites read no data,
and only the changed rows are decoded (traced with ``lance_duck.trace``)."""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.trace import decode_trace


@pytest.fixture(scope="module")
def wide(tmp_path_factory) -> str:
    """20 fragments of 500 rows (stable row ids); v2 updates 3 rows of fragment 7, deletes 2 of
    fragment 12 and appends 10 rows; v3 compacts."""
    uri = str(tmp_path_factory.mktemp("cost") / "wide.lance")
    n = 10_000
    t = pa.table({"id": pa.array(np.arange(n), pa.int64()), "s": [f"v{i}" for i in range(n)]})
    lance.write_dataset(t, uri, max_rows_per_file=500, enable_stable_row_ids=True)
    ds = lance.dataset(uri)
    ds.update({"s": "'changed'"}, "id IN (3500, 3501, 3999)")
    ds = lance.dataset(uri)
    ds.delete("id IN (6000, 6001)")
    lance.write_dataset(pa.table({"id": pa.array(np.arange(n, n + 10), pa.int64()),
                                  "s": [f"n{i}" for i in range(10)]}), uri, mode="append")
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=100_000)
    return uri


def _file(path) -> str:
    return str(path).rsplit("/", 1)[-1]


def test_only_the_changed_fragments_are_opened_and_only_changed_rows_read(wide):
    with decode_trace() as t:
        got = lance_duck.changes(wide, 1, 4).read_all()
    kinds = got.column("_change_type").to_pylist()
    assert sorted(kinds) == sorted(["update_preimage"] * 3 + ["update_postimage"] * 3 + ["delete"] * 2
                                   + ["insert"] * 10)
    changed = set()
    for v in (2, 3, 4):
        for side in (v - 1, v):
            ds = lance.dataset(wide, version=side)
            before = {f.fragment_id: f for f in lance.dataset(wide, version=v - 1).get_fragments()}
            after = {f.fragment_id: f for f in lance.dataset(wide, version=v).get_fragments()}
            for fid, f in (before if side == v - 1 else after).items():
                other = (after if side == v - 1 else before).get(fid)
                if other is None or other.metadata != f.metadata:
                    changed |= {_file(d.path) for d in f.data_files()}
            del ds
    opened = {_file(p) for p in t.values("file:open")}
    assert opened and opened <= changed
    assert len(changed) <= 6, changed                       # of 20+ fragments
    rows = sum(n for (_, _, _, n) in t.values("changes:read"))
    assert rows == got.num_rows


def test_a_compaction_reads_no_data_and_no_fragment_metadata(wide):
    last = lance.dataset(wide).version
    with decode_trace() as t:
        assert lance_duck.changes(wide, last - 1, last).read_all().num_rows == 0
    assert t.values("changes:commit") == [(last, "rewrite")]
    assert t.values("changes:fragment") == [] and t.values("file:open") == []


def test_a_filter_on_the_change_columns_alone_is_applied_before_values_are_read(wide):
    whole = lance_duck.changes(wide, 1, 4).read_all()
    keep = "_change_type IN ('insert', 'update_postimage')"
    with decode_trace() as t:
        got = lance_duck.changes(wide, 1, 4, filter=keep).read_all()
    want = whole.filter(pa.compute.is_in(whole.column("_change_type"), pa.array(["insert", "update_postimage"])))
    assert got.equals(want) and got.num_rows == 13
    assert sum(n for (_, _, _, n) in t.values("changes:read")) == 13
    # post-images and inserts live in the fragments the commits wrote, not in the 20 original ones
    original = {_file(d.path) for f in lance.dataset(wide, version=1).get_fragments() for d in f.data_files()}
    assert not {_file(p) for p in t.values("file:open")} & original


def test_no_columns_reads_no_data_file(wide):
    with decode_trace() as t:
        got = lance_duck.changes(wide, 1, 4, columns=[]).read_all()
    assert got.column_names == ["_change_type", "_commit_version", "_commit_timestamp", "_rowid"]
    assert got.num_rows == 18 and t.values("file:open") == [] and t.values("changes:read") == []
