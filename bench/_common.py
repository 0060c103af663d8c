"""Setup and timing shared by the DuckDB benchmarks (``duckdb_queries.py``, ``indexed_queries.py``).

* :func:`write_table`: the benchmark layout -- pylance writes four fragments, then deletes
  every row with ``id % 1000 = 3`` (so deletion files are read too).
* :func:`run_once` / :func:`interleaved`: one query's wall and process-CPU time; several
  sources timed in turn (A, B, A, B ...) after a warm-up each, so that drift in machine
  load hits all alike; medians.
"""
from __future__ import annotations

import os
import resource
import statistics
import sys
import time
from typing import Callable

import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def write_table(path: str, table: pa.Table, **write_options) -> None:
    """Write ``table`` with pylance as four fragments and delete ``id % 1000 = 3``."""
    import lance
    n = table.num_rows
    ds = lance.write_dataset(table, path, max_rows_per_file=(n + 3) // 4, **write_options)
    ds.delete("id % 1000 = 3")


def cpu_seconds() -> float:
    """CPU time of this process, every thread (both readers' pools)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_once(con, sql: str) -> tuple[float, float, list]:
    """(wall seconds, process CPU seconds, rows) of one query on a DuckDB connection."""
    c0, t0 = cpu_seconds(), time.perf_counter()
    rows = con.sql(sql).fetchall()
    return time.perf_counter() - t0, cpu_seconds() - c0, rows


def interleaved(runners: dict[str, Callable[[], tuple[float, float]]], runs: int) -> dict[str, tuple[float, float]]:
    """{name: (median wall, median CPU)}: every runner once as a warm-up, then ``runs`` rounds
    of each in turn."""
    for run in runners.values():
        run()
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in runners}
    for _ in range(runs):
        for name, run in runners.items():
            times[name].append(run())
    return {name: (statistics.median(t[0] for t in ts), statistics.median(t[1] for t in ts))
            for name, ts in times.items()}


def rounded(rows) -> list:
    """Rows (tuples, or dicts from ``to_pylist``) sorted, floats rounded: results compare equal."""
    return sorted(tuple(round(v, 6) if isinstance(v, float) else v
                        for v in (r.values() if isinstance(r, dict) else r)) for r in rows)


TABLE_HEADER = (f"{'query':<20} {'wall ms: lance_duck':>20} {'pylance':>8} {'ratio':>6}   "
                f"{'CPU ms: lance_duck':>19} {'pylance':>8} {'ratio':>6}")


def report_pair(name: str, ours: Callable[[], tuple], theirs: Callable[[], tuple], runs: int) -> None:
    """Check both return the same rows (third item), time them interleaved, print one TABLE_HEADER row."""
    r1, r2 = ours()[2], theirs()[2]
    if rounded(r1) != rounded(r2):
        raise SystemExit(f"{name}: results differ: {r1[:3]} vs {r2[:3]}")
    res = interleaved({"ours": lambda: ours()[:2], "theirs": lambda: theirs()[:2]}, runs)
    (wo, co), (wt, ct) = res["ours"], res["theirs"]
    print(f"{name:<20} {wo * 1e3:20.2f} {wt * 1e3:8.2f} {wo / wt:5.2f}x   "
          f"{co * 1e3:19.2f} {ct * 1e3:8.2f} {co / max(ct, 1e-9):5.2f}x")


DEFAULT_EXT_PYTHON = "/tmp/extvenv/bin/python"


class Extension:
    """DuckDB's Lance extension in a subprocess (``bench/ext_runner.py`` under another venv's Python,
    e.g. ``python3 -m venv /tmp/extvenv && /tmp/extvenv/bin/pip install duckdb==1.5.5
    duckdb-extension-lance==1.5.5 pyarrow numpy``). :meth:`run` sends one SQL query and returns
    (seconds of one timed run after a warm-up, first column of its rows) or raises RuntimeError."""

    def __init__(self, python: str) -> None:
        import json
        import subprocess
        self._json = json
        runner = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ext_runner.py")
        self._p = subprocess.Popen([python, runner], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        hello = json.loads(self._p.stdout.readline())
        self.version = hello["ready"]
        self.last_rows: list = []
        self.last_cpu = float("nan")   # CPU seconds of the last timed run (the subprocess, every thread)

    def run(self, sql: str, warm: bool = True) -> tuple[float, list]:
        self._p.stdin.write(self._json.dumps({"sql": sql, "warm": warm}) + "\n")
        self._p.stdin.flush()
        out = self._json.loads(self._p.stdout.readline())
        if "error" in out:
            raise RuntimeError(out["error"])
        self.last_rows = out["rows"]
        self.last_cpu = out.get("cpus", [float("nan")])[0]
        return out["times"][0], out["ids"]

    def close(self) -> None:
        self._p.stdin.close()
        self._p.wait()


def open_extension(python: str) -> Extension | None:
    """The extension runner, or None (with a note) when ``python`` does not exist."""
    if not python or not os.path.exists(python):
        print(f"DuckDB Lance extension: {python!r} not found, not compared", flush=True)
        return None
    ext = Extension(python)
    print(f"DuckDB {ext.version} + Lance extension (subprocess {python})", flush=True)
    return ext


def quantiles_ms(ts: list[float]) -> tuple[float, float]:
    """(median, p90) in milliseconds."""
    import numpy as np
    return statistics.median(ts) * 1e3, float(np.percentile(ts, 90)) * 1e3
