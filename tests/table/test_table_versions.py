"""Version listing, naming schemes, latest, as-of and not-found errors (vs pylance 14.0.2)."""
from __future__ import annotations

import json
import os
import shutil
from datetime import timedelta, timezone

import lance
import pytest

from lance_duck.errors import (BranchNotFoundError, CorruptFileError, InvalidArgumentError, TagNotFoundError,
                               VersionNotFoundError)
from lance_duck.io.fs import FileIO
from lance_duck.table.snapshot import open_snapshot
from lance_duck.table.versions import list_versions, manifest_name, parse_manifest_name


@pytest.fixture
def manifest_reads(monkeypatch):
    """Counts manifest files read through FileIO."""
    reads = []
    orig = FileIO.read_bytes

    def counting(self, path):
        if path.endswith(".manifest"):
            reads.append(path)
        return orig(self, path)

    monkeypatch.setattr(FileIO, "read_bytes", counting)
    return reads


def test_manifest_names_round_trip_in_both_schemes():
    for v in (1, 2, 10, 12345, (1 << 63) - 1):
        assert parse_manifest_name(manifest_name(v, "v2")) == (v, "v2")
        assert parse_manifest_name(manifest_name(v, "v1")) == (v, "v1")
    assert manifest_name(1, "v2") == "18446744073709551614.manifest"
    for junk in ("d18446744073709551614.manifest", ".tmp_1.manifest", "1.manifest-3f2a", "latest_version_hint.json",
                 "x.manifest", "_latest.manifest"):
        assert parse_manifest_name(junk) is None


def test_latest_of_1000_versions_reads_one_manifest(many_versions, manifest_reads):
    snap = open_snapshot(many_versions)
    assert snap.version == 1000 == lance.dataset(many_versions).version
    assert len(manifest_reads) == 1
    manifest_reads.clear()
    assert open_snapshot(many_versions, 517).version == 517
    assert len(manifest_reads) == 1
    assert snap.count_rows() == lance.dataset(many_versions).count_rows()


def test_asof_matches_pylance_strictly_before(many_versions, manifest_reads):
    pv = {v["version"]: v["timestamp"] for v in lance.dataset(many_versions).versions()}
    for target in (2, 500, 999, 1000):
        ts = pv[target]
        for cutoff in (ts, ts + timedelta(microseconds=1), ts - timedelta(microseconds=1),
                       ts + timedelta(milliseconds=500)):
            want = lance.dataset(many_versions, asof=cutoff).version
            assert open_snapshot(many_versions, asof=cutoff).version == want, (target, cutoff)
    # equal to a version's timestamp -> the previous version (strict rule)
    assert open_snapshot(many_versions, asof=pv[500]).version == 499
    # newest-first scan: a cutoff after the latest reads a single manifest
    manifest_reads.clear()
    assert open_snapshot(many_versions, asof=pv[1000] + timedelta(seconds=5)).version == 1000
    assert len(manifest_reads) == 1


def test_asof_accepts_aware_datetimes_and_iso_strings(many_versions):
    pv = {v["version"]: v["timestamp"] for v in lance.dataset(many_versions).versions()}
    # pylance's versions() builds timestamps with float arithmetic (ns as a float: ~256 ns of error), so
    # its microsecond can be one below the true truncation: 2 µs past it is strictly after version 300
    local = pv[300] + timedelta(microseconds=2)
    aware = local.astimezone(timezone.utc)           # naive = local time, like pylance
    assert open_snapshot(many_versions, asof=aware).version == 300
    assert open_snapshot(many_versions, asof=aware.astimezone(timezone(timedelta(hours=-7)))).version == 300
    assert open_snapshot(many_versions, asof=local.isoformat()).version == 300
    assert open_snapshot(many_versions, asof=aware.isoformat()).version == 300
    assert open_snapshot(many_versions, asof=local.isoformat(sep=" ")).version == \
        lance.dataset(many_versions, asof=local).version


def test_asof_before_first_version_is_version_not_found(many_versions):
    first = lance.dataset(many_versions).versions()[0]["timestamp"]
    with pytest.raises(ValueError):
        lance.dataset(many_versions, asof=first)
    with pytest.raises(VersionNotFoundError, match="before"):
        open_snapshot(many_versions, asof=first)
    with pytest.raises(ValueError, match="before"):  # pylance's exception type catches ours too
        open_snapshot(many_versions, asof=first)
    with pytest.raises(InvalidArgumentError):
        open_snapshot(many_versions, asof="not a date")
    with pytest.raises(InvalidArgumentError):
        open_snapshot(many_versions, version=3, asof=first)


def test_stale_or_bogus_hint_file_is_ignored(many_versions, tmp_path):
    p = shutil.copytree(many_versions, tmp_path / "t.lance")
    hint = p / "_versions" / "latest_version_hint.json"
    for text in ('{"version":3}', '{"version":5000}', "garbage"):
        hint.write_text(text)
        assert open_snapshot(str(p)).version == 1000
        assert lance.dataset(str(p)).version == 1000


def test_detached_staging_and_tmp_files_are_skipped(histories, tmp_path):
    p = shutil.copytree(histories["hist_2_2"], tmp_path / "t.lance", ignore=shutil.ignore_patterns("tree"))
    vdir = p / "_versions"
    newest = sorted(n for n in os.listdir(vdir) if n.endswith(".manifest"))[0]
    data = (vdir / newest).read_bytes()
    (vdir / f"d{newest}").write_bytes(data)
    (vdir / ".tmp_abc.manifest").write_bytes(data)
    (vdir / f"{manifest_name(99, 'v2')}-1b2c3d").write_bytes(data)
    (vdir / "18446744073709551000.manifest.tmp").write_bytes(data)
    ours = [v["version"] for v in open_snapshot(str(p)).versions()]
    assert ours == [v["version"] for v in lance.dataset(str(p)).versions()]
    assert open_snapshot(str(p)).version == lance.dataset(str(p)).version


def test_mixed_naming_schemes_are_refused(histories, tmp_path):
    p = shutil.copytree(histories["hist_legacy_v1names"], tmp_path / "t.lance")
    vdir = p / "_versions"
    assert (vdir / "1.manifest").exists()
    shutil.copy(vdir / "1.manifest", vdir / manifest_name(1, "v2"))
    with pytest.raises(CorruptFileError, match="mixes V1"):
        open_snapshot(str(p))


def test_a_listing_without_sizes_names_the_same_manifests(histories, tmp_path):
    """``sizes=False`` (a local listing without a stat per manifest): the same versions and names, sizes None;
    a subdirectory named like a manifest is still no version."""
    p = shutil.copytree(histories["cleanup"], tmp_path / "t.lance")
    want = [v["version"] for v in lance.dataset(str(p)).versions()]
    (p / "_versions" / manifest_name(999, "v2")).mkdir()
    from lance_duck.io.fs import open_io
    io, root = open_io(str(p))
    full, bare = list_versions(io, root), list_versions(io, root, sizes=False)
    assert [(e.version, e.name, e.scheme) for e in bare] == [(e.version, e.name, e.scheme) for e in full]
    assert [e.version for e in full] == want
    assert all(e.size for e in full) and all(e.size is None for e in bare)


def test_cleanup_gaps_are_listed_and_missing_versions_raise(histories):
    path = histories["cleanup"]
    from lance_duck.io.fs import open_io
    io, root = open_io(path)
    have = [e.version for e in list_versions(io, root)]
    assert have == [v["version"] for v in lance.dataset(path).versions()]
    assert have != list(range(have[0], have[-1] + 1))  # there are gaps
    gone = next(v for v in range(1, have[-1]) if v not in have)
    with pytest.raises(VersionNotFoundError, match=f"version {gone} "):
        open_snapshot(path, gone)
    with pytest.raises(VersionNotFoundError, match="version 12345"):
        open_snapshot(path, 12345)
    assert open_snapshot(path, "keep").version == lance.dataset(path, version="keep").version


def test_missing_tag_branch_and_table_errors_name_them(histories, tmp_path):
    path = histories["hist_2_2"]
    with pytest.raises(TagNotFoundError, match="no_such_tag"):
        open_snapshot(path, "no_such_tag")
    for ref in ("no_such_tag", 12345):  # pylance raises ValueError for both: so do we
        with pytest.raises(ValueError):
            lance.dataset(path, version=ref)
        with pytest.raises(ValueError, match=str(ref)):
            open_snapshot(path, ref)
    with pytest.raises(BranchNotFoundError, match="no/such"):
        open_snapshot(path, branch="no/such")
    with pytest.raises(VersionNotFoundError, match="branch 'dev'"):
        open_snapshot(path, 1, branch="dev")
    missing = str(tmp_path / "nope.lance")
    with pytest.raises(FileNotFoundError, match="nope.lance"):
        open_snapshot(missing)
    os.makedirs(tmp_path / "empty.lance")
    with pytest.raises(FileNotFoundError, match="empty.lance"):
        open_snapshot(str(tmp_path / "empty.lance"))


def test_branch_listing_keeps_slash_names_and_parents(histories):
    path = histories["hist_2_2"]
    snap = open_snapshot(path, branch="feature/x")
    assert snap.list_branches() == lance.dataset(path).branches.list()
    assert snap.list_branches()["feature/x"]["parent_branch"] == "dev"
    assert snap.versions() == lance.dataset(path).checkout_version(("feature/x", None)).versions()
    assert snap.dataset_dir.endswith("tree/feature/x")
    refs = json.load(open(os.path.join(path, "_refs", "branches", "feature%2Fx.json")))
    assert refs["parentVersion"] == snap.list_branches()["feature/x"]["parent_version"]
