"""HNSW graphs of IVF_HNSW_* segments and the walk over them.

index.idx holds, per IVF partition (its ``offsets``/``lengths`` in the IVF message), one row per node and
level (``__vector_id`` u32: the node's row within the partition's part of auxiliary.idx, ``__neighbors``
list<u32>), level 0 first; ``lance:hnsw`` (a JSON list, one object per partition) gives the cumulative
``level_offsets`` and the ``entry_point``. A partition's graph is held compactly in the index cache
(:class:`PartitionGraph`: neighbour ids as uint16 up to 65,536 nodes, else uint32; upper levels list only
their nodes) and widened to intp one neighbour list at a time.

The walk is HNSW's: from the entry point, greedy descent through the upper levels down to level 1, then a
best-first search of level 0 keeping the ``ef`` nearest (``ef`` defaults to k + k/2, as pylance). With a
keep mask: all rows kept -> the plain walk; fewer than 10% of the partition kept -> exact over the kept
rows; otherwise the walk, where only kept nodes enter the results. Only the nodes the walk reaches are
scored (the unseen neighbours of each expanded node in one vectorised call); unvisited nodes are a numpy
mask, and once ``ef`` results are held only the neighbours within the worst result's distance reach
the heaps (the sequential walk's steps for the others change nothing), so the walk stays pylance's.
The keep mask of a partition's rows (deletions, vanished fragments) is kept in the index cache per table
state when no prefilter is in it (``IvfSegment._mask``). With numba (the ``fast`` extra), once loaded in the
background (:data:`WARM_WALKS`), level 0 of an SQ partition scored in float32 integer sums is walked by a
compiled kernel (``_hnsw_numba.py``) taking the same steps; ``compiled_kernels=0`` keeps numpy.
"""
from __future__ import annotations

import heapq
import json
from types import ModuleType
from typing import Callable

import numpy as np

from ... import _state
from ...errors import CorruptFileError
from ..files import IndexFile, cached

#: distances (float32) of the given partition rows to the query
Score = Callable[[np.ndarray], np.ndarray]

#: level-0 walks a process makes with numpy before it loads the compiled walk (numba, the ``fast``
#: extra) on a background thread: a short-lived process never pays numba's import (~0.3-0.5 s CPU)
WARM_WALKS = 64


def _import_walk() -> ModuleType | None:
    """The compiled walk's module, built, or None (numba not installed, or it cannot build it here)."""
    try:
        from . import _hnsw_numba
        _hnsw_numba.warm_up()
    except Exception:
        return None
    return _hnsw_numba


def _loader() -> _state.WarmLoader:
    return _state.slot("hnsw_kernels", lambda: _state.WarmLoader(_import_walk, WARM_WALKS, "lance_duck-hnsw-load"))


def compiled_walk(load: bool = False) -> ModuleType | None:
    """The compiled walk's module when the ``compiled_kernels`` setting allows it and it is loaded
    (``load``: load it now if it is not), else None (the numpy walk)."""
    if _state.settings()["compiled_kernels"] <= 0:
        return None
    return _loader().load() if load else _loader().note()


class PartitionGraph:
    """One partition's levels, compact: per level, the nodes on it (None on level 0, which holds every
    node: a node's position is its id), each one's slice ``[start, end)`` of the level's neighbour
    values, and those values, in the narrowest unsigned type holding a node id (uint16 up to 65,536
    nodes, else uint32)."""

    def __init__(self, entry: int, levels: list[tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray]]):
        self.entry = entry
        self.levels = levels      # per level: (sorted node ids or None, start, end, neighbour values)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for lv in self.levels for a in lv if a is not None)

    def neighbors(self, level: int, node: int) -> np.ndarray:
        """The neighbours of ``node`` on ``level`` (empty when it is not on that level)."""
        nodes, start, end, vals = self.levels[level]
        if nodes is None:
            return vals[start[node]:end[node]].astype(np.intp)
        i = int(np.searchsorted(nodes, node))
        if i == len(nodes) or nodes[i] != node:
            return np.zeros(0, np.intp)
        return vals[start[i]:end[i]].astype(np.intp)


class HnswGraphs:
    """The graphs of every partition of one index.idx (read per partition, cached)."""

    def __init__(self, index_file: IndexFile, ranges: tuple[np.ndarray, np.ndarray], aux_lengths: np.ndarray):
        self.file = index_file
        self.offsets, self.lengths = ranges
        self.aux_lengths = aux_lengths
        path = index_file.path
        try:
            metas = [json.loads(s) for s in json.loads(index_file.metadata["lance:hnsw"])]
        except (KeyError, ValueError, TypeError):
            raise CorruptFileError(f"{path}: schema metadata 'lance:hnsw' is not a JSON list of JSON objects") from None
        if len(metas) != len(aux_lengths):
            raise CorruptFileError(f"{path}: 'lance:hnsw' describes {len(metas)} partitions, the index has "
                                   f"{len(aux_lengths)}")
        self.metas = metas

    def graph(self, p: int) -> PartitionGraph:
        return cached(("hnsw-partition", self.file.path, p), lambda: self._load(p))

    def _load(self, p: int) -> PartitionGraph:
        path, meta = self.file.path, self.metas[p]
        n_nodes = int(self.aux_lengths[p])
        start, n_rows = int(self.offsets[p]), int(self.lengths[p])
        try:
            lo = np.asarray(meta["level_offsets"], dtype=np.int64)
            entry = int(meta["entry_point"])
        except (KeyError, TypeError, ValueError):
            raise CorruptFileError(f"{path}: partition {p}'s HNSW metadata {meta!r} lacks level_offsets / "
                                   "entry_point") from None
        if (len(lo) < 2 or lo[0] != 0 or (np.diff(lo) < 0).any() or lo[-1] != n_rows
                or lo[1] != n_nodes or (n_nodes and not 0 <= entry < n_nodes)):
            raise CorruptFileError(f"{path}: partition {p}'s HNSW levels {lo.tolist()} (entry {entry}) do not fit "
                                   f"its {n_rows} graph rows and {n_nodes} vectors")
        ids, nbrs = self.file.read(["__vector_id", "__neighbors"], range(start, start + n_rows))
        if len(ids) != n_rows or len(nbrs) != n_rows or ids.null_count:
            raise CorruptFileError(f"{path}: partition {p}'s graph rows are incomplete")
        node = ids.to_numpy(zero_copy_only=False)
        offs = nbrs.offsets.to_numpy()
        vals = nbrs.values.to_numpy(zero_copy_only=False)
        if (node >= max(n_nodes, 1)).any() or (len(vals) and (vals >= n_nodes).any()):
            raise CorruptFileError(f"{path}: partition {p}'s graph names nodes beyond its {n_nodes} vectors")
        narrow = np.uint16 if n_nodes <= 1 << 16 else np.uint32
        pos_type = np.uint32 if len(vals) < 1 << 32 else np.int64
        levels: list[tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray]] = []
        for a, b in zip(lo[:-1].tolist(), lo[1:].tolist()):
            if a == b:
                break
            lv_offs = (offs[a:b + 1] - offs[a]).astype(pos_type)
            lv_vals = vals[offs[a]:offs[b]].astype(narrow)
            lv_node = node[a:b]
            if not levels:          # level 0: every node, indexed by its id
                first = np.zeros(n_nodes, dtype=pos_type)
                last = np.zeros(n_nodes, dtype=pos_type)
                first[lv_node] = lv_offs[:-1]
                last[lv_node] = lv_offs[1:]
                levels.append((None, first, last, lv_vals))
                continue
            order = np.argsort(lv_node, kind="stable")
            levels.append((lv_node[order].astype(narrow), lv_offs[:-1][order], lv_offs[1:][order], lv_vals))
        return PartitionGraph(entry, levels)

    def search(self, p: int, score: Score, n: int, k: int, ef: int | None, mask: np.ndarray | None,
               bounds: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(rows within the partition, float32 distances) of the top ``k`` kept nodes, nearest first;
        ``score(rows)`` gives the distances of rows (only the nodes the walk reaches are scored);
        ``bounds`` = [lower, upper) on the distance of the nodes returned."""
        if n == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        ef = k + k // 2 if ef is None else max(int(ef), k)
        if mask is not None:
            kept = int(mask.sum())
            if kept == n:
                mask = None
            elif kept < n * 10 // 100:
                rows = np.flatnonzero(mask)
                dist = score(rows)
                if bounds is not None:
                    inside = (dist >= bounds[0]) & (dist < bounds[1])
                    rows, dist = rows[inside], dist[inside]
                order = np.lexsort((rows, dist))[:k]
                return rows[order], dist[order]
        rows, dist = walk(self.graph(p), score, k, ef, mask, bounds)
        return rows, dist


_NO_MASK = np.ones(1, dtype=bool)


def walk(g: PartitionGraph, score: Score, k: int, ef: int, mask: np.ndarray | None,
         bounds: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """HNSW search: greedy through levels > 0, best-first at level 0 keeping ``ef`` results.

    Each expanded node's unvisited neighbours are scored in one call, then go through the heap
    updates in the sequential walk's order (once ``ef`` results are held, only those no farther
    than the worst result change anything), so the walk is exactly pylance's.
    """
    cur = g.entry
    best = float(score(np.array([cur], dtype=np.int64))[0])
    for level in range(len(g.levels) - 1, 0, -1):
        while True:       # to the nearest neighbour (its first occurrence) while it is nearer
            nbs = g.neighbors(level, cur)
            if not len(nbs):
                break
            d = score(nbs)
            d = np.where(d < best, d, np.inf)
            j = int(np.argmin(d))
            if not d[j] < best:
                break
            best, cur = float(d[j]), int(nbs[j])
    lo, hi = (-np.inf, np.inf) if bounds is None else bounds
    _, start, end, vals = g.levels[0]
    parts: tuple[np.ndarray, np.ndarray, np.ndarray, np.float32] | None = getattr(score, "sq_parts", None)
    kernels = compiled_walk() if parts is not None and start.dtype == np.uint32 else None
    if kernels is not None and parts is not None:
        codes, base, twice_q, scale = parts
        out_d, out_n = np.empty(ef, np.float32), np.empty(ef, np.int64)
        got = kernels.level0_sq(start, end, vals, codes, base, twice_q, scale, cur, np.float32(best), ef,
                                mask if mask is not None else _NO_MASK, mask is not None, float(lo), float(hi),
                                out_d, out_n)
        order = np.lexsort((out_n[:got], out_d[:got]))[:k]
        return out_n[:got][order], out_d[:got][order]
    unvisited = np.ones(len(start), dtype=bool)
    unvisited[cur] = False
    candidates = [(best, cur)]
    results: list[tuple[float, int]] = []          # max-heap as (-dist, -node)
    if (mask is None or mask[cur]) and lo <= best < hi:
        results.append((-best, -cur))
    pop, push, replace = heapq.heappop, heapq.heappush, heapq.heapreplace
    plain = mask is None and bounds is None
    n_res, worst = len(results), (-results[0][0] if results else np.inf)
    intp = np.intp
    while candidates:
        dc, c = pop(candidates)
        full = n_res == ef
        if full and dc > worst:
            break
        nbs = vals[start[c]:end[c]].astype(intp)      # indexing with intp takes numpy's fast paths
        fresh = nbs[unvisited[nbs]]
        listed = fresh.tolist()
        if not listed:
            continue
        if len(set(listed)) < len(listed):      # a neighbour listed twice is visited once
            listed = list(dict.fromkeys(listed))
            fresh = np.asarray(listed, dtype=intp)
        unvisited[fresh] = False
        dl = score(fresh).tolist()
        if plain:
            if full:      # only neighbours no farther than the worst result change anything
                for nb, dn in zip(listed, dl):
                    if dn <= worst:
                        if dn < worst:
                            replace(results, (-dn, -nb))
                            worst = -results[0][0]
                        push(candidates, (dn, nb))
                continue
            for nb, dn in zip(listed, dl):
                if n_res < ef:
                    push(results, (-dn, -nb))
                    n_res += 1
                    if n_res == ef:
                        worst = -results[0][0]
                elif dn <= worst:
                    if dn < worst:
                        replace(results, (-dn, -nb))
                        worst = -results[0][0]
                else:
                    continue
                push(candidates, (dn, nb))
            continue
        okl = [True] * len(listed) if mask is None else mask[fresh].tolist()
        for nb, dn, keep in zip(listed, dl, okl):
            if n_res < ef or dn <= worst:
                if keep and lo <= dn < hi:
                    if n_res < ef:
                        push(results, (-dn, -nb))
                        n_res += 1
                        if n_res == ef:
                            worst = -results[0][0]
                    elif dn < worst:
                        replace(results, (-dn, -nb))
                        worst = -results[0][0]
                push(candidates, (dn, nb))
    found = sorted((-negd, -negn) for negd, negn in results)[:k]
    return (np.asarray([node for _, node in found], dtype=np.int64),
            np.asarray([d for d, _ in found], dtype=np.float32))
