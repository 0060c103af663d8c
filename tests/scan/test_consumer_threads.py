"""Scans pulled from threads that are not the one that made them: DuckDB's worker threads (whose
Python thread state is dropped after every call), a new thread per batch, Arrow's own threads,
a pool thread and the main thread taking turns. Every read-ahead setting; rows, order and schema
equal pylance's, deletions, filters, limit / offset and batch sizes included.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import duckdb
import lance
import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pytest

import lance_duck
from lance_duck.scan import LanceDataset
from lance_duck.scan.readahead import DEFAULT_MAX_INFLIGHT, FIXED_WIDTH_MAX_INFLIGHT
from lance_duck.trace import decode_trace

from .conftest import assert_tables_equal

N = 300_000


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> str:
    """Three 100k-row fragments, deletions in two of them."""
    p = str(tmp_path_factory.mktemp("consumer_threads") / "t.lance")
    rng = np.random.default_rng(5)
    lance.write_dataset(pa.table({
        "id": pa.array(np.arange(N, dtype=np.int64)),
        "amount": pa.array(np.arange(N) * (250.0 / N) + rng.random(N)),
        "note": pa.array(np.arange(N) % 89).cast(pa.string()),
    }), p, max_rows_per_file=100_000, data_storage_version="2.2")
    lance.dataset(p).delete("id % 1000 = 7 and id >= 100000")
    return p


SCANS = [
    {"columns": ["id", "amount"]},
    {"columns": ["id", "note"]},
    {"columns": ["id", "amount"], "filter": "amount > 200"},
    {"columns": ["amount"], "limit": 50_000, "offset": 120_000},
    {"columns": ["id", "note"], "filter": "id % 5 = 0", "batch_size": 30_000},
]


def _pylance(path: str, scan: dict) -> pa.Table:
    return lance.dataset(path).to_table(**{k: v for k, v in scan.items() if k != "batch_size"})


def _pull_each_batch_on_a_new_thread(reader: pa.RecordBatchReader) -> list[pa.RecordBatch]:
    out: list[pa.RecordBatch] = []
    done = threading.Event()

    def one() -> None:
        try:
            out.append(reader.read_next_batch())
        except StopIteration:
            done.set()
    while not done.is_set():
        th = threading.Thread(target=one)
        th.start()
        th.join()
    return out


def _pull_in_turns(reader: pa.RecordBatchReader) -> list[pa.RecordBatch]:
    """Batches pulled alternately by a pool thread and by this thread."""
    out: list[pa.RecordBatch] = []
    with ThreadPoolExecutor(1) as pool:
        for k in range(1 << 30):
            try:
                b = pool.submit(reader.read_next_batch).result() if k % 2 else reader.read_next_batch()
            except StopIteration:
                return out
            out.append(b)
    return out


@pytest.mark.parametrize("readahead", [None, 0, 1, 4])
@pytest.mark.parametrize("scan", SCANS)
@pytest.mark.parametrize("pull", ["new-thread", "turns", "arrow-threads"])
def test_batches_pulled_from_other_threads_equal_pylance(table, readahead, scan, pull):
    reader = lance_duck.dataset(table).scanner(batch_readahead=readahead, **scan).to_reader()
    if pull == "new-thread":
        got = pa.Table.from_batches(_pull_each_batch_on_a_new_thread(reader), schema=reader.schema)
    elif pull == "turns":
        got = pa.Table.from_batches(_pull_in_turns(reader), schema=reader.schema)
    else:   # Arrow's threads pull the Python-backed reader (one GIL acquisition per call)
        got = pads.Scanner.from_batches(reader).to_table()
    assert_tables_equal(got, _pylance(table, scan))


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("readahead", [None, 0, 1, 4])
def test_duckdb_threads_pull_pylance_rows(table, threads, readahead, monkeypatch):
    """DuckDB's workers call into the stream; the decode runs on them (read-ahead 0) or on ours."""
    if readahead is not None:   # DuckDB calls scanner(columns=..., filter=...): the depth is forced here
        scanner = LanceDataset.scanner
        monkeypatch.setattr(LanceDataset, "scanner",
                            lambda self, *a, **k: scanner(self, *a, **{**k, "batch_readahead": readahead}))
    con = duckdb.connect()
    con.execute(f"set threads={threads}")
    con.register("ref", lance.dataset(table).to_table())
    con.register("t", lance_duck.dataset(table))
    # (exact aggregates only: a float sum depends on the order DuckDB's threads add in)
    with decode_trace() as trace:
        for sql in ("select count(*), max(id), sum(id), min(amount) from {} where amount > 230",
                    "select id, amount, note from {} where amount > 100 order by id",
                    "select note, count(*), max(amount), sum(id) from {} group by note order by note",
                    "select id from {} where id % 1000 = 9 order by id limit 20 offset 3"):
            got = con.sql(sql.format("t")).to_arrow_table()
            want = con.sql(sql.format("ref")).to_arrow_table()
            assert_tables_equal(got, want)
    # numbers only: two tasks at a time; with the string column: four
    want = {FIXED_WIDTH_MAX_INFLIGHT, DEFAULT_MAX_INFLIGHT} if readahead is None else {readahead}
    assert {v[0] for v in trace.values("scan:readahead")} == want
    assert con.sql("select count(*) from t").fetchall()[0][0] == lance.dataset(table).count_rows()


def test_a_reader_closed_early_on_another_thread_leaves_later_scans_exact(table):
    ds = lance_duck.dataset(table)
    reader = ds.scanner(columns=["id", "amount"]).to_reader()
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(reader.read_next_batch).result()
        pool.submit(reader.close).result()
    assert first.column("id").to_pylist()[:3] == [0, 1, 2]
    assert_tables_equal(ds.to_table(columns=["id", "amount"]),
                        lance.dataset(table).to_table(columns=["id", "amount"]))
