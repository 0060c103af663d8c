"""HNSW graphs of IVF_HNSW_* segments and the walk over them.

index.idx holds, per IVF partition (its ``offsets``/``lengths`` in the IVF message), one row per node and
level (``__vector_id`` u32: the node's row within the partition's part of auxiliary.idx, ``__neighbors``
list<u32>), level 0 first; ``lance:hnsw`` (a JSON list, one object per partition) gives the cumulative
``level_offsets`` and the ``entry_point``.

The walk is HNSW's: from the entry point, greedy descent through the upper levels down to level 1, then a
best-first search of level 0 keeping the ``ef`` nearest (``ef`` defaults to k + k/2, as pylance). With a
keep mask: all rows kept -> the plain walk; fewer than 10% of the partition kept -> exact over the kept
rows; otherwise the walk, where only kept nodes enter the results. Only the nodes the walk reaches are
scored (the unseen neighbours of each expanded node in one vectorised call).
"""
from __future__ import annotations

import heapq
import json

import numpy as np

from ...errors import CorruptFileError
from ..files import IndexFile, cached


class PartitionGraph:
    """One partition's levels: per level, node id -> row, and the neighbor lists."""

    def __init__(self, entry: int, levels: list[tuple[np.ndarray, np.ndarray, np.ndarray]]):
        self.entry = entry
        self.levels = levels      # per level: (row of node id or -1, list offsets, neighbor values)

    def neighbors(self, level: int, node: int) -> list[int]:
        pos, offs, vals = self.levels[level]
        r = pos[node]
        return [] if r < 0 else vals[offs[r]:offs[r + 1]].tolist()


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
        node = ids.to_numpy(zero_copy_only=False).astype(np.int64)
        offs = nbrs.offsets.to_numpy().astype(np.int64)
        vals = nbrs.values.to_numpy(zero_copy_only=False).astype(np.int64)
        if (node >= max(n_nodes, 1)).any() or (len(vals) and (vals >= n_nodes).any()):
            raise CorruptFileError(f"{path}: partition {p}'s graph names nodes beyond its {n_nodes} vectors")
        levels = []
        for a, b in zip(lo[:-1], lo[1:]):
            if a == b:
                break
            pos = np.full(n_nodes, -1, dtype=np.int64)
            pos[node[a:b]] = np.arange(a, b)
            levels.append((pos, offs, vals))
        return PartitionGraph(entry, levels)

    def search(self, p: int, score, n: int, k: int, ef: int | None, mask: np.ndarray | None,
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


def walk(g: PartitionGraph, score, k: int, ef: int, mask: np.ndarray | None,
         bounds: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """HNSW search: greedy through levels > 0, best-first at level 0 keeping ``ef`` results; each
    expanded node's unseen neighbours are scored in one call."""
    known: dict[int, float] = {}

    def dists(nodes: list[int]) -> list[float]:
        todo = [n for n in nodes if n not in known]
        if todo:
            known.update(zip(todo, score(np.asarray(todo, dtype=np.int64)).tolist()))
        return [known[n] for n in nodes]

    cur = g.entry
    best = dists([cur])[0]
    for level in range(len(g.levels) - 1, 0, -1):
        while True:
            nxt = None
            nbs = g.neighbors(level, cur)
            for nb, dn in zip(nbs, dists(nbs)):
                if dn < best:
                    best, nxt = dn, nb
            if nxt is None:
                break
            cur = nxt
    keep = None if mask is None else mask.tolist()
    lo, hi = (-np.inf, np.inf) if bounds is None else bounds
    visited = {cur}
    candidates = [(best, cur)]
    results: list[tuple[float, int]] = []          # max-heap as (-dist, -node)
    if (keep is None or keep[cur]) and lo <= best < hi:
        results.append((-best, -cur))
    pos, offs, vals = g.levels[0]
    while candidates:
        dc, c = heapq.heappop(candidates)
        if len(results) == ef and dc > -results[0][0]:
            break
        r = pos[c]
        if r < 0:
            continue
        fresh = [nb for nb in dict.fromkeys(vals[offs[r]:offs[r + 1]].tolist()) if nb not in visited]
        for nb, dn in zip(fresh, dists(fresh)):
            visited.add(nb)
            if len(results) < ef or dn <= -results[0][0]:
                if (keep is None or keep[nb]) and lo <= dn < hi:
                    if len(results) < ef:
                        heapq.heappush(results, (-dn, -nb))
                    elif dn < -results[0][0]:
                        heapq.heapreplace(results, (-dn, -nb))
                heapq.heappush(candidates, (dn, nb))
    found = sorted((-negd, -negn) for negd, negn in results)[:k]
    return (np.asarray([node for _, node in found], dtype=np.int64),
            np.asarray([d for d, _ in found], dtype=np.float32))
