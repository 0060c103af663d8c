"""Row ids and row versions looked up at offsets (what the change feed reads) equal the fully
decoded sequences, on every segment kind and on the pylance histories' fragments."""
from __future__ import annotations

import numpy as np
import pytest

from lance_duck._proto import rowids_pb2
from lance_duck.errors import CorruptFileError
from lance_duck.table.rowids import (decode_row_ids, decode_version_runs, decode_version_sequence, in_sorted,
                                     row_ids_at, sorted_unique, versions_at)
from lance_duck.table.snapshot import open_snapshot

from .histories import LAST_VERSION


def _sequence() -> bytes:
    seq = rowids_pb2.RowIdSequence()
    seq.segments.add().range.CopyFrom(rowids_pb2.U64Segment.Range(start=100, end=140))
    h = seq.segments.add().range_with_holes
    h.start, h.end = 500, 520
    h.holes.u16_array.base = 500
    h.holes.u16_array.offsets = np.array([3, 7], "<u2").tobytes()
    b = seq.segments.add().range_with_bitmap
    b.start, b.end = 900, 916
    b.bitmap = np.packbits(np.array([1, 0] * 8, bool), bitorder="little").tobytes()
    seq.segments.add().sorted_array.u32_array.offsets = np.array([5, 9, 70000], "<u4").tobytes()
    seq.segments.add().array.u64_array.values = np.array([77, 3, 1 << 40], "<u8").tobytes()
    return seq.SerializeToString()


def test_ids_at_offsets_equal_the_decoded_sequence_on_every_segment_kind():
    raw = _sequence()
    full = decode_row_ids(raw)
    assert len(full) == 40 + 18 + 8 + 3 + 3
    rng = np.random.default_rng(1)
    for k in (1, 5, 30, len(full)):
        offs = np.sort(rng.choice(len(full), k, replace=False))
        assert row_ids_at(raw, len(full), offs).tolist() == full[offs].tolist()
    with pytest.raises(CorruptFileError, match="ids for 99 rows"):
        row_ids_at(raw, 99, np.array([0]))


def test_row_ids_at_unsorted_and_repeated_offsets_keep_their_order():
    raw = _sequence()
    full = decode_row_ids(raw)
    offs = np.random.default_rng(2).integers(0, len(full), 200)
    assert row_ids_at(raw, len(full), offs).tolist() == full[offs].tolist()
    with pytest.raises(IndexError, match="outside"):
        row_ids_at(raw, len(full), np.array([0, len(full)]))


def test_sorted_unique_and_in_sorted_equal_numpys_set_functions():
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 50, 3000):
        a = rng.integers(0, 500, n).astype(np.uint64)
        b = np.unique(rng.integers(0, 500, n // 2 + 1)).astype(np.uint64)
        assert sorted_unique(a).tolist() == np.unique(a).tolist()
        assert in_sorted(a, b).tolist() == np.isin(a, b).tolist()
        assert in_sorted(a, b[:0]).tolist() == [False] * n


def test_versions_at_offsets_equal_the_expanded_runs():
    seq = rowids_pb2.RowDatasetVersionSequence()
    for start, end, v in ((0, 10, 3), (10, 11, 7), (11, 30, 2)):
        r = seq.runs.add(version=v)
        r.span.range.start, r.span.range.end = start, end
    raw = seq.SerializeToString()
    full = decode_version_sequence(raw, 30)
    offs = np.array([0, 9, 10, 11, 29])
    assert versions_at(decode_version_runs(raw, 30), offs).tolist() == full[offs].tolist() == [3, 3, 7, 2, 2]
    with pytest.raises(CorruptFileError, match="covers 30 rows"):
        decode_version_runs(raw, 31)


def test_lookups_equal_full_decodes_on_pylance_fragments(stable_table):
    seen = 0
    for v in range(1, LAST_VERSION + 1):
        for f in open_snapshot(stable_table, v).fragments:
            offs = np.arange(0, f.physical_rows, 3)
            assert f.row_ids_at(offs).tolist() == f.row_ids()[offs].tolist()
            runs = f.last_updated_at_runs()
            assert versions_at(runs, offs).tolist() == f.last_updated_at_versions()[offs].tolist()
            seen += 1
    assert seen > 20
