"""A DuckDB connection dropped right after a query over a dataset does not hang.

DuckDB 1.5 destroys a connection holding the GIL and waits for its worker threads, which release
the batches they scanned -- and releasing a batch's numpy-owned buffers takes the GIL. The stream
keeps its last batches referenced until shortly after it ended (``scan/interop.held_for_engine``),
so the workers only drop a count. Before, two processes each dropping connections in a loop hung
within 100 queries on DuckDB 1.5.6 (every one of 6 tries); DuckDB 2 releases the GIL itself.
"""
from __future__ import annotations

import os
import subprocess
import sys

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck import _state
from lance_duck.scan.interop import HELD_BATCHES, HandedOver

ROOT = os.path.dirname(os.path.dirname(lance_duck.__file__))
ROWS = 1_000_000

LOOP = """
import sys, duckdb, lance_duck
def query():
    con = duckdb.connect()
    con.register("t", lance_duck.dataset(sys.argv[1]))
    got = con.execute("select count(*), count(distinct id) from t where id < 100000").fetchone()
    assert got == (100_000, 100_000), got
for _ in range(int(sys.argv[2])):
    query()          # (the connection is dropped as the function returns)
print("done")
"""


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("teardown") / "t.lance")
    ds = lance.write_dataset(pa.table({"id": np.arange(ROWS, dtype=np.int64),
                                       "amount": np.arange(ROWS) * 0.25}), path, max_rows_per_file=ROWS // 4)
    ds.create_scalar_index("id", "BTREE")
    return path


def test_connections_dropped_after_fetchone_in_two_busy_processes_do_not_hang(indexed):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, "-c", LOOP, indexed, "100"], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    try:
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            p.kill()
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0 and out.strip() == "done", err[-2000:]


def test_a_streams_last_batches_stay_referenced_after_it_ends(indexed):
    """pyarrow drops a stream's iterator at its end; the last batches it handed over are still
    referenced (by the process-wide set) after the reader itself is gone."""
    kept = _state.slot("handed-over", HandedOver)
    reader = lance_duck.dataset(indexed).scanner(columns=["id"], batch_size=50_000).to_reader()
    batches = list(reader)
    del reader
    assert sum(b.num_rows for b in batches) == ROWS and len(batches) > HELD_BATCHES
    last = kept.latest()
    assert len(last) == HELD_BATCHES
    # (the reader hands out new wrappers of the same batches: the same buffers)
    assert [b.column(0).buffers()[1].address for b in last] == \
        [b.column(0).buffers()[1].address for b in batches[-HELD_BATCHES:]]
