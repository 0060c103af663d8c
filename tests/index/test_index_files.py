"""Index files: where they may be (plain names under ``_indices/<uuid>/``), nested-field indices."""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import CorruptFileError
from lance_duck.index import index_segments
from lance_duck.index.files import segment_file_path


@pytest.fixture(scope="module")
def nested_indexed(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("nested") / "n.lance")
    n = 5000
    t = pa.table({"id": np.arange(n),
                  "s": pa.array([{"a": int(i % 100), "b": f"x{i % 3}"} for i in range(n)])})
    lance.write_dataset(t, path, max_rows_per_file=2000).create_scalar_index("s.a", "BTREE")
    return path


def test_index_on_a_nested_field_is_listed_and_used(nested_indexed):
    ds = lance_duck.dataset(nested_indexed)
    assert [d["fields"] for d in ds.list_indices()] == [["s.a"]]
    for flt in ["s.a = 5", "s.a IN (1, 2)", "s.a < 3 AND id > 100"]:
        sel = ds.scanner(filter=flt)._index_selections()
        assert sel is not None and sum(map(len, sel.values())) < 5000 * 0.1, flt
        ref = lance.dataset(nested_indexed).to_table(filter=flt, use_scalar_index=False)
        assert ds.to_table(filter=flt).equals(ref), flt


@pytest.mark.parametrize("name", ["../x.lance", "/etc/passwd", "a/b.lance", "..", "", "s3://b/k"])
def test_index_file_names_must_be_plain_names(nested_indexed, name):
    snap = lance_duck.dataset(nested_indexed)._snapshot
    seg = index_segments(snap)[0]
    with pytest.raises(CorruptFileError, match="plain file name"):
        segment_file_path(snap, seg, name)
    ok = segment_file_path(snap, seg, "page_lookup.lance")
    assert ok.endswith(f"/_indices/{seg.uuid}/page_lookup.lance")


def test_indices_of_branches_and_shallow_clones_resolve_through_base_paths(tmp_path):
    import warnings
    path, clone = str(tmp_path / "src.lance"), str(tmp_path / "clone.lance")
    ds = lance.write_dataset(pa.table({"id": np.arange(3000)}), path, max_rows_per_file=1000)
    ds.create_scalar_index("id", "BTREE")
    ds.create_branch("dev")
    lance.dataset(path).shallow_clone(clone, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ref = [dict(d, fragment_ids=set(d["fragment_ids"])) for d in lance.dataset(clone).list_indices()]
    for ours in (lance_duck.dataset(path, branch="dev"), lance_duck.dataset(clone)):
        assert ours.list_indices() == ref and ref[0]["base_id"] is not None
        sel = ours.scanner(filter="id = 1005")._index_selections()
        assert {k: v.tolist() for k, v in sel.items()} == {0: [], 1: [5], 2: []}
        assert ours.to_table(filter="id = 1005")["id"].to_pylist() == [1005]
