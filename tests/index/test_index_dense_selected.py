"""Index-selected rows read at their offsets (``path:selected-offsets``: no row mask over the
task's range) and their bit-packed values extracted with each chunk checked once
(``fastlanes.extract_blocks``) equal pylance's rows and lance_duck's unindexed read: selections
of 1% .. 50% of the rows (BITMAP keys, BTREE ranges), contiguous runs on chunk (1024 values),
page and fragment edges, bit widths 1..64 of 8/16/32/64-bit integers, nulls, deletions after
the index, an append it does not cover, stable row ids or not, 2.1 / 2.2 / 2.3 files."""
from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.trace import decode_trace

lance = pytest.importorskip("lance")

ROWS = 30_000
PER_FILE = 12_000
KEYS = 100                                 # 1% of the rows per key
WIDTHS = {"int64": [1, 3, 17, 33, 47, 63, 64], "int32": [2, 5, 31, 32], "int16": [7, 16], "int8": [4, 8]}


def _rows(start: int, n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    i = np.arange(start, start + n)
    cols: dict[str, pa.Array] = {
        "id": pa.array(i, pa.int64()),
        "k": pa.array(rng.integers(0, KEYS, n), pa.int32()),
        "cat": pa.array(np.char.add("c", (i % 20).astype(str))),
        "amount": pa.array(i * 0.5 + rng.random(n)),
        "nullable": pa.array(np.where(i % 7 == 0, None, i % 100_003), pa.int64()),
    }
    for ty, widths in WIDTHS.items():
        bits = int(ty[3:])
        for w in widths:
            v = rng.integers(0, 2**63, n, dtype=np.uint64) & np.uint64((1 << w) - 1)
            v[rng.integers(0, n)] = (1 << w) - 1                          # the full width occurs
            cols[f"{ty}_w{w}"] = pa.array(v.astype(f"uint{bits}").view(ty))
    return pa.table(cols)


@pytest.fixture(scope="module", params=[("2.1", False), ("2.2", True), ("2.3", False)],
                ids=["v2.1", "v2.2-stable", "v2.3"])
def table(request, tmp_path_factory) -> str:
    warnings.simplefilter("ignore", DeprecationWarning)
    storage, stable = request.param
    path = str(tmp_path_factory.mktemp("dense") / "t.lance")
    ds = lance.write_dataset(_rows(0, ROWS, 3), path, max_rows_per_file=PER_FILE,
                             enable_stable_row_ids=stable, data_storage_version=storage)
    ds.create_scalar_index("k", "BITMAP")
    ds.create_scalar_index("cat", "BITMAP")
    ds.create_scalar_index("id", "BTREE")
    ds.delete("id % 13 = 6 OR (id >= 5000 AND id < 5100)")
    ds.insert(_rows(ROWS, 3000, 4))                                      # not covered by the indices
    return path


VALUE_COLS = ["id", "amount", "nullable"] + [f"{ty}_w{w}" for ty, ws in WIDTHS.items() for w in ws]


def _check(path: str, flt: str, cols: list[str]) -> pa.Table:
    ds = lance_duck.dataset(path)
    got = ds.to_table(columns=cols, filter=flt)
    assert got.equals(ds.to_table(columns=cols, filter=flt, use_scalar_index=False)), flt
    assert got.equals(lance.dataset(path).to_table(columns=cols, filter=flt, use_scalar_index=False)), flt
    return got


@pytest.mark.parametrize("keys", [1, 5, 10, 12, 20, 50])
def test_bitmap_selections_of_1_to_50_percent_equal_pylance_and_the_unindexed_read(table, keys):
    flt = f"k < {keys}"
    with decode_trace() as tr:
        got = _check(table, flt, VALUE_COLS)
    assert got.num_rows > 0
    if keys * 8 <= KEYS:                                # the BITMAP answers (a scan above 1/8)
        assert "path:selected-offsets" in tr.names()
        assert "path:selected:inline_bitpacking" in tr.names()
        assert "path:selected:unpack-gather" not in tr.names()      # (below DENSE_SELECTION)


@pytest.mark.parametrize("lo,hi", [
    (0, 1023), (1020, 1030), (1024, 2047), (2047, 2049), (4990, 5110),    # chunk edges, deleted rows
    (11_990, 12_010), (23_999, 24_000),                                   # fragment edges
    (29_500, 30_400), (400, 1399),                                        # into the append; 1000 rows
])
def test_btree_runs_on_chunk_and_fragment_edges_equal_pylance(table, lo, hi):
    flt = f"id >= {lo} AND id <= {hi}"
    with decode_trace() as tr:
        got = _check(table, flt, VALUE_COLS)
    assert got.num_rows > 0
    if lance_duck.dataset(table).scanner(filter=flt)._index_selections() is not None:
        assert {"path:selected-offsets", "path:selected:run"} <= tr.names()
    else:                                              # (the BTREE is not used with stable row ids)
        assert lance.dataset(table).has_stable_row_ids


@pytest.mark.parametrize("flt", ["cat = 'c7'", "cat IN ('c1', 'c2') AND k < 30", "cat = 'c3' AND nullable > 500"])
def test_dictionary_re_check_at_selected_rows_equals_pylance(table, flt):
    got = _check(table, flt, ["amount", "int32_w5", "nullable"])
    assert got.num_rows > 0


def test_selected_reads_with_row_ids_and_addresses_equal_the_unindexed_read(table):
    ds = lance_duck.dataset(table)
    for kw in ({"with_row_id": True}, {"with_row_address": True}):
        got = ds.to_table(columns=["int64_w33"], filter="k < 4", **kw)
        assert got.equals(ds.to_table(columns=["int64_w33"], filter="k < 4", use_scalar_index=False, **kw)), kw
