"""ZONEMAP on float columns: comparisons (> >= < <= = BETWEEN IN) keep the zones that may match
under Lance's total float order (NaN above +inf, so NaN satisfies > and >=; -0.0 = 0.0; nulls
never match), differentially against pylance (no index) and lance_duck without the index."""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck

ZONE = 8192                                 # pylance's rows per zone
FRAG = 8 * ZONE
S = 1_000_000                               # the second fragment's first value


def _table(start: int) -> pa.Table:
    """Zone 0: -0.0, 0.0, +inf, -inf; zone 1 all NaN; zone 2 one NaN; zone 7 all null."""
    v = np.arange(start, start + FRAG, dtype=np.float64)
    v[[2, 3, 4, 5]] = [-0.0, 0.0, np.inf, -np.inf]
    v[ZONE:2 * ZONE] = np.nan
    v[2 * ZONE + 7] = np.nan
    nulls = np.zeros(FRAG, dtype=bool)
    nulls[[9, 3 * ZONE + 1]] = True
    nulls[7 * ZONE:] = True
    return pa.table({
        "i": pa.array(np.arange(start, start + FRAG), pa.int64()),
        "f64": pa.array(v, pa.float64(), mask=nulls),
        "f32": pa.array(v.astype(np.float32), pa.float32(), mask=nulls),
    })


@pytest.fixture(scope="module")
def zoned(tmp_path_factory) -> str:
    """Two fragments with ZONEMAPs on f64 and f32 (fragment 0's last row deleted first), then a
    third appended, not indexed."""
    path = str(tmp_path_factory.mktemp("zmf") / "t.lance")
    ds = lance.write_dataset(pa.concat_tables([_table(0), _table(S)]), path, max_rows_per_file=FRAG)
    ds.delete(f"i = {FRAG - 1}")            # fragment 0's zones then end before its last offset
    ds.create_scalar_index("f64", "ZONEMAP")
    ds.create_scalar_index("f32", "ZONEMAP")
    lance.dataset(path).insert(_table(2 * S))
    return path


FILTERS = ["{c} > 30", "{c} >= 30", "{c} > 1000050", "{c} >= 2000000", "{c} < 2", "{c} <= 0",
           "{c} < 0", "{c} >= 0", "{c} = 0", "{c} = 1016417", "{c} BETWEEN 1 AND 3",
           "{c} BETWEEN 1000050 AND 1000060", "{c} IN (1.0, 1016417.0)", "{c} > 1e300",
           "{c} > 30 AND i < 2000000", "{c} < 1000"]


def _same(a: pa.Table, b: pa.Table) -> bool:
    """Equal schemas, row order and values, NaN equal to NaN, -0.0 told from 0.0."""
    if a.schema != b.schema or a.num_rows != b.num_rows:
        return False
    for x, y in zip(a.columns, b.columns):
        if x.is_null().to_pylist() != y.is_null().to_pylist():
            return False
        u, v = x.to_numpy(), y.to_numpy()
        if u.dtype.kind == "f" and not (np.array_equal(u, v, equal_nan=True)
                                        and np.array_equal(np.signbit(u), np.signbit(v))):
            return False
        if u.dtype.kind != "f" and not np.array_equal(u, v):
            return False
    return True


@pytest.mark.parametrize("col", ["f64", "f32"])
@pytest.mark.parametrize("template", FILTERS)
def test_float_zone_map_filter_matches_pylance_and_unindexed_scan(zoned, col, template):
    flt = template.format(c=col)
    ref = lance.dataset(zoned).to_table(filter=flt, use_scalar_index=False)
    ours = lance_duck.dataset(zoned)
    got = ours.to_table(filter=flt)
    assert ref.num_rows and _same(got, ref), flt
    assert _same(ours.to_table(filter=flt, use_scalar_index=False), ref), flt


@pytest.mark.parametrize("flt,kept", [
    (f"f64 > {S + 5 * ZONE}", {0: [0, 1, 2], 1: [0, 1, 2, 5, 6]}),   # NaN and +inf zones kept
    (f"f64 >= {S + 6 * ZONE + 100}", {0: [0, 1, 2], 1: [0, 1, 2, 6]}),
    (f"f32 >= {S + 6 * ZONE + 100}", {0: [0, 1, 2], 1: [0, 1, 2, 6]}),
    # zone 0 spans [-inf, inf]; zone 2's NaN max is an open upper bound; zone 1 (all NaN) skipped
    (f"f64 = {S + 2 * ZONE + 33}", {0: [0, 2], 1: [0, 2]}),
    # -inf, and the NaN zones: a NaN with its sign bit set sorts below -inf in Lance's order
    ("f64 < 1", {0: [0, 1, 2], 1: [0, 1, 2]}),
])
def test_float_zone_map_keeps_nan_zones_for_order_comparisons(zoned, flt, kept):
    sel = lance_duck.dataset(zoned).scanner(filter=flt)._index_selections()
    assert sel is not None and set(sel) == {0, 1}, flt       # the appended fragment is not covered
    assert sel[0][-1] == FRAG - 1, flt                       # the offset no zone spans is read
    sel[0] = sel[0][:-1]
    zones = {fid: sorted({int(o) // ZONE for o in offs}) for fid, offs in sel.items()}
    assert zones == kept, flt


@pytest.mark.parametrize("flt", ["f = 5000", "f <= 2", "f = 0", "f < 1", "f > 4990", "f >= 4999",
                                 "f BETWEEN 4990 AND 5000"])
def test_float_btree_with_nan_pages_matches_pylance(tmp_path, flt):
    """BTREE pages sort NaN last (a NaN max): a value in that page is still found; > / >=
    (which NaN satisfies) are left to the full filter."""
    v = np.arange(5001, dtype=np.float64)
    v[[5, 6]] = [-0.0, 0.0]
    v[-40:-20] = np.nan
    path = str(tmp_path / "b.lance")
    ds = lance.write_dataset(pa.table({"i": np.arange(len(v)), "f": v}), path)
    ds.create_scalar_index("f", "BTREE")
    ref = lance.dataset(path).to_table(filter=flt, use_scalar_index=False)
    assert ref.num_rows and _same(lance_duck.dataset(path).to_table(filter=flt), ref), flt
