"""Scan tasks that start and end inside pages, or span several: results equal pylance's."""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import lance_duck.scan.scanner as scanner_mod
from lance_duck.scan import dataset
from lance_duck.scan.planning import DEFAULT_BATCH_ROWS, plan_tasks

from .conftest import assert_tables_equal

import lance  # a test dependency: missing, it must fail, not skip


def _paged_table(n: int = 12000) -> pa.Table:
    rng = np.random.default_rng(1)
    return pa.table({
        "id": np.arange(n),
        "v": rng.random(n),
        "big": pa.array([rng.bytes(int(k)) for k in rng.integers(1000, 3000, n)], pa.binary()),
        "s": pa.array([None if k % 13 == 0 else f"s{k % 17}" for k in range(n)]),
    })


@pytest.fixture(scope="session", params=["2.0", "2.2", "2.3"])
def paged(request, tmp_path_factory) -> str:
    """Two fragments; ``big`` spans several pages (written in 1000-row batches), the others one."""
    p = str(tmp_path_factory.mktemp(f"paged_{request.param}") / "t.lance")
    t = _paged_table()
    lance.write_dataset(pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=1000)), p,
                        data_storage_version=request.param, max_rows_per_file=8000)
    lance.dataset(p).delete("id % 97 = 5 or (id >= 2000 and id < 2100)")
    return p


@pytest.fixture(scope="session")
def long_fragment(tmp_path_factory) -> str:
    """One 300k-row fragment: single pages far longer than the default batch size."""
    p = str(tmp_path_factory.mktemp("long_frag") / "t.lance")
    n = 300_000
    lance.write_dataset(pa.table({"id": np.arange(n), "v": np.random.default_rng(2).random(n)}), p,
                        data_storage_version="2.2")
    lance.dataset(p).delete("id % 1000 = 3")
    return p


@pytest.fixture
def small_first_batch(monkeypatch):
    monkeypatch.setattr(scanner_mod, "FIRST_TASK_ROWS", 500)


def _page_counts(path: str, name: str) -> list[int]:
    """Pages of column ``name`` in each data file of the table (read from the file metadata)."""
    from lance_duck.file import open_data_file
    snap = dataset(path)._snapshot
    field = next(f for f in snap.schema.fields if f.name == name)
    out = []
    for frag in snap.fragments:
        ref = frag.file_for_field(field.id)
        reader = open_data_file(snap.io, ref)
        if hasattr(reader, "container") and hasattr(reader.container, "column"):
            out.append(len(reader.container.column(ref.column_of(field.id)).pages))
    return out


def test_fixture_has_multi_page_columns(paged):
    assert max(_page_counts(paged, "big")) >= 3


def test_tasks_cover_every_row_once_in_order(paged):
    snap = dataset(paged)._snapshot
    tasks = list(plan_tasks(snap.fragments, 1000, first_rows=300))
    assert tasks[0].rows == range(0, 300)
    for frag in snap.fragments:
        mine = [t.rows for t in tasks if t.fragment is frag]
        assert mine[0].start == 0 and mine[-1].stop == frag.physical_rows
        assert all(a.stop == b.start for a, b in zip(mine, mine[1:]))
        assert all(len(r) <= 1000 for r in mine)


def test_first_tasks_grow_fourfold_up_to_the_task_size(long_fragment):
    from lance_duck.scan.planning import RAMP_GROWTH
    snap = dataset(long_fragment)._snapshot
    sizes = [len(t.rows) for t in plan_tasks(snap.fragments, 64_000, first_rows=1000)]
    assert RAMP_GROWTH == 4
    assert sizes[:4] == [1000, 4000, 16000, 64000]     # short ramp: few small tasks with their fixed cost
    assert all(s == 64_000 for s in sizes[3:-1]) and sum(sizes) == 300_000


def test_a_short_first_task_keeps_the_ramp_it_would_have_had(long_fragment):
    """planning.FIRST_TASK_ROWS: the first task is shorter than the ramp's start, the rest unchanged."""
    snap = dataset(long_fragment)._snapshot
    sizes = [len(t.rows) for t in plan_tasks(snap.fragments, 64_000, first_rows=250, ramp_from=1000)]
    assert sizes[:4] == [250, 4000, 16000, 64000] and sum(sizes) == 300_000
    n = 3000                                 # an index's selection of 3,000 rows: still one task
    one = list(plan_tasks(snap.fragments, 64_000, first_rows=250, ramp_from=1000,
                          selections={snap.fragments[0].id: np.arange(0, 2 * n, 2)}))
    assert [len(t.selection) for t in one] == [n]


def test_a_first_fragment_within_the_ramps_start_is_one_first_task():
    """A small table's fragments each stay one batch (as pylance's are): no short first task there."""
    from types import SimpleNamespace

    def frag(fid: int, n: int) -> SimpleNamespace:
        return SimpleNamespace(id=fid, physical_rows=n, num_deletions=lambda: 0, count_rows=lambda: n)
    small = [len(t.rows) for t in plan_tasks([frag(0, 1000), frag(1, 1000)], 64_000, first_rows=250, ramp_from=1000)]
    assert small == [1000, 1000]
    large = [len(t.rows) for t in plan_tasks([frag(0, 1001), frag(1, 1000)], 64_000, first_rows=250, ramp_from=1000)]
    assert large == [250, 751, 1000]


def test_duckdb_limit_over_a_dataset_decodes_one_short_task(long_fragment):
    from lance_duck.scan import execution
    from lance_duck.scan.planning import FIRST_TASK_ROWS
    seen = []
    original = execution.ScanContext.run

    def spy(self, task):
        seen.append(len(task.rows))
        return original(self, task)
    c = duckdb.connect()
    c.execute("set threads=1")
    c.register("ds", dataset(long_fragment))
    execution.ScanContext.run = spy
    try:
        got = c.sql("select * from ds limit 10").fetchall()
    finally:
        execution.ScanContext.run = original
    assert len(got) == 10 and seen[0] == FIRST_TASK_ROWS == 512       # (the first task planned runs first)
    truth = lance.dataset(long_fragment).to_table().to_pylist()
    by_id = {r["id"]: (r["id"], r["v"]) for r in truth}
    assert all(by_id[r[0]] == r for r in got)


@pytest.mark.parametrize("columns", [None, ["big", "id"], ["s"], ["v", "_rowid", "_rowaddr"]])
def test_full_scans_equal_pylance(paged, small_first_batch, columns):
    ours = dataset(paged).to_table(columns=columns, with_row_id=columns is None)
    ref = lance.dataset(paged).to_table(columns=columns, with_row_id=columns is None)
    assert_tables_equal(ours, ref)


@pytest.mark.parametrize("flt", ["id % 3 = 0", "id < 50 or id > 11990", "s = 's4'", "big IS NOT NULL AND v < 0.5"])
def test_filtered_scans_with_late_columns_equal_pylance(paged, small_first_batch, flt):
    cols = ["big", "v", "s"]
    ours = dataset(paged).to_table(columns=cols, filter=flt, with_row_id=True)
    ref = lance.dataset(paged).to_table(columns=cols, filter=flt, with_row_id=True)
    assert_tables_equal(ours, ref)


def test_limit_offset_over_wide_tasks_equal_pylance(paged, small_first_batch):
    for limit, offset in [(10, 0), (700, 250), (5000, 7000), (None, 7500)]:
        ours = dataset(paged).to_table(columns=["id", "big"], limit=limit, offset=offset)
        ref = lance.dataset(paged).to_table(columns=["id", "big"], limit=limit, offset=offset)
        assert_tables_equal(ours, ref)


def test_take_equals_pylance(paged):
    idx = [0, 1, 499, 500, 7000, 7919, 11500, 3]
    assert_tables_equal(dataset(paged).take(idx, columns=["id", "big", "s"]),
                        lance.dataset(paged).take(idx, columns=["id", "big", "s"]))


def test_pages_longer_than_the_batch_size_are_read_in_batch_size_slices(long_fragment):
    batches = list(dataset(long_fragment).to_batches(columns=["id", "v"]))
    assert all(0 < b.num_rows <= DEFAULT_BATCH_ROWS for b in batches)
    assert len(batches) >= 3
    assert_tables_equal(pa.Table.from_batches(batches), lance.dataset(long_fragment).to_table(columns=["id", "v"]))


def test_duckdb_queries_over_multi_page_scans_equal_pylance(long_fragment, paged):
    for path in (long_fragment, paged):
        ours, ref = dataset(path), lance.dataset(path)
        for sql in ["select count(*), sum(id) from T", "select count(*), round(sum(v), 6) from T where id between 1000 and 1300",
                    "select id from T order by id limit 5 offset 7000"]:
            con = duckdb.connect()
            con.register("T", ours)
            got = con.sql(sql).fetchall()
            con = duckdb.connect()
            con.register("T", ref)
            assert got == con.sql(sql).fetchall(), sql

