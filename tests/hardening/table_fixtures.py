"""Helpers for the table-layer hardening tests: small pylance-written tables and manifest surgery.

pylance (test-only) writes every table; lance_duck and pylance then read the same bytes. Nothing
here is a fixture by itself (the folder's conftest belongs to nobody in particular): test modules
wrap these functions in their own fixtures.
"""
from __future__ import annotations

import glob
import os
import shutil
import struct

import numpy as np
import pyarrow as pa

from lance_duck._proto import table_pb2
from lance_duck.table.manifest import FOOTER_LEN, encode_manifest

# Every storage version pylance 14 writes, plus the legacy (0.1 / 0.2) format.
STORAGE_VERSIONS = ("legacy", "2.0", "2.1", "2.2", "2.3")
# Fragment sizes: the middle one is big enough for pylance to store a dense delete as a bitmap.
FRAGMENT_ROWS = (300, 5200, 300)


def lance():
    import lance as _lance  # test-only dependency

    return _lance


def sample_table(start: int, n: int, struct_nulls: bool = True) -> pa.Table:
    """ints, strings, lists, structs, with nulls in each (2.0 files cannot hold null structs)."""
    i = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "i": i,
        "n": pa.array([None if k % 11 == 0 else int(k) * 3 for k in i], pa.int32()),
        "s": pa.array([None if k % 7 == 0 else f"str-{k % 53}" for k in i], pa.string()),
        "l": pa.array([None if k % 13 == 0 else list(range(k % 4)) for k in i], pa.list_(pa.int64())),
        "st": pa.StructArray.from_arrays(
            [pa.array((i % 100).astype(np.int32)), pa.array([f"x{k % 5}" for k in i])], names=["a", "b"],
            mask=pa.array(i % 17 == 0) if struct_nulls else None),
    })


def make_table(path: str, storage_version: str, *, stable_row_ids: bool = False) -> str:
    """Three fragments (300, 5200, 300 rows); fragment 0 gets a sparse delete (``.arrow``
    deletion file), fragment 1 a dense one (``.bin`` roaring bitmap); fragment 2 has none."""
    L = lance()
    kw = {"enable_stable_row_ids": True} if stable_row_ids else {}
    start = 0
    for k, n in enumerate(FRAGMENT_ROWS):
        L.write_dataset(sample_table(start, n, storage_version != "2.0"), path, mode="append" if k else "create",
                        data_storage_version=storage_version, max_rows_per_group=128, **kw)
        start += n
    ds = L.dataset(path)
    ds.delete("i % 29 = 3 AND i < 300")                # a few rows of fragment 0: Arrow array
    ds.delete("i >= 300 AND i < 5390 AND i != 2000")    # most of fragment 1: roaring bitmap
    return path


def deletion_kinds(path: str) -> set[str]:
    return {os.path.splitext(p)[1] for p in glob.glob(os.path.join(path, "_deletions", "*"))}


def latest_manifest_path(path: str) -> str:
    from lance_duck.table.versions import list_versions
    from lance_duck.io.fs import open_io

    io, root = open_io(path)
    entries = list_versions(io, root)
    return os.path.join(root, "_versions", entries[-1].name)


def split_manifest(raw: bytes) -> tuple[bytes, table_pb2.Manifest]:
    """(bytes before the manifest's length prefix, the decoded Manifest)."""
    (pos,) = struct.unpack_from("<q", raw, len(raw) - FOOTER_LEN)
    (length,) = struct.unpack_from("<I", raw, pos)
    m = table_pb2.Manifest()
    m.ParseFromString(raw[pos + 4: pos + 4 + length])
    return raw[:pos], m


def edit_manifest(path: str, edit) -> None:
    """Apply ``edit(manifest)`` to the latest manifest of the table at ``path`` (in place)."""
    mp = latest_manifest_path(path)
    with open(mp, "rb") as f:
        prefix, m = split_manifest(f.read())
    edit(m)
    with open(mp, "wb") as f:
        f.write(encode_manifest(m, prefix))


def copy_table(src: str, dst: str) -> str:
    shutil.copytree(src, dst)
    return dst


def deletion_files(path: str) -> list[str]:
    return sorted(glob.glob(os.path.join(path, "_deletions", "*")))


def read_ld(path: str, **kw) -> pa.Table:
    import lance_duck

    return lance_duck.dataset(path, **kw).to_table()


def read_pylance(path: str, **kw) -> pa.Table:
    return lance().dataset(path, **kw).to_table()
