"""Scalar indices: the manifest's index section, index readers, and index-driven row selections.

Layer: below ``scan`` (which asks for per-fragment row selections), above ``table`` / ``file``
(manifests, snapshots, the data-file readers that decode index files).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from .metadata import IndexDescription, IndexSegment, IndexSegmentDescription, describe, read_index_segments
from .metadata import list_indices as _list
from .terms import Unsupported

if TYPE_CHECKING:
    from ..schema import LanceField, LanceSchema
    from ..table.snapshot import Snapshot
    from .reuse import ReuseGroup


def index_segments(snapshot: Snapshot) -> list[IndexSegment]:
    """Every index segment of a snapshot's manifest (cached on the snapshot)."""
    mf = snapshot.manifest_file
    return snapshot.derived("_index_segments", lambda: read_index_segments(snapshot.manifest, mf.raw, mf.path))


def reuse_history(snapshot: Snapshot) -> list[tuple[int, list[ReuseGroup]]] | None:
    """The deferred compactions of the fragment-reuse index (index.reuse), oldest first; [] when
    there is none, None when it cannot be read (then no index is used). Cached on the snapshot."""
    def make() -> list[tuple[int, list[ReuseGroup]]] | None:
        from .reuse import reuse_versions
        try:
            return reuse_versions(index_segments(snapshot))
        except Unsupported:
            return None
    return snapshot.derived("_reuse_history", make)


def listed_segments(snapshot: Snapshot) -> list[IndexSegment]:
    """The segments as pylance lists them: fragments rewritten by a compaction whose index
    remapping was deferred are named by their new ids."""
    from dataclasses import replace

    from .reuse import is_reuse, listed_fragments
    segs = index_segments(snapshot)
    hist = reuse_history(snapshot)
    if not hist:
        return segs
    return [s if is_reuse(s) else replace(s, fragment_ids=listed_fragments(s.fragment_ids, hist)) for s in segs]


def field_paths(schema: LanceSchema) -> dict[int, str]:
    """Field id -> dotted path (``s.a`` for nested fields)."""
    out: dict[int, str] = {}

    def visit(fields: Sequence[LanceField], prefix: str) -> None:
        for f in fields:
            path = f"{prefix}{f.name}"
            out[f.id] = path
            visit(f.children, path + ".")

    visit(schema.fields, "")
    return out


def describe_indices(snapshot: Snapshot) -> list[IndexDescription]:
    """pylance's ``describe_indices()`` for this version."""
    return describe(listed_segments(snapshot), snapshot.fragments, field_paths(snapshot.schema))


def list_indices(snapshot: Snapshot) -> list[dict[str, Any]]:
    """pylance's ``list_indices()`` (one dict per segment) for this version."""
    return _list(describe_indices(snapshot))


__all__ = ["IndexDescription", "IndexSegment", "IndexSegmentDescription", "describe_indices",
           "index_segments", "list_indices"]
