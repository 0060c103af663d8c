"""BTREE point lookups and short ``IN`` lists searched value by value (two bisections over the
page bounds per value, two more in each page, in Python ints) return what the general search and
the unindexed read return: values repeated across page boundaries, absent values, values out of
the column's range, negative and unsigned columns, nulls, deletions, on both stable-row-id
settings. Oracles: pylance (indexed and not) and lance_duck with ``use_scalar_index=False``."""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck
from lance_duck.index.search import plan_index_selections
from lance_duck.trace import decode_trace

ROWS = 30_000


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "stable"])
def dup_table(request, tmp_path_factory) -> str:
    """``k`` repeats each value 5,000 times (runs cross the 4,096-row BTREE pages); ``small`` is
    int8 with nulls; ``u`` uint32; a delete applied after the indices."""
    path = str(tmp_path_factory.mktemp("point_values") / "t.lance")
    i = np.arange(ROWS)
    t = pa.table({"id": pa.array(i - 15_000, pa.int64()),
                  "k": pa.array(i // 5_000, pa.int32()),
                  "small": pa.array([None if x % 7 == 0 else int(x % 200) - 100 for x in i], pa.int8()),
                  "u": pa.array(i * 3, pa.uint32())})
    ds = lance.write_dataset(t, path, max_rows_per_file=10_000, enable_stable_row_ids=request.param)
    for col in ("id", "k", "small", "u"):
        ds.create_scalar_index(col, "BTREE")
    ds.delete("id % 101 = 3")
    return path


FILTERS = [
    "id = -14999", "id = 0", "id = 14999", "id = 15000", "id = -20000",
    "id IN (-15000, -3, 5, 7777, 99999)", "id IN (1, 1, 2)", "id IN (-15000)",
    "k = 2", "k IN (0, 5)", "k = 9",
    "small = -100", "small = 99", "small IN (-7, 0, 42)",
    "u = 0", "u = 89997", "u IN (3, 6, 60000, 4000000000)", "u = 1",
    "id >= -100 AND id < 100", "id > 14990", "id < -14995", "id BETWEEN 7 AND 7", "id > 5 AND id < 6",
    "k >= 1 AND k <= 1", "k > 4", "u >= 4 AND u <= 20", "small >= 98", "small < -99 AND small >= -100",
]


@pytest.mark.parametrize("flt", FILTERS)
def test_point_values_equal_pylance_and_the_unindexed_read(dup_table, flt):
    ours = lance_duck.dataset(dup_table)
    got = ours.to_table(filter=flt)
    assert got.equals(ours.to_table(filter=flt, use_scalar_index=False)), flt
    assert got.equals(lance.dataset(dup_table).to_table(filter=flt, use_scalar_index=False)), flt
    assert ours.count_rows(filter=flt) == got.num_rows, flt


@pytest.mark.parametrize("flt", ["small = 1000", "small IN (1, 1000)", "small = -129", "u = -1"])
def test_literals_outside_the_columns_range_equal_the_unindexed_read(dup_table, flt):
    """(pylance refuses them.)"""
    ours = lance_duck.dataset(dup_table)
    want = ours.to_table(filter=flt, use_scalar_index=False)
    assert ours.to_table(filter=flt).equals(want), flt
    assert ours.count_rows(filter=flt) == want.num_rows, flt


def _selection(ds, flt) -> dict:
    sc = ds.scanner(filter=flt)
    return {k: v.tolist() for k, v in plan_index_selections(sc._snapshot, sc._filter.conjuncts,
                                                            sc._fragments).items()}


@pytest.mark.parametrize("point, general", [
    ("id = 7", "id = 7 OR id = 7"), ("k = 1", "k = 1 OR k = 1"), ("id >= 3 AND id < 90", "id < 90 AND id >= 3"),
    ("id > -14990 AND id <= -10000", "(id > -14990 OR id > -14990) AND id <= -10000"),
    ("id IN (-15000, -14000, 3)", "id = -15000 OR id = -14000 OR id = 3"),
])
def test_point_selections_equal_the_general_searchs(dup_table, point, general):
    ds = lance_duck.dataset(dup_table)
    assert _selection(ds, point) == _selection(ds, general) != {}
    with decode_trace() as tr:
        ds.to_table(filter=point)
    assert "path:btree-bisect" in tr.names()


def test_a_value_repeated_over_page_boundaries_selects_all_its_rows(dup_table):
    ds = lance_duck.dataset(dup_table)
    sel = _selection(ds, "k = 1")                   # rows 5,000-9,999: pages 1 and 2 of the BTREE
    assert sum(len(v) for v in sel.values()) == 5_000
    assert ds.count_rows(filter=pc.field("k") == pa.scalar(1, pa.int32())) == \
        lance.dataset(dup_table).scanner(filter="k = 1", use_scalar_index=False).count_rows()


def test_a_second_snapshot_search_reuses_the_segment_plans(dup_table):
    ds = lance_duck.dataset(dup_table)
    first = _selection(ds, "id = 5")
    plans = ds._snapshot.__dict__["_segment_plans"]
    kept = {k: [id(p) for p in v] for k, v in plans.items()}
    assert _selection(ds, "id = 6") and first
    assert {k: [id(p) for p in v] for k, v in ds._snapshot.__dict__["_segment_plans"].items()} == kept


def test_a_fresh_dataset_of_a_version_seen_before_decodes_no_fragment_bitmap_again(dup_table, monkeypatch):
    from lance_duck.index import metadata
    lance_duck.dataset(dup_table).count_rows(filter="id = 5")
    calls = []
    orig = metadata.decode_roaring
    monkeypatch.setattr(metadata, "decode_roaring", lambda *a, **k: calls.append(1) or orig(*a, **k))
    ds = lance_duck.dataset(dup_table)
    assert ds.count_rows(filter="id = 5") == 1
    assert [d.name for d in ds.describe_indices()] == [d.name for d in lance.dataset(dup_table).describe_indices()]
    assert calls == []
