"""A manifest base path given as a URL stays a URL (issue 28 §4).

``s3://bucket/x`` on a local table once resolved as ``./s3:/bucket/x/...`` under the working
directory, and returned that directory's rows when it existed. A base path is a path of the
table's own store or a URL: a URL of the table's own store (``file://`` on local disk) is read,
a URL of another store is refused by name, never read from the local disk.
"""
from __future__ import annotations

import os
import shutil

import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import UnsupportedFeatureError

from . import table_fixtures as T


@pytest.fixture
def table(tmp_path) -> str:
    path = str(tmp_path / "t.lance")
    T.lance().write_dataset(pa.table({"i": np.arange(500, dtype=np.int64)}), path, max_rows_per_file=250)
    return path


def _point_fragment_at(table: str, url: str, is_root: bool = True) -> str:
    """Fragment 1's data file now lives under base path ``url`` (id 7); its file name returned."""
    name = {}

    def edit(m):
        bp = m.base_paths.add()
        bp.id, bp.path, bp.is_dataset_root = 7, url, is_root
        m.fragments[1].files[0].base_id = 7
        name["file"] = m.fragments[1].files[0].path
    T.edit_manifest(table, edit)
    return name["file"]


def _decoy(cwd: str, rel_dir: str, table: str, file_name: str) -> str:
    """The fragment's data file copied to ``<cwd>/<rel_dir>/data/`` (what a local misreading opens)."""
    d = os.path.join(cwd, rel_dir, "data")
    os.makedirs(d, exist_ok=True)
    shutil.copy(os.path.join(table, "data", file_name), d)
    return d


@pytest.mark.parametrize("url", ["s3://bucket/x", "gs://bucket/x/", "az://c/x", "s3:/bucket/x", "memory://x"])
def test_url_of_another_store_is_refused_never_read_locally(table, tmp_path, monkeypatch, url):
    name = _point_fragment_at(table, url)
    monkeypatch.chdir(tmp_path)
    _decoy(str(tmp_path), url.replace("://", ":/").rstrip("/"), table, name)   # ./s3:/bucket/x/data/<file>
    for read in (lambda: lance_duck.dataset(table).to_table(),
                 lambda: lance_duck.sql(f"SELECT count(*) FROM '{table}' WHERE i > 10").fetchall()):
        with pytest.raises(UnsupportedFeatureError, match="another store") as err:
            read()
        assert url in str(err.value) and "base path id 7" in str(err.value)


def test_file_url_of_the_table_store_is_read(table, tmp_path):
    moved = str(tmp_path / "elsewhere")
    name = _point_fragment_at(table, "file://" + moved)
    os.makedirs(os.path.join(moved, "data"))
    shutil.move(os.path.join(table, "data", name), os.path.join(moved, "data", name))
    assert lance_duck.dataset(table).to_table().equals(T.read_pylance(table))
    assert lance_duck.dataset(table).to_table()["i"].to_pylist() == list(range(500))


def test_relative_base_path_as_pylance_writes_for_a_clone_is_still_read(tmp_path, monkeypatch):
    """pylance stores a shallow clone's source as given (here relative): it is read from the working
    directory, as pylance reads it."""
    monkeypatch.chdir(tmp_path)
    T.lance().write_dataset(pa.table({"i": np.arange(300, dtype=np.int64)}), "src.lance")
    T.lance().dataset("src.lance").tags.create("t", 1)
    T.lance().dataset("src.lance").shallow_clone("clone.lance", "t")
    assert [bp.path for bp in lance_duck.dataset("clone.lance")._snapshot.manifest.base_paths] == ["src.lance"]
    assert lance_duck.dataset("clone.lance").to_table().equals(T.read_pylance("clone.lance"))
