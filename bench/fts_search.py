"""Full-text search: lance_duck vs pylance over one INVERTED index (with positions).

    python bench/fts_search.py [--rows 200000] [--queries 100] [--dir /tmp/ld_bench_fts]

Writes (once, cached in --dir) ``rows`` short documents (a seeded Zipf vocabulary of 20,000 words,
20-60 tokens each) with pylance, builds an INVERTED index with positions, then runs ``queries``
searches (1-3 terms, and one in five a two-word phrase) with ``limit=10`` through
``to_table(full_text_query=...)`` of both, interleaved (lance_duck, pylance) after a warm-up of
each; prints median and p90 wall time per query of each and the ratios, and checks that both
return the same scores. DuckDB's Lance extension is not installed here (not compared).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402,F401  (puts the repository root on sys.path)

VOCAB = 20_000


def make_table(n: int) -> pa.Table:
    rng = np.random.default_rng(11)
    ranks = np.arange(1, VOCAB + 1)
    p = 1.0 / ranks
    p /= p.sum()
    words = np.array([f"t{i}" for i in range(VOCAB)])
    lens = rng.integers(20, 61, n)
    toks = words[rng.choice(VOCAB, size=int(lens.sum()), p=p)]
    ends = np.cumsum(lens)
    starts = ends - lens
    texts = [" ".join(toks[s:e]) for s, e in zip(starts, ends)]
    return pa.table({"id": pa.array(np.arange(n, dtype=np.int64)), "text": texts})


def prepare(d: str, n: int) -> str:
    import lance
    path = os.path.join(d, f"fts_{n}.lance")
    if not os.path.exists(path):
        ds = lance.write_dataset(make_table(n), path, max_rows_per_file=max(1, n // 4))
        ds.create_scalar_index("text", "INVERTED", with_position=True)
    return path


def queries(count: int) -> list:
    from lance.query import PhraseQuery
    from lance_duck.query import PhraseQuery as OurPhrase
    rng = np.random.default_rng(5)
    out = []
    for i in range(count):
        if i % 5 == 4:
            a, b = rng.integers(0, 200, 2)
            text = f"t{a} t{b}"
            out.append((PhraseQuery(text, "text"), OurPhrase(text, "text")))
        else:
            terms = " ".join(f"t{int(x)}" for x in rng.integers(0, 2000, rng.integers(1, 4)))
            out.append((terms, terms))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--dir", default="/tmp/ld_bench_fts")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    import lance

    import lance_duck
    path = prepare(args.dir, args.rows)
    theirs, ours = lance.dataset(path), lance_duck.dataset(path)
    qs = queries(args.queries)
    t_ours, t_theirs = [], []
    for q_theirs, q_ours in qs:
        ours.to_table(columns=["id"], full_text_query=q_ours, limit=10)        # warm-up
        theirs.to_table(columns=["id"], full_text_query=q_theirs, limit=10)
        t0 = time.perf_counter()
        a = ours.to_table(columns=["id"], full_text_query=q_ours, limit=10)
        t1 = time.perf_counter()
        b = theirs.to_table(columns=["id"], full_text_query=q_theirs, limit=10)
        t2 = time.perf_counter()
        t_ours.append(t1 - t0)
        t_theirs.append(t2 - t1)
        np.testing.assert_allclose(a["_score"].to_numpy(), b["_score"].to_numpy(), rtol=1e-5, atol=1e-5)

    def stats(ts):
        return statistics.median(ts) * 1000, float(np.percentile(ts, 90)) * 1000
    mo, po = stats(t_ours)
    mt, pt = stats(t_theirs)
    print(f"{args.rows} docs, {len(qs)} queries, k=10, load {os.getloadavg()[0]:.1f}")
    print(f"{'':12}{'median ms':>12}{'p90 ms':>10}")
    print(f"{'lance_duck':12}{mo:12.2f}{po:10.2f}")
    print(f"{'pylance':12}{mt:12.2f}{pt:10.2f}")
    print(f"{'ratio':12}{mo / mt:12.2f}{po / pt:10.2f}")


if __name__ == "__main__":
    main()
