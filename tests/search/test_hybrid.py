"""lance_duck.hybrid_search and SQL lance_hybrid_search: equal to the mixing formula computed from
pylance 14.0.2's own vector and full-text results."""
from __future__ import annotations

import random

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import InvalidArgumentError

DIM = 8


@pytest.fixture(scope="session")
def hybrid_table(tmp_path_factory):
    rnd = random.Random(21)
    rng = np.random.default_rng(21)
    n = 400
    texts = [" ".join(f"w{rnd.randint(0, 300)}" for _ in range(rnd.randint(4, 14))) for _ in range(n)]
    emb = rng.standard_normal((n, DIM)).astype(np.float32)
    t = pa.table({"id": pa.array(range(n), pa.int64()), "text": texts,
                  "emb": pa.FixedSizeListArray.from_arrays(pa.array(emb.reshape(-1)), DIM)})
    uri = str(tmp_path_factory.mktemp("hybrid") / "h.lance")
    ds = lance.write_dataset(t, uri)
    ds.create_scalar_index("text", "INVERTED")
    return uri, rng.standard_normal(DIM).astype(np.float32)


def expected(uri, q, text, k, alpha, over, prefilter=False, flt=None):
    ds = lance.dataset(uri)
    n = k * over
    vec = ds.to_table(nearest={"column": "emb", "q": q, "k": n, "use_index": False}, with_row_id=True,
                      filter=flt, prefilter=prefilter)
    txt = ds.to_table(full_text_query={"query": text, "columns": ["text"]}, limit=n, with_row_id=True,
                      filter=flt, prefilter=prefilter)
    full = ds.to_table(columns=["id"], full_text_query={"query": text, "columns": ["text"]}, filter=flt,
                       prefilter=prefilter)["_score"].to_pylist()
    # no tie at the text side's cut (pylance's order among equal scores varies between runs)
    assert len(full) <= n or full[n - 1] > full[n] + 1e-6

    def norm(vals):
        vals = [float(v) for v in vals]
        if not vals:
            return []
        lo, hi = min(vals), max(vals)
        return [0.5] * len(vals) if hi == lo else [(v - lo) / (hi - lo) for v in vals]
    a = min(1.0, max(0.0, alpha))
    vs = dict(zip(vec["_rowid"].to_pylist(), [1 - x for x in norm(vec["_distance"].to_pylist())]))
    ts = dict(zip(txt["_rowid"].to_pylist(), norm(txt["_score"].to_pylist())))
    ids = set(vs) | set(ts)
    mixed = {r: np.float32(a * vs.get(r, 0.0) + (1 - a) * ts.get(r, 0.0)) for r in ids}
    best = sorted(ids, key=lambda r: (-mixed[r], r))[:k]
    return [(r, float(mixed[r])) for r in best]


@pytest.mark.parametrize("text,k,alpha,over", [("w1 w2", 4, 0.5, 4), ("w10 w20 w30", 10, 0.3, 3),
                                               ("w7", 3, 1.7, 2), ("w250 w3", 8, -1.0, 5)])
def test_hybrid_search_equals_the_formula_over_pylance_results(hybrid_table, text, k, alpha, over):
    uri, q = hybrid_table
    got = lance_duck.hybrid_search(uri, "emb", q, "text", text, k=k, alpha=alpha, oversample_factor=over,
                                   use_index=False)
    want = expected(uri, q, text, k, alpha, over)
    ds = lance.dataset(uri)
    rowid = ds.to_table(columns=["id"], with_row_id=True)
    id_of = dict(zip(rowid["_rowid"].to_pylist(), rowid["id"].to_pylist()))
    assert got["id"].to_pylist() == [id_of[r] for r, _ in want]
    np.testing.assert_allclose(got["_hybrid_score"].to_numpy(), [s for _, s in want], rtol=1e-6, atol=1e-6)
    assert got.schema.names == ["id", "text", "emb", "_hybrid_score", "_distance", "_score"]


def test_hybrid_columns_select_the_rows_values_in_order(hybrid_table):
    uri, q = hybrid_table
    full = lance_duck.hybrid_search(uri, "emb", q, "text", "w1 w2 w3", k=7, use_index=False)
    got = lance_duck.hybrid_search(uri, "emb", q, "text", "w1 w2 w3", k=7, use_index=False, columns=["text", "id"])
    assert got.equals(full.select(["text", "id", "_hybrid_score", "_distance", "_score"]))
    text_of = dict(zip(*lance.dataset(uri).to_table(columns=["id", "text"]).to_pydict().values()))
    assert got["text"].to_pylist() == [text_of[i] for i in got["id"].to_pylist()]


def test_hybrid_unknown_column_is_refused(hybrid_table):
    uri, q = hybrid_table
    with pytest.raises(InvalidArgumentError, match="nope"):
        lance_duck.hybrid_search(uri, "emb", q, "text", "w1", columns=["id", "nope"])


def test_sql_lance_hybrid_search_equals_python(hybrid_table):
    uri, q = hybrid_table
    vec = "[" + ", ".join(repr(float(x)) for x in q) + "]"
    got = lance_duck.sql(f"select id, _hybrid_score, _distance, _score from lance_hybrid_search('{uri}', 'emb', "
                         f"{vec}, 'text', 'w1 w2', k => 5, alpha => 0.4, use_index => false)").fetchall()
    want = lance_duck.hybrid_search(uri, "emb", q.astype(np.float64), "text", "w1 w2", k=5, alpha=0.4,
                                    use_index=False)
    assert got == [(r["id"], r["_hybrid_score"], r["_distance"], r["_score"]) for r in want.to_pylist()]


@pytest.mark.parametrize("args, message", [
    ("'text', 'w1', k => 0", "lance_hybrid_search\\(\\): k must be a positive integer"),
    ("'text', 'w1', prefilter => 'yes'", "prefilter must be true or false"),
    ("'text', 'w1', kk => 3", "unknown argument"),
    ("5, 'w1'", "text_column must be a string"),
    ("'text'", "expected 5 positional arguments, got 4"),
    ("'text', 'w1', k => 3, k => 4", "k given twice"),
])
def test_sql_lance_hybrid_search_bad_arguments_are_refused_by_name(hybrid_table, args, message):
    uri, q = hybrid_table
    vec = "[" + ", ".join(repr(float(x)) for x in q) + "]"
    with pytest.raises(InvalidArgumentError, match=message):
        lance_duck.sql(f"select * from lance_hybrid_search('{uri}', 'emb', {vec}, {args})")


def test_hybrid_prefilter(hybrid_table):
    uri, q = hybrid_table
    got = lance_duck.hybrid_search(uri, "emb", q, "text", "w1 w2 w3", k=6, use_index=False, filter="id > 150",
                                   prefilter=True)
    want = expected(uri, q, "w1 w2 w3", 6, 0.5, 4, prefilter=True, flt="id > 150")
    rowid = lance.dataset(uri).to_table(columns=["id"], with_row_id=True)
    id_of = dict(zip(rowid["_rowid"].to_pylist(), rowid["id"].to_pylist()))
    assert got["id"].to_pylist() == [id_of[r] for r, _ in want]


def test_full_text_and_nearest_together_are_refused(hybrid_table):
    uri, q = hybrid_table
    with pytest.raises(InvalidArgumentError, match="hybrid_search"):
        lance_duck.dataset(uri).to_table(full_text_query="w1", nearest={"column": "emb", "q": q})
    with pytest.raises(InvalidArgumentError, match="k must be"):
        lance_duck.hybrid_search(uri, "emb", q, "text", "w1", k=0)


def test_hybrid_vector_side_uses_the_index(tmp_path):
    rng = np.random.default_rng(33)
    rnd = random.Random(33)
    n = 600
    emb = rng.standard_normal((n, DIM)).astype(np.float32)
    texts = [" ".join(f"w{rnd.randint(0, 300)}" for _ in range(rnd.randint(4, 14))) for _ in range(n)]
    uri = str(tmp_path / "ivf.lance")
    ds = lance.write_dataset(pa.table({"id": pa.array(range(n), pa.int64()), "text": texts,
                                       "emb": pa.FixedSizeListArray.from_arrays(pa.array(emb.reshape(-1)), DIM)}),
                             uri)
    ds.create_scalar_index("text", "INVERTED")
    ds.create_index("emb", "IVF_FLAT", num_partitions=4)
    q = rng.standard_normal(DIM).astype(np.float32)
    ds = lance.dataset(uri)
    vec = ds.to_table(nearest={"column": "emb", "q": q, "k": 20, "nprobes": 2}, with_row_id=True)
    got = lance_duck.hybrid_search(uri, "emb", q, "text", "w1 w2", k=5, nprobs=2)
    ours_vec = lance_duck.dataset(uri).to_table(nearest={"column": "emb", "q": q, "k": 20, "nprobes": 2},
                                                with_row_id=True)
    assert ours_vec["_rowid"].to_pylist() == vec["_rowid"].to_pylist()   # the index's rows, as pylance
    want = expected_indexed(uri, q, "w1 w2", 5, 0.5, 4)
    rowid = ds.to_table(columns=["id"], with_row_id=True)
    id_of = dict(zip(rowid["_rowid"].to_pylist(), rowid["id"].to_pylist()))
    assert got["id"].to_pylist() == [id_of[r] for r, _ in want]


def expected_indexed(uri, q, text, k, alpha, over):
    ds = lance.dataset(uri)
    n = k * over
    vec = ds.to_table(nearest={"column": "emb", "q": q, "k": n, "nprobes": 2}, with_row_id=True)
    txt = ds.to_table(full_text_query={"query": text, "columns": ["text"]}, limit=n, with_row_id=True)

    def norm(vals):
        lo, hi = min(vals), max(vals)
        return [0.5] * len(vals) if hi == lo else [(v - lo) / (hi - lo) for v in vals]
    vs = dict(zip(vec["_rowid"].to_pylist(), [1 - x for x in norm(vec["_distance"].to_pylist())]))
    ts = dict(zip(txt["_rowid"].to_pylist(), norm(txt["_score"].to_pylist())))
    mixed = {r: np.float32(alpha * vs.get(r, 0.0) + (1 - alpha) * ts.get(r, 0.0)) for r in set(vs) | set(ts)}
    return [(r, float(mixed[r])) for r in sorted(mixed, key=lambda r: (-mixed[r], r))[:k]]


def test_hybrid_rows_after_deletions_over_fragments(tmp_path):
    rnd = random.Random(5)
    n = 300
    texts = [" ".join(f"w{rnd.randint(0, 40)}" for _ in range(rnd.randint(3, 9))) for _ in range(n)]
    emb = np.random.default_rng(5).standard_normal((n, DIM)).astype(np.float32)
    t = pa.table({"id": pa.array(range(n), pa.int64()), "text": texts,
                  "emb": pa.FixedSizeListArray.from_arrays(pa.array(emb.reshape(-1)), DIM)})
    uri = str(tmp_path / "d.lance")
    ds = lance.write_dataset(t, uri, max_rows_per_file=100)
    ds.create_scalar_index("text", "INVERTED")
    ds.delete("id % 7 = 2")
    q = emb[10]
    got = lance_duck.hybrid_search(uri, "emb", q, "text", "w1 w2 w3", k=9, use_index=False)
    want = expected(uri, q, "w1 w2 w3", 9, 0.5, 4)
    rows = lance.dataset(uri).to_table(columns=["id", "text", "emb"], with_row_id=True).to_pylist()
    by_rowid = {r["_rowid"]: r for r in rows}
    assert got.select(["id", "text", "emb"]).to_pylist() == [
        {c: by_rowid[r][c] for c in ("id", "text", "emb")} for r, _ in want]
    assert all(i % 7 != 2 for i in got["id"].to_pylist())
