"""Tiny index selections (point lookups, short ranges) take the lean mini-block read path:
only the selected values are read out of their chunks (no whole-chunk unpacking), and the
results equal pylance's and lance_duck's own unindexed read, for every column type."""
from __future__ import annotations

import warnings

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.file.dispatch import open_data_file
from lance_duck.file.v2_1.layouts.miniblock import LEAN_RANGE_ROWS
from lance_duck.trace import decode_trace

ROWS = 12_000


def _table() -> pa.Table:
    rng = np.random.default_rng(12)
    i = np.arange(ROWS)
    return pa.table({
        "id": pa.array(i, pa.int64()),
        "small": pa.array(rng.integers(0, 300, ROWS), pa.int32()),                 # bit-packed
        "wide": pa.array(rng.integers(-2**40, 2**40, ROWS), pa.int64()),
        "amount": pa.array(rng.random(ROWS), pa.float64()),
        "maybe": pa.array([None if k % 7 == 0 else int(k % 1000) for k in i], pa.int64()),
        "cat": pa.array([f"cat_{k % 5}" for k in i], pa.string()),                  # dictionary
        "name": pa.array([f"name {k * 7919 % 100003}" for k in i], pa.string()),
        "flag": pa.array(i % 3 == 0, pa.bool_()),
        "nums": pa.array([[int(k), int(k) + 1] if k % 5 else None for k in i], pa.list_(pa.int32())),
    })


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def lean_table(request, tmp_path_factory) -> str:
    warnings.simplefilter("ignore", DeprecationWarning)
    path = str(tmp_path_factory.mktemp("lean") / f"t_{request.param.replace('.', '_')}.lance")
    ds = lance.write_dataset(_table(), path, max_rows_per_file=6000, data_storage_version=request.param)
    ds.create_scalar_index("id", "BTREE")
    ds.delete("id = 5001 or id = 9000")
    return path


POINTS = [0, 1023, 1024, 4095, 5999, 6000, 8191, 11_999]
RANGES = [(0, 999), (1000, 1999), (3500, 4499), (5500, 6499), (8000, 8999), (11_000, 11_999)]


def _filters() -> list[str]:
    return ([f"id = {k}" for k in POINTS] + [f"id BETWEEN {a} AND {b}" for a, b in RANGES]
            + ["id >= 2000 AND id < 5000", "id IN (3, 1500, 9001, 11998)"])


@pytest.mark.parametrize("flt", _filters())
def test_lean_reads_equal_pylance_and_the_unindexed_read(lean_table, flt):
    want = lance.dataset(lean_table).to_table(filter=flt)
    ours = lance_duck.dataset(lean_table)
    got = ours.to_table(filter=flt)
    scanned = ours.to_table(filter=flt, use_scalar_index=False)
    assert got.num_rows > 0
    assert got.schema == want.schema
    assert got.equals(want)
    assert scanned.equals(want)


def test_short_range_takes_the_lean_path_without_unpacking_chunks(lean_table):
    ds = lance_duck.dataset(lean_table)
    with decode_trace() as tr:
        got = ds.to_table(filter="id BETWEEN 1000 AND 1999", columns=["id", "small", "amount"])
    assert got.num_rows == 1000
    assert "path:lean-range" in tr.names()
    assert "path:selected:unpack-gather" not in tr.names()
    want = lance.dataset(lean_table).to_table(filter="id BETWEEN 1000 AND 1999", columns=["id", "small", "amount"])
    assert got.equals(want)


def test_point_lookup_reads_single_values(lean_table):
    ds = lance_duck.dataset(lean_table)
    with decode_trace() as tr:
        got = ds.to_table(filter="id = 4095", columns=["id", "small"])
    assert got.to_pydict() == lance.dataset(lean_table).to_table(filter="id = 4095", columns=["id", "small"]).to_pydict()
    # one row: the point reader (path:point-row) or the per-value selection, never a whole block
    assert {"path:selected:inline_bitpacking", "path:point-row"} & set(tr.names())
    assert "path:selected:unpack-gather" not in tr.names()


@pytest.mark.parametrize("start,n", [(0, 1), (1000, 48), (1020, 1000), (2047, LEAN_RANGE_ROWS),
                                     (0, LEAN_RANGE_ROWS + 1), (5000, 1000)])
def test_file_reader_short_ranges_equal_slices_of_the_whole_column(lean_table, start, n):
    snap = lance_duck.dataset(lean_table)._snapshot
    frag = snap.fragments[0]
    fields = list(snap.schema.fields)
    reader = open_data_file(snap.io, frag.file_for_field(fields[0].id))
    whole = reader.read_fields(fields)
    n = min(n, reader.num_rows - start)
    for sel in (range(start, start + n), np.arange(start, start + n, dtype=np.int64)):
        part = reader.read_fields(fields, sel)
        for f, a, b in zip(fields, part, whole):
            assert a.equals(b.slice(start, n)), (f.name, start, n, type(sel))
