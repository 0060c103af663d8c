"""Hybrid search's arithmetic (DuckDB Lance extension's ``lance_hybrid_search``): each side's
scores min-max normalised to [0, 1] (a distance turned into a similarity: 1 - normalised
distance; a side whose min equals its max scores 0.5), a row missing from one side getting 0
from it, ``_hybrid_score = alpha * vector + (1 - alpha) * text`` (alpha clamped to [0, 1]),
best first (ties by row id), top k.
"""
from __future__ import annotations

import numpy as np


def normalised(values: np.ndarray) -> np.ndarray:
    """``values`` min-max scaled to [0, 1] (all 0.5 when they are all equal)."""
    v = np.asarray(values, dtype=np.float64)
    if not len(v):
        return v
    lo, hi = float(v.min()), float(v.max())
    if hi == lo:
        return np.full(len(v), 0.5)
    return (v - lo) / (hi - lo)


def combine(vec_ids: np.ndarray, distances: np.ndarray, text_ids: np.ndarray, scores: np.ndarray,
            alpha: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(row ids, hybrid scores float32) of the ``k`` best rows of both sides."""
    alpha = min(1.0, max(0.0, float(alpha)))
    vec_ids = np.asarray(vec_ids, dtype=np.uint64)
    text_ids = np.asarray(text_ids, dtype=np.uint64)
    ids = np.union1d(vec_ids, text_ids)
    vec = np.zeros(len(ids))
    txt = np.zeros(len(ids))
    vec[np.searchsorted(ids, vec_ids)] = 1.0 - normalised(distances)
    txt[np.searchsorted(ids, text_ids)] = normalised(scores)
    hybrid = (alpha * vec + (1.0 - alpha) * txt).astype(np.float32)
    order = np.lexsort((ids, -hybrid))[:k]
    return ids[order], hybrid[order]
