"""``versions()`` is typed as pylance's: a list of a TypedDict with ``lance.dataset.Version``'s keys and
value types, and its values equal pylance's."""
from __future__ import annotations

import typing
from datetime import datetime

import lance
import pyarrow as pa
from lance.dataset import Version as PylanceVersion

import lance_duck
from lance_duck.scan.dataset import LanceDataset
from lance_duck.scan.params import VersionInfo


def test_versions_returns_a_typed_dict_with_pylances_keys_and_types():
    assert typing.get_type_hints(LanceDataset.versions)["return"] == list[VersionInfo]
    ours = typing.get_type_hints(VersionInfo)
    theirs = typing.get_type_hints(PylanceVersion)
    assert set(ours) == set(theirs) == set(VersionInfo.__required_keys__)
    assert ours["version"] is theirs["version"] is int
    assert ours["timestamp"] is datetime and datetime in typing.get_args(theirs["timestamp"])
    assert typing.get_args(ours["metadata"]) == typing.get_args(theirs["metadata"]) == (str, str)


def test_versions_equal_pylances(tmp_path):
    path = str(tmp_path / "t.lance")
    lance.write_dataset(pa.table({"a": [1, 2, 3]}), path)
    lance.write_dataset(pa.table({"a": [4]}), path, mode="append")
    lance.dataset(path).delete("a = 2")
    assert lance_duck.dataset(path).versions() == lance.dataset(path).versions()
