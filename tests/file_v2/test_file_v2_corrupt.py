"""Damaged or unknown input raises a LanceDuckError naming the problem; never wrong data or a hang."""
from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pyarrow as pa
import pytest
from google.protobuf import any_pb2

from lance_duck._proto import encodings_v2_1_pb2 as pb
from lance_duck._proto import file2_pb2
from lance_duck.errors import CorruptFileError, LanceDuckError, UnsupportedFeatureError
from lance_duck.file import open_data_file


def _copy_file(fx, tmp_path, mutate):
    ref = fx.snap.fragments[0].files[0]
    dst = tmp_path / "copy.lance"
    shutil.copy(ref.path, dst)
    data = bytearray(dst.read_bytes())
    data = mutate(data)
    dst.write_bytes(bytes(data))
    return fx.snap.io, dataclasses.replace(ref, path=str(dst), size=len(data))


def _read_all(io, ref, fields):
    reader = open_data_file(io, ref)
    return [reader.read_field(f) for f in fields]


@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
def test_truncated_file_raises_corrupt(v2_datasets, tmp_path, version):
    fx = v2_datasets("prim_p02", version)
    for cut in (10, 5000):
        io, ref = _copy_file(fx, tmp_path, lambda d: d[: len(d) - cut])
        with pytest.raises(CorruptFileError):
            _read_all(io, ref, fx.fields())


@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
def test_file_cut_before_its_metadata_raises_corrupt(v2_datasets, tmp_path, version):
    fx = v2_datasets("prim_p02", version)

    def cut_middle(d):  # keep the footer, drop half of the data: offsets now point outside
        return d[: len(d) // 2] + d[-40:]
    io, ref = _copy_file(fx, tmp_path, cut_middle)
    with pytest.raises(CorruptFileError):
        _read_all(io, ref, fx.fields())


GARBAGE = {
    "page_length_too_large": lambda p, r: setattr(p, "length", p.length + 1000),
    "buffer_outside_file": lambda p, r: p.buffer_offsets.__setitem__(0, 1 << 50) if len(p.buffer_offsets) else
    setattr(p, "length", p.length + 1),
    "buffers_dropped": lambda p, r: (p.ClearField("buffer_offsets"), p.ClearField("buffer_sizes"),
                                     setattr(p, "length", p.length + 1)),
    "encoding_bytes_garbage": lambda p, r: setattr(p.encoding.direct, "encoding",
                                                   r.integers(0, 256, 40, dtype=np.uint8).tobytes()),
}


@pytest.mark.parametrize("kind", GARBAGE)
@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
def test_garbage_column_metadata_raises_lance_duck_error(v2_datasets, kind, version):
    fx = v2_datasets("nested_p02", version)
    reader = fx.reader()
    rng = np.random.default_rng(0)
    for i in range(reader.container.num_columns):
        cm = file2_pb2.ColumnMetadata()
        cm.CopyFrom(reader.container.column(i))
        for page in cm.pages:
            GARBAGE[kind](page, rng)
        reader.container._columns[i] = cm
    for f in fx.fields():
        with pytest.raises(LanceDuckError):
            reader.read_field(f)


def test_unparseable_column_metadata_raises_corrupt(v2_datasets, tmp_path):
    fx = v2_datasets("prim_p02", "2.1")
    reader = fx.reader()
    pos, size = reader.container.column_meta[0]

    def smash(d):
        d[pos: pos + size] = b"\xff" * size
        return d
    io, ref = _copy_file(fx, tmp_path, smash)
    reader = open_data_file(io, ref)
    f = fx.fields()[[x.id for x in fx.fields()].index(ref.fields[0])]
    with pytest.raises(CorruptFileError, match="column 0"):
        reader.read_field(f)


def _with_page_layout(reader, col: int, edit):
    cm = file2_pb2.ColumnMetadata()
    cm.CopyFrom(reader.container.column(col))
    for page in cm.pages:
        anyv = any_pb2.Any()
        anyv.ParseFromString(page.encoding.direct.encoding)
        edit(anyv)
        page.encoding.direct.encoding = anyv.SerializeToString()
    reader.container._columns[col] = cm


def test_unknown_page_encoding_type_is_named(v2_datasets):
    fx = v2_datasets("prim_nonull", "2.2")
    reader = fx.reader()
    f = fx.snap.schema.field("i64")

    def rename(anyv):
        anyv.type_url = "/lance.encodings99.FuturePlanarLayout"
    _with_page_layout(reader, reader.ref.column_of(f.id), rename)
    with pytest.raises(UnsupportedFeatureError, match="FuturePlanarLayout"):
        reader.read_field(f)


def test_unknown_compression_in_mini_block_is_named(v2_datasets):
    fx = v2_datasets("prim_nonull", "2.1")
    reader = fx.reader()
    f = fx.snap.schema.field("i64")

    def swap(anyv):
        lay = pb.PageLayout()
        lay.ParseFromString(anyv.value)
        lay.mini_block_layout.value_compression.Clear()
        lay.mini_block_layout.value_compression.constant.value = b"\x01" * 8
        anyv.value = lay.SerializeToString()
    col = reader.ref.column_of(f.id)
    _with_page_layout(reader, col, swap)
    with pytest.raises(UnsupportedFeatureError, match=rf"column {col}.*'constant'"):
        reader.read_field(f)


def test_empty_page_layout_is_unsupported(v2_datasets):
    fx = v2_datasets("prim_nonull", "2.2")
    reader = fx.reader()
    f = fx.snap.schema.field("str_hex")

    def empty(anyv):
        anyv.value = b""
    _with_page_layout(reader, reader.ref.column_of(f.id), empty)
    with pytest.raises(UnsupportedFeatureError, match="layout None"):
        reader.read_field(f)


@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
def test_chunk_metadata_pointing_past_the_buffer_raises_corrupt(v2_datasets, tmp_path, version):
    fx = v2_datasets("prim_nonull", version)
    reader = fx.reader()
    f = fx.snap.schema.field("i64")
    page = reader.container.column(reader.ref.column_of(f.id)).pages[0]
    off, size = page.buffer_offsets[0], page.buffer_sizes[0]

    def huge_chunks(d):
        d[off: off + size] = b"\xf0" * size
        return d
    io, ref = _copy_file(fx, tmp_path, huge_chunks)
    with pytest.raises(CorruptFileError):
        open_data_file(io, ref).read_field(f)


def _field_ranges(reader, field) -> list[tuple[int, int]]:
    """[start, end) byte ranges of every page and column buffer of a field's columns."""
    out = []
    for f in field.walk():
        col = reader.ref.column_of(f.id)
        if col is None:
            continue
        cm = reader.container.column(col)
        out += [(o, o + n) for o, n in zip(cm.buffer_offsets, cm.buffer_sizes)]
        for p in cm.pages:
            out += [(o, o + n) for o, n in zip(p.buffer_offsets, p.buffer_sizes)]
    return out


DAMAGED = [("nested_p02", v) for v in ("2.1", "2.2", "2.3")] + [("fsl_nested_p30", "2.3"), ("more_p30", "2.3")]


@pytest.mark.parametrize("table,version", DAMAGED, ids=[f"{t}-{v}" for t, v in DAMAGED])
@pytest.mark.parametrize("seed", range(4))
def test_random_page_byte_damage_never_crashes_outside_the_error_family(v2_datasets, tmp_path, table, version, seed):
    """Outcomes per field: a field whose bytes were not touched reads exactly as before; a damaged
    one raises a LanceDuckError or (data pages carry no checksums) decodes to the same type and
    row count. Never another exception. (2.3: also tables of sparse list / fixed-size-list layers.)"""
    fx = v2_datasets(table, version)
    rng = np.random.default_rng(seed)
    reader = fx.reader()
    original = {f.id: reader.read_field(f) for f in fx.fields()}
    first = min(p.buffer_offsets[0] for i in range(reader.container.num_columns)
                for p in reader.container.column(i).pages if len(p.buffer_offsets))
    end = reader.container.global_buffers[0][0]
    positions = [int(p) for p in rng.integers(first, end, 40)]

    def damage(d):
        for pos in positions:
            d[pos] = int(rng.integers(0, 256))
        return d
    io, ref = _copy_file(fx, tmp_path, damage)
    r = open_data_file(io, ref)
    untouched = errors = 0  # fields read exactly as before / refused
    for f in fx.fields():
        hit = any(lo <= p < hi for lo, hi in _field_ranges(reader, f) for p in positions)
        try:
            got = r.read_field(f)
        except LanceDuckError:
            assert hit, f"{f.name}: error although none of its bytes were damaged"
            errors += 1
            continue
        if not hit:
            assert got.equals(original[f.id]), f"{f.name}: changed although none of its bytes were damaged"
            untouched += 1
        else:
            assert got.type == original[f.id].type and len(got) == len(original[f.id]), f.name
            try:  # values may differ (page bytes carry no checksum) but the array is valid throughout
                got.validate(full=True)
            except pa.ArrowInvalid as exc:
                assert "Invalid UTF8" in str(exc), f"{f.name}: {exc}"
    assert untouched + errors < len(fx.fields()) or errors, "the damage reached no field"
