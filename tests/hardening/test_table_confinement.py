"""Path confinement: a table's metadata cannot make lance_duck read outside the table.

Data-file, deletion-file, row-id and index paths stay under their directory (declared base paths
are the only way out); tag and branch names follow pylance's rules, so ``../../x`` never reaches
the filesystem. Each case is checked against pylance reading the same bytes.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import lance_duck
from lance_duck.errors import CorruptFileError, InvalidArgumentError, LanceDuckError
from lance_duck.io.fs import open_io
from lance_duck.table.fragment import PathResolver, confine

from . import table_fixtures as T


@pytest.fixture(scope="module")
def victim(tmp_path_factory):
    """Another table whose rows must never come back from a read of ``base``."""
    path = str(tmp_path_factory.mktemp("victim") / "victim.lance")
    import pyarrow as pa
    T.lance().write_dataset(pa.table({"i": np.arange(10_000, 10_300, dtype=np.int64)}), path)
    return path


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return T.make_table(str(tmp_path_factory.mktemp("conf") / "base.lance"), "2.2")


@pytest.fixture
def table(base, tmp_path):
    return T.copy_table(base, str(tmp_path / "t.lance"))


@pytest.fixture(scope="module")
def stable_base(tmp_path_factory):
    return T.make_table(str(tmp_path_factory.mktemp("conf") / "stable.lance"), "2.1", stable_row_ids=True)


def _victim_file(victim: str) -> str:
    return os.path.join(victim, "data", os.listdir(os.path.join(victim, "data"))[0])


def _data_path_cases(table: str, victim: str) -> dict[str, str]:
    vf = _victim_file(victim)
    rel = os.path.relpath(vf, os.path.join(table, "data"))
    return {"absolute": vf, "dotdot": rel, "file_url": "file://" + vf, "inner_dotdot": "x/../" + rel}


@pytest.mark.parametrize("case", ["absolute", "dotdot", "file_url", "inner_dotdot"])
def test_data_file_path_outside_the_table_is_refused_like_pylance(table, victim, case):
    path = _data_path_cases(table, victim)[case]

    def point_outside(m):
        m.fragments[0].files[0].path = path
    T.edit_manifest(table, point_outside)
    with pytest.raises(CorruptFileError, match="data file path .* lance_duck only opens paths inside"):
        T.read_ld(table)
    with pytest.raises(CorruptFileError):
        lance_duck.dataset(table).count_rows()
    with pytest.raises(ValueError):  # pylance (ArrowInvalid) does not read the other table either
        T.read_pylance(table)


@pytest.mark.parametrize("bad", ["", "a\0b.lance", "x" * 300 + ".lance", "./a.lance", "a//b.lance", "C:evil.lance"])
def test_malformed_data_file_paths_raise_corrupt_file_error(table, bad):
    def edit(m):
        m.fragments[1].files[0].path = bad
    T.edit_manifest(table, edit)
    with pytest.raises(CorruptFileError, match="data file path"):
        T.read_ld(table)


def test_deletion_file_with_undeclared_base_path_is_refused(table):
    def edit(m):
        m.fragments[0].deletion_file.base_id = 3
    T.edit_manifest(table, edit)
    with pytest.raises(CorruptFileError, match="base path id 3"):
        T.read_ld(table)


def test_deletion_and_data_files_resolve_only_inside_their_directories(table):
    io, root = open_io(table)
    r = PathResolver(io, root, {})
    assert r.deletion_file("_deletions/0-1-2.arrow", None) == os.path.join(root, "_deletions/0-1-2.arrow")
    for bad in ("../_deletions/0-1-2.arrow", "/etc/passwd", "_deletions/../../x.arrow"):
        with pytest.raises(CorruptFileError, match="deletion file path"):
            r.deletion_file(bad, None)
        with pytest.raises(CorruptFileError, match="data file path"):
            r.data_file(bad, None)


def test_index_files_resolve_under_indices_only(table):
    io, root = open_io(table)
    r = PathResolver(io, root, {})
    assert r.index_dir("0e4b6a0c-uuid") == os.path.join(root, "_indices", "0e4b6a0c-uuid")
    for bad in ("..", "../../etc", "a/b", "", "x\0"):
        with pytest.raises(CorruptFileError):
            r.index_dir(bad)


def test_confine_is_the_one_rule(table):
    io, root = open_io(table)
    assert confine(io, root, "data/a.lance", "x") == os.path.join(root, "data", "a.lance")
    for bad in ("/a", "..", "a/..", "a/./b", "a//b", "s3://b/k", "\\\\srv\\x", "a\0", "", "y" * 256):
        with pytest.raises(CorruptFileError):
            confine(io, root, bad, "x")


def _externalise_row_ids(path: str, rel: str) -> None:
    """Move fragment 0's inline row ids into a file ``rel`` (relative to the table) and point at it."""
    def edit(m):
        f = m.fragments[0]
        raw = f.inline_row_ids
        target = os.path.normpath(os.path.join(path, rel))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as out:
            out.write(b"pad" + raw)
        f.external_row_ids.path = rel
        f.external_row_ids.offset = 3
        f.external_row_ids.size = len(raw)
    T.edit_manifest(path, edit)


def test_external_row_id_file_inside_the_table_is_read(stable_base, tmp_path):
    path = T.copy_table(stable_base, str(tmp_path / "t.lance"))
    want = T.read_ld(path).column("i")
    ids = lance_duck.dataset(path).to_table(with_row_id=True).column("_rowid")
    _externalise_row_ids(path, "_rowids/frag0.bin")
    got = lance_duck.dataset(path).to_table(with_row_id=True)
    assert got.column("_rowid").equals(ids) and got.column("i").equals(want)


@pytest.mark.parametrize("rel", ["../outside_rowids.bin", "_rowids/../../outside_rowids.bin"])
def test_external_row_id_file_outside_the_table_is_refused(stable_base, tmp_path, rel):
    path = T.copy_table(stable_base, str(tmp_path / "t.lance"))
    _externalise_row_ids(path, rel)
    assert os.path.exists(os.path.join(tmp_path, "outside_rowids.bin"))  # it is there to be read
    with pytest.raises(CorruptFileError, match="external row ids file path"):
        lance_duck.dataset(path).to_table(with_row_id=True)


def _plant_outside_tag(table: str, version: int) -> None:
    """A valid tag file two levels above ``_refs/tags`` (what ``../../x`` would name)."""
    doc = {"branch": None, "version": version, "manifestSize": 1}
    with open(os.path.join(table, "x.json"), "w") as f:
        json.dump(doc, f)


@pytest.mark.parametrize("name", ["../../x", "../tags/../../x", "a/b", "x/", ".x", "x..y", "x.lock", "a b", ""])
def test_tag_names_outside_pylance_rules_are_refused_before_any_read(table, name):
    _plant_outside_tag(table, 1)
    with pytest.raises(InvalidArgumentError, match="invalid tag name"):
        lance_duck.dataset(table, version=name)
    with pytest.raises(ValueError):  # pylance refuses the same names
        T.lance().dataset(table, version=name)


@pytest.mark.parametrize("name", ["../x", "a/../b", "..", "/a", "a/", "a//b", "a\\b", "x.lock", "a b"])
def test_branch_names_outside_pylance_rules_are_refused(table, name):
    os.makedirs(os.path.join(table, "tree", "x"), exist_ok=True)
    with pytest.raises(InvalidArgumentError, match="invalid branch name"):
        lance_duck.dataset(table, branch=name)
    with pytest.raises(InvalidArgumentError, match="invalid branch name"):
        lance_duck.dataset(table).checkout_version((name, 1))


def test_tag_file_naming_an_invalid_branch_is_corrupt(table):
    ds = T.lance().dataset(table)
    ds.tags.create("good", 1)
    tag = os.path.join(table, "_refs", "tags", "good.json")
    doc = json.load(open(tag))
    doc["branch"] = "../../elsewhere"
    json.dump(doc, open(tag, "w"))
    with pytest.raises(CorruptFileError, match="invalid branch name"):
        lance_duck.dataset(table, version="good")


def test_valid_unicode_tag_is_found_where_pylance_stores_it(table):
    T.lance().dataset(table).tags.create("héllo", 2)
    assert os.path.exists(os.path.join(table, "_refs", "tags", "h%C3%A9llo.json"))
    assert lance_duck.dataset(table, version="héllo").version == 2
    assert "héllo" in lance_duck.dataset(table).tags.list()


def test_declared_base_paths_are_the_sanctioned_way_out(tmp_path):
    """A shallow clone reads its source's files through the base path its manifest declares."""
    src = T.make_table(str(tmp_path / "src.lance"), "2.2")
    T.lance().dataset(src).tags.create("t", 2)
    clone = str(tmp_path / "clone.lance")
    T.lance().dataset(src).shallow_clone(clone, "t")
    got, want = T.read_ld(clone), T.read_pylance(clone)
    assert got.equals(want) and got.num_rows > 0
    snap = lance_duck.dataset(clone)._snapshot
    assert any(not f.path.startswith(clone) for fr in snap.fragments for f in fr.files)


def test_every_confinement_error_is_in_the_family(table, victim):
    for case, p in _data_path_cases(table, victim).items():
        def edit(m, p=p):
            m.fragments[2].files[0].path = p
        T.edit_manifest(table, edit)
        with pytest.raises(LanceDuckError):
            T.read_ld(table)
