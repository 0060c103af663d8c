"""lance_duck against DuckDB's own Lance extension (the Rust reader) in the same DuckDB, one run.

    python bench/peer_ext.py [--rows 4000000] [--runs 5] [--dir /work/benchdata/peer32]
                             [--ext-python /tmp/extvenv/bin/python] [--only NAME ...] [--timed TARGET ...]
                             [--state warm|cold]

Five ways to answer the anchor queries of ``duckdb_queries.py`` (over its table) and the indexed
queries of ``indexed_queries.py`` (over its table: BTREE ``id``, BITMAP ``category``, ZONEMAP
``amount``) and :data:`VARYING` (a point lookup with a new id at every call, as an application looks
rows up: no cache of statements sees its text twice; its answers are checked for one id), both tables
built once by those scripts' ``prepare`` in ``--dir``:

* ``ext``: DuckDB 1.5.5 + ``duckdb-extension-lance`` (``FROM 'path.lance'``), in a subprocess
  (``ext_runner.py`` under ``--ext-python``; it times the query itself, so no pipe overhead)
* ``sql``: ``lance_duck.sql("... FROM 'path.lance'")`` on a connection of its own
* ``ds``: DuckDB over a registered ``lance_duck.dataset(path)``
* ``pylance``: DuckDB over a registered ``lance.dataset(path)``
* ``parquet``: DuckDB's ``read_parquet`` over the same live rows (anchor queries only)

Each query: every target once as a warm-up (its answer kept), then ``--runs`` rounds of all targets
in turn; median wall times. Every timed call finds its target in the same state (``--state``):

* ``warm`` (default): right after an untimed call of the same query by the same target (the
  extension's inside its subprocess), so no target is timed just after the process was idle;
* ``cold``: after a pause of :data:`COLD_PAUSE` seconds of this process (the extension's subprocess
  idles meanwhile too): DuckDB's sleeping worker threads and cold caches, as a single interactive query
  meets them (about 1 ms more for a point lookup on the 2-vCPU VM, in DuckDB alone as in every target).

Each round starts one target later than the round before (round r: the targets from the r-th on,
then the rest), so every target follows every other equally often: a target timed right after the
extension's subprocess ran meets caches that process evicted, one timed after our own targets does
not (a point lookup through ``lance_duck.sql``: 1.9 ms in the second place of every round, 1.39 ms
alternating with ``ds`` alone). Before session 24 the order was fixed and every target but the
extension ran warm up only as the round went: ``sql``, second after the extension every time, met the
process as ``cold`` does, and the targets after it met it warm. Every answer is compared with pylance's (floats to 1e-9 relative; a
``LIMIT`` without ``ORDER BY`` may return any rows, so there each row must be a row of the table and
the count must match) and a mismatch prints ``WRONG``. Ratios are target / extension, and
``sql/pq`` is ``lance_duck.sql`` / Parquet, of wall times and then of process CPU (every thread: the
extension's measured in its subprocess), steadier than wall on a loaded machine. The load
(``os.getloadavg``) is printed before and after. ``--timed sql parquet`` times only those targets in the
rounds (every target still answers once and is checked): a two-way comparison in which no other
reader's threads run in between.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
import warnings
import random
from typing import Callable, Union

import duckdb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import duckdb_queries  # noqa: E402
import indexed_queries  # noqa: E402
from _common import DEFAULT_EXT_PYTHON, cpu_seconds, open_extension  # noqa: E402

Runner = Callable[[], tuple[float, float, list]]
TARGETS = ("ext", "sql", "ds", "pylance", "parquet")
#: seconds this process pauses before each timed call with ``--state cold``
COLD_PAUSE = 0.05
#: queries of the indexed table whose ``{n}`` is a new id at every call (answers checked with ``CHECKED_ID``):
#: an application's lookups, which a cache of statements does not see twice
VARYING = {"point lookup, a new id each call": "select * from T where id = {n}"}
CHECKED_ID = 612345


def normal(rows: list) -> list[tuple]:
    """Rows as the extension's JSON gives them (timestamps as text), as tuples."""
    return [tuple(r) for r in json.loads(json.dumps([list(r) for r in rows], default=str))]


def same_value(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, (int, float)) or isinstance(b, float) and isinstance(a, int):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def same_rows(a: list[tuple], b: list[tuple], ordered: bool) -> bool:
    if len(a) != len(b):
        return False
    if not ordered:
        a, b = sorted(a, key=repr), sorted(b, key=repr)
    return all(len(x) == len(y) and all(same_value(u, v) for u, v in zip(x, y)) for x, y in zip(a, b))


def unordered_limit(sql: str) -> bool:
    s = sql.lower()
    return " limit " in s and " order by " not in s


def check(name: str, sql: str, answers: dict[str, list[tuple]], reference_con: duckdb.DuckDBPyConnection) -> list[str]:
    """Targets whose answer differs from pylance's."""
    ref = answers["pylance"]
    wrong = []
    if unordered_limit(sql):
        # any rows may come back: each must be the table's row of its id (first column), same count
        for target, rows in answers.items():
            ids = [r[0] for r in rows]
            if not ids:
                ok = len(ref) == 0
            else:
                truth = normal(reference_con.sql(f"select * from T where id in ({', '.join(map(str, ids))})").fetchall())
                ok = len(rows) == len(ref) and len(set(ids)) == len(ids) and same_rows(rows, truth, ordered=False)
            if not ok:
                wrong.append(target)
        return wrong
    ordered = " order by " in sql.lower()
    return [t for t, rows in answers.items() if not same_rows(rows, ref, ordered)]


#: a query's text, or a function giving the text of each call (a new literal each time)
Text = Union[str, Callable[[], str]]


def _text(q: Text) -> str:
    return q() if callable(q) else q


def timed(con: duckdb.DuckDBPyConnection, q: Text) -> Runner:
    def run() -> tuple[float, float, list]:
        text = _text(q)
        c0, t0 = cpu_seconds(), time.perf_counter()
        rows = con.sql(text).fetchall()
        return time.perf_counter() - t0, cpu_seconds() - c0, rows
    return run


def timed_sql(con: duckdb.DuckDBPyConnection, q: Text) -> Runner:
    import lance_duck

    def run() -> tuple[float, float, list]:
        text = _text(q)
        c0, t0 = cpu_seconds(), time.perf_counter()
        rows = lance_duck.sql(text, connection=con).fetchall()
        return time.perf_counter() - t0, cpu_seconds() - c0, rows
    return run


def timed_ext(ext, q: Text, warm: bool = False) -> Runner:
    def run() -> tuple[float, float, list]:
        wall, _ = ext.run(_text(q), warm=warm)
        return wall, ext.last_cpu, ext.last_rows
    return run


def in_state(run: Runner, state: str) -> Runner:
    """``run`` timed as ``--state`` says (the extension's runner primes itself: ``timed_ext(warm=...)``)."""
    def primed() -> tuple[float, float, list]:
        if state == "cold":
            time.sleep(COLD_PAUSE)
        else:
            run()
        return run()
    return primed


def fmt_ratio(x: float | None) -> str:
    return "" if x is None else f"{x:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dir", default="/work/benchdata/peer32")
    ap.add_argument("--ext-python", default=DEFAULT_EXT_PYTHON)
    ap.add_argument("--only", nargs="*", help="query names (substrings) to run")
    ap.add_argument("--timed", nargs="*", choices=TARGETS, help="targets timed in the rounds (default: all)")
    ap.add_argument("--state", choices=("warm", "cold"), default="warm",
                    help="what every timed call follows: an untimed call of the same target (warm) or a pause (cold)")
    ap.add_argument("--compiled-kernels", type=int, default=None,
                    help="lance_duck.configure(compiled_kernels=...): 1 numba kernels loaded up front, 0 numpy only "
                         "(default: loaded in the background after WARM_CODES values)")
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    import lance

    import lance_duck
    if a.compiled_kernels is not None:
        from lance_duck.encodings import _compiled
        lance_duck.configure(compiled_kernels=a.compiled_kernels)
        if a.compiled_kernels:
            assert _compiled.load(), "numba is not installed"
    os.makedirs(a.dir, exist_ok=True)
    lp, pp = duckdb_queries.prepare(a.dir, a.rows, "2.2")
    ip = indexed_queries.prepare(a.dir, a.rows)
    ext = open_extension(a.ext_python)
    if ext is None:
        raise SystemExit("the extension is the baseline of every ratio")

    def cons(path: str) -> dict[str, duckdb.DuckDBPyConnection]:
        c = {t: duckdb.connect() for t in ("sql", "ds", "pylance", "parquet")}
        c["ds"].register("T", lance_duck.dataset(path))
        c["pylance"].register("T", lance.dataset(path))
        return c

    tables = [("anchor", lp, duckdb_queries.QUERIES, cons(lp)),
              ("indexed", ip, {**indexed_queries.QUERIES, **VARYING}, cons(ip))]
    load0 = os.getloadavg()
    print(f"compiled kernels: {a.compiled_kernels if a.compiled_kernels is not None else 'default'}")
    print(f"{a.rows} rows per table; median of {a.runs} interleaved rounds after a warm-up; "
          f"load {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}; every timed call {a.state}\n")
    print("| query | ext ms | sql ms | ds ms | pylance ms | parquet ms | sql/ext | ds/ext | pylance/ext | sql/pq "
          "| CPU sql/ext | CPU ds/ext | CPU sql/pq | answers |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for kind, path, queries, c in tables:
        for name, sql in queries.items():
            if a.only and not any(o in name for o in a.only):
                continue
            ids = random.Random(0)

            def texts(to: str, varying: bool, sql: str = sql) -> Text:
                """The query over ``to`` (the table as each target names it); ``varying``: a new id each call."""
                text = sql.replace("from T", f"from {to}")
                if "{n}" not in text:
                    return text
                return (lambda: text.format(n=ids.randrange(a.rows))) if varying else text.format(n=CHECKED_ID)

            def make(varying: bool, warm_ext: bool = False) -> dict[str, Runner]:
                made: dict[str, Runner] = {
                    "ext": timed_ext(ext, texts(f"'{path}'", varying), warm=warm_ext),
                    "sql": timed_sql(c["sql"], texts(f"'{path}'", varying)),
                    "ds": timed(c["ds"], texts("T", varying)),
                    "pylance": timed(c["pylance"], texts("T", varying)),
                }
                if kind == "anchor":
                    made["parquet"] = timed(c["parquet"], texts(f"read_parquet('{pp}')", varying))
                return made
            runners = make(False)
            answers = {t: normal(run()[2]) for t, run in runners.items()}
            wrong = check(name, sql.format(n=CHECKED_ID) if "{n}" in sql else sql, answers, c["pylance"])
            # the extension warms up inside its process (same text) unless each call's text is new
            ext_primes = a.state == "warm" and "{n}" not in sql
            runners = make(True, warm_ext=ext_primes)
            timed_targets = [t for t in runners if not a.timed or t in a.timed]
            times: dict[str, list[tuple[float, float]]] = {t: [] for t in timed_targets}
            states = {t: runners[t] if t == "ext" and ext_primes else in_state(runners[t], a.state)
                      for t in timed_targets}
            for r in range(a.runs):
                k = r % len(timed_targets)       # each round starts one target later (see the module)
                for t in timed_targets[k:] + timed_targets[:k]:
                    times[t].append(states[t]()[:2])
            med = {t: statistics.median(x[0] for x in ts) for t, ts in times.items()}
            cpu = {t: statistics.median(x[1] for x in ts) for t, ts in times.items()}

            def ms(t: str) -> str:
                return f"{med[t] * 1e3:.1f}" if t in med else ""

            def ratio(of: dict[str, float], t: str, base: str) -> float | None:
                return of[t] / max(of[base], 1e-4) if t in of and base in of else None
            verdict = "ok" if not wrong else "WRONG: " + ", ".join(wrong)
            print(f"| {name} | {ms('ext')} | {ms('sql')} | {ms('ds')} | {ms('pylance')} | {ms('parquet')} | "
                  f"{fmt_ratio(ratio(med, 'sql', 'ext'))} | {fmt_ratio(ratio(med, 'ds', 'ext'))} | "
                  f"{fmt_ratio(ratio(med, 'pylance', 'ext'))} | {fmt_ratio(ratio(med, 'sql', 'parquet'))} | "
                  f"{fmt_ratio(ratio(cpu, 'sql', 'ext'))} | {fmt_ratio(ratio(cpu, 'ds', 'ext'))} | "
                  f"{fmt_ratio(ratio(cpu, 'sql', 'parquet'))} | {verdict} |", flush=True)
    ext.close()
    load1 = os.getloadavg()
    print(f"\nload after: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")


if __name__ == "__main__":
    main()
