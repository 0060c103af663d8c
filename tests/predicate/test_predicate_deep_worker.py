"""Deep calls run on one persistent big-stack worker thread (predicate/_deep.py, _state.deep_worker);
Expressions equal to a shallow one bound before are bound on the calling thread, without it."""
from __future__ import annotations

import multiprocessing
import threading

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lance_duck import _state
from lance_duck.predicate._deep import call_deep, on_big_stack
from lance_duck.scan.filters import bind_filter

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])


def nested(depth: int) -> int:
    return 0 if depth == 0 else 1 + nested(depth - 1)


def test_deep_calls_share_one_worker_thread():
    idents = {on_big_stack(threading.get_ident) for _ in range(20)}
    assert idents == {_state.deep_worker()[1]}
    assert threading.get_ident() not in idents


def test_deep_call_inside_a_deep_call_runs_in_place():
    assert on_big_stack(lambda: on_big_stack(threading.get_ident)) == _state.deep_worker()[1]
    assert on_big_stack(lambda: call_deep(lambda: nested(20_000), "input")) == 20_000


def test_errors_raised_on_the_worker_reach_the_caller():
    try:
        on_big_stack(lambda: 1 // 0)
    except ZeroDivisionError:
        pass
    else:
        raise AssertionError("no error")
    assert on_big_stack(lambda: 7) == 7     # the worker lives on


def test_repeated_shallow_expression_binds_without_the_worker(monkeypatch):
    """The first binding goes through the big stack; an equal Expression (another object) after it
    is bound on the calling thread."""
    from lance_duck.scan import filters
    schema = pa.schema([pa.field("k", pa.int64())])       # a schema of its own: nothing bound before
    hops: list[int] = []

    def counted(fn):
        hops.append(1)
        return on_big_stack(fn)
    monkeypatch.setattr(filters, "on_big_stack", counted)
    first = bind_filter(pc.field("k") == 5, schema)
    assert hops == [1]
    assert bind_filter(pc.field("k") == 5, schema) is first
    assert hops == [1]
    assert bind_filter(pc.field("k") == 6, schema) is not first
    assert hops == [1, 1]


def test_deep_call_while_the_worker_is_busy_gets_a_thread_of_its_own():
    """No queueing behind another caller's deep call (which might be waiting for this one)."""
    release = threading.Event()
    started = threading.Event()
    other = threading.Thread(target=lambda: on_big_stack(lambda: (started.set(), release.wait(30))))
    other.start()
    try:
        assert started.wait(10)
        got: list[object] = []
        t = threading.Thread(target=lambda: got.append(call_deep(lambda: nested(20_000), "input")))
        t.start()
        t.join(10)
        assert got == [20_000]
    finally:
        release.set()
        other.join(30)
    assert on_big_stack(threading.get_ident) == _state.deep_worker()[1]


def test_expressions_differing_in_a_literal_or_its_type_bind_apart():
    a = bind_filter(pc.field("id") == 5, SCHEMA)
    b = bind_filter(pc.field("id") == 6, SCHEMA)
    c = bind_filter(pc.field("id") == pa.scalar(5, pa.int32()), SCHEMA)
    assert a is not None and b is not None and c is not None
    batch = pa.record_batch({"id": pa.array([5, 6], pa.int64()), "s": ["x", "y"]})
    assert a.mask(batch).tolist() == [True, False]
    assert b.mask(batch).tolist() == [False, True]
    assert c.mask(batch).tolist() == [True, False]
    assert bind_filter(pc.field("id") == 6, SCHEMA) is b


def _child(out) -> None:
    out.put((on_big_stack(threading.get_ident) != threading.get_ident(),
             call_deep(lambda: nested(20_000), "input")))


@pytest.mark.filterwarnings("ignore:lance is not fork-safe")   # the child uses no pylance
def test_forked_child_starts_its_own_worker():
    on_big_stack(lambda: None)                      # the parent's worker exists
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_child, args=(out,))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert out.get(timeout=5) == (True, 20_000)


def test_long_expression_seen_again_still_binds_on_the_big_stack(monkeypatch):
    """Past filters.SHALLOW_TEXT characters an Expression may be deep: never compared on the caller."""
    from lance_duck.scan import filters
    schema = pa.schema([pa.field("k", pa.int64())])

    def chain() -> pc.Expression:
        e = pc.field("k") != 0
        for v in range(1, 2000):
            e = e & (pc.field("k") != v)
        return e
    assert len(str(chain())) > filters.SHALLOW_TEXT
    hops: list[int] = []

    def counted(fn):
        hops.append(1)
        return on_big_stack(fn)
    monkeypatch.setattr(filters, "on_big_stack", counted)
    first = bind_filter(chain(), schema)
    assert bind_filter(chain(), schema) is first
    assert hops == [1, 1]


def test_duckdbs_shallow_predicates_bind_on_the_calling_thread_and_deep_ones_on_the_worker(tmp_path, monkeypatch):
    """DuckDB 2's point lookup offers a two-level predicate: its Expression is bound where the scan
    starts (no hand-over per new literal); a predicate nested deeper than a few levels still goes
    to the big-stack worker. The rows are pylance's either way."""
    duckdb = pytest.importorskip("duckdb")
    lance = pytest.importorskip("lance")
    nodes = pytest.importorskip("duckdb._sources.nodes")
    import lance_duck
    from lance_duck.scan import duckdb_predicates, filters

    path = str(tmp_path / "t.lance")
    lance.write_dataset(pa.table({"id": pa.array(range(100), pa.int64()), "s": [f"v{i}" for i in range(100)]}), path)
    threads: list[int] = []
    real = filters.compile_arrow_expression
    monkeypatch.setattr(filters, "compile_arrow_expression",
                        lambda f, s: threads.append(threading.get_ident()) or real(f, s))
    con = duckdb.connect()
    con.register("ds", lance_duck.dataset(path))
    for i in (3, 77, 41):
        assert con.sql(f"SELECT * FROM ds WHERE id = {i}").fetchall() == \
            [tuple(r.values()) for r in lance.dataset(path).to_table(filter=f"id = {i}").to_pylist()]
    worker = _state.deep_worker()[1]
    assert len(threads) == 3 and worker not in threads       # (the scan's own thread binds it)
    col, lit = nodes.Col(("id",)), nodes.Lit(5, "BIGINT")
    chain = nodes.Binary("=", col, lit)
    assert duckdb_predicates._shallow(chain)
    for _ in range(duckdb_predicates._FEW):
        chain = nodes.Binary("OR", chain, nodes.Binary("=", col, lit))
    assert not duckdb_predicates._shallow(chain)
    assert not duckdb_predicates._shallow(object())          # a node of unknown kind: the worker
