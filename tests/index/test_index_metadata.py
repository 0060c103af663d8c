"""``list_indices`` / ``describe_indices`` equal pylance's at every version of a history with
every scalar index type, delta segments (``optimize_indices``) and compaction."""
from __future__ import annotations

import warnings

import lance

import lance_duck


def _pylance_list(ds) -> list[dict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        out = ds.list_indices()
    return [dict(d, fragment_ids=set(d["fragment_ids"])) for d in out]


def _segment_view(seg) -> dict:
    return {"uuid": seg.uuid, "fragment_ids": set(seg.fragment_ids),
            "dataset_version_at_last_update": seg.dataset_version_at_last_update,
            "index_version": seg.index_version, "created_at": seg.created_at,
            "base_id": seg.base_id, "size_bytes": seg.size_bytes}


def _description_view(d) -> dict:
    return {"name": d.name, "type_url": d.type_url, "index_type": d.index_type,
            "num_rows_indexed": d.num_rows_indexed, "fields": list(d.fields),
            "field_names": list(d.field_names), "total_size_bytes": d.total_size_bytes,
            "segments": [_segment_view(s) for s in d.segments]}


def test_list_and_describe_indices_match_pylance_at_every_version(history):
    versions = [v["version"] for v in lance.dataset(history).versions()]
    seen_types, max_segments = set(), 0
    for v in versions:
        ref = lance.dataset(history, version=v)
        ours = lance_duck.dataset(history, version=v)
        assert ours.list_indices() == _pylance_list(ref), f"version {v}"
        theirs = ref.describe_indices()
        mine = ours.describe_indices()
        assert [_description_view(d) for d in mine] == [_description_view(d) for d in theirs], f"version {v}"
        assert repr(mine) == repr(theirs)
        seen_types |= {d.index_type for d in mine}
        max_segments = max([max_segments] + [len(d.segments) for d in mine])
    # the history really holds every scalar type and multi-segment indices
    assert seen_types == {"BTree", "Bitmap", "ZoneMap", "LabelList", "NGram", "BloomFilter"}
    assert max_segments >= 2


def test_table_without_indices_lists_none(tmp_path):
    import pyarrow as pa
    path = str(tmp_path / "plain.lance")
    lance.write_dataset(pa.table({"a": [1, 2, 3]}), path)
    assert lance_duck.dataset(path).list_indices() == []
    assert lance_duck.dataset(path).describe_indices() == []
