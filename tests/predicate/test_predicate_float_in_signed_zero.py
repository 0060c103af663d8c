"""``x IN (...)`` on floats matches ``-0.0`` and ``0.0`` alike, as ``=`` does and pylance does (Arrow's
hashed ``is_in`` tells the two zeros apart); with and without a scalar index on the column."""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck

VALUES = [0.0, -0.0, 1.0, float("nan"), None, -0.0, 2.5, float("inf")] * 50
FILTERS = ["f IN (0.0, 2.5)", "g IN (0.0)", "f IN (-0.0)", "g IN (-0.0, 1.0)", "f = 0.0",
           "f IN (0.0) OR i = 3", "NOT (f IN (0.0, 1.0))", "f IN (0.0, NULL)"]


@pytest.fixture(scope="module", params=["plain", "indexed"])
def table_path(request, tmp_path_factory) -> str:
    t = pa.table({"f": pa.array(VALUES, pa.float64()), "g": pa.array(VALUES, pa.float32()),
                  "i": np.arange(len(VALUES))})
    path = str(tmp_path_factory.mktemp("zeros") / "t.lance")
    ds = lance.write_dataset(t, path, max_rows_per_file=100)
    if request.param == "indexed":
        ds.create_scalar_index("f", "BTREE")
        ds.create_scalar_index("g", "BITMAP")
    return path


@pytest.mark.parametrize("flt", FILTERS)
def test_float_in_matches_both_zeros_like_pylance(table_path, flt):
    ref = lance.dataset(table_path).to_table(filter=flt, use_scalar_index=False)
    got = lance_duck.dataset(table_path).to_table(filter=flt)
    assert got["i"].equals(ref["i"])                  # (row ids: NaN values never compare equal)
    assert lance_duck.dataset(table_path).count_rows(flt) == ref.num_rows
    assert ref.num_rows > 0
