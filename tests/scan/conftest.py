"""Tables written by pylance once per session, for the scan tests."""
from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance  # a test dependency: missing, it must fail, not skip

N_ROWS = 2000
ROWS_PER_FILE = 500
STORAGE_VERSIONS = ["2.0", "2.2", "2.3"]


def rich_table(n: int = N_ROWS, start: int = 0) -> pa.Table:
    """Every column kind the scan must pass through, with nulls."""
    i = np.arange(start, start + n)
    base = dt.datetime(2024, 1, 1)
    return pa.table({
        "id": pa.array(i, pa.int64()),
        "x": pa.array([None if k % 7 == 0 else k * 0.5 for k in i], pa.float64()),
        "name": pa.array([None if k % 11 == 0 else (f"abc{k}" if k % 2 else f"xyz{k}") for k in i]),
        "flag": pa.array(i % 3 == 0),
        "ts": pa.array([base + dt.timedelta(hours=int(k)) for k in i], pa.timestamp("us")),
        "tsz": pa.array([base + dt.timedelta(minutes=int(k)) for k in i], pa.timestamp("us", tz="UTC")),
        "d": pa.array([(base + dt.timedelta(days=int(k) % 400)).date() for k in i], pa.date32()),
        "dec": pa.array([decimal.Decimal(int(k) % 1000) / 100 for k in i], pa.decimal128(10, 2)),
        "s": pa.array([{"a": int(k), "b": f"b{k % 5}"} for k in i],
                      pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "l": pa.array([[int(k), int(k) + 1] if k % 4 else None for k in i], pa.list_(pa.int32())),
        "u": pa.array(i % 300, pa.uint32()),
        "dur": pa.array(i * 1000, pa.duration("us")),
        "ls": pa.array([f"large{k % 13}" for k in i], pa.large_string()),
    })


def write_history(path: str, storage: str, *, stable_row_ids: bool = False) -> str:
    """v1: 1000 rows, v2: +1000 rows, v3: delete id % 100 = 7, v4: a null-only column added."""
    t = rich_table()
    lance.write_dataset(t.slice(0, 1000), path, max_rows_per_file=ROWS_PER_FILE,
                        data_storage_version=storage, enable_stable_row_ids=stable_row_ids)
    lance.write_dataset(t.slice(1000), path, mode="append", max_rows_per_file=ROWS_PER_FILE)
    ds = lance.dataset(path)
    ds.delete("id % 100 = 7")
    ds.add_columns(pa.field("extra", pa.int64()))
    ds = lance.dataset(path)
    ds.tags.create("two", 2)
    return path


@pytest.fixture(scope="session", params=STORAGE_VERSIONS)
def table_path(request, tmp_path_factory) -> str:
    """The rich table (4 fragments, deletions, a field no file holds) per storage version."""
    p = tmp_path_factory.mktemp(f"scan_{request.param}") / "t.lance"
    return write_history(str(p), request.param)


@pytest.fixture(scope="session")
def stable_ids_path(tmp_path_factory) -> str:
    p = tmp_path_factory.mktemp("scan_stable") / "t.lance"
    return write_history(str(p), STORAGE_VERSIONS[-1], stable_row_ids=True)


def assert_tables_equal(got: pa.Table, want: pa.Table) -> None:
    """Schema and values, row order included (NaN-aware via Arrow equality)."""
    assert got.schema.equals(want.schema), f"\n{got.schema}\n!=\n{want.schema}"
    got, want = got.combine_chunks(), want.combine_chunks()
    assert got.num_rows == want.num_rows
    for name in want.column_names:
        assert _same_values(got.column(name), want.column(name)), name


def _same_values(a: pa.ChunkedArray, b: pa.ChunkedArray) -> bool:
    """Arrow equality, where a NaN equals a NaN in the same place (floating columns)."""
    if a.equals(b):
        return True
    if not (pa.types.is_floating(a.type) and a.type == b.type):
        return False
    nan_a, nan_b = pc.is_nan(a), pc.is_nan(b)
    zero = pa.scalar(0, a.type)
    return bool(nan_a.equals(nan_b) and pc.if_else(nan_a, zero, a).equals(pc.if_else(nan_b, zero, b)))
