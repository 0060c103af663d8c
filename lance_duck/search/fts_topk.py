"""The best ``k`` rows of an OR match query without scoring every posting (MaxScore).

A query's terms become *parts*: one term's postings in some scoring units (index partitions, or
the unindexed rows), each with the term's idf and the unit's length norms. A row's score is the
sum over the parts holding it of ``idf * (k1 + 1) * tf / (tf + norm)``.

Each part has an upper bound, ``idf * (k1 + 1) * max_tf / (max_tf + min_norm)`` (the score grows
with tf and falls with the norm). Parts are scored in full, highest bound first, while the bounds
of the parts not yet scored add up to at least ``theta``, the largest k-th best live score of a
part scored so far (some ``k`` rows score at least that, so the k-th best sum does too). A row
found only in the parts left over sums below ``theta``: the candidates are the rows of the parts
scored in full, and the others are looked up at the candidates only (a binary search in their
sorted doc numbers). Every row scoring at least the k-th best, ties included, is kept.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

#: below this many postings in all, every posting is scored (the pruning costs more)
TOP_K_MIN_POSTINGS = 4096
#: a relative margin under ``theta`` (the sums are float64, the scores returned float32)
_MARGIN = 1e-6
_DEAD = np.uint64(0xFFFFFFFFFFFFFFFF)


@dataclass
class Part:
    """One term's postings in some units: (unit number, doc numbers sorted, tfs, idf, the unit's
    norms per doc) per unit; ``weight`` multiplies its scores."""

    entries: list[tuple[int, np.ndarray, np.ndarray, float, np.ndarray]]
    k1: float

    def bound(self, min_norms: dict[int, float]) -> float:
        best = 0.0
        for ui, _, tfs, idf, _ in self.entries:
            tf = float(tfs.max())
            best = max(best, idf * (self.k1 + 1.0) * tf / (tf + min_norms[ui]))
        return best

    def scores(self, entry: tuple, at: np.ndarray | None = None) -> np.ndarray:
        """The scores of ``entry``'s postings (those at positions ``at`` only)."""
        _, docs, tfs, idf, norms = entry
        if at is not None:
            docs, tfs = docs[at], tfs[at]
        tf = tfs.astype(np.float64)
        return idf * (self.k1 + 1.0) * tf / (tf + norms[docs])

    @property
    def size(self) -> int:
        return sum(len(e[1]) for e in self.entries)


def top_k(parts: list[Part], units: list[Any], k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(row addresses, summed float64 scores) of the candidate rows for the best ``k`` of ``parts``
    (a part listed twice counts twice; sums in list order); None when there is nothing to prune
    (few postings, or no part holds ``k`` live rows). ``units``: objects with ``addresses(docs)``,
    ``all_live``, ``addrs`` (DEAD: a deleted row) and ``min_norm``."""
    counts: dict[int, int] = {}
    distinct: list[Part] = []
    for p in parts:
        if id(p) not in counts:
            distinct.append(p)
        counts[id(p)] = counts.get(id(p), 0) + 1
    if k <= 0 or sum(p.size for p in distinct) < TOP_K_MIN_POSTINGS:
        return None
    min_norms = {ui: float(units[ui].min_norm) for p in distinct for ui, *_ in p.entries}
    # best possible contribution of each part to a row's sum (its repeats included)
    best = [counts[id(p)] * p.bound(min_norms) if p.entries else 0.0 for p in distinct]
    order = sorted(range(len(distinct)), key=lambda i: -best[i])
    rest = np.cumsum([best[i] for i in order][::-1])[::-1]        # rest[j]: best of order[j:] summed
    full: dict[int, list[tuple[np.ndarray, np.ndarray | None]]] = {}   # part -> (scores, live) per entry
    theta = 0.0
    for j, i in enumerate(order):
        if theta > 0.0 and rest[j] < theta:
            break
        p = distinct[i]
        got, live_scores = [], []
        for e in p.entries:
            sc = p.scores(e)
            unit = units[e[0]]
            live = None if unit.all_live else unit.addrs[e[1]] != _DEAD
            got.append((sc, live))
            live_scores.append(sc if live is None else sc[live])
        full[id(p)] = got
        ls = np.concatenate(live_scores) if live_scores else np.empty(0)
        if len(ls):
            best[i] = counts[id(p)] * float(ls.max())               # the part's actual best
        if len(ls) >= k:
            theta = max(theta, counts[id(p)] * float(np.partition(ls, len(ls) - k)[len(ls) - k]) * (1.0 - _MARGIN))
    if theta <= 0.0:
        return None

    def totals(ui: int, docs: np.ndarray) -> np.ndarray:
        """Sums over every part (in list order) for sorted live ``docs`` of unit ``ui``."""
        total = np.zeros(len(docs))
        for p in parts:
            for n, e in enumerate(p.entries):
                if e[0] != ui or not len(e[1]):
                    continue
                at = np.minimum(np.searchsorted(e[1], docs), len(e[1]) - 1)
                hit = e[1][at] == docs
                if id(p) in full:
                    total += np.where(hit, full[id(p)][n][0][at], 0.0)
                else:
                    sc = np.zeros(len(docs))
                    sc[hit] = p.scores(e, at[hit])
                    total += sc
        return total

    def pick(floors: dict[int, float], top: int | None) -> dict[int, np.ndarray]:
        """Per unit, sorted docs of the parts scored in full scoring at least ``floors[part]``
        there (live ones; with ``top``, only each entry's ``top`` best)."""
        out: dict[int, list[np.ndarray]] = {}
        for p in distinct:
            if id(p) not in full:
                continue
            for e, (sc, live) in zip(p.entries, full[id(p)]):
                keep = counts[id(p)] * sc >= floors[id(p)]
                if live is not None:
                    keep &= live
                idx = np.flatnonzero(keep)
                if top is not None and len(idx) > top:
                    idx = idx[np.argpartition(-sc[idx], top - 1)[:top]]
                    idx.sort()
                out.setdefault(e[0], []).append(e[1][idx])
        return {ui: (v[0] if len(v) == 1 else _sorted_unique(np.concatenate(v))) for ui, v in out.items()}

    # a better theta: the k-th best sum of a few real rows (each full part's best k)
    seeds = pick({id(p): -np.inf for p in distinct}, k)
    sums = np.concatenate([totals(ui, d) for ui, d in seeds.items()]) if seeds else np.empty(0)
    if len(sums) >= k:
        theta = max(theta, float(np.partition(sums, len(sums) - k)[len(sums) - k]) * (1.0 - _MARGIN))
    # candidates: rows of a part scored in full whose score there plus every other part's best
    # reaches theta (a row of the other parts only cannot: their bests sum below theta)
    total_best = float(sum(best))
    cands = pick({id(p): theta - (total_best - best[i]) for i, p in enumerate(distinct)}, None)
    addrs, sums_out = [], []
    for ui, docs in cands.items():
        if len(docs):
            addrs.append(units[ui].addresses(docs))
            sums_out.append(totals(ui, docs))
    if not addrs:
        return np.empty(0, np.uint64), np.empty(0)
    return np.concatenate(addrs), np.concatenate(sums_out)


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique`` of a few concatenated sorted runs (a sort that finds the runs, no hashing)."""
    values = np.sort(values, kind="stable")
    return values[np.concatenate(([True], values[1:] != values[:-1]))] if len(values) else values
