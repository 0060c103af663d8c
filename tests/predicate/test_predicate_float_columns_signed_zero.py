"""Two float expressions compared with each other (``a = b``, ``a < c``, ``a * 1 = b``, ``a IN (b)``)
keep -0.0 below 0.0, as pylance compares them (IEEE 754 totalOrder itself), while a comparison with a
literal keeps the zeros equal (``a = 0.0`` holds for -0.0); NaNs of either sign as before.

Oracle: pylance over the same table, for SQL filters and pyarrow Expressions.
"""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck

NEG_NAN = float(np.array([0xFFF8000000000000], np.uint64).view(np.float64)[0])
A = [-0.0, 0.0, float("nan"), 1.0, -0.0, 0.0, None, NEG_NAN, -1.0]
B = [0.0, 0.0, float("nan"), 1.0, -0.0, -0.0, 0.0, float("nan"), None]
C = [0.0, -0.0, NEG_NAN, 2.0, -0.0, 0.0, 0.0, float("nan"), -1.0]


@pytest.fixture(scope="module")
def path(tmp_path_factory) -> str:
    p = str(tmp_path_factory.mktemp("zeros") / "t.lance")
    lance.write_dataset(pa.table({"id": pa.array(range(len(A)), pa.int64()), "a": pa.array(A, pa.float64()),
                                  "b": pa.array(B, pa.float64()), "c": pa.array(C, pa.float32())}),
                        p, max_rows_per_file=4)
    return p


SQL = ["a = b", "a <> b", "a < b", "a <= b", "a > b", "a >= b", "NOT (a = b)", "a = c", "a > c", "b >= c",
       "a IN (b)", "a IN (b, 5.0)", "a * 1 = b", "a = 0.0", "a = -0.0", "c = 0.0", "a < 0.0 OR b > 0.0"]
F = pc.field
EXPRESSIONS = [F("a") == F("b"), F("a") < F("b"), F("b") <= F("a"), F("a") != F("b")]


@pytest.mark.parametrize("flt", SQL)
def test_two_float_expressions_compare_signed_zeros_as_pylance_does(path, flt):
    want = lance.dataset(path).to_table(columns=["id"], filter=flt)["id"].to_pylist()
    ds = lance_duck.dataset(path)
    assert ds.to_table(columns=["id"], filter=flt)["id"].to_pylist() == want
    assert ds.count_rows(filter=flt) == len(want)


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=str)
def test_an_expression_comparing_two_float_columns_matches_pylance(path, expr):
    want = lance.dataset(path).to_table(columns=["id"], filter=expr)["id"].to_pylist()
    assert lance_duck.dataset(path).to_table(columns=["id"], filter=expr)["id"].to_pylist() == want
