"""nearest= through vector indices, end to end against pylance: the options around the per-segment
search (nprobes, refine, prefilter / postfilter, fast_search, unindexed fragments, deletions, stable
row ids, several segments, batch queries, metric other than the index's)."""
from __future__ import annotations

import lance
import lance_duck
import pytest

from .conftest import assert_same, queries

Q = queries(4)


def both(path: str, **kw):
    return lance_duck.dataset(path).to_table(**kw), lance.dataset(path).to_table(**kw)


@pytest.mark.parametrize("nprobes", [None, 1, 2, 4])
@pytest.mark.parametrize("refine", [None, 3])
def test_index_search_equals_pylance(index_history, nprobes, refine):
    path, _ = index_history
    for q in Q:
        nearest = {"column": "vec", "q": q, "k": 8, "nprobes": nprobes, "refine_factor": refine}
        got, want = both(path, columns=["id", "name"], nearest=nearest, with_row_id=True)
        assert_same(got, want)


@pytest.mark.parametrize("prefilter", [False, True])
@pytest.mark.parametrize("flt", ["cat = 3", "cat IN (1, 4) AND id < 2000", "name LIKE 'n2%'"])
def test_index_search_with_a_filter(index_history, prefilter, flt):
    path, _ = index_history
    got, want = both(path, columns=["id", "cat"], nearest={"column": "vec", "q": Q[1], "k": 10, "nprobes": 2},
                     filter=flt, prefilter=prefilter)
    assert_same(got, want)


def test_fast_search_skips_unindexed_fragments(index_history):
    path, _ = index_history
    got, want = both(path, columns=["id"], nearest={"column": "vec", "q": Q[0], "k": 10}, fast_search=True)
    assert_same(got, want)


def test_use_index_false_is_exact(index_history):
    path, metric = index_history
    got, want = both(path, columns=["id"], nearest={"column": "vec", "q": Q[2], "k": 10, "use_index": False,
                                                     "metric": metric})
    assert_same(got, want)


def test_another_metric_than_the_index_searches_exactly(index_history):
    path, metric = index_history
    other = "dot" if metric != "dot" else "l2"
    got, want = both(path, columns=["id"], nearest={"column": "vec", "q": Q[2], "k": 6, "metric": other})
    assert_same(got, want)
    plan = lance_duck.dataset(path).scanner(nearest={"column": "vec", "q": Q[2], "metric": other}).explain_plan()
    assert "flat KNN" in plan


def test_batch_queries_limit_offset_through_the_index(index_history):
    path, _ = index_history
    got, want = both(path, columns=["id"], nearest={"column": "vec", "q": Q, "k": 5, "nprobes": 2})
    assert_same(got, want)
    got, want = both(path, columns=["id"], nearest={"column": "vec", "q": Q[1], "k": 9}, limit=4, offset=3)
    assert_same(got, want)


def test_explain_names_the_index(index_history):
    path, _ = index_history
    plan = lance_duck.dataset(path).scanner(nearest={"column": "vec", "q": Q[0]}).explain_plan()
    assert "vec_idx" in plan and "unindexed fragments" in plan


@pytest.mark.parametrize("nprobes", [1, 4])
def test_several_segments_and_an_unindexed_fragment(segmented_table, nprobes):
    for q in Q:
        for kw in ({}, {"fast_search": True}, {"filter": "cat = 1", "prefilter": True}):
            got, want = both(segmented_table, columns=["id"], nearest={"column": "vec", "q": q, "k": 12,
                                                                       "nprobes": nprobes}, **kw)
            assert_same(got, want)


def test_time_travel_before_the_index(index_history):
    path, _ = index_history
    got = lance_duck.dataset(path, version=1).to_table(columns=["id"], nearest={"column": "vec", "q": Q[0]})
    want = lance.dataset(path, version=1).to_table(columns=["id"], nearest={"column": "vec", "q": Q[0]})
    assert_same(got, want)


@pytest.mark.parametrize("stable", [False, True])
def test_partition_masks_follow_deletions_of_later_versions(tmp_path, stable):
    """The masks of deleted rows kept per index partition belong to one state of the table: rows deleted
    after a search are not found by the next search, and the older version still finds them."""
    import numpy as np
    import pyarrow as pa
    rng = np.random.default_rng(21)
    x = rng.standard_normal((1200, 16)).astype(np.float32)
    t = pa.table({"id": np.arange(1200), "vec": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), 16)})
    path = str(tmp_path / "t.lance")
    kw = {"enable_stable_row_ids": True} if stable else {}
    lance.write_dataset(t, path, max_rows_per_file=400, **kw)
    lance.dataset(path).create_index("vec", index_type="IVF_HNSW_SQ", num_partitions=2)
    lance.dataset(path).delete("id % 10 = 9")
    nearest = {"column": "vec", "q": x[5], "k": 10, "nprobes": 2}
    first = lance_duck.dataset(path).to_table(columns=["id"], nearest=nearest)
    before = lance.dataset(path).version
    lance.dataset(path).delete(f"id IN ({', '.join(map(str, first['id'].to_pylist()[:5]))})")
    got, want = both(path, columns=["id"], nearest=nearest)
    assert_same(got, want)
    assert not set(got["id"].to_pylist()) & set(first["id"].to_pylist()[:5])
    old = lance_duck.dataset(path, version=before).to_table(columns=["id"], nearest=nearest)
    assert_same(old, lance.dataset(path, version=before).to_table(columns=["id"], nearest=nearest))
    assert old["id"].to_pylist() == first["id"].to_pylist()
