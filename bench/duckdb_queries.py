"""DuckDB over lance_duck vs over pylance's dataset vs over Parquet (same rows).

    python bench/duckdb_queries.py [--rows 4000000] [--runs 5] [--storage 2.2] [--dir /tmp/ld_bench]
                                   [--budget-mib 24]

Writes (once, cached in --dir) a table with pylance: ints, floats, nullable floats, low-cardinality
and free-text strings, bools, timestamps; four fragments; a delete applied. The same live rows
go to a Parquet file. Prints the median time of each query per source and the ratio
lance_duck / pylance, then the memory of streaming full scans through lance_duck with a read-ahead
budget about a tenth of the decoded table (Arrow pool peak and anonymous RSS, three scans in a row).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import interleaved, run_once, write_table  # noqa: E402

QUERIES = {
    "count(*)": "select count(*) from T",
    "full aggregate": "select count(*), sum(i), avg(f), avg(fn), count(cat), max(txt), sum(b::int), max(ts) from T",
    "one-column sum": "select sum(i) from T",
    "selective id range": "select count(*), sum(f) from T where id between 1000000 and 1010000",
    "string equality": "select count(*) from T where cat = 'cat_7'",
    "group by": "select cat, count(*), avg(f) from T group by cat order by cat",
    "LIMIT 10": "select * from T limit 10",
}


def make_table(n: int) -> pa.Table:
    rng = np.random.default_rng(42)
    fn = rng.random(n)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])
    txt = pa.compute.binary_join_element_wise(
        pa.array(words[rng.integers(0, 8, n)]), pa.array(rng.integers(0, 1_000_000, n).astype(str)), " ")
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "i": pa.array(rng.integers(-1000, 1000, n, dtype=np.int64)),
        "f": pa.array(rng.random(n)),
        "fn": pa.array(fn, mask=rng.random(n) < 0.2),
        "cat": pa.array(np.char.add("cat_", rng.integers(0, 20, n).astype(str))),
        "txt": txt,
        "b": pa.array(rng.random(n) < 0.5),
        "ts": pa.array(np.datetime64("2024-01-01") + rng.integers(0, 10**12, n).astype("timedelta64[us]")),
    })


def prepare(d: str, n: int, storage: str) -> tuple[str, str]:
    import lance
    lp = os.path.join(d, f"t_{n}_{storage}.lance")
    pp = os.path.join(d, f"t_{n}.parquet")
    if not os.path.exists(lp):
        write_table(lp, make_table(n), data_storage_version=storage)
    if not os.path.exists(pp):
        pq.write_table(lance.dataset(lp).to_table(), pp)
    return lp, pp


def peak_memory(lp: str, budget_mib: int) -> None:
    """Memory of streaming full scans (every column) in a fresh process, with a read-ahead
    budget of ``budget_mib``: three scans in a row, each sampled for the peak of the Arrow
    memory pool (the decoded batches: read-ahead plus the batch being consumed) and of the
    anonymous RSS (adds the decode threads' numpy temporaries and what the allocators keep)."""
    code = f"""
import threading, time, sys
sys.path.insert(0, {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))!r})
import pyarrow as pa
import lance_duck.scan as s
def anon():
    for line in open('/proc/self/status'):
        if line.startswith('RssAnon'):
            return int(line.split()[1]) * 1024
ds = s.dataset({lp!r})
start = anon()
for _ in range(3):
    peak = [0, start]; stop = []
    def sample():
        while not stop:
            peak[0] = max(peak[0], pa.total_allocated_bytes()); peak[1] = max(peak[1], anon()); time.sleep(0.002)
    th = threading.Thread(target=sample); th.start()
    sc = ds.scanner(readahead_bytes={budget_mib} << 20)
    rows = 0; nbytes = 0
    for b in sc.to_batches():
        rows += b.num_rows; nbytes += b.nbytes
    stop.append(1); th.join()
    print(rows, nbytes, sc.stats.peak_bytes, peak[0], peak[1] - start)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    scans = [list(map(int, line.split())) for line in out.strip().splitlines()]
    rows, nbytes = scans[0][:2]
    mib = 2 ** 20
    print(f"\nstreaming full scan: {rows} rows, {nbytes / mib:.0f} MiB decoded = {nbytes / mib / budget_mib:.0f}x "
          f"the read-ahead budget of {budget_mib} MiB; three scans in one process:")
    for k, (_, _, held, pool, rss) in enumerate(scans, 1):
        print(f"  scan {k}: read-ahead held at most {held / mib:.0f} MiB; Arrow pool peak {pool / mib:.0f} MiB; "
              f"anon RSS above process start {rss / mib:.0f} MiB")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--storage", default="2.2")
    ap.add_argument("--dir", default="/tmp/ld_bench")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--budget-mib", type=int, default=24, help="read-ahead budget of the memory run")
    ap.add_argument("--compare-kernels", action="store_true",
                    help="also time lance_duck with its compiled kernels (numba, loaded up front) beside the numpy ones")
    ap.add_argument("--only", default=None, help="query names separated by ';'")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    lp, pp = prepare(args.dir, args.rows, args.storage)
    import lance
    import lance_duck.scan as lds
    sources = {
        "lance_duck": lambda: lds.dataset(lp),
        "pylance": lambda: lance.dataset(lp),
        "parquet": lambda: f"read_parquet('{pp}')",
    }
    if args.compare_kernels:
        import lance_duck
        from lance_duck.encodings import _compiled
        lance_duck.configure(compiled_kernels=1)
        assert _compiled.load(), "numba is not installed"
        sources["ld compiled"] = sources["lance_duck"]
    print(f"{args.rows} rows, storage {args.storage}, median of {args.runs} interleaved runs after a warm-up (seconds); "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print(f"{'query':22s} {'lance_duck':>11s} {'pylance':>9s} {'parquet':>9s} {'ld/pylance':>11s}"
          + (f" {'ld compiled':>11s} {'compiled/pylance':>16s}" if args.compare_kernels else ""))
    for name, sql in QUERIES.items():
        if args.only and name not in args.only.split(";"):
            continue
        runners = {}
        for src, make in sources.items():
            con = duckdb.connect()
            if args.threads:
                con.execute(f"set threads={args.threads}")
            obj = make()
            if isinstance(obj, str):
                q = sql.replace("from T", f"from {obj}")
            else:
                con.register("T", obj)
                q = sql
            runners[src] = (lambda c, q: lambda: run_once(c, q)[:2])(con, q)
            if args.compare_kernels:   # the kernels of each lance_duck source, set before its runs
                runners[src] = (lambda run, on: lambda: (lance_duck.configure(compiled_kernels=on), run())[1])(
                    runners[src], int(src == "ld compiled"))
        # runs interleaved source by source (after a warm-up: first open, page cache)
        both = interleaved(runners, args.runs)
        res = {src: wall for src, (wall, _) in both.items()}
        print(f"{name:22s} {res['lance_duck']:11.3f} {res['pylance']:9.3f} {res['parquet']:9.3f} "
              f"{res['lance_duck'] / res['pylance']:11.2f}"
              + (f" {res['ld compiled']:11.3f} {res['ld compiled'] / res['pylance']:16.2f}  CPU numpy / compiled / "
                 f"pylance {both['lance_duck'][1]:.3f} / {both['ld compiled'][1]:.3f} / {both['pylance'][1]:.3f}"
                 if args.compare_kernels else ""),
              flush=True)
    if not args.only:
        peak_memory(lp, args.budget_mib)


if __name__ == "__main__":
    main()
