"""What index-driven reads fetch, counted at the io layer: a point lookup fetches under 1% of
the indexed column's bytes, a reopened data file reads no footer or page metadata again
(the per-process metadata cache), and count_rows answered from exact indices reads no data
for pyarrow-expression filters as for SQL strings."""
from __future__ import annotations

import os

import duckdb
import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck
from lance_duck.file.container import METADATA_CACHE
from lance_duck.io import fs as fs_mod

ROWS = 1_000_000


@pytest.fixture(scope="module")
def million(tmp_path_factory) -> str:
    """1M rows in four fragments, a delete applied; BTREE on id, BITMAP on cat."""
    path = str(tmp_path_factory.mktemp("idxio") / "m.lance")
    rng = np.random.default_rng(3)
    t = pa.table({"id": np.arange(ROWS, dtype=np.int64),
                  "cat": pa.array(np.char.add("k", rng.integers(0, 20, ROWS).astype(str))),
                  "amount": rng.random(ROWS)})
    ds = lance.write_dataset(t, path, max_rows_per_file=ROWS // 4)
    ds.delete("id % 1000 = 3")
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    return path


@pytest.fixture
def fetched(monkeypatch):
    """(path, offset, length) of every read of a data file (``/data/``), around the FileIO."""
    reads: list[tuple[str, int, int]] = []
    orig = fs_mod.InputFile.read_ranges

    def read_ranges(self, ranges):
        if "/data/" in self.path:
            reads.extend((self.path, off, n) for off, n in ranges)
        return orig(self, ranges)

    monkeypatch.setattr(fs_mod.InputFile, "read_ranges", read_ranges)
    return reads


def _column_bytes(path: str, name: str) -> int:
    """Bytes of the pages of one column over all data files (from their column metadata)."""
    snap = lance_duck.dataset(path)._snapshot
    fid = next(f.id for f in snap.schema.fields if f.name == name)
    refs = [frag.file_for_field(fid) for frag in snap.fragments]
    return sum(int(size) for ref in refs
               for page in snap.open_data_file(ref).container.column(ref.column_of(fid)).pages
               for size in page.buffer_sizes)


def test_point_lookup_fetches_under_one_percent_of_the_id_column(million, fetched):
    id_bytes = _column_bytes(million, "id")
    ref = lance.dataset(million).to_table(filter="id = 612345")
    ds = lance_duck.dataset(million)
    assert ds.to_table(filter="id = 612345").equals(ref)       # opens the file: footer, metadata
    fetched.clear()
    assert ds.to_table(filter="id = 612345").equals(ref)
    assert 0 < sum(n for _, _, n in fetched) < 0.01 * id_bytes, (sum(n for _, _, n in fetched), id_bytes)
    con = duckdb.connect()
    con.register("t", lance_duck.dataset(million))
    fetched.clear()
    got = con.execute("select * from t where id = 612345").fetchall()
    assert got == [tuple(r.values()) for r in ref.to_pylist()]
    assert 0 < sum(n for _, _, n in fetched) < 0.01 * id_bytes


def test_a_reopened_data_file_reads_no_footer_or_page_metadata(million, fetched):
    METADATA_CACHE.clear()
    lance_duck.dataset(million).to_table(filter="id = 612345")
    first = list(fetched)
    sizes = {p: os.path.getsize(p) for p, _, _ in first}
    assert any(off + n == sizes[p] for p, off, n in first)        # the first open read the footer
    fetched.clear()
    again = lance_duck.dataset(million).to_table(filter="id = 612345")   # a new dataset object
    assert again.num_rows == 1
    assert not any(off + n == sizes[p] for p, off, n in fetched)
    assert sum(n for *_, n in fetched) < sum(n for *_, n in first)
    assert len(METADATA_CACHE) >= 1


@pytest.mark.parametrize("expr, sql", [
    (pc.field("id") == 612345, "id = 612345"),
    ((pc.field("id") >= 1000) & (pc.field("id") <= 5000), "id >= 1000 AND id <= 5000"),
    (pc.field("cat") == "k7", "cat = 'k7'"),
    (pc.field("id").isin([3, 5, 999_999]), "id IN (3, 5, 999999)"),
    ((pc.field("cat") == "k7") & (pc.field("id") < 20_000), "cat = 'k7' AND id < 20000"),
])
def test_count_rows_of_pyarrow_expressions_is_answered_from_indices(million, fetched, expr, sql):
    want = lance.dataset(million).count_rows(sql)
    ds = lance_duck.dataset(million)
    fetched.clear()
    assert ds.count_rows(filter=expr) == want
    assert fetched == []
    assert ds.count_rows(filter=expr, use_scalar_index=False) == want
    assert fetched != []


def test_count_rows_of_an_expression_with_a_part_no_index_answers_reads_data(million, fetched):
    expr = (pc.field("id") < 5000) & (pc.field("amount") < 0.5)
    want = lance.dataset(million).count_rows("id < 5000 AND amount < 0.5")
    ds = lance_duck.dataset(million)
    fetched.clear()
    assert ds.count_rows(filter=expr) == want
    assert fetched != []


EXPRESSIONS = [
    pc.field("id") == 1234,
    pc.field("id").isin([5, 77, 3050, 6001, 7900, 99999]),
    (pc.field("id") >= 2990) & (pc.field("id") < 3200),
    pc.field("grp").is_null(),
    (pc.field("grp") == 7) & (pc.field("id") < 3000),
    (pc.field("cat") == "c5") | (pc.field("cat") == "c6"),
    (pc.field("cat") == "moved") & (pc.field("payload") != "x"),
    pc.field("day") == pa.scalar(31, pa.int32()).cast(pa.date32()),
]


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=str)
def test_expression_filters_on_indexed_rows_equal_unindexed_scans_and_counts(history, expr):
    ds = lance_duck.dataset(history)
    want = ds.to_table(filter=expr, use_scalar_index=False)
    assert ds.to_table(filter=expr).equals(want)
    assert ds.count_rows(filter=expr) == want.num_rows == ds.count_rows(filter=expr, use_scalar_index=False)
    # pylance unindexed (its own bitmap path returns rows moved by updates on stable-row-id tables)
    assert lance.dataset(history).scanner(filter=expr, use_scalar_index=False).count_rows() == want.num_rows
