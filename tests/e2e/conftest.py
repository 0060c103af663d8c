"""End-to-end fixtures: pylance-written histories in every storage version, and a mixed-format table."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "table"))

import lance_histories as H  # noqa: E402

HISTORIES = {
    "2.2": ("2.2", {}),
    "2.3": ("2.3", {}),
    "2.1_stable_row_ids": ("2.1", {"stable_row_ids": True}),
    "2.0": ("2.0", {}),
    "legacy_v1_names": ("legacy", {"v2_manifest_paths": False}),
}


@pytest.fixture(scope="session", params=sorted(HISTORIES))
def history(request, tmp_path_factory):
    dsv, kw = HISTORIES[request.param]
    path = str(tmp_path_factory.mktemp("e2e") / f"hist_{request.param}.lance")
    H.make_history_table(path, dsv, **kw)
    return path


@pytest.fixture(scope="session")
def mixed_formats(tmp_path_factory):
    """Fragments in files of format 2.0, 2.1, 2.2 and 2.3 in one table, with a delete across them."""
    import lance
    from lance.fragment import write_fragments

    path = str(tmp_path_factory.mktemp("e2e") / "mixed.lance")
    lance.write_dataset(H.history_batch(0, 3000), path, data_storage_version="2.0", max_rows_per_file=2000)
    lance.write_dataset(H.history_batch(3000, 1500), path, mode="append", data_storage_version="2.1")
    ds = lance.dataset(path)
    frags = write_fragments(H.history_batch(4500, 1200), path, data_storage_version="2.2")
    ds = lance.LanceDataset.commit(path, lance.LanceOperation.Append(frags), read_version=ds.version)
    frags = write_fragments(H.history_batch(5700, 900), path, data_storage_version="2.3")
    ds = lance.LanceDataset.commit(path, lance.LanceOperation.Append(frags), read_version=ds.version)
    ds.delete("id % 7 = 0 or (id > 1990 and id < 3100)")
    versions = {(f.file_major_version, f.file_minor_version)
                for fr in lance.dataset(path).get_fragments() for f in fr.metadata.files}
    assert versions == {(2, 0), (2, 1), (2, 2), (2, 3)}, versions
    return path
