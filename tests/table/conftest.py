"""Fixture tables for the table-layer tests, written once per session with pylance 14.0.2."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import lance_histories as H  # noqa: E402

# (name, data_storage_version, options)
HISTORIES = {
    "hist_2_2": ("2.2", {}),
    "hist_2_3": ("2.3", {}),
    "hist_2_1_stable": ("2.1", {"stable_row_ids": True}),
    "hist_2_0": ("2.0", {}),
    "hist_legacy_v1names": ("legacy", {"v2_manifest_paths": False}),
}


@pytest.fixture(scope="session")
def table_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("table_layer")


@pytest.fixture(scope="session")
def histories(table_dir):
    """name -> path of each history table (plus the clone and the cleaned-up table)."""
    out = {}
    for name, (dsv, kw) in HISTORIES.items():
        path = str(table_dir / f"{name}.lance")
        H.make_history_table(path, dsv, **kw)
        out[name] = path
    out["clone"] = str(table_dir / "clone.lance")
    H.make_clone_table(out["hist_2_2"], out["clone"], "after_drop")
    out["cleanup"] = str(table_dir / "cleanup.lance")
    H.make_cleanup_table(out["cleanup"])
    return out


@pytest.fixture(scope="session")
def types_tables(table_dir):
    out = {}
    for dsv in ("2.0", "2.1", "2.2", "2.3", "legacy"):
        path = str(table_dir / f"types_{dsv}.lance")
        H.make_types_table(path, dsv)
        out[dsv] = path
    out["blob_v2"] = str(table_dir / "blob_v2.lance")
    H.make_blob_v2_table(out["blob_v2"])
    return out


@pytest.fixture(scope="session")
def many_versions(table_dir):
    path = str(table_dir / "many.lance")
    H.make_many_versions_table(path, 1000)
    return path
