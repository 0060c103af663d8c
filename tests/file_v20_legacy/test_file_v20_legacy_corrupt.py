"""Damaged 2.0 / legacy data files raise CorruptFileError (or UnsupportedFeatureError for an
unknown version), naming the file, never a crash deep in protobuf/numpy or wrong data."""
from __future__ import annotations

import dataclasses
import struct

import numpy as np
import pyarrow as pa
import pytest

from .conftest import load_table
from lance_duck.errors import CorruptFileError, LanceDuckError, UnsupportedFeatureError
from lance_duck.file import open_data_file
from lance_duck.file.legacy.dictionary import load_dictionary_values


def _table(n=500):
    return pa.table({
        "i": pa.array(np.arange(n), pa.int64()),
        "s": pa.array([f"value-{i}" for i in range(n)]),
        "l": pa.array([[i] * (i % 3) for i in range(n)], pa.list_(pa.int32())),
    })


@pytest.fixture(scope="module", params=["2.0", "legacy"])
def small(request, tmp_path_factory, lance_mod):
    path = str(tmp_path_factory.mktemp("corrupt") / "t.lance")
    lance_mod.write_dataset(_table(), path, data_storage_version=request.param, max_rows_per_group=128)
    snap = load_table(path)
    ref = snap.fragments[0].files[0]
    return request.param, snap, ref, open(ref.path, "rb").read()


def _open_mutated(snap, ref, data: bytes, tmp_path):
    p = tmp_path / "mutated.lance"
    p.write_bytes(data)
    new_ref = dataclasses.replace(ref, path=str(p), size=len(data))
    return open_data_file(snap.io, new_ref)


def _read_everything(reader, snap):
    return [reader.read_field(snap.schema.field(name)) for name in ("i", "s", "l")]


def test_truncated_file_is_corrupt(small, tmp_path):
    _, snap, ref, data = small
    with pytest.raises(CorruptFileError):
        r = _open_mutated(snap, ref, data[: len(data) // 2] + data[-8:], tmp_path)
        _read_everything(r, snap)


def test_missing_magic_is_corrupt(small, tmp_path):
    _, snap, ref, data = small
    with pytest.raises(CorruptFileError, match="magic"):
        _open_mutated(snap, ref, data[:-4] + b"XXXX", tmp_path)


def test_unknown_file_version_is_unsupported_and_named(small, tmp_path):
    _, snap, ref, data = small
    bad = data[:-8] + struct.pack("<HH", 7, 9) + b"LANC"
    with pytest.raises(UnsupportedFeatureError, match="7.9"):
        _open_mutated(snap, ref, bad, tmp_path)


def test_footer_positions_outside_the_file_are_corrupt(small, tmp_path):
    version, snap, ref, data = small
    if version == "2.0":
        bad = data[:-40] + struct.pack("<QQQ", 2**40, 2**40, 2**40) + data[-16:]
    else:
        bad = data[:-16] + struct.pack("<q", 2**40) + data[-8:]
    with pytest.raises(CorruptFileError):
        _read_everything(_open_mutated(snap, ref, bad, tmp_path), snap)


@pytest.mark.parametrize("seed", range(int(__import__("os").environ.get("LD_FUZZ_SEEDS", "6"))))
def test_garbage_in_metadata_region_never_raises_outside_the_error_family(small, tmp_path, seed):
    """Random bytes over the metadata region: a LanceDuckError or exactly the original values."""
    _, snap, ref, data = small
    original = _read_everything(open_data_file(snap.io, ref), snap)
    rng = np.random.default_rng(seed)
    buf = bytearray(data)
    lo = max(0, len(buf) - 1500)
    pos = rng.integers(lo, len(buf) - 40, 24)
    for p in pos:
        buf[p] = int(rng.integers(0, 256))
    try:
        got = _read_everything(_open_mutated(snap, ref, bytes(buf), tmp_path), snap)
    except LanceDuckError:
        return
    for name, a, b in zip(("i", "s", "l"), got, original):
        assert a.equals(b), f"column {name} changed without an error"


def test_legacy_string_positions_out_of_order_are_corrupt(lance_mod, tmp_path):
    path = str(tmp_path / "leg.lance")
    lance_mod.write_dataset(_table(), path, data_storage_version="legacy", max_rows_per_group=128)
    snap = load_table(path)
    ref = snap.fragments[0].files[0]
    reader = open_data_file(snap.io, ref)
    field = snap.schema.field("s")
    pos, _ = reader._page(field, 0)
    data = bytearray(open(ref.path, "rb").read())
    data[pos + 8: pos + 16] = struct.pack("<q", 2**50)
    with pytest.raises(CorruptFileError, match="string positions"):
        _open_mutated(snap, ref, bytes(data), tmp_path).read_field(field)


def test_legacy_dictionary_outside_manifest_is_corrupt(lance_mod, tmp_path):
    path = str(tmp_path / "d.lance")
    t = pa.table({"d": pa.array(["a", "b", "a"]).dictionary_encode()})
    lance_mod.write_dataset(t, path, data_storage_version="legacy")
    snap = load_table(path)
    field = dataclasses.replace(snap.schema.field("d"), dictionary_offset=10**9)
    with pytest.raises(CorruptFileError, match="outside"):
        load_dictionary_values(b"\0" * 100, field)


@pytest.mark.parametrize("rows", [None, np.arange(0, 500, 7)], ids=["whole", "selected"])
def test_legacy_list_positions_out_of_order_are_corrupt_naming_the_row_group(lance_mod, tmp_path, rows):
    path = str(tmp_path / "leg.lance")
    lance_mod.write_dataset(_table(), path, data_storage_version="legacy", max_rows_per_group=128)
    snap = load_table(path)
    ref = snap.fragments[0].files[0]
    field = snap.schema.field("l")
    pos, _ = open_data_file(snap.io, ref)._page(field, 2)
    data = bytearray(open(ref.path, "rb").read())
    data[pos + 4 * 10: pos + 4 * 11] = struct.pack("<i", 0)  # position 10 of row group 2 drops to 0
    with pytest.raises(CorruptFileError, match="row group 2: list positions are not increasing"):
        _open_mutated(snap, ref, bytes(data), tmp_path).read_field(field, rows)
