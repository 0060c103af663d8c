"""Random predicates: our evaluation equals DuckDB's evaluation of the same SQL on the same table.

LIKE patterns avoid backslashes: pylance (whose dialect we follow) escapes with a backslash, DuckDB
does not.
"""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lance_duck.predicate import compile_filter

N = 300
_rng = np.random.default_rng(11)
_x = _rng.choice([-2.5, -1.0, 0.0, 0.5, 1.0, 3.25, np.nan], N)
TABLE = pa.table({
    "id": pa.array(np.arange(N)),
    "a": pa.array([None if i % 7 == 0 else int(v) for i, v in enumerate(_rng.integers(-5, 6, N))], pa.int32()),
    "x": pa.array([None if i % 11 == 0 else float(v) for i, v in enumerate(_x)], pa.float64()),
    "name": pa.array([None if i % 5 == 0 else s for i, s in enumerate(_rng.choice(["ab", "abc", "b", "ba", "c%"], N))]),
    "flag": pa.array([None if i % 4 == 0 else bool(i % 3) for i in range(N)]),
})

INTS = st.sampled_from(["-3", "0", "2", "5", "NULL"])
FLOATS = st.sampled_from(["-1.0", "0.0", "0.5", "3.25", "NULL"])
STRS = st.sampled_from(["'ab'", "'b'", "'c%'", "'zz'", "NULL"])
OPS = st.sampled_from(["=", "<>", "<", "<=", ">", ">="])


def _atoms():
    cmp_a = st.tuples(OPS, INTS).map(lambda t: f"a {t[0]} {t[1]}")
    cmp_x = st.tuples(OPS, FLOATS).map(lambda t: f"x {t[0]} {t[1]}")
    cmp_n = st.tuples(OPS, STRS).map(lambda t: f"name {t[0]} {t[1]}")
    arith = st.tuples(OPS, INTS).map(lambda t: f"a + 1 {t[0]} {t[1]}")
    in_a = st.tuples(st.booleans(), st.lists(INTS, min_size=1, max_size=3)).map(
        lambda t: f"a {'NOT ' if t[0] else ''}IN ({', '.join(t[1])})")
    in_n = st.tuples(st.booleans(), st.lists(STRS, min_size=1, max_size=3)).map(
        lambda t: f"name {'NOT ' if t[0] else ''}IN ({', '.join(t[1])})")
    between = st.tuples(st.booleans(), INTS, INTS).map(
        lambda t: f"a {'NOT ' if t[0] else ''}BETWEEN {t[1]} AND {t[2]}")
    isnull = st.tuples(st.sampled_from(["a", "x", "name", "flag"]), st.booleans()).map(
        lambda t: f"{t[0]} IS {'NOT ' if t[1] else ''}NULL")
    like = st.tuples(st.booleans(), st.sampled_from(["a%", "%b", "_b%", "c_", "%"])).map(
        lambda t: f"name {'NOT ' if t[0] else ''}LIKE '{t[1]}'")
    flag = st.sampled_from(["flag", "NOT flag", "flag IS TRUE", "flag IS NOT FALSE", "flag = false"])
    return st.one_of(cmp_a, cmp_x, cmp_n, arith, in_a, in_n, between, isnull, like, flag)


PREDICATES = st.recursive(
    _atoms(),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        inner.map(lambda p: f"NOT ({p})"),
    ),
    max_leaves=6,
)


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    c.register("arrow_t", TABLE)      # copied into DuckDB's own storage: DuckDB 1.x pushes float
    c.execute("CREATE TABLE t AS SELECT * FROM arrow_t")    # comparisons into Arrow with Arrow's NaN meaning
    return c


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sql=PREDICATES)
def test_random_predicate_selects_the_same_rows_as_duckdb(con, sql):
    expected = [r[0] for r in con.execute(f"SELECT id FROM t WHERE {sql} ORDER BY id").fetchall()]
    got = compile_filter(sql, TABLE.schema).apply(TABLE)["id"].to_pylist()
    assert got == expected, sql
