"""Bytes read from disk by a cold point lookup and a cold full scan (local files, page cache evicted).

    python bench/cold_reads.py [--rows 1000000] [--dir /tmp/ld_bench] [--reader lance_duck|pylance] [--runs 3]

Reuses bench/indexed_queries.py's table (pylance-written, four fragments, a delete, BTREE on ``id``).
Before each query every file of the table is evicted from the page cache
(``posix_fadvise(POSIX_FADV_DONTNEED)``, no root needed); the bytes the process read from the block
device are ``read_bytes`` of ``/proc/self/io`` before and after (memory-map faults and the kernel's
read-ahead included). Each run is a fresh process (a process's own live memory maps keep their pages
in the cache), timed from the query's start (imports done before).
Linux only. Run once per reader: both readers in one process would share the counter.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from indexed_queries import prepare  # noqa: E402

QUERIES = {
    "point lookup": "select * from T where id = 612345",
    "full scan": "select sum(amount), count(note), max(category), max(id) from T",
}


def evict(root: str) -> None:
    for d, _, names in os.walk(root):
        for n in names:
            fd = os.open(os.path.join(d, n), os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def read_bytes() -> int:
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    raise RuntimeError("no read_bytes in /proc/self/io")


def run(reader: str, path: str, sql: str) -> tuple[int, float, list]:
    import duckdb
    con = duckdb.connect()
    evict(path)
    before, t = read_bytes(), time.perf_counter()
    if reader == "lance_duck":
        import lance_duck
        lance_duck.clear_caches()
        T = lance_duck.dataset(path)  # noqa: F841  (DuckDB finds it by name)
    else:
        import lance
        T = lance.dataset(path)  # noqa: F841
    rows = con.execute(sql).fetchall()
    return read_bytes() - before, time.perf_counter() - t, rows


def child(reader: str, path: str, name: str) -> None:
    import duckdb  # noqa: F401
    import pyarrow.dataset  # noqa: F401
    if reader == "lance_duck":
        import lance_duck.scan.dataset  # noqa: F401
    else:
        import lance  # noqa: F401
    b, t, rows = run(reader, path, QUERIES[name])
    print(json.dumps([b, t, repr(rows)]))


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        return child(*sys.argv[2:5])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dir", default="/tmp/ld_bench")
    ap.add_argument("--reader", choices=("lance_duck", "pylance"), default="lance_duck")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    path = prepare(args.dir, args.rows)
    print(f"{args.reader}  table {path}  load {os.getloadavg()[0]:.2f}")
    for name in QUERIES:
        got = [json.loads(subprocess.run([sys.executable, __file__, "--child", args.reader, path, name],
                                         check=True, capture_output=True, text=True).stdout.splitlines()[-1])
               for _ in range(args.runs)]
        b = statistics.median(g[0] for g in got)
        t = statistics.median(g[1] for g in got)
        each = " ".join(f"{g[0] // 1024}" for g in got)
        print(f"  {name:14s} read from disk {b / 1024:10.0f} KB   {t * 1000:8.1f} ms   (each run KB: {each})   rows {got[0][2][:70]}")


if __name__ == "__main__":
    main()
