"""Decode throughput: lance_duck versus pylance on the same pylance-written files.

For each column kind a single-column dataset is written with pylance (2.2 by default, plus a few
2.0 and 2.3 columns), then read back in one process by lance_duck's file readers
(``open_data_file(io, ref).read_field(field)`` for every data file of the pinned snapshot, the
decode path without scan planning) and by ``lance.dataset(uri).to_table(columns=[c])``. Throughput is Arrow output bytes (pylance's
result ``nbytes``) per second, median of ``--runs`` timed runs after one warm-up run each; the
ratio is lance_duck / pylance. Both readers' runs are interleaved. Every lance_duck result is checked
for equality with pylance's.

    /work/venv/bin/python bench/decode.py            # ~2-4M-row columns
    /work/venv/bin/python bench/decode.py --quick    # small sizes, seconds
    /work/venv/bin/python bench/decode.py --kinds fsst_strings,list_int32 --runs 5
    /work/venv/bin/python bench/decode.py --version 2.3 --runs 5   # the 2.3 kinds only
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _strings_hex(rng, n):
    vals = rng.integers(0, 1 << 48, n)
    widths = rng.integers(5, 13, n)
    return pa.array([f"{v:012x}"[:w] for v, w in zip(vals.tolist(), widths.tolist())])


def _list_int32(rng, n):
    lens = rng.integers(0, 9, n)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    items = pa.array(rng.integers(0, 1 << 16, int(offsets[-1])).astype(np.int32),
                     mask=rng.random(int(offsets[-1])) < 0.05)
    null_rows = pa.array(rng.random(n) < 0.05)
    return pa.ListArray.from_arrays(pa.array(offsets), items, mask=null_rows)


def _list_strings(rng, n):
    """list<string>: 0-8 short strings, 5 % null items and null lists."""
    k = 9 * n
    words = np.array([f"w{i:03d}" for i in range(1000)])[rng.integers(0, 1000, k)]
    items = pa.array(words, mask=rng.random(k) < 0.05)
    return _lists_of(rng, n, items)


def _list_structs(rng, n):
    """list<struct<int32?, double>?>: 0-8 structs, 5 % null structs / ints / lists."""
    k = 9 * n
    a = pa.array(rng.integers(0, 1 << 16, k).astype(np.int32), mask=rng.random(k) < 0.05)
    items = pa.StructArray.from_arrays([a, pa.array(rng.random(k))], names=["a", "b"],
                                       mask=pa.array(rng.random(k) < 0.05))
    return _lists_of(rng, n, items)


def _nested_lists(rng, n):
    """list<list<int32>>: 0-3 lists of 0-4 items, 5 % nulls at every level."""
    inner = _lists_of(rng, 3 * n, pa.array(rng.integers(0, 1 << 16, 12 * n).astype(np.int32),
                                           mask=rng.random(12 * n) < 0.05), 5)
    return _lists_of(rng, n, inner, 4)


def _lists_of(rng, n, items, max_len=9):
    if isinstance(items, pa.ChunkedArray):   # (pa.array of a large numpy str array is chunked)
        items = items.combine_chunks()
    lens = rng.integers(0, max_len, n)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), items.slice(0, int(offsets[-1])),
                                    mask=pa.array(rng.random(n) < 0.05))


def _struct(rng, n):
    a = pa.array(rng.integers(0, 1 << 20, n).astype(np.int32), mask=rng.random(n) < 0.1)
    b = pa.array(rng.random(n))
    return pa.StructArray.from_arrays([a, b], names=["a", "b"], mask=pa.array(rng.random(n) < 0.05))


def _embeddings(rng, n):
    return pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 128).astype(np.float32)), 128)


def _sparse_embeddings(rng, n):
    """Vectors with 70 % null rows (a 2.3 sparse page over zipped values)."""
    return pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 128).astype(np.float32)), 128,
                                             mask=pa.array(rng.random(n) < 0.7))


def _long_strings(rng, n, null_p=0.0):
    """Strings of 150-450 characters (full-zip values), optionally nullable."""
    words = np.array([f"w{i:03d}" for i in range(1000)])
    lens = rng.integers(40, 110, n)
    flat = words[rng.integers(0, 1000, int(lens.sum()))]
    out, at = [], 0
    for k in lens.tolist():
        out.append(" ".join(flat[at:at + k].tolist()))
        at += k
    return pa.array(out, mask=rng.random(n) < null_p if null_p else None)


def _large_binary(rng, n):
    """8-24 KiB binaries (full-zip values with 64-bit lengths)."""
    return pa.array([rng.bytes(int(k)) for k in rng.integers(8 << 10, 24 << 10, n)], pa.large_binary())


# kind -> (row-count factor, builder, data_storage_version)
KINDS = {
    "plain_ints": (1, lambda r, n: pa.array(r.integers(-(1 << 62), 1 << 62, n)), "2.2"),
    "bitpacked_ints": (1, lambda r, n: pa.array(r.integers(0, 1 << 20, n)), "2.2"),
    "floats": (1, lambda r, n: pa.array(r.random(n)), "2.2"),
    # an increasing id: chunks of a page packed at different widths (mixed-width pages)
    "sorted_ints": (1, lambda r, n: pa.array(np.arange(n, dtype=np.int64)), "2.2"),
    "plain_ints_2.1": (1, lambda r, n: pa.array(r.integers(-(1 << 62), 1 << 62, n)), "2.1"),
    "bitpacked_ints_2.1": (1, lambda r, n: pa.array(r.integers(0, 1 << 20, n)), "2.1"),
    "sorted_ints_2.1": (1, lambda r, n: pa.array(np.arange(n, dtype=np.int64)), "2.1"),
    "floats_2.1": (1, lambda r, n: pa.array(r.random(n)), "2.1"),
    "dict_strings": (1, lambda r, n: pa.array(np.array([f"category-{i:02d}" for i in range(10)])[r.integers(0, 10, n)]),
                     "2.2"),
    "fsst_strings": (1, _strings_hex, "2.2"),
    "list_int32": (1 / 3, _list_int32, "2.2"),
    "struct": (1, _struct, "2.2"),
    "embeddings": (1 / 16, _embeddings, "2.2"),
    "nullable_ints": (1, lambda r, n: pa.array(r.integers(0, 1 << 30, n).astype(np.int32), mask=r.random(n) < 0.1),
                      "2.2"),
    "plain_ints_2.3": (1, lambda r, n: pa.array(r.integers(-(1 << 62), 1 << 62, n)), "2.3"),
    "bitpacked_ints_2.3": (1, lambda r, n: pa.array(r.integers(0, 1 << 20, n)), "2.3"),
    "dict_strings_2.3": (1, lambda r, n: pa.array(np.array([f"category-{i:02d}" for i in range(10)])
                                                  [r.integers(0, 10, n)]), "2.3"),
    "fsst_strings_2.3": (1, _strings_hex, "2.3"),
    "binary_2.3": (1 / 4, lambda r, n: pa.array([r.bytes(int(k)) for k in r.integers(0, 40, n)]), "2.3"),
    "nullable_ints_2.3": (1, lambda r, n: pa.array(r.integers(0, 1 << 30, n).astype(np.int32),
                                                   mask=r.random(n) < 0.1), "2.3"),
    "sparse_ints_2.3": (1, lambda r, n: pa.array(r.integers(0, 1 << 30, n).astype(np.int32),
                                                 mask=r.random(n) < 0.8), "2.3"),
    "floats_2.3": (1, lambda r, n: pa.array(r.random(n)), "2.3"),
    "list_int32_2.3": (1 / 3, _list_int32, "2.3"),
    "list_strings_2.3": (1 / 3, _list_strings, "2.3"),
    "list_structs_2.3": (1 / 3, _list_structs, "2.3"),
    "nested_lists_2.3": (1 / 6, _nested_lists, "2.3"),
    "list_strings": (1 / 3, _list_strings, "2.2"),
    "list_structs": (1 / 3, _list_structs, "2.2"),
    "struct_2.3": (1, _struct, "2.3"),
    "embeddings_2.3": (1 / 16, _embeddings, "2.3"),
    "sparse_embeddings_2.3": (1 / 16, _sparse_embeddings, "2.3"),
    "long_strings_2.3": (1 / 40, _long_strings, "2.3"),
    "long_strings_null_2.3": (1 / 40, lambda r, n: _long_strings(r, n, 0.3), "2.3"),
    "large_binary_2.3": (1 / 1500, _large_binary, "2.3"),
    "long_strings": (1 / 40, _long_strings, "2.2"),
    "long_strings_null": (1 / 40, lambda r, n: _long_strings(r, n, 0.3), "2.2"),
    "plain_ints_2.0": (1, lambda r, n: pa.array(r.integers(-(1 << 62), 1 << 62, n)), "2.0"),
    "nullable_ints_2.0": (1, lambda r, n: pa.array(r.integers(0, 1 << 30, n).astype(np.int32),
                                                   mask=r.random(n) < 0.1), "2.0"),
    "strings_2.0": (1, _strings_hex, "2.0"),
    "list_int32_2.0": (1 / 3, _list_int32, "2.0"),
}


def write(root: Path, kind: str, rows: int) -> str:
    import lance
    factor, build, version = KINDS[kind]
    n = max(1, int(rows * factor))
    uri = str(root / f"{kind}_{n}.lance")
    if os.path.isdir(uri):
        return uri
    col = build(np.random.default_rng(abs(hash(kind)) % (1 << 32)), n)
    table = pa.table({"c": col})
    batches = table.to_batches(max_chunksize=65536)  # many batches -> realistic multi-page columns
    reader = pa.RecordBatchReader.from_batches(table.schema, iter(batches))
    lance.write_dataset(reader, uri, data_storage_version=version)
    return uri


def lance_duck_reader(uri: str, column: str):
    """A callable decoding ``column`` of every fragment with lance_duck's file readers."""
    from lance_duck.file import open_data_file
    from lance_duck.table.snapshot import open_snapshot

    snap = open_snapshot(uri)
    field = snap.schema.field(column)
    refs = [f.files[0] for f in snap.fragments]

    def read() -> pa.Table:
        chunks = [open_data_file(snap.io, ref).read_field(field) for ref in refs]
        return pa.table({column: pa.chunked_array(chunks, field.arrow_type)})
    return read


def timed(fns: list, runs: int) -> list[tuple[float, float, object]]:
    """Median wall time, median process CPU time and last result of each callable; runs
    interleaved (a, b, a, b, ...) so that a loaded, shared machine slows both readers alike.
    CPU time (all threads) is the steadier measure when other jobs share the cores."""
    results = [fn() for fn in fns]   # warm-up (page cache, metadata)
    times: list[list[float]] = [[] for _ in fns]
    cpus: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for i, fn in enumerate(fns):
            t0, c0 = time.perf_counter(), time.process_time()
            results[i] = fn()
            times[i].append(time.perf_counter() - t0)
            cpus[i].append(time.process_time() - c0)
    return [(statistics.median(t), statistics.median(c), r) for t, c, r in zip(times, cpus, results)]


def main(argv=None) -> int:
    import lance

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (150k rows)")
    ap.add_argument("--rows", type=int, default=None, help="base row count (default 3M, 150k with --quick)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated subset of: " + ", ".join(KINDS))
    ap.add_argument("--version", default=None, help="only the kinds of this data_storage_version (e.g. 2.3)")
    ap.add_argument("--dir", default=None, help="where to write the files (reused between runs)")
    ap.add_argument("--compiled-kernels", type=int, default=None,
                    help="lance_duck.configure(compiled_kernels=...): 1 numba kernels where installed, 0 numpy only")
    args = ap.parse_args(argv)
    if args.compiled_kernels is not None:
        import lance_duck
        lance_duck.configure(compiled_kernels=args.compiled_kernels)
    rows = args.rows or (150_000 if args.quick else 3_000_000)
    root = Path(args.dir or os.path.join(tempfile.gettempdir(), "lance_duck_bench"))
    root.mkdir(parents=True, exist_ok=True)

    from lance_duck.encodings import _compiled
    if args.compiled_kernels:
        t0, c0 = time.perf_counter(), time.process_time()
        _compiled.load()     # (else loaded in the background after WARM_CODES codes)
        print(f"compiled kernels loaded in {time.perf_counter() - t0:.3f} s ({time.process_time() - c0:.3f} s CPU)")
    print("compiled kernels: " + ("on (loaded up front)" if _compiled.loaded() else "off" if args.compiled_kernels == 0
          else "the default (numba, if installed, loaded in the background after WARM_CODES FSST codes)"))
    print(f"{'kind':20s} {'ver':>4s} {'rows':>9s} {'MB':>8s} {'lance_duck MB/s':>16s} "
          f"{'pylance MB/s':>13s} {'ratio':>6s} {'cpu ratio':>9s}  equal")
    ratios, cpu_ratios = [], []
    for kind in [k.strip() for k in args.kinds.split(",") if k.strip()]:
        if kind not in KINDS:
            ap.error(f"unknown kind {kind!r}")
        if args.version is not None and KINDS[kind][2] != args.version:
            continue
        uri = write(root, kind, rows)
        ours_read = lance_duck_reader(uri, "c")
        theirs_ds = lance.dataset(uri)
        (t_ours, c_ours, ours), (t_theirs, c_theirs, theirs) = timed(
            [ours_read, lambda: theirs_ds.to_table(columns=["c"])], args.runs)
        mb = theirs.nbytes / 1e6
        equal = ours.column(0).combine_chunks().equals(theirs.column(0).combine_chunks())
        ratio = t_theirs / t_ours
        cpu_ratio = c_theirs / max(c_ours, 1e-9)
        ratios.append(ratio)
        cpu_ratios.append(cpu_ratio)
        print(f"{kind:20s} {KINDS[kind][2]:>4s} {theirs.num_rows:9d} {mb:8.1f} {mb / t_ours:16.0f} "
              f"{mb / t_theirs:13.0f} {ratio:6.2f} {cpu_ratio:9.2f}  {'yes' if equal else 'NO'}", flush=True)
    if ratios:
        def gm(rs: list[float]) -> float:
            return math.exp(sum(math.log(r) for r in rs) / len(rs))
        print(f"geometric mean ratio (lance_duck / pylance): {gm(ratios):.2f}; min {min(ratios):.2f}; "
              f"CPU time: {gm(cpu_ratios):.2f}, min {min(cpu_ratios):.2f}; load average "
              f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
