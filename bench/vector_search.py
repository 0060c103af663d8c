"""Vector search: lance_duck's ``to_table(nearest=...)`` vs pylance's and DuckDB's Lance extension's
``lance_vector_search``, per query.

    python bench/vector_search.py [--rows 200000] [--dim 128] [--queries 50] [--dir /tmp/ld_vec_bench]
                                  [--ext-python /tmp/extvenv/bin/python] [--no-rss] [--flat-queries N]
                                  [--hnsw-rows N] [--partitions 64] [--rq-rows N] [--only-rq]

Writes (once, cached in --dir) float32 tables with pylance (four fragments, ``id % 1000 = 3``
deleted) and builds IVF_PQ (--partitions 64, 16 sub-vectors) on one and IVF_HNSW_SQ on another.
Each query (k = 10, random vectors, seeded) runs through every reader in turn (lance_duck,
pylance, extension, lance_duck, ...) after a warm-up of each; prints the median and p90 wall time per
query and how many queries' ids differ from pylance's (each printed as WRONG). The extension runs in
a subprocess under ``--ext-python`` (``bench/ext_runner.py``; its time is measured inside it, SQL
execute + fetch); it has no ``ef``, so the ``ef`` row compares lance_duck and pylance only. ``flat`` is ``use_index=False`` (exact, the whole
table read). Then the peak RSS (VmHWM) of a fresh process doing one flat search, and of one that only opened
the table (read-ahead budget: 64 MiB by default); ``--rss-only PATH`` measures just that. ``--flat-queries``
runs the flat row on the first N queries only (a flat search reads the whole table); ``--hnsw-rows``
builds the IVF_HNSW_SQ table at another size (default ``--rows``; its build is the slow one).
``--rq-rows N`` also builds an IVF_RQ table (--partitions // 2 partitions, 1-bit codes) of N rows and times
it at nprobes 1 / 4 / 8 against pylance (the extension 1.5.5 misreads pylance 14.0.2's IVF_RQ files);
``--only-rq`` runs just that table; ``--only-hnsw`` just the IVF_HNSW_SQ one. ``--kernels numpy`` walks HNSW
graphs with numpy only, ``--kernels compiled`` with the compiled walk (numba) from the first query. ``--no-warm`` first times the HNSW rows
on other queries without the per-query warm-up (each query runs once: partitions are read as they are
first probed, and the index cache holds what it can), then the warmed rows.
Say the machine load (``uptime``) with the numbers.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import DEFAULT_EXT_PYTHON, ROOT, Extension, open_extension, quantiles_ms, write_table  # noqa: E402


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
        elif kind == "ivf_rq":
            lance.dataset(path).create_index("vec", "IVF_RQ", num_partitions=partitions)
        else:
            lance.dataset(path).create_index("vec", "IVF_HNSW_SQ", num_partitions=max(1, partitions // 8))
        print(f"built {kind} on {n} x {dim} in {time.perf_counter() - t0:.1f} s", flush=True)
    return path


def ext_sql(path: str, q: np.ndarray, nearest: dict) -> str | None:
    """The extension's query for the same search, or None when it has no such parameter (``ef``)."""
    if "ef" in nearest:
        return None
    args = ["k => 10"]
    if "nprobes" in nearest:
        args.append(f"nprobs => {nearest['nprobes']}")
    if "refine_factor" in nearest:
        args.append(f"refine_factor => {nearest['refine_factor']}")
    if nearest.get("use_index") is False:
        args.append("use_index => false")
    vec = ", ".join(repr(float(x)) for x in q)
    return (f"SELECT id FROM lance_vector_search('{path}', 'vec', [{vec}]::FLOAT[{len(q)}], {', '.join(args)}) "
            f"ORDER BY _distance, id")


def time_queries(path: str, qs: np.ndarray, nearest: dict, ext: Extension | None, warm: bool = True) -> None:
    """Per query: a warm-up of each reader, then one timed run of each in turn (lance_duck, pylance,
    extension); ids compared with pylance's (WRONG printed for each query that differs). ``warm=False``:
    no per-query warm-up (each query runs once; one untimed query first opens the table in each reader)."""
    import lance

    import lance_duck
    if not warm:        # as pylance's new dataset: nothing of the index in memory
        lance_duck.clear_caches()
    ours, theirs = lance_duck.dataset(path), lance.dataset(path)
    if not warm:
        first = np.random.default_rng(99).standard_normal(qs.shape[1]).astype(np.float32)
        for reader in (ours, theirs):
            reader.to_table(columns=["id"], nearest={"column": "vec", "q": first, "k": 10, **nearest})
    times: dict[str, list[float]] = {"lance_duck": [], "pylance": [], "extension": []}
    wrong = {"lance_duck": 0, "extension": 0}
    use_ext = ext is not None and ext_sql(path, qs[0], nearest) is not None
    for i, q in enumerate(qs):
        spec = {"column": "vec", "q": q, "k": 10, **nearest}
        for reader in (ours, theirs) if warm else ():
            reader.to_table(columns=["id"], nearest=spec)             # warm-up of this query
        t0 = time.perf_counter()
        a = ours.to_table(columns=["id"], nearest=spec)["id"].to_pylist()
        t1 = time.perf_counter()
        b = theirs.to_table(columns=["id"], nearest=spec)["id"].to_pylist()
        t2 = time.perf_counter()
        times["lance_duck"].append(t1 - t0)
        times["pylance"].append(t2 - t1)
        answers = {"lance_duck": a}
        if use_ext:
            assert ext is not None
            t, c = ext.run(ext_sql(path, q, nearest) or "")
            times["extension"].append(t)
            answers["extension"] = c
        for name, ids in answers.items():
            if ids != b:
                wrong[name] += 1
                print(f"    WRONG {name} query {i}: {ids} vs pylance {b}", flush=True)
    mo, po = quantiles_ms(times["lance_duck"])
    mt, pt = quantiles_ms(times["pylance"])
    line = (f"  {str(nearest) + ('' if warm else ' unwarmed'):<34} lance_duck {mo:7.2f} ms (p90 {po:7.2f})  pylance {mt:7.2f} (p90 {pt:7.2f})  "
            f"ld/py {mo / mt:5.2f}x")
    if use_ext:
        me, pe = quantiles_ms(times["extension"])
        line += f"  extension {me:7.2f} (p90 {pe:7.2f})  ld/ext {mo / me:5.2f}x"
    else:
        line += "  extension n/a"
    print(line + f"  wrong ids: lance_duck {wrong['lance_duck']}"
          + (f", extension {wrong['extension']}" if use_ext else "") + f" of {len(qs)}", flush=True)


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
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--partitions", type=int, default=64)
    p.add_argument("--dir", default="/tmp/ld_vec_bench")
    p.add_argument("--ext-python", default=DEFAULT_EXT_PYTHON,
                   help="a Python with duckdb==1.5.5 and duckdb-extension-lance==1.5.5 ('' to skip)")
    p.add_argument("--no-rss", action="store_true", help="skip the peak-RSS measurement")
    p.add_argument("--flat-queries", type=int, default=0, help="queries of the flat row (default: --queries)")
    p.add_argument("--hnsw-rows", type=int, default=0, help="rows of the IVF_HNSW_SQ table (default: --rows)")
    p.add_argument("--rss-only", metavar="PATH", help="only the flat search's peak RSS over this table")
    p.add_argument("--rq-rows", type=int, default=0, help="also time an IVF_RQ table of this many rows")
    p.add_argument("--only-rq", action="store_true", help="time only the IVF_RQ table (needs --rq-rows)")
    p.add_argument("--only-hnsw", action="store_true", help="time only the IVF_HNSW_SQ table")
    p.add_argument("--kernels", choices=["default", "numpy", "compiled"], default="default",
                   help="numpy: compiled_kernels=0; compiled: the compiled HNSW walk loaded before timing "
                        "(numba); default: the process's own choice (compiled once loaded in the background)")
    p.add_argument("--no-warm", action="store_true",
                   help="also time the HNSW rows without a per-query warm-up (each query run once)")
    args = p.parse_args()
    print(f"load: {os.getloadavg()}", flush=True)
    if args.rss_only:
        base, flat = peak_rss_kib(args.rss_only, args.dim, False), peak_rss_kib(args.rss_only, args.dim, True)
        print(f"peak RSS: opening {base / 1024:.0f} MiB, opening + one flat search {flat / 1024:.0f} MiB")
        return
    import lance_duck
    if args.kernels == "numpy":
        lance_duck.configure(compiled_kernels=0)
    elif args.kernels == "compiled":
        from lance_duck.index.vector import hnsw
        print(f"compiled HNSW walk: {'loaded' if hnsw.compiled_walk(load=True) else 'NOT available'}")
    ext = open_extension(args.ext_python)
    qs = np.random.default_rng(5).standard_normal((args.queries, args.dim)).astype(np.float32)
    if args.rq_rows:
        rq_parts = max(1, args.partitions // 2)
        rq = prepare(args.dir, args.rq_rows, args.dim, "ivf_rq", rq_parts)
        # the extension (1.5.5) returns other ids than pylance on pylance 14.0.2's IVF_RQ files and then
        # panics ("assertion failed: step != 0" in compute_single_rq_distance): it is left out of this row
        print(f"IVF_RQ({rq_parts}, 1 bit), {args.rq_rows} x {args.dim}, k=10, {args.queries} queries "
              "(extension n/a: wrong ids, then a panic, on these files)")
        for nearest in ({"nprobes": 1}, {"nprobes": 4}, {"nprobes": 8}):
            time_queries(rq, qs, nearest, None)
        if args.only_rq:
            if ext is not None:
                ext.close()
            print(f"load: {os.getloadavg()}")
            return
    pq = None
    if not args.only_hnsw:
        pq = prepare(args.dir, args.rows, args.dim, "ivf_pq", args.partitions)
        print(f"IVF_PQ({args.partitions}/16), {args.rows} x {args.dim}, k=10, {args.queries} queries")
        for nearest in ({"nprobes": 8}, {"nprobes": 8, "refine_factor": 5}, {"use_index": False}):
            flat = nearest.get("use_index") is False
            time_queries(pq, qs[:args.flat_queries] if flat and args.flat_queries else qs, nearest, ext)
    hnsw_rows = args.hnsw_rows or args.rows
    hnsw = prepare(args.dir, hnsw_rows, args.dim, "hnsw_sq", args.partitions)
    print(f"IVF_HNSW_SQ({max(1, args.partitions // 8)}), {hnsw_rows} x {args.dim}")
    if args.no_warm:    # first (nothing of the index read yet), on other queries than the warmed rows'
        cold = np.random.default_rng(6).standard_normal((args.queries, args.dim)).astype(np.float32)
        for nearest in ({"nprobes": 1}, {"nprobes": 2}, {"nprobes": 2, "ef": 100}):
            time_queries(hnsw, cold, nearest, ext, warm=False)
    for nearest in ({"nprobes": 1}, {"nprobes": 2}, {"nprobes": 2, "ef": 100}):
        time_queries(hnsw, qs, nearest, ext)
    if ext is not None:
        ext.close()
    if args.no_rss or args.only_hnsw or pq is None:
        print(f"load: {os.getloadavg()}")
        return
    base, flat = peak_rss_kib(pq, args.dim, False), peak_rss_kib(pq, args.dim, True)
    table_mib = args.rows * args.dim * 4 / 2**20
    print(f"peak RSS: opening {base / 1024:.0f} MiB, opening + one flat search {flat / 1024:.0f} MiB "
          f"(+{(flat - base) / 1024:.1f} MiB; vectors: {table_mib:.0f} MiB; target: budget 64 MiB + 64 MiB)")
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
