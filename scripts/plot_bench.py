"""Draw the performance charts of the documentation site from bench/results.json.

Usage: python scripts/plot_bench.py [--out docs/img]

Needs matplotlib (not a dependency of lance_duck or of its tests: the PNGs are committed). Each chart
names the benchmark, the machine and its load, as bench/results.json records them; to add a
measurement, add its numbers there (from bench/README.md) and run this script again.
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OURS, THEIRS = "#1f77b4", "#bbbbbb"


def _footer(fig, results: dict, key: str) -> None:
    s = results[key]
    fig.text(0.01, 0.01, f"{s['command']}\n{results['machine']}; {s['load']}", fontsize=7, color="#555555",
             va="bottom")


def _ratio_bars(ax, runs: dict[str, list[float]], xlabel: str) -> None:
    """Horizontal bars at the median of the runs, whiskers at their min / max, a line at parity."""
    names = list(runs)
    med = [statistics.median(v) for v in runs.values()]
    lo = [m - min(v) for m, v in zip(med, runs.values())]
    hi = [max(v) - m for m, v in zip(med, runs.values())]
    y = range(len(names))
    ax.barh(y, med, xerr=[lo, hi], color=OURS, ecolor="#333333", capsize=3)
    ax.axvline(1.0, color="#d62728", lw=1, ls="--")
    ax.set_yticks(list(y), names)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    for i, (m, v) in enumerate(zip(med, runs.values())):
        ax.text(max(v), i, f"  {m:.2f}", va="center", ha="left", fontsize=8)
    ax.set_xlim(0, max(1.0, *(max(v) for v in runs.values())) * 1.18)


def plot_decode(results: dict, out: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.4), gridspec_kw={"width_ratios": [9, 4]})
    _ratio_bars(axes[0], results["decode"]["runs"], "throughput ratio, lance_duck / pylance (>1: faster)")
    axes[0].set_title("file format 2.2, 3M rows (median of 7 runs)", fontsize=9)
    _ratio_bars(axes[1], results["decode_lists_23"]["runs"], "CPU ratio, pylance / lance_duck")
    axes[1].set_title("file format 2.3 lists, 1M rows (3 rounds)", fontsize=9)
    fig.suptitle("Decoding a column: lance_duck against pylance 14.0.2")
    _footer(fig, results, "decode")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(out / "decode.png", dpi=90)
    plt.close(fig)


def _paired_bars(ax, pairs: dict[str, tuple[float, float]], unit: str) -> None:
    names = list(pairs)
    y = range(len(names))
    h = 0.38
    ax.barh([i - h / 2 for i in y], [p[0] for p in pairs.values()], h, color=OURS, label="lance_duck")
    ax.barh([i + h / 2 for i in y], [p[1] for p in pairs.values()], h, color=THEIRS, label="pylance")
    ax.set_yticks(list(y), names)
    ax.invert_yaxis()
    ax.set_xlabel(unit)
    ax.legend(fontsize=8, loc="best")


def plot_queries(results: dict, out: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.0))
    q = results["duckdb_queries"]["queries"]
    _paired_bars(axes[0], {k: (v["lance_duck"], v["pylance"]) for k, v in q.items()}, "wall seconds (lower is faster)")
    axes[0].set_title("DuckDB over each reader, 4M rows (median of 9)", fontsize=9)
    _ratio_bars(axes[1], results["indexed_queries"]["runs"], "wall ratio, lance_duck / pylance (<1: faster)")
    axes[1].set_title("indexed table, 1M rows (3 runs of 21)", fontsize=9)
    fig.suptitle("Queries through DuckDB: lance_duck against pylance 14.0.2")
    _footer(fig, results, "duckdb_queries")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(out / "queries.png", dpi=90)
    plt.close(fig)


def plot_memory_and_history(results: dict, out: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    mem = results["memory"]["rows"]
    _paired_bars(axes[0], {k: (max(v["lance_duck"]), max(v["pylance"])) for k, v in mem.items()},
                 "peak RSS growth, MiB (highest run)")
    axes[0].set_title("streaming DuckDB aggregate, 16 MiB read-ahead budget", fontsize=9)
    ops = results["versions"]["operations"]
    _paired_bars(axes[1], {k: (statistics.mean(v["lance_duck"]), statistics.mean(v["pylance"]))
                           for k, v in ops.items()}, "seconds (mean of 2 runs)")
    axes[1].set_title("history of 2,000 versions", fontsize=9)
    fig.suptitle("Memory and long histories: lance_duck against pylance 14.0.2")
    s = results
    fig.text(0.01, 0.01, f"{s['memory']['command']}; {s['memory']['load']}\n{s['versions']['command']}; "
             f"{s['versions']['load']}. {s['machine']}", fontsize=7, color="#555555", va="bottom")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(out / "memory_history.png", dpi=90)
    plt.close(fig)


def plot_object_store(results: dict, out: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.0))
    ops = results["object_store"]["operations"]
    _paired_bars(axes[0], {k: (v["lance_duck"], v["pylance"]) for k, v in ops.items()}, "wall seconds")
    axes[0].set_title("time (median of 3)", fontsize=9)
    _paired_bars(axes[1], {k: tuple(v["gets"]) for k, v in ops.items()}, "GET requests")
    axes[1].set_title("requests", fontsize=9)
    fig.suptitle("S3 with 20 ms per request, 4M rows: lance_duck against pylance 14.0.2")
    _footer(fig, results, "object_store")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(out / "object_store.png", dpi=90)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results.json")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = ap.parse_args()
    results = json.loads(args.results.read_text())
    args.out.mkdir(parents=True, exist_ok=True)
    for plot in (plot_decode, plot_queries, plot_memory_and_history, plot_object_store):
        plot(results, args.out)
    print(f"charts written to {args.out}")


if __name__ == "__main__":
    main()
