"""Long histories: ``versions()`` and mid-history ``asof``, lance_duck vs pylance (same run).

    python bench/versions.py [--versions 2000] [--runs 3] [--dir /tmp/ld_bench_versions]

Writes (once, cached in --dir) a table with pylance: one row per append, ``--versions`` versions,
so version v's manifest lists v fragments (~160 MB of manifests for 2,000 versions). Then, in
one process, times (median of --runs, after a warm-up):

* ``versions()`` — lance_duck ``dataset(uri).versions()`` vs pylance ``lance.dataset(uri).versions()``;
* mid-history ``asof`` — opening the version committed just after the middle one's timestamp;
* opening the latest version (one manifest for both).

Results are checked equal; the ratio printed is lance_duck time / pylance time (< 1 = faster).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import timedelta

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def prepare(d: str, n: int) -> str:
    import lance
    import pyarrow as pa

    path = os.path.join(d, f"history_{n}.lance")
    if os.path.exists(path) and lance.dataset(path).version == n:
        return path
    t = time.perf_counter()
    lance.write_dataset(pa.table({"id": [0], "s": ["row 0"]}), path, mode="overwrite")
    for i in range(1, n):
        lance.write_dataset(pa.table({"id": [i], "s": [f"row {i}"]}), path, mode="append")
    print(f"wrote {n} versions in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    return path


def timed(fn, runs: int):
    fn()
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--versions", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "ld_bench_versions"))
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    import lance

    import lance_duck

    path = prepare(a.dir, a.versions)
    pv = lance.dataset(path).versions()
    cutoff = pv[len(pv) // 2]["timestamp"] + timedelta(microseconds=1)
    cases = {
        "versions()": (lambda: lance_duck.dataset(path).versions(), lambda: lance.dataset(path).versions()),
        "asof (middle)": (lambda: lance_duck.dataset(path, asof=cutoff).version,
                          lambda: lance.dataset(path, asof=cutoff).version),
        "open latest": (lambda: lance_duck.dataset(path).version, lambda: lance.dataset(path).version),
    }
    print(f"{a.versions} versions, median of {a.runs} runs\n")
    print("| operation | lance_duck s | pylance s | ratio | equal |")
    print("|---|---|---|---|---|")
    for name, (ld, pl) in cases.items():
        t_ld, r_ld = timed(ld, a.runs)
        t_pl, r_pl = timed(pl, a.runs)
        print(f"| {name} | {t_ld:.3f} | {t_pl:.3f} | {t_ld / t_pl:.2f} | {r_ld == r_pl} |", flush=True)


if __name__ == "__main__":
    main()
