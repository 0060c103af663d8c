"""A tiny selection over plain and nested columns together: the plain columns take the lean
mini-block path, the lists and structs the general path, in one read (``path:lean-split``).
Results equal pylance's and lance_duck's own unindexed read, at chunk and file edges, with
deletions, for 2.1 and 2.2; a contiguous run of rows stays a range on the lean path."""
from __future__ import annotations

import warnings

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.file.dispatch import open_data_file
from lance_duck.trace import decode_trace

ROWS = 9_000
FILE_ROWS = 4_500


def _table() -> pa.Table:
    rng = np.random.default_rng(21)
    i = np.arange(ROWS)
    return pa.table({
        "id": pa.array(i, pa.int64()),
        "nums": pa.array([[int(k), int(k) + 1] if k % 5 else None for k in i], pa.list_(pa.int32())),
        "amount": pa.array(rng.random(ROWS), pa.float64()),
        "pt": pa.StructArray.from_arrays([pa.array(i % 97, pa.int32()), pa.array([f"s{k % 13}" for k in i])],
                                         names=["x", "s"], mask=pa.array(i % 11 == 0)),
        "cat": pa.array([f"cat_{k % 6}" for k in i], pa.string()),
        "maybe": pa.array([None if k % 7 == 0 else int(k) for k in i], pa.int64()),
        "tags": pa.array([[f"t{k % 3}"] * int(k % 3) for k in i], pa.list_(pa.string())),
    })


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def split_table(request, tmp_path_factory) -> str:
    warnings.simplefilter("ignore", DeprecationWarning)
    path = str(tmp_path_factory.mktemp("split") / f"t_{request.param.replace('.', '_')}.lance")
    ds = lance.write_dataset(_table(), path, max_rows_per_file=FILE_ROWS, data_storage_version=request.param)
    ds.create_scalar_index("id", "BTREE")
    ds.delete("id = 1024 or id = 4600 or id = 8999")
    return path


FILTERS = ["id = 0", "id = 1023", "id = 1025", "id = 4095", "id = 4499", "id = 4500", "id = 8998",
           "id BETWEEN 1000 AND 1999", "id BETWEEN 4000 AND 4999", "id BETWEEN 8000 AND 8999",
           "id IN (3, 1500, 4501, 8997)", "id = 1024"]


@pytest.mark.parametrize("flt", FILTERS)
def test_mixed_plain_and_nested_columns_equal_pylance_and_the_unindexed_read(split_table, flt):
    want = lance.dataset(split_table).to_table(filter=flt)
    ours = lance_duck.dataset(split_table)
    ours.to_table(filter=flt)                 # (the first read keeps the page metadata)
    with decode_trace() as tr:
        got = ours.to_table(filter=flt)
    scanned = ours.to_table(filter=flt, use_scalar_index=False)
    assert got.schema == want.schema
    assert got.equals(want)
    assert scanned.equals(want)
    if want.num_rows:
        assert "path:lean-rows" in tr.names()
        assert tr.values("path:lean-split"), "the nested columns went through the general path"
        for lean, general in tr.values("path:lean-split"):
            assert general == 3 and lean >= 3       # (the filter column may be read first, alone)


def _reader(path: str):
    snap = lance_duck.dataset(path)._snapshot
    frag = snap.fragments[0]
    fields = list(snap.schema.fields)
    return open_data_file(snap.io, frag.file_for_field(fields[0].id)), fields


@pytest.mark.parametrize("start,n", [(0, 1), (1023, 2), (1000, 1000), (4095, 405), (4499, 1)])
def test_file_reader_mixed_fields_equal_slices_of_the_whole_columns(split_table, start, n):
    reader, fields = _reader(split_table)
    whole = reader.read_fields(fields)
    for sel in (range(start, start + n), np.arange(start, start + n, dtype=np.int64),
                np.arange(start, start + n, 3, dtype=np.int64)):
        with decode_trace() as tr:
            part = reader.read_fields(fields, sel)
        idx = np.asarray(sel, dtype=np.int64)
        for f, a, b in zip(fields, part, whole):
            assert a.equals(b.take(pa.array(idx))), (f.name, start, n, type(sel))
        assert tr.values("path:lean-split") == [(4, 3)]


def test_a_contiguous_run_is_planned_as_a_range_on_each_page(split_table):
    """A run of rows reaches the mini-block pages as a range (located by its two ends), not
    as one offset per row; the values equal the offsets' read."""
    reader, fields = _reader(split_table)
    plain = [f for f in fields if f.name in ("id", "amount", "cat", "maybe")]
    reader.read_fields(plain)                 # keeps the page metadata
    lc = reader._lean_field(plain[0], False)[0]
    parts = lc.plan(range(1000, 3000))
    assert parts is not None and all(isinstance(p[-1], range) for p in parts)
    with decode_trace() as tr:
        by_range = reader.read_fields(plain, range(1000, 3000))
    assert "path:lean-range" in tr.names()
    by_offsets = reader.read_fields(plain, np.arange(1000, 3000, dtype=np.int64))
    for a, b in zip(by_range, by_offsets):
        assert a.equals(b)
