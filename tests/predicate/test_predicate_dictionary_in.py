"""``IN`` on a dictionary-encoded string column (``dict IN ('red', 'zz')``, ``NOT IN``, with NULL, beside
other terms) selects the rows pylance selects, where it failed with Arrow's "Array type doesn't match
type of values set" (the value set was built as a dictionary).

Oracle: pylance over the same table.
"""
from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_duck

FILTERS = ["d IN ('', 'zz')", "NOT (d IN ('red', 'zz'))", "d NOT IN ('red', NULL)", "d IN ('red') OR id < 3",
           "d IN ('red', 'blue') AND id > 2", "d IN (NULL, 'blue')"]


@pytest.fixture(scope="module")
def path(tmp_path_factory) -> str:
    p = str(tmp_path_factory.mktemp("dictin") / "t.lance")
    values = ["red", "green", None, "blue", "", "red", "blue", None, "green"]
    lance.write_dataset(pa.table({"id": pa.array(range(len(values)), pa.int64()),
                                  "d": pa.array(values).dictionary_encode()}), p, max_rows_per_file=4)
    return p


@pytest.mark.parametrize("flt", FILTERS)
def test_in_on_a_dictionary_column_selects_pylances_rows(path, flt):
    want = lance.dataset(path).to_table(filter=flt)["id"].to_pylist()
    ds = lance_duck.dataset(path)
    assert ds.to_table(filter=flt)["id"].to_pylist() == want
    assert ds.count_rows(filter=flt) == len(want)
