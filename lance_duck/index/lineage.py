"""Does a segment's fragment bitmap claim fragments its files cannot hold?

An index segment's files are written once, under a fresh uuid. So a segment cannot index a
fragment that was created after the segment (its uuid) already existed: a manifest whose
fragment bitmap says so lies, and trusting it drops that fragment's rows. Fragment ids only
grow, so "fragment F existed at version v" is ``F <= max fragment id of v``.

A fragment id above every fragment of the segment's ``dataset_version`` is normal after a
compaction (the remapped segment, a new uuid, keeps the old ``dataset_version``). The check
finds W, the first version whose fragment ids reach the claimed fragment (a binary search over
the versions between, one manifest read per step, cached), and reads version W - 1: if the
segment's uuid is already there, its files predate the fragment and the claim is a lie. Where a
manifest needed is gone (cleaned up), nothing is proven and the segment is used as pylance uses
it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _state
from ..errors import LanceDuckError
from ..table.manifest import read_manifest
from ..table.versions import VERSIONS_DIR, VersionEntry, list_versions, manifest_name
from .metadata import IndexSegment, read_index_segments

if TYPE_CHECKING:
    from ..table.snapshot import Snapshot

#: manifests summarised ((store, dataset dir, version) -> (max fragment id, index uuids)); manifests are immutable
_SUMMARY = _state.cache("manifest_summaries")
#: verdicts per (store, dataset dir, segment uuid, claimed fragment) -> (reason or None,)
_VERDICT = _state.cache("index_lineage_verdicts")


def _summary(snapshot: Snapshot, version: int) -> tuple[int, frozenset[str]] | None:
    """(max fragment id, index uuids) of one version; None when it cannot be read."""
    key = (getattr(snapshot.io, "key", None), snapshot.dataset_dir, version)
    got: tuple[int, frozenset[str]] | None = _SUMMARY.get(key)
    if got is not None:
        return got
    vdir = snapshot.io.join(snapshot.dataset_dir, VERSIONS_DIR)
    try:
        try:             # by its name (no listing), as the snapshot opens a version
            mf = read_manifest(snapshot.io, snapshot.io.join(vdir, manifest_name(version, "v2")))
        except FileNotFoundError:
            entry = {e.version: e for e in _entries(snapshot)}.get(version)
            if entry is None:
                return None
            mf = read_manifest(snapshot.io, snapshot.io.join(vdir, entry.name), entry.size)
        m = mf.manifest
        if m.version != version:
            return None
        top = max([int(m.max_fragment_id)] + [int(f.id) for f in m.fragments])
        uuids = frozenset(s.uuid for s in read_index_segments(m, mf.raw, mf.path))
    except (OSError, LanceDuckError):           # gone or unreadable: proves nothing
        return None
    _SUMMARY.put(key, (top, uuids), 1)
    return top, uuids


def later_fragments(snapshot: Snapshot, seg: IndexSegment) -> str | None:
    """Why ``seg``'s fragment bitmap is provably a lie (a fragment created after its files), or None
    (the verdict kept per table, segment and claimed fragment: versions are listed at most once)."""
    if not seg.fragment_ids or seg.dataset_version >= snapshot.version:
        return None
    key = (getattr(snapshot.io, "key", None), snapshot.dataset_dir, seg.uuid, max(seg.fragment_ids))
    kept: tuple[str | None] | None = _VERDICT.get(key)
    if kept is not None:
        return kept[0]
    got = _later_fragments(snapshot, seg)
    _VERDICT.put(key, (got,), 1)
    return got


def _later_fragments(snapshot: Snapshot, seg: IndexSegment) -> str | None:
    first = _summary(snapshot, seg.dataset_version)
    claimed = max(seg.fragment_ids)
    if first is None or claimed <= first[0]:
        return None
    span = [e.version for e in _entries(snapshot) if seg.dataset_version < e.version <= snapshot.version]
    lo, hi = 0, len(span)                  # first listed version whose fragment ids reach ``claimed``
    while lo < hi:
        mid = (lo + hi) // 2
        got = _summary(snapshot, span[mid])
        if got is None:
            return None
        if got[0] >= claimed:
            hi = mid
        else:
            lo = mid + 1
    if lo == len(span):
        return None
    prior = _summary(snapshot, span[lo] - 1)
    if prior is not None and seg.uuid in prior[1]:
        return (f"its fragment bitmap names fragment {claimed}, created in version {span[lo]}, after "
                f"the index files (present in version {span[lo] - 1}; built at version {seg.dataset_version})")
    return None


def _entries(snapshot: Snapshot) -> list[VersionEntry]:
    """The listed versions of the snapshot's table (listed once per snapshot)."""
    def make() -> list[VersionEntry]:
        try:
            return list_versions(snapshot.io, snapshot.dataset_dir)
        except (OSError, LanceDuckError):
            return []
    return snapshot.derived("_lineage_versions", make)
