"""Runs queries through DuckDB's Lance extension, for ``vector_search.py`` / ``fts_search.py``.

Started by them with another venv's Python (``duckdb==1.5.5 duckdb-extension-lance==1.5.5``,
``--ext-python``): it loads the ``lance.duckdb_extension`` file that package ships (no network),
then reads one JSON request per line on stdin and answers one JSON line on stdout::

    {"sql": "SELECT id FROM lance_vector_search(...)", "runs": 1}
    -> {"times": [seconds, ...], "cpu": [process CPU seconds, ...], "ids": [first column of the last run],
        "rows": [its rows]}

The first run of every request is a warm-up (not timed) when ``warm`` is true. Uses only duckdb
(never lance_duck), so the two never share a process.
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
                con.execute(req["sql"]).fetchall()
            times, cpu, rows = [], [], []
            for _ in range(int(req.get("runs", 1))):
                c0, t0 = _cpu(), time.perf_counter()
                rows = con.execute(req["sql"]).fetchall()
                times.append(time.perf_counter() - t0)
                cpu.append(_cpu() - c0)
            out = {"times": times, "cpu": cpu, "ids": [r[0] for r in rows], "rows": [list(r) for r in rows]}
        except Exception as e:  # reported to the parent, which prints it
            out = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(out, default=_jsonable), flush=True)


if __name__ == "__main__":
    main()
