"""BTREE search over integer columns with each literal cast once (``btree.pred_ints``): the page
bounds it keeps equal the Arrow-kernel path's, and indexed queries over integer columns of
several widths -- literals at and beyond the column's values, ORs and ranges -- equal
pylance's and lance_duck's own unindexed read."""
from __future__ import annotations

import warnings

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.index.scalar import Bounds, Unsupported
from lance_duck.predicate.pruning import ColumnPredicate
from lance_duck.trace import decode_trace


def _p(op, value):
    return ColumnPredicate(("v",), op, value)


class _ArrowBounds(Bounds):
    """The reference: the same bounds compared with Arrow kernels (no integer fast path)."""

    def _any_int(self, preds):
        return None


@pytest.mark.parametrize("dtype", [pa.int64(), pa.int32(), pa.uint8(), pa.uint64()])
def test_integer_page_bounds_equal_the_arrow_path(dtype):
    rng = np.random.default_rng(4)
    hi = 250 if dtype == pa.uint8() else 100_000
    lo_vals = np.sort(rng.integers(0, hi, 64))
    mn = pa.array(lo_vals, dtype)
    mx = pa.array(np.minimum(lo_vals + rng.integers(0, hi // 16, 64), hi), dtype)
    nulls = pa.array(rng.integers(0, 2, 64), pa.int64())
    ours, ref = Bounds(mn, mx, nulls), _ArrowBounds(mn, mx, nulls)
    mid = int(lo_vals[20])
    cases = [
        [(_p("==", pa.scalar(mid)),)],
        [(_p("==", pa.scalar(hi + 10)),)],
        [(_p("<", pa.scalar(mid)),)], [(_p("<=", pa.scalar(mid)),)],
        [(_p(">", pa.scalar(mid)),)], [(_p(">=", pa.scalar(mid)),)],
        [(_p(">=", pa.scalar(mid)),), (_p("<=", pa.scalar(mid + 500)),)],
        [(_p("in", pa.array([mid, None, 3, hi + 1])),)],
        [(_p("in", pa.array([None], pa.int64())),)],
        [(_p("is_null", None),)],
        [(_p("==", pa.scalar(5)), _p("is_null", None))],
        [(_p("==", pa.scalar(mid, pa.int8() if mid < 128 else pa.int32())),)],
        [(_p("==", pa.scalar(None, pa.int64())),)],
    ]
    for terms in cases:
        assert _outcome(ours, terms) == _outcome(ref, terms), terms


def _outcome(bounds: Bounds, terms):
    """The pages kept, or "unsupported" (the index declines: the caller scans)."""
    try:
        return bounds.may_match(terms).tolist()
    except Unsupported:
        return "unsupported"


def test_literals_the_fast_path_declines_fall_back_to_arrow():
    mn, mx = pa.array([0, 10, 20], pa.int8()), pa.array([9, 19, 29], pa.int8())
    b = Bounds(mn, mx, pa.array([0, 0, 0]))
    assert b._any_int((_p("==", pa.scalar(1000)),)) is None         # outside int8
    assert b._any_int((_p("==", pa.scalar(1.5)),)) is None          # not an integer
    # as before the fast path: a literal the keys' type cannot hold makes the index decline
    assert _outcome(b, [(_p("==", pa.scalar(1000)),)]) == "unsupported"
    assert _outcome(b, [(_p("==", pa.scalar(15)),)]) == [1]


ROWS = 6_000


@pytest.fixture(scope="module")
def int_table(tmp_path_factory) -> str:
    warnings.simplefilter("ignore", DeprecationWarning)
    i = np.arange(ROWS)
    t = pa.table({
        "id": pa.array(i, pa.int64()),
        "i8": pa.array((i % 200) - 100, pa.int8()),
        "u32": pa.array(i * 7 % 5000, pa.uint32()),
        "i32": pa.array(i - 3000, pa.int32()),
        "note": pa.array([f"n{k}" for k in i]),
    })
    path = str(tmp_path_factory.mktemp("btree_int") / "t.lance")
    ds = lance.write_dataset(t, path, max_rows_per_file=2_500, data_storage_version="2.2")
    for col in ("i8", "u32", "i32"):
        ds.create_scalar_index(col, "BTREE")
    ds.delete("id % 250 = 7")
    return path


# (pylance refuses literals its column type cannot hold: those are pinned by the unit tests above)
FILTERS = ["i8 = -100", "i8 = 99", "i8 = 127", "i8 < -98", "i8 >= 98", "i8 > -128", "i8 IN (-100, 5, 120)",
           "i8 = 3 OR i8 = -3", "u32 = 4999", "u32 = 0", "u32 < 3", "u32 BETWEEN 100 AND 102",
           "u32 IN (7, 14, 4999, 70000)", "i32 = -3000", "i32 >= 2990", "i32 > -2999 AND i32 < -2995",
           "i32 BETWEEN -5 AND 5 AND u32 < 100", "i32 IN (-3000, 2999, 1000000)"]


@pytest.mark.parametrize("flt", FILTERS)
def test_indexed_integer_filters_equal_pylance_and_the_unindexed_read(int_table, flt):
    want = lance.dataset(int_table).to_table(filter=flt)
    ours = lance_duck.dataset(int_table)
    with decode_trace() as tr:
        got = ours.to_table(filter=flt)
    scanned = ours.to_table(filter=flt, use_scalar_index=False)
    assert got.equals(want), flt
    assert scanned.equals(want), flt
    if flt in ("i8 = -100", "u32 = 4999", "i32 = -3000", "u32 BETWEEN 100 AND 102"):
        assert "path:btree-bisect" in tr.names(), flt
