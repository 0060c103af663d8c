"""BITMAP selections of every density around the readers' thresholds (per-value reads below 1 row
in 10 of a page, whole-chunk unpacking up to 1 in 8, a range read and filter above) equal
pylance's rows and lance_duck's unindexed read, with deletions after the index, an append the
index does not cover, stable row ids or not; columns of one and of mixed bit widths."""
from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pytest

import lance_duck

lance = pytest.importorskip("lance")

ROWS = 120_000
KEYS = 40                                  # 2.5% of the rows per key


def _rows(start: int, n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    k = np.arange(start, start + n)
    return pa.table({
        "id": pa.array(k, pa.int64()),                                     # widths grow: mixed
        "category": pa.array(np.char.add("c", rng.integers(0, KEYS, n).astype(str))),
        "amount": pa.array(k * (250.0 / ROWS) + rng.random(n)),             # ~63-bit words
        "small": pa.array(rng.integers(0, 100, n), pa.int32()),
    })


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "stable"])
def table(request, tmp_path_factory) -> str:
    warnings.simplefilter("ignore", DeprecationWarning)
    path = str(tmp_path_factory.mktemp("density") / "t.lance")
    ds = lance.write_dataset(_rows(0, ROWS, 1), path, max_rows_per_file=ROWS // 2,
                             enable_stable_row_ids=request.param)
    ds.create_scalar_index("category", "BITMAP")
    ds.delete("id % 17 = 4")
    ds.insert(_rows(ROWS, 20_000, 2))                                     # not covered
    return path


@pytest.mark.parametrize("keys", [1, 2, 3, 4, 5, 6])
def test_bitmap_selections_around_the_density_thresholds_equal_pylance(table, keys):
    ds = lance_duck.dataset(table)
    flt = "category IN (" + ", ".join(f"'c{i}'" for i in range(keys)) + ")"
    cols = ["id", "amount", "small"]
    got = ds.to_table(columns=cols, filter=flt)
    sel = ds.scanner(filter=flt)._index_selections()
    if keys * 8 <= KEYS:                   # the BITMAP answers up to 1/8 of its keys (then: a scan)
        assert sel is not None and len(sel) == 2                       # the two indexed fragments
    else:
        assert sel is None
    assert got.equals(ds.to_table(columns=cols, filter=flt, use_scalar_index=False))
    assert got.equals(lance.dataset(table).to_table(columns=cols, filter=flt))
    assert ds.count_rows(filter=flt) == got.num_rows
