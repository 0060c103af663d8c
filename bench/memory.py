"""Peak RSS of a streaming DuckDB aggregate: lance_duck vs pylance, split into anonymous and file-backed.

    python bench/memory.py [--rows 1500000,15000000] [--budget-mib 16] [--dir /tmp/ld_bench]

Writes (once, cached in --dir) the table of ``bench/duckdb_queries.py`` (8 columns, four fragments,
a delete) for each row count. Each measurement runs in a fresh process: open the table, then run
the "full aggregate" query of duckdb_queries.py in DuckDB over the dataset's record batch stream
(lance_duck: ``scanner(readahead_bytes=budget).to_reader()``; pylance: ``scanner().to_reader()``),
sampling ``/proc/self/status`` every 2 ms. Printed: peak growth above the value just before the
query of VmRSS (total), RssAnon and RssFile (file-backed pages mapped by the process: lance_duck's
memory-mapped data files, pylance's too), in MiB, and the query time.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from duckdb_queries import QUERIES, make_table  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import sys, threading, time
sys.path.insert(0, ROOT)
import duckdb

def status():
    out = {}
    for line in open('/proc/self/status'):
        k, _, v = line.partition(':')
        if k in ('VmRSS', 'RssAnon', 'RssFile'):
            out[k] = int(v.split()[0]) * 1024
    return out

if SOURCE == 'lance_duck':
    import lance_duck
    ds = lance_duck.dataset(PATH)
    make = lambda: ds.scanner(readahead_bytes=BUDGET << 20).to_reader()
else:
    import lance
    ds = lance.dataset(PATH)
    make = lambda: ds.scanner().to_reader()
con = duckdb.connect()
con.sql("select 1").fetchall()
base = status()
peak = dict(base)
stop = []
def sample():
    while not stop:
        for k, v in status().items():
            peak[k] = max(peak[k], v)
        time.sleep(0.002)
th = threading.Thread(target=sample)
th.start()
t0 = time.perf_counter()
T = make()
res = con.sql(SQL).fetchall()
dt = time.perf_counter() - t0
stop.append(1)
th.join()
res = [tuple(round(x, 9) if isinstance(x, float) else x for x in r) for r in res]
print(repr(res))
print(dt, *(peak[k] - base[k] for k in ('VmRSS', 'RssAnon', 'RssFile')))
"""


def prepare(d: str, n: int) -> str:
    import lance
    path = os.path.join(d, f"t_{n}_2.2.lance")
    if not os.path.exists(path):
        ds = lance.write_dataset(make_table(n), path, max_rows_per_file=(n + 3) // 4, data_storage_version="2.2")
        ds.delete("id % 1000 = 3")
    return path


def measure(source: str, path: str, budget: int) -> tuple[str, float, int, int, int]:
    code = (f"ROOT = {ROOT!r}\nSOURCE = {source!r}\nPATH = {path!r}\nBUDGET = {budget}\n"
            f"SQL = {QUERIES['full aggregate']!r}\n" + CHILD)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    res, nums = out.strip().splitlines()[-2:]
    dt, total, anon, file = nums.split()
    return res, float(dt), int(total), int(anon), int(file)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="1500000,15000000")
    ap.add_argument("--budget-mib", type=int, default=16)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--dir", default="/tmp/ld_bench")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    mib = 2 ** 20
    print(f"streaming DuckDB full aggregate, lance_duck read-ahead budget {a.budget_mib} MiB; "
          f"peak growth in MiB (total / anon / file), query seconds\n")
    print("| rows | on disk MiB | lance_duck total | anon | file | s | pylance total | anon | file | s | equal |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in (int(x) for x in a.rows.split(",")):
        path = prepare(a.dir, n)
        disk = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)
        for _ in range(a.runs):
            ld = measure("lance_duck", path, a.budget_mib)
            pl = measure("pylance", path, a.budget_mib)
            print(f"| {n:,} | {disk / mib:.0f} | {ld[2] / mib:.0f} | {ld[3] / mib:.0f} | {ld[4] / mib:.0f} | "
                  f"{ld[1]:.2f} | {pl[2] / mib:.0f} | {pl[3] / mib:.0f} | {pl[4] / mib:.0f} | {pl[1]:.2f} | "
                  f"{ld[0] == pl[0]} |", flush=True)


if __name__ == "__main__":
    main()
