"""The decode trace: off unless a block is open, collects every thread's events, nests."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import lance
import pyarrow as pa

import lance_duck
from lance_duck import trace
from lance_duck.trace import decode_trace


def test_events_outside_a_trace_block_are_dropped():
    trace.record("layout:nowhere")
    with decode_trace() as t:
        pass
    trace.record("layout:after")
    assert t.events == [] and trace._active is None


def test_trace_collects_events_of_every_thread():
    with decode_trace() as t:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda i: trace.record("path:worker", i), range(200)))
    assert sorted(t.values("path:worker")) == list(range(200))


def test_inner_trace_events_reach_the_outer_one():
    with decode_trace() as outer:
        trace.record("a")
        with decode_trace() as inner:
            trace.record("b", 2)
        trace.record("c")
    assert inner.events == [("b", 2)]
    assert outer.events == [("a", None), ("b", 2), ("c", None)]


def test_a_scan_records_the_layouts_and_files_it_decoded(tmp_path):
    uri = str(tmp_path / "t.lance")
    table = pa.table({"i": pa.array(range(1000), pa.int64()), "s": pa.array([f"v{k % 7}" for k in range(1000)])})
    lance.write_dataset(table, uri, data_storage_version="2.1")
    with decode_trace() as t:
        got = lance_duck.dataset(uri).to_table()
    assert got.equals(lance.dataset(uri).to_table())
    assert "layout:miniblock" in t.names()
    files = {f.path for frag in lance.dataset(uri).get_fragments() for f in frag.data_files()}
    assert {p.rsplit("/", 1)[-1] for p in t.values("file:open")} == {p.rsplit("/", 1)[-1] for p in files}
