"""scan_row_ranges / count_row_ranges read what pylance holds at those physical rows.

The expected rows come from pylance's own scan with ``_rowaddr`` (fragment id << 32 | offset),
selected by address range: deleted rows, the filter and the range order are pylance's.
"""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

import lance
import lance_duck
from lance_duck.errors import InvalidArgumentError
from lance_duck.io import fs as fs_mod
from lance_duck.scan.ranges import count_row_ranges, scan_row_ranges


def _expected(path, ranges, columns=None, filter=None) -> pa.Table:
    t = lance.dataset(path).to_table(columns=columns, filter=filter, with_row_address=True)
    addr = t["_rowaddr"].to_numpy().astype(np.uint64)
    fid, off = addr >> np.uint64(32), addr & np.uint64(0xFFFFFFFF)
    parts = [t.filter(pa.array((fid == f) & (off >= a) & (off < b))) for f, a, b in ranges]
    return pa.concat_tables(parts).drop_columns(["_rowaddr"])


def _ours(path, ranges, **kw) -> pa.Table:
    ds = lance_duck.dataset(path)
    batches = list(scan_row_ranges(ds, ranges, **kw))
    schema = ds.scanner(columns=kw.get("columns")).projected_schema
    return pa.Table.from_batches(batches, schema=schema)


def _ranges(path):
    """Whole, partial, empty and split ranges of every fragment, out of fragment order."""
    frags = [(f.fragment_id, f.metadata.physical_rows) for f in lance.dataset(path).get_fragments()]
    (f0, n0), (f1, n1), *rest = frags
    out = [(f1, 0, n1 // 2), (f0, 3, 3), (f0, 5, n0 - 5), (f1, n1 // 2, n1)]
    return out + [(f, 0, n) for f, n in rest]


def test_ranges_read_the_live_rows_pylance_holds_there(table_path):
    ranges = _ranges(table_path)
    assert lance.dataset(table_path).get_fragments()[0].metadata.deletion_file is not None
    cols = ["id", "x", "name", "s", "l"]
    assert _ours(table_path, ranges, columns=cols).equals(_expected(table_path, ranges, cols))


@pytest.mark.parametrize("flt", ["id % 3 = 0 and x is not null", "name like 'abc%'", "s.a >= 1500"])
def test_ranges_apply_the_filter_exactly(table_path, flt):
    ranges = _ranges(table_path)
    cols = ["id", "name"]
    want = _expected(table_path, ranges, cols, flt)
    assert 0 < want.num_rows
    assert _ours(table_path, ranges, columns=cols, filter=flt, batch_size=97).equals(want)
    assert count_row_ranges(lance_duck.dataset(table_path), ranges, filter=flt) == want.num_rows


def test_dataset_filter_applies_to_range_scans(table_path):
    ranges = _ranges(table_path)
    ds = lance_duck.dataset(table_path).filter("id < 1200")
    got = pa.Table.from_batches(list(scan_row_ranges(ds, ranges, columns=["id"])))
    assert got["id"].to_pylist() == _expected(table_path, ranges, ["id"], "id < 1200")["id"].to_pylist()


def test_count_without_filter_is_the_live_rows_of_the_ranges(table_path):
    ranges = _ranges(table_path)
    assert count_row_ranges(lance_duck.dataset(table_path), ranges) == _expected(table_path, ranges, ["id"]).num_rows


def test_batches_hold_at_most_batch_size_rows(table_path):
    ranges = _ranges(table_path)
    sizes = [b.num_rows for b in scan_row_ranges(lance_duck.dataset(table_path), ranges, columns=["id"],
                                                 batch_size=128)]
    assert max(sizes) <= 128 and sum(sizes) == _expected(table_path, ranges, ["id"]).num_rows


@pytest.mark.parametrize("bad", [[(999, 0, 1)], [(0, 0, 10**6)], [(0, 5, 2)], [(0, -1, 3)]])
def test_a_range_outside_the_version_is_refused(table_path, bad):
    with pytest.raises(InvalidArgumentError, match="fragment|range"):
        list(scan_row_ranges(lance_duck.dataset(table_path), bad))


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("ranges_idx") / "t.lance")
    n = 120_000
    i = np.arange(n)
    ds = lance.write_dataset(pa.table({"id": pa.array(i, pa.int64()),
                                       "payload": pa.array([f"{k:010d}" * 6 for k in i])}),
                             path, max_rows_per_file=40_000)
    ds.create_scalar_index("payload", "BTREE")
    ds.delete("id % 1000 = 17")
    return path


def test_range_scans_use_scalar_indices(indexed, monkeypatch):
    read = {"bytes": 0}
    orig = fs_mod.InputFile.read_ranges

    def counting(self, ranges):
        if "/data/" in self.path:
            read["bytes"] += sum(n for _, n in ranges)
        return orig(self, ranges)

    monkeypatch.setattr(fs_mod.InputFile, "read_ranges", counting)
    flt = f"payload = '{100_003:010d}{100_003:010d}{100_003:010d}{100_003:010d}{100_003:010d}{100_003:010d}'"
    ranges = [(1, 0, 20_000), (2, 0, 40_000), (0, 0, 40_000)]
    got = _ours(indexed, ranges, columns=["id", "payload"], filter=flt)
    assert got.equals(_expected(indexed, ranges, ["id", "payload"], flt))
    assert got["id"].to_pylist() == [100_003]
    data = sum(os.path.getsize(os.path.join(indexed, "data", f)) for f in os.listdir(os.path.join(indexed, "data")))
    assert read["bytes"] < 0.05 * data, (read["bytes"], data)
    # the same filter without the index reads every row of the ranges
    read["bytes"] = 0
    plain = _ours(indexed, ranges, columns=["id", "payload"], filter=flt, use_scalar_index=False)
    assert plain.equals(got) and read["bytes"] > 0.2 * data
