"""Shared assertions for the predicate tests."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc


def _nan_free(col: pa.ChunkedArray) -> tuple[pa.ChunkedArray, pa.ChunkedArray | None]:
    if pa.types.is_floating(col.type):
        nan = pc.is_nan(col)
        return pc.if_else(nan, pa.scalar(0.0, col.type), col), nan
    return col, None


def assert_tables_equal(got: pa.Table, expected: pa.Table) -> None:
    """Same schema, same rows in the same order; NaN equals NaN."""
    assert got.schema == expected.schema
    assert got.num_rows == expected.num_rows, (got.num_rows, expected.num_rows)
    for name in expected.column_names:
        g, gn = _nan_free(got[name])
        e, en = _nan_free(expected[name])
        assert g.equals(e), f"column {name} differs"
        if gn is not None:
            assert gn.equals(en), f"NaN positions of {name} differ"
