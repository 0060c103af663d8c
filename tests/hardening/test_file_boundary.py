"""The file layer's boundary: damaged data files surface as CorruptFileError naming the file (and
the fields), raised from the original exception; I/O errors and our own errors pass through."""
from __future__ import annotations

import dataclasses
import shutil
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import CorruptFileError, UnsupportedFeatureError
from lance_duck.file import open_data_file
from lance_duck.table.snapshot import open_snapshot

GOLDEN_LEGACY = Path(__file__).resolve().parents[1] / "data" / "legacy_pylance_0_10_18.lance"


@pytest.fixture(scope="module")
def lance_mod():
    import lance
    return lance


@pytest.fixture(scope="module")
def tables(tmp_path_factory, lance_mod) -> dict[str, str]:
    n = 1200
    t = pa.table({
        "i": pa.array(np.arange(n), pa.int64()),
        "small": pa.array(np.arange(n) % 17, pa.int32()),
        "s": pa.array([f"v{i % 50}" for i in range(n)]),
        "l": pa.array([[i] * (i % 3) for i in range(n)], pa.list_(pa.int32())),
    })
    out = {}
    for version in ("legacy", "2.0", "2.1", "2.2", "2.3"):
        path = str(tmp_path_factory.mktemp("boundary") / f"t_{version}.lance")
        lance_mod.write_dataset(t, path, data_storage_version=version, max_rows_per_file=600)
        out[version] = path
    return out


def _copy(src: str, dst: Path) -> str:
    shutil.copytree(src, dst)
    return str(dst)


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2", "2.3"])
def test_swapped_column_indices_raise_corrupt_naming_the_file(tables, version):
    """A manifest pointing an int field at a string column (and back) is reported, not a raw
    ``ValueError: Non-fixed width type``."""
    snap = open_snapshot(tables[version])
    ref = snap.fragments[0].files[0]
    cols = list(ref.column_indices)
    i, s = ref.fields.index(snap.schema.field("i").id), ref.fields.index(snap.schema.field("s").id)
    cols[i], cols[s] = cols[s], cols[i]
    reader = open_data_file(snap.io, dataclasses.replace(ref, column_indices=tuple(cols)))
    for name in ("i", "s"):
        with pytest.raises(CorruptFileError, match=rf"{ref.path}.*{name}"):
            reader.read_field(snap.schema.field(name))


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2", "2.3"])
def test_column_metadata_entry_zeroed_is_corrupt_in_scan_take_and_filter(tables, tmp_path, version):
    """A column whose metadata entry says "no pages" decodes fewer rows than the file holds: the
    scan, a take and a filter all report the file instead of misaligned batches."""
    path = _copy(tables[version], tmp_path / "t.lance")
    snap = open_snapshot(path)
    ref = snap.fragments[0].files[0]
    col = ref.column_of(snap.schema.field("small").id)
    data = bytearray(Path(ref.path).read_bytes())
    cmo = struct.unpack("<Q", data[-32:-24])[0]
    data[cmo + 16 * col: cmo + 16 * col + 16] = bytes(16)
    Path(ref.path).write_bytes(bytes(data))
    ds = lance_duck.dataset(path)
    name = Path(ref.path).name
    with pytest.raises(CorruptFileError, match=name):
        ds.to_table()
    with pytest.raises(CorruptFileError, match=name):
        ds.take([0, 5, 599])
    with pytest.raises(CorruptFileError, match=name):
        ds.to_table(filter="small = 3")
    # the other fragment is intact and still reads
    assert ds.to_table(fragments=[ds.get_fragments()[1]]).num_rows == 600


def _first_reader(path: str):
    snap = open_snapshot(path)
    return snap, open_data_file(snap.io, snap.fragments[0].files[0])


# the innermost decoding step of each reader, patched to raise what damaged bytes could raise
DECODERS = {
    "legacy": ("lance_duck.file.legacy.reader.LegacyFileReader._read", struct.error("unpack requires 8 bytes")),
    "2.0": ("lance_duck.file.v2_0.reader.V20FileReader._read", pa.ArrowInvalid("Buffer too small")),
    "2.1": ("lance_duck.file.v2_1.reader.build", IndexError("index 7 is out of bounds")),
    "2.2": ("lance_duck.file.v2_1.reader.build", OverflowError("Python int too large")),
}


@pytest.mark.parametrize("version", DECODERS)
def test_raw_decoding_error_becomes_corrupt_from_the_original(tables, monkeypatch, version):
    target, exc = DECODERS[version]
    snap, reader = _first_reader(tables[version])

    def boom(*a, **k):
        raise exc
    monkeypatch.setattr(target, boom)
    with pytest.raises(CorruptFileError) as info:
        reader.read_field(snap.schema.field("small"))
    msg = str(info.value)
    assert reader.ref.path in msg and "'small'" in msg and type(exc).__name__ in msg
    assert info.value.__cause__ is exc


@pytest.mark.parametrize("raised", [FileNotFoundError("gone.lance"), PermissionError("denied"),
                                    UnsupportedFeatureError("future encoding")])
def test_io_errors_and_our_errors_pass_the_boundary_as_they_are(tables, monkeypatch, raised):
    snap, reader = _first_reader(tables["2.2"])

    def boom(*a, **k):
        raise raised
    monkeypatch.setattr("lance_duck.file.v2_1.reader.build", boom)
    with pytest.raises(type(raised)) as info:
        reader.read_field(snap.schema.field("small"))
    assert not isinstance(info.value, CorruptFileError)
    if isinstance(raised, UnsupportedFeatureError):  # ours: the same class, now naming the file
        assert reader.ref.path in str(info.value) and "future encoding" in str(info.value)
    else:
        assert info.value is raised


def test_truncated_data_file_is_corrupt_for_every_version(tables, tmp_path):
    for version, src in tables.items():
        path = _copy(src, tmp_path / version)
        f = min(Path(path, "data").glob("*.lance"))
        f.write_bytes(f.read_bytes()[:-100])
        with pytest.raises(CorruptFileError, match=f.name):
            lance_duck.dataset(path).to_table()


def test_legacy_fixed_width_values_come_back_aligned(lance_mod):
    """Legacy writers put pages at unaligned file positions; the values handed to Arrow (and to
    Acero, which warns and may crash on some hardware) are aligned to their width."""
    ours = lance_duck.dataset(str(GOLDEN_LEGACY)).to_table()
    checked = 0
    for name in ("id", "i32", "f64", "f32", "ts", "day"):
        for chunk in ours.column(name).chunks:
            width = chunk.type.bit_width // 8
            assert chunk.buffers()[1].address % min(width, 8) == 0, name
            checked += 1
    assert checked >= 6
    theirs = lance_mod.dataset(str(GOLDEN_LEGACY)).to_table()
    assert ours.select(["id", "i32", "f64", "f32", "ts", "day"]).equals(
        theirs.select(["id", "i32", "f64", "f32", "ts", "day"]))


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2", "2.3"])
@pytest.mark.parametrize("rows", [None, range(100)], ids=["all", "first100"])
def test_pages_stating_other_row_counts_than_the_file_are_corrupt(tables, version, rows):
    """Page lengths that do not add up to the file's row count are damage, even when the rows
    asked for could be decoded from the first page."""
    from lance_duck._proto import file2_pb2
    snap, reader = _first_reader(tables[version])
    field = snap.schema.field("i")
    col = reader.ref.column_of(field.id)
    cm = file2_pb2.ColumnMetadata()
    cm.CopyFrom(reader.container.column(col))
    cm.pages[0].length += 1 << 40
    reader.container._columns[col] = cm
    with pytest.raises(CorruptFileError, match=rf"{reader.ref.path}.*column {col}"):
        reader.read_field(field, rows)


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2", "2.3"])
def test_file_stating_zero_rows_under_a_fragment_of_600_is_corrupt(tables, tmp_path, version):
    """The file's own row count (FileDescriptor.length) damaged to 0: the scan's rows are not an
    invalid argument but a file whose count disagrees with its pages."""
    path = _copy(tables[version], tmp_path / "t.lance")
    snap = open_snapshot(path)
    ref = snap.fragments[0].files[0]
    reader = open_data_file(snap.io, ref)
    pos, size = reader.container.global_buffers[0]
    data = bytearray(Path(ref.path).read_bytes())
    length = b"\x10\xd8\x04"                                   # field 2 (length) = 600, a varint
    at = bytes(data[pos: pos + size]).rfind(length)
    assert at >= 0
    data[pos + at: pos + at + 3] = b"\x10\x80\x00"             # = 0, same size (non-minimal varint)
    Path(ref.path).write_bytes(bytes(data))
    assert open_data_file(snap.io, ref).num_rows == 0
    with pytest.raises(CorruptFileError, match=rf"{Path(ref.path).name}.*\b0 rows.*\b600\b"):
        lance_duck.dataset(path).to_table()


def test_legacy_file_whose_metadata_lists_no_row_groups_is_corrupt(tables, tmp_path):
    """Legacy metadata damaged into "no row groups" under a fragment of 600 rows."""
    from lance_duck._proto import file_pb2
    path = _copy(tables["legacy"], tmp_path / "t.lance")
    f = min(Path(path, "data").glob("*.lance"))
    data = f.read_bytes()
    (meta_pos,) = struct.unpack("<q", data[-16:-8])
    (mlen,) = struct.unpack("<I", data[meta_pos: meta_pos + 4])
    meta = file_pb2.Metadata()
    meta.ParseFromString(data[meta_pos + 4: meta_pos + 4 + mlen])
    assert len(meta.batch_offsets) > 1
    meta.ClearField("batch_offsets")
    raw = meta.SerializeToString()
    out = data[:meta_pos] + struct.pack("<I", len(raw)) + raw
    f.write_bytes(out + bytes(len(data) - 16 - len(out)) + data[-16:])   # same size as the manifest says
    with pytest.raises(CorruptFileError, match=rf"{f.name}.*(no row groups|\b0 rows.*\b600\b)"):
        lance_duck.dataset(path).to_table()
