"""What pylance 14.0.2 writes and reads (issue 14, part B): every version of tables written through its
disk-changing operations, blob columns of both blob versions, reader flags 128 / 1024 / 2048 / 16384,
and the manifest fields it added (fragment tree, highest allocated field id, clustering)."""
from __future__ import annotations

import glob
import os
import shutil
import struct

import duckdb
import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import CorruptFileError, UnsupportedFeatureError
from lance_duck.scan.duckdb_source import HAS_PROTOCOL
from lance_duck.table.manifest import MAGIC, decode_manifest, encode_manifest
from lance_duck.table.snapshot import open_snapshot

import lance_pylance14 as P14

HERE = os.path.dirname(__file__)
GOLDEN = os.path.join(os.path.dirname(HERE), "data", "pylance14_flags")


# -- fixtures -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("pylance14"))
    out = {"ops_2_2": os.path.join(root, "ops_2_2.lance"),
           "ops_2_1_stable": os.path.join(root, "ops_stable.lance"),
           "ops_2_0": os.path.join(root, "ops_2_0.lance"), "ops_2_3": os.path.join(root, "ops_2_3.lance"),
           "auto_cleanup": os.path.join(root, "ac.lance"),
           "branch": os.path.join(root, "br.lance"), "clone": os.path.join(root, "clone.lance"),
           "managed": os.path.join(root, "managed.lance")}
    P14.make_operations_table(out["ops_2_2"], "2.2")
    P14.make_operations_table(out["ops_2_1_stable"], "2.1", stable_row_ids=True)
    P14.make_operations_table(out["ops_2_0"], "2.0")
    P14.make_operations_table(out["ops_2_3"], "2.3")
    P14.make_auto_cleanup_table(out["auto_cleanup"])
    P14.make_branch_and_clone(out["branch"], out["clone"])
    P14.make_managed_blob_table(out["managed"])
    out.update({f"blob_{k}": v for k, v in P14.make_blob_tables(root).items()})
    return out


def _pylance(path, version=None, branch=None):
    ds = lance.dataset(path)
    if branch is not None:
        return ds.checkout_version((branch, version))
    return ds if version is None else ds.checkout_version(version)


def _has_blob(f: pa.Field) -> bool:
    if f.metadata and b"lance-encoding:blob" in f.metadata:
        return True
    return pa.types.is_struct(f.type) and any(_has_blob(f.type.field(i)) for i in range(f.type.num_fields))


def _plain_columns(schema: pa.Schema) -> list[str]:
    """Columns DuckDB can be asked for (blob columns: see test_duckdb_reads_blob_tables_like_pylance)."""
    return [f.name for f in schema if not _has_blob(f)]


def assert_reads_like_pylance(path: str, version=None, branch=None) -> None:
    """to_table, take, a filter, row ids and DuckDB give what pylance gives at this version."""
    theirs = _pylance(path, version, branch)
    ours = lance_duck.dataset(path, version=version, branch=branch)
    where = f"{os.path.basename(path)} v{theirs.version}" + (f" branch {branch}" if branch else "")
    a, b = ours.to_table(), theirs.to_table()
    assert a.schema.equals(b.schema, check_metadata=True), f"{where}\n{a.schema}\n!=\n{b.schema}"
    assert a.equals(b), where
    assert ours.schema.equals(theirs.schema, check_metadata=True), where
    n = theirs.count_rows()
    assert ours.count_rows() == n, where
    idx = sorted({0, n // 3, n // 2, max(n - 1, 0)}) if n else []
    if idx:
        assert ours.take(idx).equals(theirs.take(idx)), where
    flt = "id >= 100 AND id < 300"
    assert ours.to_table(filter=flt).equals(theirs.to_table(filter=flt)), where
    assert ours.count_rows(filter=flt) == theirs.count_rows(filter=flt), where
    plain = _plain_columns(b.schema)
    a = ours.to_table(columns=["id"], with_row_id=True)
    b = theirs.to_table(columns=["id"], with_row_id=True)
    assert a.equals(b), f"{where}: _rowid"
    cols = ", ".join(f'"{c}"' for c in plain)
    got = duckdb.sql(f"select {cols} from ours where id >= 100").fetchall()
    expected_arrow = theirs.to_table(columns=plain)
    want = duckdb.sql(f"select {cols} from expected_arrow where id >= 100").fetchall()
    assert sorted(map(repr, got)) == sorted(map(repr, want)), f"{where}: DuckDB"


def _every_version(path: str) -> list[int]:
    return [v["version"] for v in lance.dataset(path).versions()]


# -- operations, every version ---------------------------------------------------------------------
@pytest.mark.parametrize("name", ["ops_2_2", "ops_2_1_stable", "ops_2_0", "ops_2_3"])
def test_every_version_after_every_disk_changing_operation_reads_like_pylance(written, name):
    path = written[name]
    versions = _every_version(path)
    assert len(versions) >= 14, versions   # every operation committed a version
    for v in versions:
        assert_reads_like_pylance(path, v)
    newest = open_snapshot(path).manifest
    assert newest.reader_feature_flags & 256    # the last compaction wrote another file version
    assert len({(f.file_major_version, f.file_minor_version) for fr in newest.fragments for f in fr.files}) == 2


def test_deferred_index_remap_leaves_a_fragment_reuse_index_and_filters_stay_exact(written):
    path = written["ops_2_2"]
    deferred = [v for v in _every_version(path)
                if "__lance_frag_reuse" in [i.name for i in _pylance(path, v).describe_indices()]]
    assert deferred                                 # compaction with defer_index_remap=True
    for v in deferred:
        for flt in ("id = 150", "id < 30", "id >= 400"):
            got = lance_duck.dataset(path, version=v).to_table(filter=flt)
            assert got.equals(_pylance(path, v).to_table(filter=flt)), (v, flt)


def test_stable_row_ids_survive_compaction_like_pylance(written):
    path = written["ops_2_1_stable"]
    ours, theirs = lance_duck.dataset(path), lance.dataset(path)
    assert open_snapshot(path).has_stable_row_ids
    a = ours.to_table(columns=["id"], with_row_id=True, with_row_address=True)
    b = theirs.to_table(columns=["id"], with_row_id=True, with_row_address=True)
    assert a.equals(b)
    assert not np.array_equal(a.column("_rowid").to_numpy(), a.column("_rowaddr").to_numpy())


def test_auto_cleanup_removed_versions_and_the_rest_read_like_pylance(written):
    path = written["auto_cleanup"]
    versions = _every_version(path)
    assert versions[0] > 1                       # auto_cleanup removed the oldest versions
    assert [v["version"] for v in lance_duck.dataset(path).versions()] == versions
    for v in versions:
        assert_reads_like_pylance(path, v)


def test_branch_and_shallow_clone_versions_read_like_pylance(written):
    path, clone = written["branch"], written["clone"]
    for v in _every_version(path):
        assert_reads_like_pylance(path, v)
    branch_versions = [v["version"] for v in lance.dataset(path).checkout_version(("exp", None)).versions()]
    for v in branch_versions:
        assert_reads_like_pylance(path, v, branch="exp")
    for v in _every_version(clone):
        assert_reads_like_pylance(clone, v)


# -- blob columns ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["v1_2.0", "v1_2.1", "v1_2.2", "v2"])
def test_blob_columns_read_as_pylance_returns_them_at_every_version(written, kind):
    path = written[f"blob_{kind}"]
    for v in _every_version(path):
        assert_reads_like_pylance(path, v)
    schema = lance_duck.dataset(path).to_table().schema
    blobs = [schema.field("b")] + ([schema.field("s").type.field("nb")] if "s" in schema.names else [])
    for b in blobs:                             # top-level and inside a struct
        assert b.metadata[b"lance-encoding:blob"] == b"true"
        assert pa.types.is_struct(b.type)       # descriptions, not the bytes


def test_blob_v2_descriptions_cover_inline_packed_dedicated_and_external(written):
    t = lance_duck.dataset(written["blob_v2"]).to_table()
    kinds = set(t.column("b").combine_chunks().field("kind").drop_null().to_pylist())
    assert {0, 1, 2, 3} <= kinds, kinds
    assert t.column("b").null_count == lance.dataset(written["blob_v2"]).to_table().column("b").null_count > 0


def test_duckdb_reads_blob_tables_like_pylance(written):
    """Other columns read as with pylance's dataset. The blob column: pylance's dataset declares the
    blob type while its scans return descriptions, so DuckDB refuses it; DuckDB 2 binds our dataset
    with the schema its streams have and returns pylance's descriptions (DuckDB 1.x binds a pyarrow
    dataset by its declared schema, pylance's, and fails on both alike)."""
    ours = lance_duck.dataset(written["blob_v2"])
    theirs = lance.dataset(written["blob_v2"])
    assert duckdb.sql("select sum(id) from ours").fetchall() == duckdb.sql("select sum(id) from theirs").fetchall()
    # DuckDB 2.x names the struct it got ("kind"); 1.5 fails converting it as the declared binary
    refused = (duckdb.InvalidInputException, duckdb.ConversionException)
    with pytest.raises(refused, match="kind|Strings over"):
        duckdb.sql("select b from theirs").fetchall()
    if HAS_PROTOCOL:
        want = [(r["b"],) for r in theirs.to_table(columns=["b"]).to_pylist()]
        assert duckdb.sql("select b from ours").fetchall() == want
    else:
        with pytest.raises(refused, match="kind|Strings over"):
            duckdb.sql("select b from ours").fetchall()


def test_schema_metadata_is_kept_on_scans_takes_and_projections(written):
    path = written["blob_v1_2.2"]
    ours, theirs = lance_duck.dataset(path), lance.dataset(path)
    for get in (lambda d: d.to_table(columns=["id"]), lambda d: d.take([0, 1], columns=["id"]),
                lambda d: d.to_table(columns={"x": "id + 1"}), lambda d: d.get_fragments()[0].to_table()):
        a, b = get(ours), get(theirs)
        assert a.schema.metadata == b.schema.metadata == {b"owner": b"tests"}
        assert a.equals(b)


# -- reader feature flags ------------------------------------------------------------------------------
def test_managed_blobs_set_flag_16384_and_read_like_pylance(written):
    path = written["managed"]
    m = open_snapshot(path).manifest
    assert m.reader_feature_flags & 16384 and m.writer_feature_flags & 16384
    assert_reads_like_pylance_no_filter(path)
    kinds = lance_duck.dataset(path).to_table().column("b").combine_chunks().field("kind").to_pylist()
    assert kinds == [4, None, 0, 4]


def assert_reads_like_pylance_no_filter(path: str) -> None:
    ours, theirs = lance_duck.dataset(path), lance.dataset(path)
    a, b = ours.to_table(), theirs.to_table()
    assert a.schema.equals(b.schema, check_metadata=True) and a.equals(b)
    assert ours.take([0, 3]).equals(theirs.take([0, 3]))


def _newest_manifest(path: str) -> str:
    return sorted(glob.glob(os.path.join(path, "_versions", "*.manifest")))[0]


def _rewrite(path: str, edit, extra: bytes = b"") -> None:
    raw = open(path, "rb").read()
    m = decode_manifest(raw, path)
    (pos,) = struct.unpack_from("<q", raw, len(raw) - 16)
    edit(m)
    if not extra:
        open(path, "wb").write(encode_manifest(m, raw[:pos]))
        return
    body = m.SerializeToString() + extra
    open(path, "wb").write(raw[:pos] + struct.pack("<I", len(body)) + body + struct.pack("<qHH", pos, 0, 2) + MAGIC)


def _copy(src: str, dst) -> str:
    return str(shutil.copytree(src, dst))


@pytest.mark.parametrize("bit", [128, 1024, 2048, 16384])
def test_golden_table_of_each_new_flag_reads_like_pylance(bit):
    path = os.path.join(GOLDEN, f"flag_{bit}.lance")
    m = open_snapshot(path).manifest
    assert m.reader_feature_flags & bit
    assert_reads_like_pylance(path)


def test_flag_1024_turns_scalar_indices_off_and_filters_stay_exact():
    path = os.path.join(GOLDEN, "flag_1024.lance")
    snap = open_snapshot(path)
    assert not snap.scalar_indices_usable and lance.dataset(path).describe_indices()
    for flt in ("id = 7", "id < 3", "id > 40"):
        assert lance_duck.dataset(path).to_table(filter=flt).equals(lance.dataset(path).to_table(filter=flt))


@pytest.mark.parametrize("bit", [1024, 16384])
def test_paired_flags_without_their_writer_bit_are_corrupt_as_pylance_says(tmp_path, bit):
    path = _copy(os.path.join(GOLDEN, f"flag_{bit}.lance"), tmp_path / "t.lance")
    _rewrite(_newest_manifest(path), lambda m: setattr(m, "writer_feature_flags", m.writer_feature_flags & ~bit))
    with pytest.raises(CorruptFileError, match=rf"reader flag {bit} \("):
        open_snapshot(path)
    with pytest.raises((OSError, ValueError), match="corrupt"):
        lance.dataset(path).count_rows()


@pytest.mark.parametrize("bit", [64, 32768])
def test_flags_pylance_refuses_stay_refused_by_name(tmp_path, bit):
    path = _copy(os.path.join(GOLDEN, "flag_128.lance"), tmp_path / "t.lance")

    def both(m):
        m.reader_feature_flags |= bit
        m.writer_feature_flags |= bit
    _rewrite(_newest_manifest(path), both)
    with pytest.raises(UnsupportedFeatureError, match=rf"flag {bit} \("):
        open_snapshot(path)
    with pytest.raises((OSError, ValueError)):
        lance.dataset(path).count_rows()


# -- manifest fields added by pylance 14 -------------------------------------------------------------------
def test_fragment_tree_with_a_layout_is_refused_by_name(tmp_path):
    path = _copy(os.path.join(GOLDEN, "flag_128.lance"), tmp_path / "t.lance")
    _rewrite(_newest_manifest(path), lambda m: m.fragment_tree.MergeFrom(type(m.fragment_tree)(layout=b"\x0a\x00")))
    with pytest.raises(UnsupportedFeatureError, match="fragment tree"):
        open_snapshot(path)


def test_empty_fragment_tree_reads_like_pylance(tmp_path):
    path = _copy(os.path.join(GOLDEN, "flag_128.lance"), tmp_path / "t.lance")
    _rewrite(_newest_manifest(path), lambda m: None, extra=b"\xb2\x01\x00")   # field 22, empty message
    assert open_snapshot(path).manifest.HasField("fragment_tree")
    assert_reads_like_pylance(path)


def test_highest_field_id_and_clustering_fields_read_like_pylance(tmp_path):
    path = _copy(os.path.join(GOLDEN, "flag_128.lance"), tmp_path / "t.lance")

    def edit(m):
        m.max_allocated_field_id = 40
        m.writer_feature_flags |= 32768       # non-reusable field ids: a writer flag
        m.clustering.id = 3
        m.clustering.provider = "zorder"
        m.clustering.version = 1
        m.max_clustering_id = 3
    _rewrite(_newest_manifest(path), edit)
    snap = open_snapshot(path)
    assert snap.manifest.max_allocated_field_id == 40 and snap.manifest.clustering.provider == "zorder"
    assert_reads_like_pylance(path)
