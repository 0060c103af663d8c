"""Full-text search: lance_duck vs pylance over one INVERTED index (with positions).

    python bench/fts_search.py [--rows 200000] [--queries 100] [--dir /tmp/ld_bench_fts] [--hybrid-rows 200000]

Writes (once, cached in --dir) ``rows`` short documents (a seeded Zipf vocabulary of 20,000 words,
20-60 tokens each) with pylance, builds an INVERTED index with positions, then runs ``queries``
searches (1-3 terms, and one in five a two-word phrase) with ``limit=10`` through
``to_table(full_text_query=...)`` of both, interleaved (lance_duck, pylance) after a warm-up of
each, then DuckDB's Lance extension's ``lance_fts`` (subprocess under ``--ext-python``, see
``bench/ext_runner.py``; it has no phrase query, so phrases compare lance_duck and pylance only);
prints median and p90 wall time per query of each and the ratios; ids and scores checked against
pylance's (WRONG printed; "tie order" when only equal-score rows swap). ``--hybrid-rows N``: also
``lance_duck.hybrid_search(..., columns=["id"])`` vs the extension's ``SELECT id, _hybrid_score FROM lance_hybrid_search`` (k 10, alpha 0.5,
oversample 4, nprobs 8) over N documents with a 128-d IVF_PQ(64/16) vector column.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import DEFAULT_EXT_PYTHON, Extension, open_extension, quantiles_ms  # noqa: E402  (+ repo root on sys.path)

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


def prepare_hybrid(d: str, n: int) -> str:
    """``n`` documents as :func:`make_table` plus a 128-d float32 ``vec`` (IVF_PQ 64/16) and an INVERTED index."""
    import lance
    path = os.path.join(d, f"hybrid_{n}.lance")
    if not os.path.exists(path):
        t = make_table(n)
        v = np.random.default_rng(11).standard_normal((n, 128)).astype(np.float32)
        t = t.append_column("vec", pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), 128))
        ds = lance.write_dataset(t, path, max_rows_per_file=(n + 3) // 4)
        ds.create_index("vec", "IVF_PQ", num_partitions=64, num_sub_vectors=16)
        ds.create_scalar_index("text", "INVERTED")
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


def same(a_ids: list, a_scores: np.ndarray, b_ids: list, b_scores: np.ndarray) -> str:
    """'' when equal; 'tie order' when only rows of equal score swap places; else 'WRONG'."""
    if a_ids == b_ids and np.allclose(a_scores, b_scores, rtol=1e-5, atol=1e-5):
        return ""
    if len(a_ids) == len(b_ids) and np.allclose(a_scores, b_scores, rtol=1e-5, atol=1e-5):
        return "tie order"
    return "WRONG"


def fts_sql(path: str, terms: str) -> str:
    return f"SELECT id, _score FROM lance_fts('{path}', 'text', '{terms}', k => 10)"


def run_fts(path: str, qs: list, ext: Extension | None) -> None:
    import lance

    import lance_duck
    theirs, ours = lance.dataset(path), lance_duck.dataset(path)
    times: dict[str, list[float]] = {"lance_duck": [], "pylance": [], "extension": []}
    phrase_times: dict[str, list[float]] = {"lance_duck": [], "pylance": []}
    bad = {"lance_duck": 0, "extension": 0}
    for i, (q_theirs, q_ours) in enumerate(qs):
        phrase = not isinstance(q_ours, str)
        ours.to_table(columns=["id"], full_text_query=q_ours, limit=10)        # warm-up
        theirs.to_table(columns=["id"], full_text_query=q_theirs, limit=10)
        t0 = time.perf_counter()
        a = ours.to_table(columns=["id"], full_text_query=q_ours, limit=10)
        t1 = time.perf_counter()
        b = theirs.to_table(columns=["id"], full_text_query=q_theirs, limit=10)
        t2 = time.perf_counter()
        acc = phrase_times if phrase else times
        acc["lance_duck"].append(t1 - t0)
        acc["pylance"].append(t2 - t1)
        b_ids, b_sc = b["id"].to_pylist(), b["_score"].to_numpy()
        answers = {"lance_duck": (a["id"].to_pylist(), a["_score"].to_numpy())}
        if ext is not None and not phrase:    # the extension's lance_fts has no phrase query
            t, ids = ext.run(fts_sql(path, q_ours))
            times["extension"].append(t)
            answers["extension"] = (ids, np.array([r[1] for r in ext.last_rows], dtype=np.float64))
        for name, (ids, sc) in answers.items():
            verdict = same(ids, sc, b_ids, b_sc)
            if verdict:
                bad[name] += verdict == "WRONG"
                print(f"    {verdict} {name} query {i} {q_ours!r}: {ids} vs pylance {b_ids}", flush=True)
    print(f"{'':24}{'median ms':>10}{'p90 ms':>9}")
    rows = [("terms", times), ("phrases", phrase_times)]
    for label, acc in rows:
        for name, ts in acc.items():
            if ts:
                m, p = quantiles_ms(ts)
                print(f"{label + ' ' + name:24}{m:10.2f}{p:9.2f}   ({len(ts)} queries)")
        mo, po = quantiles_ms(acc["lance_duck"])
        for ref in ("pylance", "extension"):
            if acc.get(ref):
                mr, pr = quantiles_ms(acc[ref])
                print(f"{label + ' ld/' + ref:24}{mo / mr:9.2f}x{po / pr:8.2f}x")
    print(f"WRONG answers: lance_duck {bad['lance_duck']}, extension {bad['extension']}", flush=True)


def run_hybrid(path: str, count: int, ext: Extension | None, nprobs: int) -> None:
    """lance_duck.hybrid_search vs the extension's lance_hybrid_search (k 10, alpha 0.5, oversample 4)."""
    import lance_duck
    ours = lance_duck.dataset(path)
    rng = np.random.default_rng(7)
    t_ours, t_ext = [], []
    bad = 0
    for i in range(count):
        q = rng.standard_normal(128).astype(np.float32)
        terms = " ".join(f"t{int(x)}" for x in rng.integers(0, 2000, rng.integers(1, 4)))

        def ours_run():
            return lance_duck.hybrid_search(ours, "vec", q, "text", terms, k=10, alpha=0.5,
                                            oversample_factor=4, nprobs=nprobs, columns=["id"])
        ours_run()
        t0 = time.perf_counter()
        a = ours_run()
        t_ours.append(time.perf_counter() - t0)
        if ext is None:
            continue
        vec = ", ".join(repr(float(x)) for x in q)
        sql = (f"SELECT id, _hybrid_score FROM lance_hybrid_search('{path}', 'vec', [{vec}]::FLOAT[128], 'text', "
               f"'{terms}', k => 10, alpha => 0.5, oversample_factor => 4, nprobs => {nprobs})")
        t, ids = ext.run(sql)
        t_ext.append(t)
        verdict = same(a["id"].to_pylist(), a["_hybrid_score"].to_numpy(), ids,
                       np.array([r[1] for r in ext.last_rows], dtype=np.float64))
        if verdict:
            bad += verdict == "WRONG"
            print(f"    {verdict} hybrid query {i}: lance_duck {a['id'].to_pylist()} vs extension {ids}", flush=True)
    mo, po = quantiles_ms(t_ours)
    print(f"hybrid ({count} queries, nprobs {nprobs}): lance_duck {mo:.2f} ms (p90 {po:.2f})", end="")
    if t_ext:
        me, pe = quantiles_ms(t_ext)
        print(f"   extension {me:.2f} ms (p90 {pe:.2f})   ratio {mo / me:.2f}x (p90 {po / pe:.2f}x)   "
              f"WRONG {bad}", end="")
    print(flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--dir", default="/tmp/ld_bench_fts")
    ap.add_argument("--ext-python", default=DEFAULT_EXT_PYTHON,
                    help="a Python with duckdb==1.5.5 and duckdb-extension-lance==1.5.5 ('' to skip)")
    ap.add_argument("--hybrid-rows", type=int, default=0,
                    help="also time hybrid search over a table of this many rows (text + 128-d IVF_PQ(64/16))")
    ap.add_argument("--hybrid-queries", type=int, default=50)
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    print(f"load: {os.getloadavg()}", flush=True)
    ext = open_extension(args.ext_python)
    path = prepare(args.dir, args.rows)
    print(f"{args.rows} docs, {args.queries} queries, k=10", flush=True)
    run_fts(path, queries(args.queries), ext)
    if args.hybrid_rows:
        run_hybrid(prepare_hybrid(args.dir, args.hybrid_rows), args.hybrid_queries, ext, nprobs=8)
    if ext is not None:
        ext.close()
    print(f"load: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
