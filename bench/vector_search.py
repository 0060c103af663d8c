"""Vector search: lance_duck's ``to_table(nearest=...)`` vs pylance's, per query.

    python bench/vector_search.py [--rows 200000] [--dim 128] [--queries 30] [--dir /tmp/ld_vec_bench]

Writes (once, cached in --dir) float32 tables with pylance (four fragments, ``id % 1000 = 3``
deleted) and builds IVF_PQ (--partitions 64, 16 sub-vectors) on one and IVF_HNSW_SQ on another.
Each query (k = 10, random vectors, seeded) runs through both readers in turn (lance_duck,
pylance, lance_duck, ...) after a warm-up; prints the median and p90 wall time per query and
the share of queries whose ids are identical. ``flat`` is ``use_index=False`` (exact, the whole
table read). Then the peak RSS (VmHWM) of a fresh process doing one flat search, and of one that only opened
the table (read-ahead budget: 64 MiB by default); ``--rss-only PATH`` measures just that.
Say the machine load (``uptime``) with the numbers.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import ROOT, write_table  # noqa: E402


def prepare(d: str, n: int, dim: int, kind: str, partitions: int) -> str:
    import lance
    path = os.path.join(d, f"vec_{kind}_{n}_{dim}.lance")
    if not os.path.exists(path):
        os.makedirs(d, exist_ok=True)
        rng = np.random.default_rng(11)
        v = rng.standard_normal((n, dim)).astype(np.float32)
        t = pa.table({"id": np.arange(n), "vec": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), dim)})
        write_table(path, t)
        t0 = time.perf_counter()
        if kind == "ivf_pq":
            lance.dataset(path).create_index("vec", "IVF_PQ", num_partitions=partitions, num_sub_vectors=16)
        else:
            lance.dataset(path).create_index("vec", "IVF_HNSW_SQ", num_partitions=max(1, partitions // 8))
        print(f"built {kind} on {n} x {dim} in {time.perf_counter() - t0:.1f} s", flush=True)
    return path


def time_queries(path: str, qs: np.ndarray, nearest: dict) -> None:
    import lance

    import lance_duck
    ours, theirs = lance_duck.dataset(path), lance.dataset(path)
    t_ours: list[float] = []
    t_theirs: list[float] = []
    same = 0
    for q in qs:
        spec = {"column": "vec", "q": q, "k": 10, **nearest}
        a = ours.to_table(columns=["id"], nearest=spec)            # warm-up of this query
        b = theirs.to_table(columns=["id"], nearest=spec)
        same += a["id"].to_pylist() == b["id"].to_pylist()
        for reader, acc in ((ours, t_ours), (theirs, t_theirs)):
            t0 = time.perf_counter()
            reader.to_table(columns=["id"], nearest=spec)
            acc.append(time.perf_counter() - t0)

    def p90(x: list[float]) -> float:
        return float(np.percentile(x, 90))
    mo, mt = statistics.median(t_ours), statistics.median(t_theirs)
    print(f"  {str(nearest):<34} lance_duck {mo * 1e3:8.2f} ms (p90 {p90(t_ours) * 1e3:8.2f})   "
          f"pylance {mt * 1e3:8.2f} ms (p90 {p90(t_theirs) * 1e3:8.2f})   ratio {mo / mt:5.2f}x   "
          f"same ids {same}/{len(qs)}", flush=True)


_CHILD = """
import sys, numpy as np
sys.path.insert(0, {root!r})
import lance_duck
ds = lance_duck.dataset({path!r})
if {search}:
    ds.to_table(columns=["id"], nearest={{"column": "vec", "q": np.ones({dim}, np.float32), "k": 10,
                                          "use_index": False}})
# VmHWM: this program's peak (ru_maxrss would count the parent's pages shared before exec)
print(next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM")))
"""


def peak_rss_kib(path: str, dim: int, search: bool) -> int:
    code = _CHILD.format(root=ROOT, path=path, dim=dim, search=search)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--queries", type=int, default=30)
    p.add_argument("--partitions", type=int, default=64)
    p.add_argument("--dir", default="/tmp/ld_vec_bench")
    p.add_argument("--rss-only", metavar="PATH", help="only the flat search's peak RSS over this table")
    args = p.parse_args()
    print(f"load: {os.getloadavg()}", flush=True)
    if args.rss_only:
        base, flat = peak_rss_kib(args.rss_only, args.dim, False), peak_rss_kib(args.rss_only, args.dim, True)
        print(f"peak RSS: opening {base / 1024:.0f} MiB, opening + one flat search {flat / 1024:.0f} MiB")
        return
    qs = np.random.default_rng(5).standard_normal((args.queries, args.dim)).astype(np.float32)
    pq = prepare(args.dir, args.rows, args.dim, "ivf_pq", args.partitions)
    print(f"IVF_PQ({args.partitions}/16), {args.rows} x {args.dim}, k=10, {args.queries} queries")
    for nearest in ({"nprobes": 8}, {"nprobes": 8, "refine_factor": 5}, {"use_index": False}):
        time_queries(pq, qs, nearest)
    hnsw = prepare(args.dir, args.rows, args.dim, "hnsw_sq", args.partitions)
    print(f"IVF_HNSW_SQ({max(1, args.partitions // 8)}), {args.rows} x {args.dim}")
    for nearest in ({"nprobes": 1}, {"nprobes": 2, "ef": 100}):
        time_queries(hnsw, qs, nearest)
    base, flat = peak_rss_kib(pq, args.dim, False), peak_rss_kib(pq, args.dim, True)
    table_mib = args.rows * args.dim * 4 / 2**20
    print(f"peak RSS: opening {base / 1024:.0f} MiB, opening + one flat search {flat / 1024:.0f} MiB "
          f"(+{(flat - base) / 1024:.1f} MiB; vectors: {table_mib:.0f} MiB; target: budget 64 MiB + 64 MiB)")
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
