"""Vector index segments (``_indices/<uuid>/index.idx`` + ``auxiliary.idx``) and their per-segment ANN search.

The query side (``nearest=``) opens one :class:`VectorSegment` per segment covering live fragments with
:func:`open_vector_segment` and calls :meth:`VectorSegment.search`; it merges segments, unindexed fragments,
deletions, prefilters and refine itself.

Measured on pylance 14.0.2, for the query side: when any searched fragment is not covered by the index
(and fast_search is off), pylance's ANN rows come back with exact distances re-ranked, as with
``refine_factor=1`` (``lance_duck`` with ``refine_factor=1`` then equals pylance row for row); and the
first-round probe count depends on the user's k, not k * refine_factor: pass ``refine_factor`` to ``search``;
``distance_range`` is applied by pylance inside the index search (before the top-k): pass it too.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol

import numpy as np

from ..metadata import IndexSegment

if TYPE_CHECKING:
    from ...table.snapshot import Snapshot

Keep = Callable[[np.ndarray], np.ndarray]


class VectorSegment(Protocol):
    """One vector index segment, searchable per query."""

    uuid: str
    index_type: str            # pylance's type string: "IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_SQ", ...
    metric: str                # "l2" | "cosine" | "dot" | "hamming" (the index's metric)
    dim: int
    num_partitions: int
    fragment_ids: frozenset[int]

    def search(self, q: np.ndarray, k: int, *, minimum_nprobes: int, maximum_nprobes: int | None,
               ef: int | None, keep: Keep | None, refine_factor: int | None = None,
               distance_range: tuple[float | None, float | None] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (or fewer) of this segment for one query ``q`` (1-D float32 of ``dim``, validated).

        Returns ``(row_ids uint64, distances float32)`` sorted by (distance, row id), distances as
        pylance's unrefined ``_distance`` for this index type. ``keep(row_ids) -> bool mask`` drops
        candidates before the top-k (deletions, vanished fragments, prefilter); None keeps all. The
        ``minimum_nprobes`` nearest partitions are probed (raised, unless it equals ``maximum_nprobes``,
        by pylance's first-round heuristic: lance_duck.index.vector.probes), then more (nearest first)
        while fewer than ``k`` candidates are kept, up to ``maximum_nprobes`` (None = all).
        ``refine_factor``: the query's refine factor when ``k`` is ``user k * refine_factor`` (the
        heuristic depends on the user's k, not on k * refine_factor). ``distance_range``: pylance's
        [lower, upper) on ``_distance``, applied inside the search before the top-k (HNSW: only nodes in
        range enter the walk's results), so k rows in range come back when the probed rows hold them.
        """
        ...


def open_vector_segment(snapshot: Snapshot, segment: IndexSegment) -> VectorSegment:
    """The vector segment ``segment`` of ``snapshot``'s manifest, its files read lazily.

    Raises UnsupportedFeatureError naming the index type / version lance_duck cannot read and
    CorruptFileError naming the file on damage.

    Example::

        seg = open_vector_segment(snapshot, index_segments(snapshot)[0])
        ids, dist = seg.search(q, 10, minimum_nprobes=20, maximum_nprobes=None, ef=None, keep=None)
    """
    from .ivf import open_ivf_segment
    return open_ivf_segment(snapshot, segment)


__all__ = ["Keep", "VectorSegment", "open_vector_segment"]
