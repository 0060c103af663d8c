"""Runs queries through DuckDB's Lance extension, for the benchmarks that compare with it (``peer_ext.py``,
``tpch.py``, ``vector_search.py``, ``fts_search.py``).

Started by them with another venv's Python (``duckdb==1.5.5 duckdb-extension-lance==1.5.5``,
``--ext-python``): it loads the ``lance.duckdb_extension`` file that package ships (no network),
then reads one JSON request per line on stdin and answers one JSON line on stdout::

    {"sql": "SELECT id FROM lance_vector_search(...)", "runs": 1}
    -> {"times": [seconds, ...], "cpu": [process CPU seconds, ...], "ids": [first column of the last run],
        "rows": [its rows]}

The first run of every request is a warm-up (not timed) when ``warm`` is true. Uses only duckdb
(never lance_duck), so the two never share a process.

A query runs as ``con.sql(sql).fetchall()``: the call every in-process target of the benchmarks makes
(``_common.run_once``, ``lance_duck.sql(...).fetchall()``). DuckDB's ``execute()`` skips the
relation and is cheaper per query (1.5.5, a point lookup through the extension: 1067 us against
1229-1403 us), so the ``execute()`` this runner used before session 24 made every ratio of a
millisecond query read 10-20 % against lance_duck.
"""
from __future__ import annotations

import glob
import json
import os
import resource
import sys
import time

import duckdb


def extension_path() -> str:
    import duckdb_extension_lance
    base = os.path.dirname(duckdb_extension_lance.__file__)
    found = sorted(glob.glob(os.path.join(base, "**", "lance.duckdb_extension"), recursive=True))
    if not found:
        raise SystemExit(f"no lance.duckdb_extension under {base}")
    return found[-1]


def _cpu() -> float:
    """CPU seconds of this process, every thread (DuckDB's and the extension's)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _jsonable(v):
    """Decimals as floats, dates and times as ISO text (TPC-H answers)."""
    return float(v) if type(v).__name__ == "Decimal" else str(v)


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list:
    """The rows of ``sql`` as the in-process targets fetch them (a statement without rows: none)."""
    rel = con.sql(sql)
    return [] if rel is None else rel.fetchall()


def main() -> None:
    con = duckdb.connect(config={"allow_unsigned_extensions": "true", "autoinstall_known_extensions": "false",
                                 "autoload_known_extensions": "false"})
    path = extension_path()
    con.execute(f"LOAD '{path}'")
    print(json.dumps({"ready": duckdb.__version__, "extension": path}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if req.get("warm", True):
                _rows(con, req["sql"])
            times, cpu, rows = [], [], []
            for _ in range(int(req.get("runs", 1))):
                c0, t0 = _cpu(), time.perf_counter()
                rows = _rows(con, req["sql"])
                times.append(time.perf_counter() - t0)
                cpu.append(_cpu() - c0)
            out = {"times": times, "cpu": cpu, "ids": [r[0] for r in rows], "rows": [list(r) for r in rows]}
        except Exception as e:  # reported to the parent, which prints it
            out = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(out, default=_jsonable), flush=True)


if __name__ == "__main__":
    main()
