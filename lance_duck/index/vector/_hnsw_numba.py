"""The numba kernel behind the compiled HNSW walk (:mod:`lance_duck.index.vector.hnsw`; imported only
from there, and only when numba is installed). Compiled once per machine into numba's on-disk cache.

:func:`level0_sq` is the walk's level-0 best-first search over an SQ partition scored as the numpy
scorer does (``(base[r] - codes[r] . (2 q)) * scale`` in float32, where every partial sum is an integer
below 2^24: summed here as int32, in any order, its distances are the numpy scorer's bit for bit), with the numpy walk's steps: neighbours
taken in list order, each visited once, the candidates a min-heap and the results a max-heap of
(distance, node) pairs -- keys are unique, so any heap gives the same pops as Python's ``heapq``.
It releases the GIL.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _below(d1: Any, n1: int, d2: Any, n2: int) -> bool:  # pragma: no cover - compiled
    return d1 < d2 or (d1 == d2 and n1 < n2)


@njit(cache=True, nogil=True)
def _push_min(hd: np.ndarray, hn: np.ndarray, size: int, d: Any, n: int) -> int:  # pragma: no cover
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if not _below(d, n, hd[parent], hn[parent]):
            break
        hd[i], hn[i] = hd[parent], hn[parent]
        i = parent
    hd[i], hn[i] = d, n
    return size + 1


@njit(cache=True, nogil=True)
def _sift_down(hd: np.ndarray, hn: np.ndarray, size: int, d: Any, n: int, top_is_max: bool) -> None:  # pragma: no cover
    """Put (d, n) at the root of a heap of ``size`` items and sift it down (min-heap, or max-heap
    when ``top_is_max``)."""
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        right = child + 1
        if top_is_max:
            if right < size and _below(hd[child], hn[child], hd[right], hn[right]):
                child = right
            if not _below(d, n, hd[child], hn[child]):
                break
        else:
            if right < size and _below(hd[right], hn[right], hd[child], hn[child]):
                child = right
            if not _below(hd[child], hn[child], d, n):
                break
        hd[i], hn[i] = hd[child], hn[child]
        i = child
    hd[i], hn[i] = d, n


@njit(cache=True, nogil=True)
def _push_max(hd: np.ndarray, hn: np.ndarray, size: int, d: Any, n: int) -> int:  # pragma: no cover
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if not _below(hd[parent], hn[parent], d, n):
            break
        hd[i], hn[i] = hd[parent], hn[parent]
        i = parent
    hd[i], hn[i] = d, n
    return size + 1


@njit(cache=True, nogil=True, boundscheck=False)
def level0_sq(start: np.ndarray, end: np.ndarray, vals: np.ndarray, codes: np.ndarray, base: np.ndarray,
              twice_q: np.ndarray, scale: np.float32, cur: int, best: np.float32, ef: int, mask: np.ndarray,
              use_mask: bool, lo: float, hi: float, out_d: np.ndarray, out_n: np.ndarray) -> int:  # pragma: no cover
    """Level 0 of the walk from ``cur`` (distance ``best``): the results (at most ``ef``, unordered)
    written to ``out_d`` / ``out_n``; returns how many. ``mask`` (when ``use_mask``): the nodes that
    may enter the results; ``[lo, hi)``: the distances that may."""
    n = len(start)
    dim = codes.shape[1]
    visited = np.zeros(n, np.bool_)
    cd = np.empty(n + 1, np.float32)
    cn = np.empty(n + 1, np.int64)
    rd = out_d
    rn = out_n
    visited[cur] = True
    n_cand = _push_min(cd, cn, 0, best, cur)
    n_res = 0
    if (not use_mask or mask[cur]) and lo <= best and best < hi:
        n_res = _push_max(rd, rn, 0, best, cur)
    worst = rd[0] if n_res else np.float32(np.inf)
    while n_cand:
        dc, c = cd[0], cn[0]
        n_cand -= 1
        if n_cand:
            _sift_down(cd, cn, n_cand, cd[n_cand], cn[n_cand], False)
        if n_res == ef and dc > worst:
            break
        for i in range(start[c], end[c]):
            nb = np.int64(vals[i])
            if visited[nb]:
                continue
            visited[nb] = True
            acc = 0        # integers (below 2^24): summed in any order, vectorised
            for j in range(dim):
                acc += np.int32(codes[nb, j]) * twice_q[j]
            d = np.float32(np.float32(base[nb] - np.float32(acc)) * scale)
            if n_res < ef or d <= worst:
                if (not use_mask or mask[nb]) and lo <= d and d < hi:
                    if n_res < ef:
                        n_res = _push_max(rd, rn, n_res, d, nb)
                        if n_res == ef:
                            worst = rd[0]
                    elif d < worst:
                        _sift_down(rd, rn, n_res, d, nb, True)
                        worst = rd[0]
                n_cand = _push_min(cd, cn, n_cand, d, nb)
    return n_res


def warm_up() -> None:
    """Call the kernel with every argument type the walk passes (uint32 or int64 list positions,
    uint16 or uint32 neighbour ids), so that loading it (from numba's cache, or compiling it) happens
    on the loading thread, not in a search."""
    codes = np.zeros((2, 4), np.uint8)
    codes.setflags(write=False)          # as the partition's codes, read from auxiliary.idx
    base = np.zeros(2, np.float32)
    tq = np.zeros(4, np.int32)
    out_d, out_n = np.empty(2, np.float32), np.empty(2, np.int64)
    for pos in (np.uint32, np.int64):
        for ids in (np.uint16, np.uint32):
            start, end = np.array([0, 1], pos), np.array([1, 2], pos)
            vals = np.array([1, 0], ids)
            level0_sq(start, end, vals, codes, base, tq, np.float32(1), 0, np.float32(0), 2,
                      np.ones(2, np.bool_), False, -np.inf, np.inf, out_d, out_n)
