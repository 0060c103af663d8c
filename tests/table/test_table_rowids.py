"""Row-id sequences of every segment kind, checked against pylance's ``_rowid`` on rewritten manifests."""
from __future__ import annotations

import glob
import os
import shutil
import struct

import lance
import numpy as np
import pytest

from lance_duck._proto import rowids_pb2
from lance_duck.errors import CorruptFileError
from lance_duck.table.manifest import decode_manifest, encode_manifest
from lance_duck.table.rowids import decode_row_ids, decode_version_sequence
from lance_duck.table.snapshot import open_snapshot


def _encoded(values: np.ndarray, width: str) -> rowids_pb2.EncodedU64Array:
    arr = rowids_pb2.EncodedU64Array()
    if width == "u64":
        arr.u64_array.values = values.astype("<u8").tobytes()
    else:
        base = int(values.min()) if values.size else 0
        target = arr.u16_array if width == "u16" else arr.u32_array
        target.base = base
        target.offsets = (values - np.uint64(base)).astype("<u2" if width == "u16" else "<u4").tobytes()
    return arr


def _segment(values: np.ndarray, kind: str) -> rowids_pb2.U64Segment:
    """Encode ``values`` (sorted ascending unless kind == 'array') as one segment of ``kind``."""
    seg = rowids_pb2.U64Segment()
    lo, hi = int(values.min()), int(values.max()) + 1
    if kind == "range":
        assert hi - lo == values.size
        seg.range.start, seg.range.end = lo, hi
    elif kind.startswith("range_with_holes"):
        holes = np.setdiff1d(np.arange(lo, hi, dtype=np.uint64), values)
        seg.range_with_holes.start, seg.range_with_holes.end = lo, hi
        seg.range_with_holes.holes.CopyFrom(_encoded(holes, kind.split("/")[1]))
    elif kind == "range_with_bitmap":
        bits = np.zeros(hi - lo, dtype=np.uint8)
        bits[(values - np.uint64(lo)).astype(np.int64)] = 1
        seg.range_with_bitmap.start, seg.range_with_bitmap.end = lo, hi
        seg.range_with_bitmap.bitmap = np.packbits(bits, bitorder="little").tobytes()
    else:
        name, width = kind.split("/")
        getattr(seg, name).CopyFrom(_encoded(values, width))
    return seg


KINDS = ["range_with_holes/u16", "range_with_holes/u32", "range_with_holes/u64", "range_with_bitmap",
         "sorted_array/u16", "sorted_array/u32", "sorted_array/u64", "array/u32", "array/u64", "array/u16"]


def test_every_segment_kind_decodes_like_pylance(histories, tmp_path):
    src = histories["hist_2_1_stable"]
    p = str(shutil.copytree(src, tmp_path / "t.lance", ignore=shutil.ignore_patterns("tree")))
    version = lance.dataset(p, version="after_drop").version
    path = sorted(glob.glob(os.path.join(p, "_versions", "*.manifest")))[-version]
    raw = open(path, "rb").read()
    m = decode_manifest(raw, path)
    assert m.version == version
    snap = open_snapshot(p, version)
    used = set()
    k = 0
    for frag_pb, frag in zip(m.fragments, snap.fragments):
        ids = frag.row_ids()
        seq = rowids_pb2.RowIdSequence()
        for chunk in np.array_split(ids, 4):
            if chunk.size == 0:
                continue
            kind = KINDS[k % len(KINDS)]
            k += 1
            if kind.startswith(("range_with", "sorted")) and not np.all(np.diff(chunk.astype(np.int64)) > 0):
                kind = "array/u64"
            if kind == "array/u16" and int(chunk.max()) - int(chunk.min()) >= 1 << 16:
                kind = "array/u32"
            if kind == "array/u16":
                chunk = chunk[::-1].copy()  # unsorted values for the plain array kind
            if kind.endswith("u16") and int(chunk.max()) - int(chunk.min()) >= 1 << 16:
                kind = kind.replace("u16", "u32")
            used.add(kind)
            seq.segments.append(_segment(chunk, kind))
        frag_pb.inline_row_ids = seq.SerializeToString()
    (pos,) = struct.unpack_from("<q", raw, len(raw) - 16)
    open(path, "wb").write(encode_manifest(m, raw[:pos]))
    assert len(used) >= 8, used
    pds = lance.dataset(p, version=version)
    want = pds.to_table(columns=["id"], with_row_id=True)["_rowid"].to_numpy()
    snap = open_snapshot(p, version)
    got = np.concatenate([f.row_ids()[np.setdiff1d(np.arange(f.physical_rows), f.deleted_offsets())]
                          for f in snap.fragments])
    assert np.array_equal(got, want)


def test_bitmap_segments_are_lsb_first():
    seg = rowids_pb2.U64Segment()
    seg.range_with_bitmap.start, seg.range_with_bitmap.end = 100, 110
    seg.range_with_bitmap.bitmap = bytes([0b00000101, 0b10])
    seq = rowids_pb2.RowIdSequence(segments=[seg])
    assert decode_row_ids(seq.SerializeToString()).tolist() == [100, 102, 109]


def test_version_sequences_repeat_each_run():
    runs = rowids_pb2.RowDatasetVersionSequence()
    for n, v in ((3, 1), (2, 5)):
        r = runs.runs.add()
        r.span.range.start, r.span.range.end = 0, n
        r.version = v
    assert decode_version_sequence(runs.SerializeToString(), 5).tolist() == [1, 1, 1, 5, 5]
    with pytest.raises(CorruptFileError, match="covers 5 rows"):
        decode_version_sequence(runs.SerializeToString(), 6)


def test_corrupt_row_id_sequences_are_refused():
    with pytest.raises(CorruptFileError):
        decode_row_ids(b"\xff\xff\xff")
    seg = rowids_pb2.U64Segment()
    seg.range.start, seg.range.end = 10, 5
    with pytest.raises(CorruptFileError, match="invalid segment range"):
        decode_row_ids(rowids_pb2.RowIdSequence(segments=[seg]).SerializeToString())
    seg = rowids_pb2.U64Segment()
    seg.range.start, seg.range.end = 0, 1 << 60  # a corrupt length must not allocate
    with pytest.raises(CorruptFileError):
        decode_row_ids(rowids_pb2.RowIdSequence(segments=[seg]).SerializeToString())
    seg = rowids_pb2.U64Segment()
    seg.array.u32_array.offsets = b"\x01\x02\x03"
    with pytest.raises(CorruptFileError, match="multiple of 4"):
        decode_row_ids(rowids_pb2.RowIdSequence(segments=[seg]).SerializeToString())


def test_external_row_id_file_is_read_by_range(histories, tmp_path):
    """A fragment whose sequence lives in an external file (byte range) decodes the same."""
    src = histories["hist_2_1_stable"]
    p = str(shutil.copytree(src, tmp_path / "t.lance", ignore=shutil.ignore_patterns("tree")))
    path = sorted(glob.glob(os.path.join(p, "_versions", "*.manifest")))[0]
    raw = open(path, "rb").read()
    m = decode_manifest(raw, path)
    before = open_snapshot(p).fragments[0].row_ids().copy()
    blob = m.fragments[0].inline_row_ids
    with open(os.path.join(p, "rowids.bin"), "wb") as f:
        f.write(b"HEADER" + blob + b"TRAILER")
    m.fragments[0].external_row_ids.path = "rowids.bin"
    m.fragments[0].external_row_ids.offset = 6
    m.fragments[0].external_row_ids.size = len(blob)
    (pos,) = struct.unpack_from("<q", raw, len(raw) - 16)
    open(path, "wb").write(encode_manifest(m, raw[:pos]))
    snap = open_snapshot(p)
    assert snap.fragments[0].pb.WhichOneof("row_id_sequence") == "external_row_ids"
    assert np.array_equal(snap.fragments[0].row_ids(), before)
