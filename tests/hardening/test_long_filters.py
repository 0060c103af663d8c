"""A filter of thousands of ANDed or ORed terms never crashes the process (issue 28 §3).

Arrow canonicalises an Expression into one left-deep chain and overflows its stack near 10,000
terms (SIGSEGV): lance_duck hands Arrow at most a few thousand elements per Expression (SQL
filters: the conjuncts beyond go to the batch evaluator; Expressions from DuckDB's pushdown or the
caller: evaluated in pieces, predicate/long_filters.py). Each query runs in a subprocess, so a
crash fails the test instead of the run; answers are compared with pylance's (which answers
these too) or, for 50,000 terms, with the rows computed here.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import lance
import numpy as np
import pyarrow as pa
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = 30_000


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> str:
    """Three fragments of 10,000 rows; a BTREE on ``i`` and a BITMAP on ``s`` (index paths too)."""
    path = str(tmp_path_factory.mktemp("long") / "t.lance")
    i = np.arange(ROWS, dtype=np.int64)
    lance.write_dataset(pa.table({"i": i, "s": [f"c{k % 9}" for k in i]}), path, max_rows_per_file=10_000)
    ds = lance.dataset(path)
    ds.create_scalar_index("i", "BTREE")
    ds.create_scalar_index("s", "BITMAP")
    return path


def probe(path: str, engine: str, kind: str, n: int) -> dict:
    out = subprocess.run([sys.executable, os.path.join(HERE, "long_filter_probe.py"), path, engine, kind, str(n)],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, (engine, kind, n, out.returncode, out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def expected(kind: str, n: int) -> dict:
    i = np.arange(ROWS)
    s = np.array([f"c{k % 9}" for k in i])
    if kind == "and":
        keep = ~np.isin(i, 3 * np.arange(n))
    elif kind == "ranges":
        keep = ~np.isin(i, 3 * np.arange(1, n, 2)) & (i > 0)
    elif kind == "or":
        keep = np.isin(i, 3 * np.arange(n))
    else:
        keep = (s != "c3") & ~np.isin(i, np.arange(10 * (n // 10)))
    rows = (i[keep].tolist(), s[keep].tolist())
    return {"count": int(keep.sum()), "rows": int(keep.sum()), "digest": hashlib.sha1(repr(rows).encode()).hexdigest()}


@pytest.mark.parametrize("kind,n", [("and", 2_000), ("and", 10_000), ("ranges", 10_000), ("or", 20_000),
                                    ("mixed", 10_000)])
def test_long_sql_filter_counts_and_rows_match_pylance(table, kind, n):
    got = probe(table, "lance_duck", kind, n)
    assert got == probe(table, "pylance", kind, n)
    assert got == expected(kind, n)


def test_fifty_thousand_anded_terms_give_the_rows_computed_here(table):
    assert probe(table, "lance_duck", "and", 50_000) == expected("and", 50_000)


def test_long_left_deep_expression_is_evaluated_in_pieces(table):
    assert probe(table, "expression", "or", 10_000) == expected("or", 10_000)


def test_equal_deep_expression_seen_again_is_bound_on_the_big_stack(table):
    """A second, equal 20,000-term left-deep Expression is not taken for a shallow one seen before."""
    assert probe(table, "expression_again", "and", 20_000) == expected("and", 20_000)


def test_long_where_through_duckdb_pushdown(table):
    """DuckDB pushes the 10,000 comparisons as one left-deep Expression."""
    assert probe(table, "duckdb", "and", 10_000) == expected("and", 10_000)


def test_twelve_thousand_filters_pushed_by_spark(table):
    """Spark pushes one filter per conjunct: the reader ANDs them (balanced) and scans."""
    assert probe(table, "spark", "and", 12_000) == expected("and", 12_000)
