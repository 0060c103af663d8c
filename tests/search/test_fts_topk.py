"""A limited match query over many hits (the top-k pruning of search.fts) against pylance 14.0.2
and against lance_duck's own unlimited ranking: frequent and rare terms, repeated terms, a boost,
deletions, an unindexed appended fragment, several index partitions."""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck import query as q
from lance_duck.search import fts_topk

from .fts_tables import assert_same_ranking


def zipf_table(n: int, seed: int, start: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array([f"z{i}" for i in range(300)])
    p = 1.0 / np.arange(1, 301)
    p /= p.sum()
    lens = rng.integers(5, 31, n)
    toks = words[rng.choice(300, size=int(lens.sum()), p=p)]
    ends = np.cumsum(lens)
    texts = [" ".join(toks[e - n_:e]) for e, n_ in zip(ends, lens)]
    return pa.table({"id": pa.array(np.arange(start, start + n), pa.int64()), "text": texts})


@pytest.fixture(scope="session")
def zipf_tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("fts_topk")
    plain = str(root / "plain.lance")
    ds = lance.write_dataset(zipf_table(12000, 1), plain, max_rows_per_file=5000)
    ds.create_scalar_index("text", "INVERTED", with_position=False)
    ds = lance.write_dataset(zipf_table(800, 2, start=12000), plain, mode="append")
    ds.delete("id % 17 = 3")
    parts = str(root / "parts.lance")
    ds = lance.write_dataset(zipf_table(12000, 3), parts, max_rows_per_file=4000)
    ds.create_scalar_index("text", "INVERTED", memory_limit=1, num_workers=1)
    ds.delete("id % 5 = 1")
    return {"plain": plain, "parts": parts}


TEXTS = ["z0 z150", "z1 z2 z3", "z0 z0 z290", "z4 z77 z250", "z6 z8", "z0 z1 z2 z3 z4 z5"]


@pytest.mark.parametrize("name", ["plain", "parts"])
@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("limit", [1, 10, 40])
def test_limited_match_over_many_hits_equals_pylance_and_the_full_ranking(zipf_tables, name, text, limit):
    uri = zipf_tables[name]
    theirs = lance.dataset(uri).to_table(columns=["id"], full_text_query=text, limit=limit)
    ds = lance_duck.dataset(uri)
    ours = ds.to_table(columns=["id"], full_text_query=text, limit=limit)
    assert_same_ranking(ours, theirs, limited=True)
    full = ds.to_table(columns=["id"], full_text_query=text)
    postings = sum(ds.to_table(columns=["id"], full_text_query=w).num_rows for w in set(text.split()))
    assert postings >= fts_topk.TOP_K_MIN_POSTINGS          # enough for the pruning to apply
    assert ours.equals(full.slice(0, limit))


@pytest.mark.parametrize("boost", [0.5, 3.0])
def test_limited_boosted_match_equals_pylance(zipf_tables, boost):
    from lance.query import MatchQuery
    uri = zipf_tables["plain"]
    theirs = lance.dataset(uri).to_table(columns=["id"], full_text_query=MatchQuery("z0 z3 z200", "text", boost=boost),
                                         limit=10)
    ours = lance_duck.dataset(uri).to_table(columns=["id"], full_text_query=q.MatchQuery("z0 z3 z200", "text",
                                                                                         boost=boost), limit=10)
    assert_same_ranking(ours, theirs, limited=True)


@pytest.mark.parametrize("kw", [dict(fuzziness=1), dict(fuzziness=1, max_expansions=4), dict(fuzziness=2, prefix_length=1)])
def test_limited_fuzzy_match_equals_pylance_and_the_full_ranking(zipf_tables, kw):
    from lance.query import MatchQuery
    uri = zipf_tables["plain"]
    theirs = lance.dataset(uri).to_table(columns=["id"], full_text_query=MatchQuery("z1 z29", "text", **kw), limit=10)
    ds = lance_duck.dataset(uri)
    ours = ds.to_table(columns=["id"], full_text_query=q.MatchQuery("z1 z29", "text", **kw), limit=10)
    assert_same_ranking(ours, theirs, limited=True)
    full = ds.to_table(columns=["id"], full_text_query=q.MatchQuery("z1 z29", "text", **kw))
    assert ours.equals(full.slice(0, 10))
