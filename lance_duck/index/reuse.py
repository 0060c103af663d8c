"""The fragment-reuse index: compactions whose index remapping was deferred.

``compact_files(defer_index_remap=True)`` rewrites fragments but leaves every index segment as
it was: its ``fragment_bitmap`` still names the old fragments and its files hold their row
addresses. The manifest then carries ``__lance_frag_reuse`` (``FragmentReuseIndexDetails``,
protos/index.proto): per compaction (the dataset version it read), groups of old fragments
rewritten as new ones, and ``changed_row_addrs``, the old row addresses the new fragments hold,
sorted, which are the new fragments' rows in order (old rows not in it were deleted).

* Listing (pylance's rule): a segment covering any old fragment of a group covers its new ones.
* Index use (stricter, to stay exact): a segment answers for a group's new fragments only if it
  covered all of its old ones; old row addresses are translated to new ones, compaction after
  compaction. Content stored in an external file (over 200 KB) is not read: such an index means
  "scan normally" (listing keeps the stored bitmaps).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np
from google.protobuf.message import DecodeError

from .._proto import index_pb2
from ..errors import CorruptFileError
from .metadata import IndexSegment
from .ngram import decode_treemap
from .terms import Unsupported

TYPE_SUFFIX = "FragmentReuseIndexDetails"
_LOW = np.uint64(0xFFFFFFFF)


@dataclass(frozen=True)
class ReuseGroup:
    """Old fragments rewritten as new ones by one compaction."""

    old: dict[int, int]                  # old fragment id -> physical rows
    new: dict[int, int]                  # new fragment id -> physical rows (in row order)
    old_addrs: np.ndarray                # sorted uint64 old row addresses, one per new row

    def new_addresses(self) -> np.ndarray:
        """uint64 new row address of each entry of ``old_addrs``."""
        parts = [np.arange(n, dtype=np.uint64) | (np.uint64(fid) << np.uint64(32)) for fid, n in self.new.items()]
        addrs = np.concatenate(parts) if parts else np.empty(0, np.uint64)
        if len(addrs) != len(self.old_addrs):
            raise CorruptFileError(f"fragment reuse group {sorted(self.old)} -> {sorted(self.new)}: "
                                   f"{len(self.old_addrs)} row addresses for {len(addrs)} new rows")
        return addrs


def is_reuse(seg: IndexSegment) -> bool:
    return seg.type_url.endswith(TYPE_SUFFIX)


def reuse_versions(segments: Iterable[IndexSegment]) -> list[tuple[int, list[ReuseGroup]]]:
    """The deferred compactions, oldest first: (the dataset version each one read, its groups);
    Unsupported for content this reader does not read."""
    out: list[tuple[int, list[ReuseGroup]]] = []
    for seg in segments:
        if not is_reuse(seg):
            continue
        details = index_pb2.FragmentReuseIndexDetails()
        try:
            details.ParseFromString(seg.details)
        except (DecodeError, ValueError, RuntimeError) as exc:
            raise CorruptFileError(f"fragment reuse index {seg.uuid}: corrupt details ({exc})") from exc
        if details.WhichOneof("content") != "inline":
            raise Unsupported("fragment reuse index content in an external file")
        for v in details.inline.versions:
            groups = [ReuseGroup(old={f.id: f.physical_rows for f in g.old_fragments},
                                 new={f.id: f.physical_rows for f in g.new_fragments},
                                 old_addrs=decode_treemap(g.changed_row_addrs,
                                                          f"fragment reuse index {seg.uuid}"))
                      for g in v.groups]
            out.append((v.dataset_version, groups))
    out.sort(key=lambda p: p[0])
    return out


def listed_fragments(fragment_ids: frozenset[int], versions: list[tuple[int, list[ReuseGroup]]]) -> frozenset[int]:
    """pylance's view of a segment's fragments: a group's new fragments replace its old ones
    when the segment names any of them."""
    ids = set(fragment_ids)
    for _, groups in versions:
        for g in groups:
            if ids & g.old.keys():
                ids -= g.old.keys()
                ids |= g.new.keys()
    return frozenset(ids)


class Remap:
    """One segment seen through the deferred compactions that came after it was written (its
    ``dataset_version`` at most the version a compaction read): the fragments it answers for
    exactly, and its stored row addresses translated to this version's.

    A stored bitmap may name a group's old fragments (not remapped yet: the group counts only
    when it covered all of them) or its new ones (pylance rewrites the bitmap at the next commit;
    compaction never groups fragments of different index coverage)."""

    def __init__(self, fragment_ids: frozenset[int], dataset_version: int,
                 versions: list[tuple[int, list[ReuseGroup]]]):
        ids = set(fragment_ids)
        self.steps: list[list[ReuseGroup]] = []
        self.old_rows: dict[int, int] = {}
        for read_version, groups in versions:
            if read_version < dataset_version:
                continue                     # the segment was written after this compaction
            step = []
            for g in groups:
                if g.old.keys() <= ids:
                    ids = (ids - g.old.keys()) | g.new.keys()
                elif ids & g.old.keys():     # partly covered: its new fragments are scanned
                    ids -= g.old.keys()
                    continue
                elif not ids & g.new.keys():
                    continue
                step.append(g)
                self.old_rows.update(g.old)
            self.steps.append(step)
        self.fragment_ids = frozenset(ids)

    def addresses(self, addrs: np.ndarray) -> np.ndarray:
        """Sorted unique uint64 row addresses of this version for sorted stored ``addrs``; rows of
        rewritten fragments that did not survive compaction are dropped."""
        for step in self.steps:
            for g in step:
                frag = (addrs >> np.uint64(32)).astype(np.int64)
                moved = np.isin(frag, np.fromiter(g.old, dtype=np.int64, count=len(g.old)))
                if not moved.any():
                    continue
                src = addrs[moved]
                pos = np.minimum(np.searchsorted(g.old_addrs, src), max(len(g.old_addrs) - 1, 0))
                hit = g.old_addrs[pos] == src if len(g.old_addrs) else np.zeros(len(src), bool)
                addrs = np.concatenate((addrs[~moved], g.new_addresses()[pos[hit]]))
                addrs.sort()
        return addrs


__all__ = ["Remap", "ReuseGroup", "is_reuse", "listed_fragments", "reuse_versions"]
