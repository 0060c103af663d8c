"""lance_vector_search(...) in lance_duck.sql and the CLI: the rows of to_table(nearest=...)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import lance
import numpy as np
import pytest

import lance_duck
from lance_duck.errors import InvalidArgumentError

from .conftest import queries

ROOT = Path(__file__).resolve().parents[2]
Q = queries()


def literal(q: np.ndarray) -> str:
    return "[" + ", ".join(repr(float(x)) for x in q) + f"]::FLOAT[{len(q)}]"


def test_literal_vector_equals_python_and_pylance(vector_table):
    rel = lance_duck.sql(f"SELECT id, cat, _distance FROM lance_vector_search('{vector_table}', 'vec', "
                         f"{literal(Q[1])}, k => 7) ORDER BY _distance")
    got = rel.arrow().read_all() if hasattr(rel.arrow(), "read_all") else rel.arrow()
    want = lance.dataset(vector_table).to_table(columns=["id", "cat"], nearest={"column": "vec", "q": Q[1], "k": 7})
    py = lance_duck.dataset(vector_table).to_table(columns=["id", "cat"], nearest={"column": "vec", "q": Q[1], "k": 7})
    assert got["id"].to_pylist() == want["id"].to_pylist() == py["id"].to_pylist()
    np.testing.assert_allclose(got["_distance"].to_numpy(), want["_distance"].to_numpy(), rtol=2e-5, atol=2e-5)


def test_python_variable_and_double_cast(vector_table):
    q = Q[2].astype(np.float64)
    a = lance_duck.sql(f"SELECT id FROM lance_vector_search('{vector_table}', 'vec', $q::DOUBLE[16], k => 5) "
                       "ORDER BY _distance").fetchall()
    b = lance_duck.sql(f"SELECT id FROM lance_vector_search('{vector_table}', 'vec', q, k => 5) "
                       "ORDER BY _distance").fetchall()
    want = lance.dataset(vector_table).to_table(columns=["id"], nearest={"column": "vec", "q": q, "k": 5})
    assert [r[0] for r in a] == [r[0] for r in b] == want["id"].to_pylist()


@pytest.mark.parametrize("prefilter", [False, True])
def test_where_is_the_search_filter_pre_or_post(vector_table, prefilter):
    pre = "true" if prefilter else "false"
    q = Q[0]  # noqa: F841 - read from this scope by lance_duck.sql
    rows = lance_duck.sql(f"SELECT t.id, _distance FROM lance_vector_search('{vector_table}', 'vec', q, k => 9, "
                          f"prefilter => {pre}) AS t WHERE t.cat = 2 AND id > 100 ORDER BY _distance, id").fetchall()
    want = lance.dataset(vector_table).to_table(columns=["id"], nearest={"column": "vec", "q": Q[0], "k": 9},
                                                filter="cat = 2 AND id > 100", prefilter=prefilter)
    assert [r[0] for r in rows] == want["id"].to_pylist()
    if prefilter:
        assert len(rows) == 9


def test_distance_conditions_stay_with_duckdb(vector_table):
    q = Q[1]
    rows = lance_duck.sql(f"SELECT id FROM lance_vector_search('{vector_table}', 'vec', q, k => 10, prefilter => true) "
                          "WHERE _distance < 20 AND cat <> 1 ORDER BY _distance").fetchall()
    want = lance.dataset(vector_table).to_table(columns=["id"], nearest={"column": "vec", "q": q, "k": 10},
                                                filter="cat <> 1", prefilter=True)
    assert [r[0] for r in rows] == [i for i, d in zip(want["id"].to_pylist(), want["_distance"].to_pylist()) if d < 20]


def test_time_travel_nprobs_refine_use_index_arguments(vector_table):
    q = Q[0]
    rows = lance_duck.sql(f"SELECT id FROM lance_vector_search('{vector_table}', 'vec', q, k => 6, nprobs => 4, "
                          "refine_factor => 2, use_index => false, version => 1) ORDER BY _distance, id").fetchall()
    want = lance.dataset(vector_table, version=1).to_table(columns=["id"], nearest={"column": "vec", "q": q, "k": 6})
    assert [r[0] for r in rows] == want["id"].to_pylist()


def test_all_columns_and_distance_as_python(stable_table):
    q = Q[2]
    rel = lance_duck.sql(f"SELECT * FROM lance_vector_search('{stable_table}', 'vec', q, k => 4, metric => 'cosine')")
    want = lance_duck.dataset(stable_table).to_table(nearest={"column": "vec", "q": q, "k": 4, "metric": "cosine"})
    assert rel.columns == want.column_names
    got = rel.fetchall()
    names = want.column_names
    for row, expect in zip(got, want.to_pylist(), strict=True):
        for name, value in zip(names, row):
            if name == "v16":    # DuckDB has no half floats: widened to float32
                np.testing.assert_array_equal(np.float16(value), np.float16(expect[name]))
            elif name == "_distance":
                assert value == pytest.approx(expect[name], rel=1e-6)
            else:
                assert (list(value) if isinstance(value, (list, tuple)) else value) == expect[name], name


@pytest.mark.parametrize("call,named", [
    ("lance_vector_search('{t}', 'vec', [1.0, 2.0], k => 3)", "'q'"),
    ("lance_vector_search('{t}', 'vec', [1.0, 2.0]::FLOAT[3], k => 3)", "cast to 3"),
    ("lance_vector_search('{t}', 'vec', nope_not_here, k => 3)", "nope_not_here"),
    ("lance_vector_search('{t}', 'vec', q, k => 0)", "'k'"),
    ("lance_vector_search('{t}', 'vec', q, bogus => 1)", "bogus"),
    ("lance_vector_search('{t}', 'vec', q, prefilter => 3)", "prefilter"),
    ("lance_vector_search('{t}', 'id', q)", "'column'"),
    ("lance_vector_search('{t}', 'vec')", "three positional"),
])
def test_bad_calls_are_refused_by_name(vector_table, call, named):
    q = Q[0]  # noqa: F841 - read from this scope by lance_duck.sql
    with pytest.raises(InvalidArgumentError, match=named):
        lance_duck.sql("SELECT * FROM " + call.format(t=vector_table)).fetchall()


def test_explain_says_how_the_search_ran(vector_table):
    q = Q[0]  # noqa: F841
    rows = lance_duck.sql(f"EXPLAIN SELECT id FROM lance_vector_search('{vector_table}', 'vec', q, k => 3)").fetchall()
    assert rows[0][0] == "lance_vector_search" and "flat KNN" in rows[0][1]
    assert any(r[0] == "physical_plan" for r in rows)


def test_cli_sql_runs_a_search(vector_table):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    query = (f"SELECT id, _distance FROM lance_vector_search('{vector_table}', 'vec', {literal(Q[1])}, k => 3) "
             "ORDER BY _distance")
    r = subprocess.run([sys.executable, "-m", "lance_duck", "sql", query, "--format", "json"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    got = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    got = got[0] if len(got) == 1 and isinstance(got[0], list) else got
    want = lance.dataset(vector_table).to_table(columns=["id"], nearest={"column": "vec", "q": Q[1], "k": 3})
    assert [g["id"] for g in got] == want["id"].to_pylist()


def test_searches_in_ctes_joins_and_side_by_side(vector_table):
    q = Q[1]  # noqa: F841
    # (a table with a float16 column cannot be scanned by DuckDB itself: its rows come as an Arrow table)
    cats = lance.dataset(vector_table).to_table(columns=["id", "cat"])  # noqa: F841
    rows = lance_duck.sql(f"WITH s AS (SELECT id, _distance FROM lance_vector_search('{vector_table}', 'vec', q, k => 4)) "
                          "SELECT s.id, t.cat FROM s JOIN cats t ON s.id = t.id ORDER BY s._distance").fetchall()
    want = lance.dataset(vector_table).to_table(columns=["id", "cat"], nearest={"column": "vec", "q": Q[1], "k": 4})
    assert rows == list(zip(want["id"].to_pylist(), want["cat"].to_pylist()))
    pairs = lance_duck.sql(f"SELECT a.id, b.id FROM lance_vector_search('{vector_table}', 'vec', q, k => 2) a, "
                           f"lance_vector_search('{vector_table}', 'vec', q, k => 3, metric => 'cosine') b").fetchall()
    assert len(pairs) == 6
