"""A streaming top-k: keeps the k smallest (distance, row id) pairs seen so far.

Each block is cut with ``argpartition`` (O(n)), so memory is O(k + block) whatever the stream's
length; ties at the k-th distance are settled by row id, as pylance orders results.
"""
from __future__ import annotations

import numpy as np


def smallest(ids: np.ndarray, dist: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k smallest of (dist, id) pairs, sorted by distance then row id; NaN distances dropped.

    Example:
        >>> import numpy as np
        >>> smallest(np.array([7, 3, 5], np.uint64), np.array([1.0, 0.5, 1.0], np.float32), 2)
        (array([3, 5], dtype=uint64), array([0.5, 1. ], dtype=float32))
    """
    ok = ~np.isnan(dist)
    if not ok.all():
        ids, dist = ids[ok], dist[ok]
    if len(dist) > k:
        kth = np.partition(dist, k - 1)[k - 1]
        keep = dist <= kth
        ids, dist = ids[keep], dist[keep]
    order = np.lexsort((ids, dist))[:k]
    return ids[order], dist[order]


class TopK:
    """Accumulates blocks of (row ids, distances) and keeps the best k.

    Example:
        >>> import numpy as np
        >>> t = TopK(2)
        >>> t.push(np.array([1, 2], np.uint64), np.array([3.0, 1.0], np.float32))
        >>> t.push(np.array([3], np.uint64), np.array([2.0], np.float32))
        >>> t.result()[0].tolist()
        [2, 3]
    """

    def __init__(self, k: int) -> None:
        self.k = k
        self._ids = np.empty(0, np.uint64)
        self._dist = np.empty(0, np.float32)

    def push(self, ids: np.ndarray, dist: np.ndarray) -> None:
        """Add a block of candidates."""
        if len(ids) == 0:
            return
        if len(self._ids):
            ids = np.concatenate([self._ids, ids.astype(np.uint64, copy=False)])
            dist = np.concatenate([self._dist, dist.astype(np.float32, copy=False)])
        self._ids, self._dist = smallest(ids.astype(np.uint64, copy=False), dist.astype(np.float32, copy=False),
                                         self.k)

    def worst(self) -> float | None:
        """The k-th best distance so far (None until k are kept)."""
        return float(self._dist[-1]) if len(self._dist) >= self.k else None

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """(row ids uint64, distances float32) of the best k, sorted."""
        return self._ids, self._dist
