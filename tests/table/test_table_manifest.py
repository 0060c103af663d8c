"""Manifest framing, reader feature flags, unknown fragment fields, corrupt manifests and deletion files."""
from __future__ import annotations

import glob
import os
import shutil
import struct

import lance
import pytest

from lance_duck._proto import table_pb2
from lance_duck.errors import CorruptFileError, UnsupportedFeatureError
from lance_duck.table.manifest import decode_manifest, encode_manifest
from lance_duck.table.snapshot import open_snapshot


def _copy_main(src, dst) -> str:
    return str(shutil.copytree(src, dst, ignore=shutil.ignore_patterns("tree")))


def _newest_manifest(path: str) -> str:
    return sorted(glob.glob(os.path.join(path, "_versions", "*.manifest")))[0]  # V2 names: newest first


def _rewrite(path: str, edit) -> None:
    """Decode a real manifest, let ``edit`` change it, and re-frame it at the same position."""
    raw = open(path, "rb").read()
    m = decode_manifest(raw, path)
    (pos,) = struct.unpack_from("<q", raw, len(raw) - 16)
    edit(m)
    open(path, "wb").write(encode_manifest(m, raw[:pos]))


def test_reframing_an_unchanged_manifest_is_byte_identical(histories):
    path = _newest_manifest(histories["hist_2_2"])
    raw = open(path, "rb").read()
    (pos,) = struct.unpack_from("<q", raw, len(raw) - 16)
    assert encode_manifest(decode_manifest(raw, path), raw[:pos]) == raw


@pytest.mark.parametrize("bit", [4, 8, 32])
def test_harmless_reader_flags_are_accepted(histories, tmp_path, bit):
    p = _copy_main(histories["hist_2_2"], tmp_path / "t.lance")
    _rewrite(_newest_manifest(p), lambda m: setattr(m, "reader_feature_flags", m.reader_feature_flags | bit))
    snap = open_snapshot(p)
    assert snap.manifest.reader_feature_flags & bit
    assert snap.count_rows() == lance.dataset(p).count_rows()


@pytest.mark.parametrize("bit", [64, 512, 4096, 1 << 40])
def test_unknown_reader_flags_are_refused_naming_the_bit(histories, tmp_path, bit):
    p = _copy_main(histories["hist_2_2"], tmp_path / "t.lance")
    _rewrite(_newest_manifest(p), lambda m: setattr(m, "reader_feature_flags", m.reader_feature_flags | bit))
    with pytest.raises(UnsupportedFeatureError, match=rf"flag {bit} \("):
        open_snapshot(p)
    if bit in (64, 512, 4096):  # pylance 14.0.2 refuses these too
        with pytest.raises(ValueError):
            lance.dataset(p).count_rows()
    # older versions stay readable
    assert open_snapshot(p, 1).version == 1


def test_overlay_flag_message_says_what_it_is(histories, tmp_path):
    p = _copy_main(histories["hist_2_2"], tmp_path / "t.lance")
    _rewrite(_newest_manifest(p), lambda m: setattr(m, "reader_feature_flags", m.reader_feature_flags | 64))
    with pytest.raises(UnsupportedFeatureError, match="overlay"):
        open_snapshot(p)


def test_fragment_with_unknown_protobuf_field_is_refused(histories, tmp_path):
    p = _copy_main(histories["hist_2_2"], tmp_path / "t.lance")

    def add_unknown(m):
        frag = m.fragments[0]
        frag.MergeFromString(b"\x58\x07")  # field 11, varint 7: not in table.proto
    _rewrite(_newest_manifest(p), add_unknown)
    with pytest.raises(UnsupportedFeatureError, match=r"unknown protobuf field\(s\) \[11\]"):
        open_snapshot(p)


@pytest.mark.parametrize("damage", ["empty", "truncated_tail", "half", "bad_magic", "bad_position",
                                    "bad_length", "garbage_body"])
def test_corrupt_or_truncated_manifest_is_corrupt_file_error(histories, tmp_path, damage):
    p = _copy_main(histories["hist_2_2"], tmp_path / "t.lance")
    path = _newest_manifest(p)
    raw = bytearray(open(path, "rb").read())
    (pos,) = struct.unpack_from("<q", raw, len(raw) - 16)
    if damage == "empty":
        raw = bytearray()
    elif damage == "truncated_tail":
        raw = raw[:-1]
    elif damage == "half":
        raw = raw[len(raw) // 2:]
    elif damage == "bad_magic":
        raw[-4:] = b"XXXX"
    elif damage == "bad_position":
        struct.pack_into("<q", raw, len(raw) - 16, 1 << 40)
    elif damage == "bad_length":
        struct.pack_into("<I", raw, pos, 3)
    elif damage == "garbage_body":
        raw[pos + 4:len(raw) - 16] = b"\xff" * (len(raw) - 16 - pos - 4)
    open(path, "wb").write(bytes(raw))
    with pytest.raises(CorruptFileError, match=os.path.basename(path)):
        open_snapshot(p)


def test_missing_manifest_named_in_error(histories, tmp_path):
    p = _copy_main(histories["hist_2_2"], tmp_path / "t.lance")
    from lance_duck.io.fs import open_io
    from lance_duck.table.manifest import read_manifest
    io, root = open_io(p)
    with pytest.raises(FileNotFoundError, match="nothere.manifest"):
        read_manifest(io, io.join(root, "_versions", "nothere.manifest"))


@pytest.mark.parametrize("ext", [".arrow", ".bin"])
@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_corrupt_deletion_files_are_corrupt_file_errors(histories, tmp_path, ext, damage):
    p = _copy_main(histories["hist_2_2"], tmp_path / "t.lance")
    snap = open_snapshot(p, "after_drop")  # before compaction: .arrow and .bin deletions
    frag = next(f for f in snap.fragments if f.deletion and f.deletion.path.endswith(ext))
    raw = open(frag.deletion.path, "rb").read()
    open(frag.deletion.path, "wb").write(b"\x01\x02garbage" * 3 if damage == "garbage" else raw[: len(raw) // 2])
    with pytest.raises(CorruptFileError, match=os.path.basename(frag.deletion.path)):
        open_snapshot(p, "after_drop").fragment(frag.id).deleted_offsets()


def test_deletion_file_out_of_range_offsets_are_refused(histories, tmp_path):
    import pyarrow as pa
    p = _copy_main(histories["hist_2_2"], tmp_path / "t.lance")
    frag = next(f for f in open_snapshot(p, "after_drop").fragments if f.deletion and f.deletion.path.endswith(".arrow"))
    t = pa.table({"row_id": pa.array([0, frag.physical_rows + 5], pa.uint32())})
    with pa.ipc.new_file(frag.deletion.path, t.schema) as w:
        w.write_table(t)
    with pytest.raises(CorruptFileError, match="has only"):
        open_snapshot(p, "after_drop").fragment(frag.id).deleted_offsets()


def test_missing_deletion_file_is_file_not_found_naming_it(histories, tmp_path):
    p = _copy_main(histories["hist_2_2"], tmp_path / "t.lance")
    frag = next(f for f in open_snapshot(p, "after_drop").fragments if f.deletion)
    os.remove(frag.deletion.path)
    with pytest.raises(FileNotFoundError, match=os.path.basename(frag.deletion.path)):
        open_snapshot(p, "after_drop").fragment(frag.id).deleted_offsets()


def test_manifest_fields_round_trip_through_protobuf(histories):
    path = _newest_manifest(histories["hist_2_2"])
    m = decode_manifest(open(path, "rb").read(), path)
    assert isinstance(m, table_pb2.Manifest) and m.version == lance.dataset(histories["hist_2_2"]).version


def test_unknown_deletion_count_is_read_from_the_deletion_file(histories, tmp_path):
    """num_deleted_rows = 0 means unknown: count_rows() then reads the deletion files."""
    p = _copy_main(histories["hist_2_2"], tmp_path / "t.lance")
    version = lance.dataset(p, version="after_drop").version
    path = sorted(glob.glob(os.path.join(p, "_versions", "*.manifest")))[-version]

    def forget_counts(m):
        for f in m.fragments:
            if f.HasField("deletion_file"):
                f.deletion_file.num_deleted_rows = 0
    _rewrite(path, forget_counts)
    snap = open_snapshot(p, version)
    assert any(f.deletion and f.deletion.num_deleted_rows == 0 for f in snap.fragments)
    pds = lance.dataset(p, version=version)
    assert [f.count_rows() for f in snap.fragments] == [f.count_rows() for f in pds.get_fragments()]
    assert snap.count_rows() == pds.count_rows()


def test_mixed_file_version_flag_needs_its_writer_bit_and_readable_files(histories, tmp_path):
    p = _copy_main(histories["hist_2_2"], tmp_path / "t.lance")
    newest = _newest_manifest(p)
    _rewrite(newest, lambda m: setattr(m, "reader_feature_flags", m.reader_feature_flags | 256))
    with pytest.raises(CorruptFileError, match="256"):  # half-set: reader bit without writer bit
        open_snapshot(p)

    def both_bits(m):
        m.reader_feature_flags |= 256
        m.writer_feature_flags |= 256
    _rewrite(newest, both_bits)
    assert open_snapshot(p).count_rows() == lance.dataset(p).count_rows()

    def unknown_file_version(m):
        m.fragments[0].files[0].file_minor_version = 9
    _rewrite(newest, unknown_file_version)
    with pytest.raises(UnsupportedFeatureError, match=r"format 2\.9"):
        open_snapshot(p)
