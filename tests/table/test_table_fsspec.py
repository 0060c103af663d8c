"""Opening tables through fsspec URLs: memory://, file://, storage_options."""
from __future__ import annotations

import os
import uuid

import fsspec
import lance
import numpy as np
import pytest

from lance_duck.errors import VersionNotFoundError
from lance_duck.table.snapshot import open_snapshot
from .test_table_history import compare_snapshot


@pytest.fixture
def memory_copy(histories):
    """hist_2_2 (main branch files and refs) copied into fsspec's memory filesystem."""
    src = histories["hist_2_2"]
    fs = fsspec.filesystem("memory")
    root = f"/lance_duck_tests/{uuid.uuid4().hex}/t.lance"
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = [d for d in dirnames if d != "tree"]
        for name in filenames:
            local = os.path.join(dirpath, name)
            fs.pipe_file(root + "/" + os.path.relpath(local, src), open(local, "rb").read())
    yield src, "memory://" + root
    fs.rm(root, recursive=True)


def test_memory_table_every_version_matches_pylance(memory_copy):
    src, url = memory_copy
    for v in lance.dataset(src).versions():
        snap = open_snapshot(url, v["version"])
        assert compare_snapshot(snap, lance.dataset(src, version=v["version"])) == []
        for f in snap.fragments:  # deletion files come through fsspec too
            assert f.deleted_offsets().size == f.num_deletions()
    assert open_snapshot(url, "after_drop").version == lance.dataset(src, version="after_drop").version
    assert open_snapshot(url).uri == url


def test_memory_table_data_files_resolve_inside_memory(memory_copy):
    src, url = memory_copy
    snap = open_snapshot(url, "after_drop")
    for f in snap.fragments:
        for ref in f.files:
            assert snap.io.exists(ref.path), ref.path
            assert snap.io.open_input(ref.path, ref.size).read_tail(4) == b"LANC"


def test_memory_table_errors(memory_copy):
    _, url = memory_copy
    with pytest.raises(VersionNotFoundError):
        open_snapshot(url, 999)
    with pytest.raises(FileNotFoundError, match="nothing_here"):
        open_snapshot(url.replace("t.lance", "nothing_here.lance"))


def test_file_url_and_storage_options_reach_fsspec(histories):
    src = histories["hist_2_2"]
    snap = open_snapshot("file://" + src, storage_options={"auto_mkdir": False})
    assert snap.io.fs.auto_mkdir is False
    assert snap.count_rows() == lance.dataset(src).count_rows()
    assert snap.root == src


def test_two_snapshots_share_no_state(histories):
    a = open_snapshot(histories["hist_2_2"], 1)
    b = open_snapshot(histories["hist_2_0"])
    assert a.io is not b.io and a.version == 1
    assert np.array_equal(a.checkout(1).fragments[0].row_addresses()[:3], np.array([0, 1, 2], np.uint64))
