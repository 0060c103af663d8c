"""An aggregate read through ``lance_duck.sql`` scans in full-size tasks after its first small one.

A scan keeps a ramp of task sizes (2K, 8K, 32K, ... rows) for an engine that may stop early (DuckDB
gives an Arrow source no LIMIT). A statement that reads its one table to the end whatever DuckDB's
plan -- a single SELECT that aggregates, without LIMIT / OFFSET / join / subquery / window / set
operation (``rewrite.reads_whole``) -- registers the table through ``duckdb_source.read_to_the_end``:
its streams go from the first 2K-row task straight to full-size ones (a scan of fixed-width columns
only, whose row bytes are known, starts with full-size ones), and a scan of strings takes 512K-row
tasks (``WHOLE_READ_TASK_ROWS``, 256K otherwise). Pinned: which statements qualify, the task
sizes a qualifying statement's scan plans, the ramp every other statement keeps, and answers equal to
DuckDB's over pylance's table (deletions, several fragments, filters, groups).
"""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest
import sqlglot

import lance_duck
from lance_duck.integrations.duckdb.rewrite import reads_whole
from lance_duck.scan import execution
from lance_duck.scan.duckdb_source import HAS_PROTOCOL, read_to_the_end
from lance_duck.scan.planning import DEFAULT_TASK_ROWS, FIRST_BATCH_ROWS, FIRST_TASK_ROWS, WHOLE_READ_TASK_ROWS, plan_tasks

import lance  # a test dependency: missing, it must fail, not skip

N = 30_000


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> str:
    r = np.random.default_rng(11)
    t = pa.table({"id": np.arange(N, dtype=np.int64),
                  "i": r.integers(-1000, 1000, N),
                  "f": r.random(N),
                  "cat": pa.array(np.char.add("c", r.integers(0, 7, N).astype(str)).astype(object), pa.string()),
                  "txt": pa.array([f"w{v} {k}" for k, v in enumerate(r.integers(0, 10**6, N))], pa.string())})
    p = str(tmp_path_factory.mktemp("read_whole") / "t.lance")
    lance.write_dataset(t, p, max_rows_per_file=12_000)
    lance.dataset(p).delete("id % 89 = 4 or (id >= 20000 and id < 20500)")
    return p


@pytest.mark.parametrize("sql, whole", [
    ("select sum(i) from t", True),
    ("select count(*), sum(f) from t where id between 10 and 2000", True),
    ("select cat, count(*), avg(f) from t group by cat order by cat", True),
    ("select cat from t group by cat", True),
    ("select max(txt) from t having count(*) > 1", True),
    ("select * from t", False),
    ("select i from t where f > 0.5", False),
    ("select sum(i) from t limit 1", False),
    ("select cat, count(*) from t group by cat limit 3", False),
    ("select sum(i) from t offset 1", False),
    ("select sum(i) over () from t", False),
    ("select sum(i) from t where id in (select 1)", False),
    ("select sum(i) from (select i from t limit 10)", False),
    ("select sum(a.i) from t a join t b on a.id = b.id", False),
    ("select sum(i) from t union all select sum(i) from t", False),
    ("select sum(i) from t using sample 10", False),
    ("select (select max(i) from t) from t", False),
])
def test_reads_whole_only_aggregates_without_early_stops(sql, whole):
    assert reads_whole(sqlglot.parse_one(sql, dialect="duckdb")) is whole


def test_plan_asks_a_growing_cap_after_each_task_is_taken():
    """A callable cap raised after the first task was taken sizes the very next task."""
    class F:
        id, physical_rows = 0, 10_000
    cap = [1_000]
    it = plan_tasks([F()], lambda: cap[0], first_rows=100, growth=1 << 30)
    assert next(it).rows == range(0, 100)
    cap[0] = 5_000
    assert [t.rows for t in it] == [range(100, 5_100), range(5_100, 10_000)]


def _task_rows(run) -> list[int]:
    """Rows of each task the scan ran, in the scan's order (tasks run on several threads)."""
    seen: list[tuple[int, int]] = []
    original = execution.ScanContext.run

    def spy(self, task):
        seen.append((task.seq, len(task.rows)))
        return original(self, task)
    execution.ScanContext.run = spy
    try:
        run()
    finally:
        execution.ScanContext.run = original
    return [rows for _, rows in sorted(seen)]


@pytest.mark.skipif(not HAS_PROTOCOL, reason="streams are DuckDB 2's Arrow-source protocol")
def test_read_to_the_end_streams_skip_the_ramp(table):
    """Fragments of 12,000 rows (the full task size is larger: a task is a fragment)."""
    con = duckdb.connect()
    base = lance_duck.dataset(table)
    con.register("ramp", base)
    con.register("whole", read_to_the_end(base))
    q = "select count(*), sum(i), max(txt) from {}"
    ramp = _task_rows(lambda: con.sql(q.format("ramp")).fetchall())
    whole = _task_rows(lambda: con.sql(q.format("whole")).fetchall())
    assert ramp == [FIRST_TASK_ROWS, 4 * FIRST_BATCH_ROWS, 12_000 - FIRST_TASK_ROWS - 4 * FIRST_BATCH_ROWS, 12_000, 6_000]
    assert whole == [FIRST_TASK_ROWS, 12_000 - FIRST_TASK_ROWS, 12_000, 6_000]
    assert con.sql(q.format("ramp")).fetchall() == con.sql(q.format("whole")).fetchall()


@pytest.mark.skipif(not HAS_PROTOCOL, reason="streams are DuckDB 2's Arrow-source protocol")
def test_read_to_the_end_fixed_width_streams_start_with_full_tasks(table):
    """Fixed-width columns only: a row's bytes are known, so there is no first small task either,
    and two tasks are in flight from the start."""
    con = duckdb.connect()
    whole = read_to_the_end(lance_duck.dataset(table))
    con.register("ramp", lance_duck.dataset(table))
    con.register("whole", whole)
    q = "select count(*), sum(i), avg(f) from {} where id < 29000"
    assert _task_rows(lambda: con.sql(q.format("ramp")).fetchall())[:2] == [FIRST_TASK_ROWS, 12_000 - FIRST_TASK_ROWS]
    assert _task_rows(lambda: con.sql(q.format("whole")).fetchall()) == [12_000, 12_000, 6_000]
    (n, total, mean), = con.sql(q.format("ramp")).fetchall()
    assert con.sql(q.format("whole")).fetchall()[0][:2] == (n, total)
    assert con.sql(q.format("whole")).fetchall()[0][2] == pytest.approx(mean, rel=1e-12)   # (DuckDB's float sums)
    from lance_duck.scan import execution as ex
    seen = []
    real = ex.ordered_map

    def spy(*a, **k):
        seen.append(k.get("known_per_weight"))
        return real(*a, **k)
    ex.ordered_map = spy
    try:
        con.sql(q.format("whole")).fetchall()
    finally:
        ex.ordered_map = real
    assert seen == [8 + 8]                  # i and f: the read-ahead knows a row's bytes


@pytest.mark.skipif(not HAS_PROTOCOL, reason="streams are DuckDB 2's Arrow-source protocol")
def test_sql_aggregate_scans_straight_to_full_tasks_and_others_keep_the_ramp(table):
    agg = _task_rows(lambda: lance_duck.sql(f"select count(*), max(txt), avg(f) from '{table}'").fetchall())
    assert agg[0] == FIRST_TASK_ROWS and agg[1] == 12_000 - FIRST_TASK_ROWS   # first fragment: 512 rows + the rest
    rows = _task_rows(lambda: lance_duck.sql(f"select txt, f from '{table}' where f < 0.5").fetchall())
    assert rows[:2] == [FIRST_TASK_ROWS, 4 * FIRST_BATCH_ROWS]   # the ramp stays


@pytest.mark.parametrize("sql", [
    "select count(*), sum(i), avg(f), count(cat), max(txt), min(txt) from T",
    "select sum(i) from T",
    "select count(*), sum(f) from T where id between 1000 and 21000",
    "select cat, count(*), avg(f), sum(i) from T group by cat order by cat",
    "select count(*), max(txt) from T where txt like 'w1%'",
    "select cat, max(id) from T where f < 0.25 group by cat having count(*) > 10 order by cat",
])
def test_sql_aggregates_read_whole_equal_pylance(table, sql):
    got = lance_duck.sql(sql.replace("from T", f"from '{table}'")).fetchall()
    con = duckdb.connect()
    con.register("T", lance.dataset(table))
    want = con.sql(sql).fetchall()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert len(g) == len(w)
        for a, b in zip(g, w):          # (float sums in another order: equal to 1e-12)
            assert a == pytest.approx(b, rel=1e-12) if isinstance(b, float) else a == b


def _caps(monkeypatch, run) -> list[int]:
    """The full task size each scan planned while ``run`` ran (asked once its tasks were planned)."""
    from lance_duck.scan import scanner
    caps: list = []
    real = scanner.plan_tasks

    def spy(fragments, batch_rows, **kw):
        caps.append(batch_rows)
        return real(fragments, batch_rows, **kw)
    monkeypatch.setattr(scanner, "plan_tasks", spy)
    run()
    return [c() if callable(c) else c for c in caps]


@pytest.mark.skipif(not HAS_PROTOCOL, reason="streams are DuckDB 2's Arrow-source protocol")
def test_read_to_the_end_scans_strings_in_longer_tasks(table, monkeypatch):
    con = duckdb.connect()
    con.register("ramp", lance_duck.dataset(table))
    con.register("whole", read_to_the_end(lance_duck.dataset(table)))
    assert _caps(monkeypatch, lambda: con.sql("select max(txt) from ramp").fetchall()) == [DEFAULT_TASK_ROWS]
    assert _caps(monkeypatch, lambda: con.sql("select max(txt) from whole").fetchall()) == [WHOLE_READ_TASK_ROWS]
