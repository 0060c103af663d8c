"""A point lookup on a cold dataset (no file metadata cached) fetches under 1% of the indexed
column's bytes: the footer and metadata region of the one data file holding the row, the page
metadata of its columns and one chunk per column -- counted at the io layer."""
from __future__ import annotations

import duckdb
import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.file.container import METADATA_CACHE, V2Container
from lance_duck.index.files import CACHE as INDEX_CACHE
from lance_duck.io import fs as fs_mod
from lance_duck.trace import decode_trace

ROWS = 1_000_000


@pytest.fixture(scope="module")
def million(tmp_path_factory) -> str:
    """The benchmark's shape: 1M rows in four fragments, a BTREE on ``id``, a BITMAP on ``category``."""
    rng = np.random.default_rng(3)
    table = pa.table({
        "id": pa.array(np.arange(ROWS, dtype=np.int64)),
        "category": pa.array(np.char.add("cat_", rng.integers(0, 20, ROWS).astype(str))),
        "amount": pa.array(np.arange(ROWS) * (250.0 / ROWS) + rng.random(ROWS)),
    })
    path = str(tmp_path_factory.mktemp("cold") / "million.lance")
    ds = lance.write_dataset(table, path, max_rows_per_file=ROWS // 4)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("category", "BITMAP")
    return path


def _page_bytes(path: str, name: str) -> int:
    """Bytes of every page buffer of column ``name`` over the table's data files."""
    snap = lance_duck.dataset(path)._snapshot
    fid = next(f.id for f in snap.schema.fields if f.name == name)
    total = 0
    for frag in snap.fragments:
        ref = frag.file_for_field(fid)
        f = snap.io.open_input(ref.path, ref.size)
        pages = V2Container.open(f, f.read_tail(1 << 16)).column(ref.column_of(fid)).pages
        total += sum(int(n) for p in pages for n in p.buffer_sizes)
    return total


@pytest.fixture
def cold_data_bytes(monkeypatch):
    """Data-file bytes read through the io layer, starting with no file metadata cached."""
    counted = {"bytes": 0, "files": set()}
    orig = fs_mod.InputFile.read_ranges

    def read_ranges(self, ranges):
        if "/data/" in self.path:
            counted["bytes"] += sum(n for _, n in ranges)
            counted["files"].add(self.path)
        return orig(self, ranges)

    METADATA_CACHE.clear()
    INDEX_CACHE.clear()
    monkeypatch.setattr(fs_mod.InputFile, "read_ranges", read_ranges)
    return counted


def test_cold_point_lookup_through_duckdb_fetches_under_one_percent_of_the_id_column(million, cold_data_bytes):
    id_bytes = _page_bytes(million, "id")
    METADATA_CACHE.clear()
    cold_data_bytes["bytes"] = 0
    cold_data_bytes["files"].clear()
    con = duckdb.connect()
    con.register("t", lance_duck.dataset(million))
    got = con.execute("select * from t where id = 612345").fetchall()
    ref = lance.dataset(million).to_table(filter="id = 612345").to_pylist()
    assert got == [tuple(r.values()) for r in ref] and len(got) == 1
    assert len(cold_data_bytes["files"]) == 1                 # only the file holding the row
    assert cold_data_bytes["bytes"] < 0.01 * id_bytes, (cold_data_bytes["bytes"], id_bytes)


def test_cold_point_lookup_to_table_reads_the_footer_not_a_64k_tail(million, cold_data_bytes):
    ds = lance_duck.dataset(million)
    got = ds.to_table(columns=["id"], filter="id = 700001")
    fetched = cold_data_bytes["bytes"]
    assert got["id"].to_pylist() == [700001]
    assert got.equals(ds.to_table(columns=["id"], filter="id = 700001", use_scalar_index=False))
    # footer + metadata region (~3 KB) + page metadata + one chunk of id: far under one 64 KiB tail
    assert fetched < 16 * 1024, fetched


@pytest.mark.parametrize("dense_selection, path, absent", [
    # 5% of the rows (below one in DENSE_SELECTION): values read one by one from the packed words
    (None, "path:selected:inline_bitpacking", "path:selected:unpack-gather"),
    # the same rows with the threshold lowered to 1 in 32: the chunks are unpacked whole and gathered
    (32, "path:selected:unpack-gather", None),
])
def test_bitmap_selection_of_one_row_in_twenty_reads_values_or_unpacks_and_equals_pylance(
        million, monkeypatch, dense_selection, path, absent):
    """A BITMAP selection touching every chunk of the selected columns, read per value or by
    unpacking whole chunks (by density); the rows equal pylance's and the unindexed read."""
    from lance_duck.file.v2_1.compression import miniblock as mb
    if dense_selection is not None:
        monkeypatch.setattr(mb, "DENSE_SELECTION", dict.fromkeys((8, 16, 32, 64), dense_selection))
    ds = lance_duck.dataset(million)
    flt = "category = 'cat_7'"
    with decode_trace() as trace:
        got = ds.to_table(columns=["id", "amount"], filter=flt)
    assert path in trace.names()
    assert absent is None or absent not in trace.names()
    assert ds.scanner(filter=flt)._index_selections() is not None
    assert got.num_rows > ROWS // 25
    assert got.equals(ds.to_table(columns=["id", "amount"], filter=flt, use_scalar_index=False))
    assert got.equals(lance.dataset(million).to_table(columns=["id", "amount"], filter=flt))


def test_an_index_selection_of_many_rows_in_one_fragment_is_read_once_per_row(million):
    """100,000 btree-selected rows in one fragment are planned as growing tasks (8K, 32K, ...):
    consecutive parts, so no row comes back twice (through to_table and DuckDB)."""
    ds = lance_duck.dataset(million)
    flt = "id < 100000 AND amount >= 0"
    sel = ds.scanner(filter=flt)._index_selections()
    assert sel is not None and len(sel[0]) == 100_000
    got = ds.to_table(columns=["id", "category"], filter=flt)
    assert got.num_rows == 100_000
    assert got.equals(ds.to_table(columns=["id", "category"], filter=flt, use_scalar_index=False))
    assert got.equals(lance.dataset(million).to_table(columns=["id", "category"], filter=flt))
    con = duckdb.connect()
    con.register("t", ds)
    assert con.execute("select count(*), count(distinct id) from t where id < 100000").fetchone() == (100_000, 100_000)
