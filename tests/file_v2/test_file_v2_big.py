"""Columns spanning many pages (1.5M rows written as 64k-row batches; 300k-row list column)."""
from __future__ import annotations

import numpy as np
import pytest

from .conftest import assert_same


@pytest.mark.slow
@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
@pytest.mark.parametrize("name", ["big", "big_lists"])
def test_many_page_columns_equal_pylance_full_and_selected(v2_datasets, name, version):
    fx = v2_datasets(name, version)
    reader = fx.reader()
    n = fx.ds.count_rows()
    pages = {f.name: len(reader.container.column(reader.ref.column_of(list(f.walk())[-1].id)).pages)
             for f in fx.fields()}
    if (name, version) == ("big_lists", "2.3"):   # 2.3 writes the 300k lists as one sparse page
        from lance_duck.file.v2_1.column import page_layout
        from lance_duck.file.v2_1.planar23 import SparseLayout
        assert isinstance(page_layout(reader.container.column(0).pages[0], "l"), SparseLayout)
    else:
        assert max(pages.values()) >= 5, pages  # the fixture really spans many pages
    r = np.random.default_rng(1)
    sels = {
        "sparse": np.sort(r.choice(n, 200, replace=False)).astype(np.int64),
        "page_boundary": range(65536 - 700, 65536 * 2 + 700),
        "tail": range(n - 1000, n),
        "inside_one_page": range(65536 + 4097, 65536 + 30001),
        "many_pages_odd": range(1234, n - 4321),
    }
    for f in fx.fields():
        assert_same(reader.read_field(f), fx.expected.column(f.name), f"full {f.name} ({pages[f.name]} pages)")
        for sname, sel in sels.items():
            idx = np.asarray(list(sel) if isinstance(sel, range) else sel)
            assert_same(reader.read_field(f, sel), fx.ds.take(idx, columns=[f.name]).column(0), f"{sname} {f.name}")


@pytest.mark.slow
def test_range_selection_reads_only_overlapping_pages(v2_datasets):
    fx = v2_datasets("big", "2.2")
    reader = fx.reader()
    f = fx.snap.schema.field("seq")
    col = reader.container.column(reader.ref.column_of(f.id))
    total = sum(p.buffer_sizes[1] for p in col.pages)
    from lance_duck.file.v2_1.column import LeafPlan
    plan = LeafPlan(col, 0, "x", f.arrow_type, None, 2, range(100_000, 100_050))
    plan.set_meta(reader.file.read_ranges(plan.meta_ranges()))
    touched = sum(n for _, n in plan.data_ranges())
    assert len(plan.pages) == 1 and touched < total / 100


@pytest.mark.slow
@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_short_runs_across_page_edges_read_lean_as_ranges(v2_datasets, version):
    """Runs of at most LEAN_RANGE_ROWS rows crossing a page edge (and ending on one) read on
    the lean path as one range per page, equal to pylance's take and to the offsets' read."""
    from lance_duck.file.v2_1.layouts.miniblock import LEAN_RANGE_ROWS
    from lance_duck.trace import decode_trace
    fx = v2_datasets("big", version)
    reader = fx.reader()
    fields = [f for f in fx.fields() if f.name in ("seq", "f64", "i64_full", "s")]
    pages = 0
    for f in fields:
        col = reader.container.column(reader.ref.column_of(f.id))
        edges = np.cumsum([int(p.length) for p in col.pages])[:-1]    # first rows of pages 1..
        pages = max(pages, len(edges) + 1)
        e1, e3 = int(edges[0]), int(edges[-1])
        for sel in (range(e1 - 700, e1 + 700), range(e3 - LEAN_RANGE_ROWS, e3), range(e3, e3 + 1),
                    range(e1 - 1, e1 + 1)):
            reader.read_fields([f], sel)             # (the general path keeps the pages' metadata)
            with decode_trace() as tr:
                (got,) = reader.read_fields([f], sel)
            assert "path:lean-range" in tr.names() and "path:lean-rows" in tr.names(), (f.name, sel)
            idx = np.arange(sel.start, sel.stop, dtype=np.int64)
            (by_offsets,) = reader.read_fields([f], idx)
            assert got.equals(by_offsets), (f.name, sel)
            assert_same(got, fx.ds.take(idx, columns=[f.name]).column(0), f"{f.name} {sel}")
    assert pages >= 5
