"""TPC-H: DuckDB's Lance extension vs ``lance_duck.sql`` vs DuckDB's Parquet reader, the 22 queries.

    python bench/tpch.py [--sf 1] [--runs 3] [--dir /work/benchdata/tpch] [--queries 1,5,9]
                         [--ext-python /tmp/extvenv/bin/python]

Builds once under ``--dir/sf<sf>/`` (reused): DuckDB's ``tpch`` extension generates the tables
(``CALL dbgen(sf=...)``, run by the extension venv's DuckDB: ``pip install duckdb-extension-tpch``
there, the version of its ``duckdb``) and writes them to Parquet with the 22 query texts and DuckDB's
reference answers; pylance writes each table to Lance from the Parquet file (its default layout).

Then, in one run, every query as DuckDB's ``tpch_queries()`` gives it (unchanged), over views named
after the tables in three engines:

* ``ext``: DuckDB + the Lance extension (a subprocess, ``bench/ext_runner.py``), views
  ``SELECT * FROM '<t>.lance'``;
* ``lance_duck``: ``lance_duck.sql`` on this process's DuckDB, views created through it
  (``CREATE VIEW t AS SELECT * FROM '<t>.lance'``), the query run with ``lance_duck.sql``;
* ``parquet``: this process's DuckDB over ``read_parquet('<t>.parquet')``.

Each query runs once in each engine (warm-up; answers compared: a row differing from the Parquet
answer prints WRONG, so does a Parquet answer differing from DuckDB's reference answer), then
``--runs`` rounds interleaved (ext, lance_duck, parquet, ext, ...); medians of wall time and of
process CPU time (every thread; the extension's measured in its subprocess). Prints the per-query
ratios lance_duck / ext, lance_duck / parquet and ext / parquet of both, and their geometric means:
on a loaded machine the CPU ratios are the steadier of the two.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import DEFAULT_EXT_PYTHON, open_extension  # noqa: E402

TABLES = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"]

GENERATE = r"""
import duckdb, glob, json, os, sys
import duckdb_extension_tpch
sf, out = sys.argv[1], sys.argv[2]
base = os.path.dirname(duckdb_extension_tpch.__file__)
ext = sorted(glob.glob(os.path.join(base, "**", "tpch.duckdb_extension"), recursive=True))[-1]
con = duckdb.connect(config={"allow_unsigned_extensions": "true", "autoinstall_known_extensions": "false",
                             "autoload_known_extensions": "false"})
con.execute(f"LOAD '{ext}'")
con.execute(f"CALL dbgen(sf={sf})")
for (t,) in con.execute("select table_name from duckdb_tables() order by 1").fetchall():
    con.execute(f"COPY {t} TO '{out}/{t}.parquet' (FORMAT parquet)")
qs = dict(con.execute("select query_nr, query from tpch_queries() order by 1").fetchall())
try:
    answers = dict(con.execute(f"select query_nr, answer from tpch_answers() where scale_factor = {sf}").fetchall())
except duckdb.Error:
    answers = {}
json.dump({"duckdb": duckdb.__version__, "queries": {str(k): v for k, v in qs.items()},
           "answers": {str(k): v for k, v in answers.items()}}, open(f"{out}/queries.json", "w"), indent=1)
"""


def build(d: str, sf: str, ext_python: str) -> dict:
    """Parquet, Lance and the queries under ``d`` (made once), and the queries file's content."""
    os.makedirs(d, exist_ok=True)
    qfile = os.path.join(d, "queries.json")
    if not os.path.exists(qfile):
        t0 = time.perf_counter()
        subprocess.run([ext_python, "-c", GENERATE, sf, d], check=True)
        print(f"generated sf={sf} Parquet in {time.perf_counter() - t0:.1f} s", flush=True)
    for t in TABLES:
        lp = os.path.join(d, f"{t}.lance")
        if not os.path.exists(lp):
            import lance
            import pyarrow.parquet as pq
            t0 = time.perf_counter()
            lance.write_dataset(pq.read_table(os.path.join(d, f"{t}.parquet")), lp)
            print(f"wrote {lp} in {time.perf_counter() - t0:.1f} s", flush=True)
    with open(qfile) as f:
        return json.load(f)


def normalised(rows: list) -> list:
    """Rows as comparable tuples: numbers (Decimal, float, int) rounded to 2 places, dates as text;
    the ORDER BY of every TPC-H query makes the order part of the answer."""
    def cell(v):
        if v is None or isinstance(v, str):
            return v
        if isinstance(v, (int, float)) or type(v).__name__ == "Decimal":
            return round(float(v), 2)
        return str(v)
    return [tuple(cell(v) for v in r) for r in rows]


def same(a: list, b: list) -> bool:
    """Answers equal, numbers within a relative 1e-9 (sums of doubles may differ in the last bits)."""
    a, b = normalised(a), normalised(b)
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b):
        if len(ra) != len(rb):
            return False
        for x, y in zip(ra, rb):
            if isinstance(x, float) and isinstance(y, float):
                if not math.isclose(x, y, rel_tol=1e-9, abs_tol=0.011):
                    return False
            elif x != y:
                return False
    return True


def reference_rows(answer: str) -> list:
    """DuckDB's pipe-separated reference answer as rows of text (header dropped)."""
    lines = [ln for ln in answer.strip().splitlines()]
    return [tuple(c for c in ln.split("|")) for ln in lines[1:]]


def same_as_reference(rows: list, answer: str) -> bool:
    ref = reference_rows(answer)
    if len(ref) != len(rows):
        return False
    for r, e in zip(rows, ref):
        for v, s in zip(r, e):
            if v is None or isinstance(v, str):
                if (v or "") != s and str(v) != s:
                    return False
            elif isinstance(v, (int, float)) or type(v).__name__ == "Decimal":
                try:
                    if not math.isclose(float(v), float(s), rel_tol=1e-6, abs_tol=0.011):
                        return False
                except ValueError:
                    return False
            elif str(v) != s:
                return False
    return True


def gmean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sf", default="1")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/work/benchdata/tpch")
    ap.add_argument("--queries", default="", help="comma-separated query numbers (default: all 22)")
    ap.add_argument("--ext-python", default=DEFAULT_EXT_PYTHON)
    ap.add_argument("--no-ext", action="store_true", help="lance_duck and Parquet only")
    args = ap.parse_args()
    d = os.path.join(args.dir, f"sf{args.sf}")
    meta = build(d, args.sf, args.ext_python)
    queries = {int(k): v for k, v in meta["queries"].items()}
    wanted = [int(q) for q in args.queries.split(",") if q] or sorted(queries)

    import duckdb
    import lance_duck
    lcon, pcon = duckdb.connect(), duckdb.connect()
    for t in TABLES:
        lance_duck.sql(f"CREATE VIEW {t} AS SELECT * FROM '{os.path.join(d, t)}.lance'", lcon)
        pcon.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{os.path.join(d, t)}.parquet')")
    ext = None if args.no_ext else open_extension(args.ext_python)
    if ext is not None:
        for t in TABLES:
            ext.run(f"CREATE OR REPLACE VIEW {t} AS SELECT * FROM '{os.path.join(d, t)}.lance'", warm=False)

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    def run_ld(q: str) -> tuple[float, float, list]:
        c0, t0 = cpu(), time.perf_counter()
        rows = lance_duck.sql(q, lcon).fetchall()
        return time.perf_counter() - t0, cpu() - c0, rows

    def run_pq(q: str) -> tuple[float, float, list]:
        c0, t0 = cpu(), time.perf_counter()
        rows = pcon.execute(q).fetchall()
        return time.perf_counter() - t0, cpu() - c0, rows

    def run_ext(q: str) -> tuple[float, float, list]:
        t, _ = ext.run(q, warm=False)
        return t, ext.last_cpu, ext.last_rows

    engines = {"parquet": run_pq, "lance_duck": run_ld}
    if ext is not None:
        engines = {"ext": run_ext, **engines}
    print(f"TPC-H sf={args.sf} (generated by DuckDB {meta['duckdb']}); this process: DuckDB {duckdb.__version__}; "
          f"median of {args.runs}; load {os.getloadavg()[0]:.2f}", flush=True)
    print(f"{'':>3} {'wall ms':^{15 * len(engines)}} {'wall ratio':^21} {'CPU ratio (every thread)':^21}")
    head = (f"{'q':>3} " + " ".join(f"{n:>14}" for n in engines)
            + f" {'ld/ext':>6} {'ld/pq':>6} {'ext/pq':>6}  {'ld/ext':>6} {'ld/pq':>6} {'ext/pq':>6}")
    print(head, flush=True)
    keys = ("ld/ext", "ld/pq", "ext/pq")
    ratios: dict[str, list[float]] = {k: [] for k in keys}
    cpu_ratios: dict[str, list[float]] = {k: [] for k in keys}
    wrong = []
    for n in wanted:
        q = queries[n]
        answers = {name: run(q)[2] for name, run in engines.items()}   # warm-up, and the answers
        base = answers["parquet"]
        ref = meta["answers"].get(str(n))
        if ref is not None and not same_as_reference(base, ref):
            wrong.append((n, "parquet vs reference"))
            print(f"WRONG q{n}: DuckDB's Parquet answer differs from the reference answer", flush=True)
        for name, rows in answers.items():
            if name != "parquet" and not same(rows, base):
                wrong.append((n, name))
                print(f"WRONG q{n}: {name} {normalised(rows)[:3]} vs parquet {normalised(base)[:3]}", flush=True)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in engines}
        for _ in range(args.runs):
            for name, run in engines.items():
                times[name].append(run(q)[:2])
        med = {name: statistics.median(t for t, _ in ts) for name, ts in times.items()}
        mcpu = {name: statistics.median(c for _, c in ts) for name, ts in times.items()}
        row = []
        for got, m in ((ratios, med), (cpu_ratios, mcpu)):
            for k, (a, b) in zip(keys, (("lance_duck", "ext"), ("lance_duck", "parquet"), ("ext", "parquet"))):
                v = m[a] / m[b] if a in m and b in m and m[b] > 0 else float("nan")
                if not math.isnan(v):
                    got[k].append(v)
                row.append(v)
        print(f"{n:>3} " + " ".join(f"{med[name] * 1e3:14.1f}" for name in engines)
              + " " + " ".join(f"{v:6.2f}" for v in row[:3]) + "  " + " ".join(f"{v:6.2f}" for v in row[3:]),
              flush=True)
    print("geomean wall: " + "  ".join(f"{k} {gmean(v):.2f}" for k, v in ratios.items() if v)
          + f"; max ld/ext {max(ratios['ld/ext'], default=float('nan')):.2f}")
    print("geomean CPU:  " + "  ".join(f"{k} {gmean(v):.2f}" for k, v in cpu_ratios.items() if v)
          + f"; max ld/ext {max(cpu_ratios['ld/ext'], default=float('nan')):.2f}; load {os.getloadavg()[0]:.2f}")
    print("answers: " + ("all equal" if not wrong else f"WRONG {wrong}"))
    if ext is not None:
        ext.close()


if __name__ == "__main__":
    main()
