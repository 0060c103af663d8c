"""Every version (and branch) of every history table: lance_duck's snapshot vs pylance 14.0.2."""
from __future__ import annotations

import glob
import os

import lance
import numpy as np
import pytest

from lance_duck.table.snapshot import open_snapshot


def _all_checkouts(path: str):
    """(branch, version) of every version pylance can open: main, then each branch."""
    ds = lance.dataset(path)
    out = [(None, v["version"]) for v in ds.versions()]
    for b in ds.branches.list():
        out += [(b, v["version"]) for v in ds.checkout_version((b, None)).versions()]
    return out


def compare_snapshot(snap, pds) -> list[str]:
    """Differences between a lance_duck snapshot and the pylance dataset of the same version."""
    diffs = []

    def check(what, ours, theirs):
        if ours != theirs:
            diffs.append(f"{what}: ours={ours!r} pylance={theirs!r}")

    check("version", snap.version, pds.version)
    check("latest_version", snap.latest_version(), pds.latest_version)
    check("data_storage_version", snap.data_storage_version, pds.data_storage_version)
    if not snap.arrow_schema.equals(pds.schema, check_metadata=True):
        diffs.append(f"schema:\n{snap.arrow_schema}\n!=\n{pds.schema}")
    check("versions", snap.versions(), pds.versions())
    check("tags", snap.list_tags(), pds.tags.list())
    check("branches", snap.list_branches(), pds.branches.list())
    frags = pds.get_fragments()
    check("fragment ids", [f.id for f in snap.fragments], [f.fragment_id for f in frags])
    check("physical rows", [f.physical_rows for f in snap.fragments], [f.physical_rows for f in frags])
    check("per-fragment live rows", [f.count_rows() for f in snap.fragments], [f.count_rows() for f in frags])
    check("per-fragment deletions", [f.num_deletions() for f in snap.fragments], [f.num_deletions for f in frags])
    check("count_rows", snap.count_rows(), pds.count_rows())
    ts = [v["timestamp"] for v in pds.versions() if v["version"] == pds.version][0]
    # pylance rounds through floats (µs may differ by one); ours truncates the exact nanoseconds
    if abs(snap.timestamp.astimezone().replace(tzinfo=None) - ts).total_seconds() > 1e-6:
        diffs.append(f"timestamp: ours={snap.timestamp} pylance={ts}")
    return diffs


@pytest.mark.parametrize("name", ["hist_2_3", "hist_2_2", "hist_2_1_stable", "hist_2_0", "hist_legacy_v1names",
                                  "clone", "cleanup"])
def test_every_version_and_branch_matches_pylance(histories, name):
    path = histories[name]
    checkouts = _all_checkouts(path)
    assert len(checkouts) >= 2
    problems = {}
    for branch, version in checkouts:
        pds = lance.dataset(path).checkout_version((branch, version) if branch else version)
        snap = open_snapshot(path, version, branch=branch)
        d = compare_snapshot(snap, pds)
        if d:
            problems[(branch, version)] = d
    assert not problems, problems


def test_history_covers_the_operations_it_claims(histories):
    """The fixture really produced .bin and .arrow deletions, branches, clone bases, V1 names."""
    p = histories["hist_2_2"]
    exts = {os.path.splitext(f)[1] for f in glob.glob(os.path.join(p, "_deletions", "*"))}
    assert exts == {".arrow", ".bin"}
    assert set(lance.dataset(p).branches.list()) == {"dev", "feature/x"}
    assert os.path.isdir(os.path.join(p, "tree", "feature", "x", "_versions"))
    clone = open_snapshot(histories["clone"])
    assert clone.manifest.base_paths and clone.manifest.reader_feature_flags & 16
    base_ids = {f.pb.files[0].HasField("base_id") for f in clone.fragments}
    assert base_ids == {True, False}
    names = os.listdir(os.path.join(histories["hist_legacy_v1names"], "_versions"))
    assert "1.manifest" in names
    assert open_snapshot(histories["hist_legacy_v1names"]).data_storage_version == "0.1"


@pytest.mark.parametrize("name", ["hist_2_2", "hist_2_1_stable"])
def test_row_ids_and_row_versions_match_pylance(histories, name):
    path = histories[name]
    for v in lance.dataset(path).versions():
        pds = lance.dataset(path, version=v["version"])
        snap = open_snapshot(path, v["version"])
        cols = ["_row_created_at_version", "_row_last_updated_at_version"] if snap.has_stable_row_ids else []
        t = pds.to_table(columns=["id"] + cols, with_row_id=True, with_row_address=True)
        ids, addrs, created, updated = [], [], [], []
        for f in snap.fragments:
            live = np.setdiff1d(np.arange(f.physical_rows), f.deleted_offsets())
            addrs.append(f.row_addresses()[live])
            rid = f.row_ids()
            ids.append(addrs[-1] if rid is None else rid[live])
            if cols:
                created.append(f.created_at_versions()[live])
                updated.append(f.last_updated_at_versions()[live])
        assert np.array_equal(np.concatenate(addrs), t["_rowaddr"].to_numpy()), v["version"]
        assert np.array_equal(np.concatenate(ids), t["_rowid"].to_numpy()), v["version"]
        if cols:
            assert np.array_equal(np.concatenate(created), t[cols[0]].to_numpy()), v["version"]
            assert np.array_equal(np.concatenate(updated), t[cols[1]].to_numpy()), v["version"]


def test_stable_row_id_flag_and_sequences(histories):
    snap = open_snapshot(histories["hist_2_1_stable"])
    assert snap.has_stable_row_ids
    assert not open_snapshot(histories["hist_2_2"]).has_stable_row_ids
    kinds = set()
    from lance_duck._proto import rowids_pb2
    for f in snap.fragments:
        seq = rowids_pb2.RowIdSequence()
        seq.ParseFromString(f.pb.inline_row_ids)
        kinds |= {s.WhichOneof("segment") for s in seq.segments}
    assert {"range", "range_with_holes"} <= kinds


def test_count_rows_reads_no_data_file(histories, tmp_path):
    """count_rows() works on a copy whose data files are gone (only manifests and deletions)."""
    import shutil
    src = histories["hist_2_2"]
    dst = str(tmp_path / "nodata.lance")
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("tree"))
    shutil.rmtree(os.path.join(dst, "data"))
    for v in lance.dataset(src).versions():
        assert open_snapshot(dst, v["version"]).count_rows() == lance.dataset(src, version=v["version"]).count_rows()


def test_tag_into_branch_opens_the_branch_version(histories):
    path = histories["hist_2_2"]
    snap = open_snapshot(path, "dev_tip")
    pds = lance.dataset(path, version="dev_tip")
    assert snap.branch == "dev"
    assert compare_snapshot(snap, pds) == []
    assert open_snapshot(path, "after_drop").version == lance.dataset(path, version="after_drop").version


def test_checkout_returns_new_snapshots(histories):
    path = histories["hist_2_2"]
    snap = open_snapshot(path)
    v1 = snap.checkout(1)
    assert (snap.version, v1.version) == (lance.dataset(path).version, 1)
    dev = snap.checkout(branch="dev")
    assert dev.branch == "dev" and dev.version == lance.dataset(path).checkout_version(("dev", None)).version
    assert dev.checkout(dev.version - 1).branch == "dev"
    assert dev.checkout(branch=None).branch is None
    assert snap.checkout(("feature/x", None)).branch == "feature/x"
