"""BTREE / BITMAP indices over many column types: used, and the scan equals a full scan (and pylance)."""
from __future__ import annotations

import datetime as dt
import decimal

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck

BASE = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
INDICES = [("i8", "BTREE"), ("u32", "BITMAP"), ("f32", "BTREE"), ("ls", "BITMAP"), ("ts", "BTREE"),
           ("b", "BITMAP"), ("dec", "BTREE")]


@pytest.fixture(scope="module")
def typed(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("types") / "t.lance")
    i = np.arange(6000)
    t = pa.table({
        "i8": pa.array((i % 100) - 50, pa.int8()),
        "u32": pa.array(i % 1000, pa.uint32()),
        "f32": pa.array([None if k % 13 == 0 else float(k % 50) / 4 for k in i], pa.float32()),
        "ls": pa.array([f"v{k % 40}" for k in i], pa.large_string()),
        "ts": pa.array([BASE + dt.timedelta(hours=int(k % 500)) for k in i], pa.timestamp("us", tz="UTC")),
        "b": pa.array(i % 3 == 0),
        "dec": pa.array([decimal.Decimal(int(k % 300)) / 10 for k in i], pa.decimal128(8, 1)),
    })
    ds = lance.write_dataset(t, path, max_rows_per_file=2000)
    for col, kind in INDICES:
        ds.create_scalar_index(col, kind)
    return path


SQL = ["i8 = -3", "i8 < -48", "u32 IN (5, 999)", "f32 = 2.5", "f32 < 0.3", "f32 IS NULL", "ls = 'v7'",
       "ls IN ('v1', 'v2')", "ts = TIMESTAMP '2024-01-02 03:00:00'", "ts < TIMESTAMP '2024-01-01 02:00:00'",
       "b = true", "b IS NULL"]


@pytest.mark.parametrize("flt", SQL)
def test_typed_index_scan_equals_pylance_full_scan(typed, flt):
    ds = lance_duck.dataset(typed)
    # a float ``<`` too: the indices are searched for the NaNs with their sign bit set it keeps
    assert ds.scanner(filter=flt)._index_selections() is not None
    got = ds.to_table(filter=flt)
    assert got.equals(lance.dataset(typed).to_table(filter=flt, use_scalar_index=False))
    assert got.equals(ds.to_table(filter=flt, use_scalar_index=False))


@pytest.mark.parametrize("flt", [
    pc.field("ts") == pa.scalar(BASE + dt.timedelta(hours=27), pa.timestamp("us", tz="UTC")),
    pc.field("i8") == pa.scalar(-3, pa.int8()),
    pc.field("dec") == pa.scalar(decimal.Decimal("12.3"), pa.decimal128(8, 1)),
    pc.field("ls") == "v7",                       # string literal, large_string column: no conjunct
])
def test_typed_index_scan_with_pushed_expressions(typed, flt):
    ds = lance_duck.dataset(typed)
    got = ds.to_table(filter=flt)
    assert got.num_rows > 0 and got.equals(ds.to_table(filter=flt, use_scalar_index=False))
