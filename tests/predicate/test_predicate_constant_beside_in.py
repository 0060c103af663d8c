"""A constant beside an ``IN`` under ``NOT`` (``NOT (true AND x IN (1, 5))``) filters as pylance does,
instead of failing with pyarrow's TypeError while the filter is built.

Oracle: pylance over the same table.
"""
from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_duck

FILTERS = ["NOT (true AND x IN (1, 5))", "(y > 3 AND NOT ((true AND x IN (1, 5))))",
           "NOT (false OR s IN ('a', 'ab'))", "NOT (x IN (1, 5) AND true)", "false OR NOT (x IN (2))"]


@pytest.fixture(scope="module")
def path(tmp_path_factory) -> str:
    p = str(tmp_path_factory.mktemp("constin") / "t.lance")
    lance.write_dataset(pa.table({"x": pa.array([1, 2, None, 5, 7, 1], pa.int8()),
                                  "y": pa.array([4, 5, 6, None, 9, 1], pa.int32()),
                                  "s": pa.array(["a", "ab", None, "b", "", "a"])}), p, max_rows_per_file=4)
    return p


@pytest.mark.parametrize("flt", FILTERS)
def test_a_constant_beside_an_in_list_filters_as_pylance_does(path, flt):
    want = lance.dataset(path).to_table(filter=flt)
    ds = lance_duck.dataset(path)
    assert ds.to_table(filter=flt).equals(want)
    assert ds.count_rows(filter=flt) == want.num_rows
