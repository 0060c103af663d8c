"""Table-layer failures surface as lance_duck's errors (or FileNotFoundError), never raw
``UnicodeDecodeError`` / ``ArrowIndexError`` / ``TypeError`` / ``NotADirectoryError`` / ``OverflowError``.
"""
from __future__ import annotations

import datetime
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lance_duck
from lance_duck.errors import CorruptFileError, LanceDuckError

from . import table_fixtures as T


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return T.make_table(str(tmp_path_factory.mktemp("errs") / "t.lance"), "2.1")


@pytest.fixture
def table(base, tmp_path):
    return T.copy_table(base, str(tmp_path / "t.lance"))


def _arrow_deletion(table: str) -> str:
    return next(p for p in T.deletion_files(table) if p.endswith(".arrow"))


def _bin_deletion(table: str) -> str:
    return next(p for p in T.deletion_files(table) if p.endswith(".bin"))


def _damage(path: str, fn) -> None:
    with open(path, "rb") as f:
        raw = f.read()
    with open(path, "wb") as f:
        f.write(fn(raw))


def _ipc(batch: pa.RecordBatch, metadata=None) -> bytes:
    sink = pa.BufferOutputStream()
    schema = batch.schema.with_metadata(metadata) if metadata else batch.schema
    with pa.ipc.new_file(sink, schema) as w:
        w.write_batch(batch.replace_schema_metadata(metadata) if metadata else batch)
    return sink.getvalue().to_pybytes()


ARROW_DAMAGE = {
    "truncated": lambda raw: raw[: len(raw) // 2],
    "garbage": lambda raw: b"\xff" * len(raw),
    "footer_flipped": lambda raw: raw[:-12] + bytes(b ^ 0x5A for b in raw[-12:-6]) + raw[-6:],
    "empty": lambda raw: b"",
    "bad_utf8_metadata": lambda raw: _ipc(pa.record_batch([pa.array([1], pa.uint32())], names=["row_id"]),
                                          {b"k": b"\xff\xfe"}).replace(b"\xff\xfe", b"\xc3\x28"),
    "float_offsets": lambda raw: _ipc(pa.record_batch([pa.array([1.5], pa.float64())], names=["row_id"])),
    "offset_beyond_rows": lambda raw: _ipc(pa.record_batch([pa.array([2, 9999], pa.uint32())], names=["row_id"])),
    "compressed_length_negative": None,  # built in the test from the real file
}


@pytest.mark.parametrize("kind", sorted(ARROW_DAMAGE))
def test_damaged_arrow_deletion_file_raises_corrupt_file_error(table, kind):
    path = _arrow_deletion(table)
    if kind == "compressed_length_negative":
        _damage(path, _negative_compression_prefix)
    else:
        _damage(path, ARROW_DAMAGE[kind])
    with pytest.raises(CorruptFileError, match=os.path.basename(path)):
        T.read_ld(table)


def _negative_compression_prefix(raw: bytes) -> bytes:
    """Set the first ``-1`` (stored uncompressed) buffer prefix of the batch body to ``-2``."""
    minus_one = (-1).to_bytes(8, "little", signed=True)
    at = raw.index(minus_one, raw.index(b"\xff\xff\xff\xff", 8 + 4 + 100))
    return raw[:at] + (-2).to_bytes(8, "little", signed=True) + raw[at + 8:]


@pytest.mark.parametrize("kind", ["truncated", "garbage", "empty", "rows_beyond_fragment"])
def test_damaged_bitmap_deletion_file_raises_corrupt_file_error(table, kind):
    from pyroaring import BitMap

    path = _bin_deletion(table)
    fn = {"truncated": lambda raw: raw[: len(raw) // 3], "garbage": lambda raw: b"\x3b\x30" + b"\xff" * 60,
          "empty": lambda raw: b"", "rows_beyond_fragment": lambda raw: BitMap([5, 70_000, 2**31]).serialize()}[kind]
    _damage(path, fn)
    with pytest.raises(CorruptFileError, match=os.path.basename(path)):
        T.read_ld(table)


TAG_DOCS = {
    "list": [1, 2],
    "version_string": {"branch": None, "version": "three"},
    "version_null": {"branch": None, "version": None},
    "version_negative": {"branch": None, "version": -4},
    "no_version": {"branch": None},
    "created_at_number": {"branch": None, "version": 1, "createdAt": 5},
    "created_at_bad_date": {"branch": None, "version": 1, "createdAt": "2024-13-45T99:00:00Z"},
    "metadata_list": {"branch": None, "version": 1, "metadata": [1]},
    "branch_number": {"branch": 7, "version": 1},
}


@pytest.mark.parametrize("kind", sorted(TAG_DOCS) + ["not_json", "not_utf8"])
def test_malformed_tag_file_raises_corrupt_file_error(table, kind):
    T.lance().dataset(table).tags.create("t1", 1)
    path = os.path.join(table, "_refs", "tags", "t1.json")
    with open(path, "wb") as f:
        f.write({"not_json": b"{version: 1", "not_utf8": b"\xff\xfe{}"}.get(kind) or json.dumps(TAG_DOCS[kind]).encode())
    with pytest.raises(CorruptFileError, match="t1.json"):
        lance_duck.dataset(table, version="t1")
    with pytest.raises(CorruptFileError, match="t1.json"):
        lance_duck.dataset(table).tags.list()


BRANCH_DOCS = {
    "list": [1],
    "identifier_string": {"identifier": "x"},
    "mapping_not_pairs": {"identifier": {"version_mapping": [1, 2]}},
    "mapping_bad_version": {"identifier": {"version_mapping": [["x", "u"]]}},
    "metadata_list": {"metadata": [1]},
}


@pytest.mark.parametrize("kind", sorted(BRANCH_DOCS) + ["not_json"])
def test_malformed_branch_file_raises_corrupt_file_error(table, kind):
    T.lance().dataset(table).create_branch("b1", 1)
    path = os.path.join(table, "_refs", "branches", "b1.json")
    with open(path, "wb") as f:
        f.write(b"[" if kind == "not_json" else json.dumps(BRANCH_DOCS[kind]).encode())
    with pytest.raises(CorruptFileError, match="b1.json"):
        lance_duck.dataset(table, branch="b1")
    with pytest.raises(CorruptFileError, match="b1.json"):
        lance_duck.dataset(table).branches.list()


def test_parquet_file_given_as_table_path_is_not_a_lance_table(tmp_path):
    p = str(tmp_path / "x.parquet")
    pq.write_table(pa.table({"a": [1]}), p)
    with pytest.raises(FileNotFoundError, match="Not a Lance table: .*x.parquet is a file"):
        lance_duck.dataset(p)


def test_lance_data_file_given_as_table_path_is_not_a_lance_table(table):
    data = os.path.join(table, "data", sorted(os.listdir(os.path.join(table, "data")))[0])
    with pytest.raises(FileNotFoundError, match="Not a Lance table"):
        lance_duck.dataset(data)


def test_directory_without_manifests_is_not_a_lance_table(tmp_path):
    with pytest.raises(FileNotFoundError, match="Not a Lance table"):
        lance_duck.dataset(str(tmp_path))


def test_largest_manifest_timestamp_reads_like_pylance(table):
    def edit(m):
        m.timestamp.seconds = 2**63 - 1
    T.edit_manifest(table, edit)
    ds = lance_duck.dataset(table)
    assert ds.to_table().equals(T.read_pylance(table))
    pl = T.lance().dataset(table)
    assert ds.versions()[-1]["timestamp"] == pl.versions()[-1]["timestamp"]
    assert ds._snapshot.timestamp == datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def test_data_file_vanished_under_a_pinned_version_names_version_and_cleanup(table):
    ds = lance_duck.dataset(table, version=1)
    L = T.lance()
    L.write_dataset(T.sample_table(0, 10), table, mode="overwrite", data_storage_version="2.1")
    L.dataset(table).cleanup_old_versions(older_than=datetime.timedelta(0), delete_unverified=True)
    with pytest.raises(FileNotFoundError, match=r"data file .* of version 1 is missing; the version was probably "
                                                r"cleaned up"):
        ds.to_table()


def test_deletion_file_vanished_under_a_pinned_version_names_version_and_cleanup(table):
    ds = lance_duck.dataset(table)
    version = ds.version
    os.remove(_arrow_deletion(table))
    with pytest.raises(FileNotFoundError, match=rf"deletion file .*\.arrow of version {version} is missing; "
                                                r"the version was probably cleaned up"):
        ds.to_table()


def test_no_raw_exception_escapes_for_bad_paths(table):
    for bad in ("a\0b.lance", "", "z" * 300):
        def edit(m, bad=bad):
            m.fragments[0].files[0].path = bad
        T.edit_manifest(table, edit)
        with pytest.raises(LanceDuckError):
            T.read_ld(table)
