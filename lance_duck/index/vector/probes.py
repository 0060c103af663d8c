"""How many IVF partitions pylance 14.0.2 probes first, from the query's sorted centroid distances.

``nprobes`` (minimum == maximum) is exact. Otherwise pylance raises ``minimum_nprobes`` with a heuristic:
for l2 / cosine / dot and k <= 1000 (every IVF type, with or without refine -- k is the user's k, not
k * refine_factor -- measured on 14.0.2; a maximum only caps it) it takes the partitions whose centroid
distance is within a relative margin of the nearest one, between a floor and a cap that depend on the
metric and k; otherwise (hamming, k > 1000) the partitions within a factor of the nearest distance. After that first round, partitions up to the maximum are probed while fewer than
k rows were kept.
"""
from __future__ import annotations

import numpy as np

F32 = np.float32

# metric -> per k bucket (k <= 1, <= 10, <= 100, <= 200, <= 500, <= 1000): (margin, floor, cap)
ADAPTIVE = {
    "l2": ((0.2175, 5, 19), (0.265, 6, 24), (0.33, 11, 38), (0.375, 15, 56), (0.3725, 22, 81),
           (0.4175, 29, 93)),
    "cosine": ((0.235, 3, 50), (0.2875, 8, 77), (0.38, 7, 106), (0.415, 18, 156), (0.45, 28, 192),
               (0.47, 34, 248)),
    "dot": ((0.14, 56, 112), (0.055, 144, 432), (0.0625, 200, 768), (0.0675, 211, 833), (0.07, 244, 971),
            (0.0725, 279, 1092)),
}
BUCKETS = (1, 10, 100, 200, 500)


def initial_probes(dists: np.ndarray, k: int, minimum: int, maximum: int | None, metric: str,
                   adaptive: bool) -> int:
    """Partitions probed before the late search, given the sorted centroid distances ``dists``."""
    n = len(dists)
    if maximum is not None and maximum == minimum:
        return min(minimum, n)
    if adaptive and k <= 1000 and metric in ADAPTIVE and np.isfinite(dists).all():
        margin, floor, cap = ADAPTIVE[metric][int(np.searchsorted(BUCKETS, k))]
        if n == 0:
            selected = 0
        else:
            nearest = float(dists[0])
            scale = abs(1.0 - nearest) if metric == "dot" else nearest
            gap = dists.astype(np.float64) - nearest
            ok = np.isfinite(dists) & (gap <= float(F32(margin)) * scale)
            selected = n if not np.isfinite(nearest) else int(np.argmin(ok)) if not ok.all() else n
        selected = min(max(selected, floor), cap)
        return min(max(minimum, selected), n if maximum is None else maximum, n)
    # the legacy heuristic, in float32 as pylance computes it
    selected = 0
    if n:
        factor = F32(0.6) if k <= 1 else F32(7.0) if k <= 10 else F32(81.0)
        threshold = F32(dists[0]) * factor
        selected = int(np.searchsorted(dists, threshold, side="right"))
    first = max(minimum, selected)
    if maximum is not None:
        first = min(first, maximum)
    return min(first, n)
