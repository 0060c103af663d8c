"""One DuckDB query, each source in its own long-lived process, timed in turn (A/B/.../pylance).

    python bench/duckdb_ab.py [--query "select ..."] [--runs 25] [--storage 2.2] [--dir /tmp/ld_bench]
                              [--checkout NAME=PATH ...] [--table PATH]

``duckdb_queries.py`` times every source in one process, where the allocators' state is shared
and warmed by all of them. Here every source gets a fresh process of its own (only its reader
imported), warmed by two runs; the driver then asks each in turn for one run, ``--runs`` rounds,
and prints medians of wall time, CPU (user + system) and minor page faults per query, and the
median of the per-round wall ratios against pylance. ``--checkout NAME=PATH`` adds a lance_duck
source imported from another checkout (e.g. a ``git worktree`` of an older commit), to compare
two versions of the code under the same conditions. Uses the table of ``duckdb_queries.py``, or
``--table`` (e.g. ``indexed_queries.py``'s table, for its queries).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from duckdb_queries import QUERIES, prepare  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORKER = r"""
import json, os, resource, sys, time
import duckdb
table, query, source = sys.argv[1:4]
if source == "pylance":
    import lance
    ds = lance.dataset(table)
else:
    import lance_duck
    ds = lance_duck.dataset(table)
con = duckdb.connect()
con.register("T", ds)
for _ in range(2):
    con.sql(query).fetchall()
for _ in sys.stdin:
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    con.sql(query).fetchall()
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    print("RESULT " + json.dumps([wall, cpu, r1.ru_minflt - r0.ru_minflt]), flush=True)
"""


def start(table: str, query: str, source: str, path: str | None) -> subprocess.Popen:
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join([path] + [p for p in [env.get("PYTHONPATH")] if p])
    # run in the checkout: ``python -c`` puts the working directory first on sys.path, ahead of PYTHONPATH
    return subprocess.Popen([sys.executable, "-c", WORKER, table, query, source], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env, cwd=path)


def one_run(p: subprocess.Popen) -> list[float]:
    p.stdin.write("go\n")
    p.stdin.flush()
    while True:
        line = p.stdout.readline()
        if not line:
            raise RuntimeError("a benchmark worker exited")
        if line.startswith("RESULT "):
            return json.loads(line[7:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--query", default=QUERIES["full aggregate"])
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--runs", type=int, default=25)
    ap.add_argument("--storage", default="2.2")
    ap.add_argument("--dir", default="/tmp/ld_bench")
    ap.add_argument("--checkout", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--table", help="an existing Lance table instead of duckdb_queries.py's")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    table = os.path.abspath(a.table or prepare(a.dir, a.rows, a.storage)[0])
    sources = [("lance_duck", "lance_duck", REPO)]
    sources += [(name, "lance_duck", path) for name, path in (c.split("=", 1) for c in a.checkout)]
    sources.append(("pylance", "pylance", None))
    procs = [(name, start(table, a.query, kind, path)) for name, kind, path in sources]
    res: dict[str, list] = {name: [] for name, _ in procs}
    try:
        for _ in range(a.runs):
            for name, p in procs:
                res[name].append(one_run(p))
    finally:
        for _, p in procs:
            p.stdin.close()
            p.wait()
    print(f"{a.query}\n{a.table or f'{a.rows} rows, storage {a.storage}'}, {a.runs} rounds, one process per source\n")
    print(f"{'source':<14}{'wall s':>9}{'cpu s':>9}{'faults':>9}{'wall/pylance':>14}")
    for name, runs in res.items():
        wall, cpu, faults = (statistics.median(r[i] for r in runs) for i in range(3))
        ratio = statistics.median(x[0] / y[0] for x, y in zip(runs, res["pylance"]))
        print(f"{name:<14}{wall:>9.3f}{cpu:>9.3f}{faults:>9.0f}{ratio:>14.2f}")


if __name__ == "__main__":
    main()
