"""The best ``k`` rows of an OR match query without scoring every posting (MaxScore).

A query's terms become *parts*: one term's postings in some scoring units (index partitions, or
the unindexed rows), each with the term's idf and the unit's length norms. A row's score is the
sum over the parts holding it of ``idf * (k1 + 1) * tf / (tf + norm)``.

Each part has an upper bound, ``idf * (k1 + 1) * max_tf / (max_tf + min_norm)`` (the score grows
with tf and falls with the norm). Parts are scored in full, highest bound first, while the bounds
of the parts not yet scored add up to at least ``theta``, the largest k-th best live score of a
part scored so far (some ``k`` rows score at least that, so the k-th best sum does too). A row
found only in the parts left over sums below ``theta``. The rows of the parts scored in full are
merged (their sums there; the k-th best of those raises ``theta``); a row whose sum there plus the
bounds of the other parts stays below ``theta`` cannot rank. The others are summed exactly, every
part in list order (those not scored in full looked up at these rows only). Every row scoring at
least the k-th best, ties included, is kept.
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

    def scores(self, entry: tuple[int, np.ndarray, np.ndarray, float, np.ndarray],
               at: np.ndarray | None = None) -> np.ndarray:
        """The scores of ``entry``'s postings (those at positions ``at`` only)."""
        _, docs, tfs, idf, norms = entry
        if at is not None:
            docs, tfs = docs[at], tfs[at]
        tf = tfs.astype(np.float64)
        out: np.ndarray = idf * (self.k1 + 1.0) * tf / (tf + norms[docs])
        return out

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

    # per unit: each live doc of the parts scored in full, with their sum (merged in doc order)
    merged: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    by_unit: dict[int, tuple[list[np.ndarray], list[np.ndarray]]] = {}
    for p in parts:
        if id(p) in full:
            for e, (sc, live) in zip(p.entries, full[id(p)]):
                docs_l, sc_l = by_unit.setdefault(e[0], ([], []))
                docs_l.append(e[1] if live is None else e[1][live])
                sc_l.append(sc if live is None else sc[live])
    for ui, (docs_l, sc_l) in by_unit.items():
        if len(docs_l) == 1:                                  # one part: its docs are sorted, unique
            merged[ui] = (docs_l[0], sc_l[0])
            continue
        docs = np.concatenate(docs_l).astype(np.int64, copy=False)
        sc = np.concatenate(sc_l)
        order_ = np.argsort(docs, kind="stable")              # the parts' sorted runs merged
        docs, sc = docs[order_], sc[order_]
        starts = np.flatnonzero(np.concatenate(([True], docs[1:] != docs[:-1]))) if len(docs) else docs
        merged[ui] = (docs[starts], np.add.reduceat(sc, starts) if len(docs) else sc)
    # the k-th best of those sums bounds the k-th best total from below; a row whose sum there plus
    # the best of every part not scored in full stays below it cannot rank
    sums = np.concatenate([m[1] for m in merged.values()]) if merged else np.empty(0)
    if len(sums) >= k:
        theta = max(theta, float(np.partition(sums, len(sums) - k)[len(sums) - k]) * (1.0 - _MARGIN))
    rest_best = sum(best[i] for i, p in enumerate(distinct) if id(p) not in full)
    addrs, sums_out = [], []
    for ui, (docs, sc) in merged.items():
        docs = docs[sc >= theta - rest_best]
        if len(docs):
            addrs.append(units[ui].addresses(docs))
            sums_out.append(totals(ui, docs))
    if not addrs:
        return np.empty(0, np.uint64), np.empty(0)
    return np.concatenate(addrs), np.concatenate(sums_out)
