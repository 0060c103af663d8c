"""Vector distances with pylance's meaning, as float32: l2 is squared (no root), cosine is
1 - cos, dot is 1 - x.q, hamming counts differing bits of uint8 vectors.

``distances(q, x, metric)`` scores one query against a block of rows; the arithmetic is done
in float32 for float16/float32 columns (float16 values widened) and in float64 for float64 ones,
then rounded to float32. Zero vectors under cosine give NaN (such rows never match, as in pylance).
"""
from __future__ import annotations

import numpy as np

METRICS = ("l2", "cosine", "dot", "hamming")
#: spellings pylance accepts (case-insensitive) -> our metric name
ALIASES = {"l2": "l2", "euclidean": "l2", "cosine": "cosine", "dot": "dot", "hamming": "hamming"}

_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def compute_dtype(value_type: np.dtype) -> np.dtype:
    """The dtype distances of a column with these values are computed in."""
    return np.dtype(np.float64) if value_type == np.float64 else np.dtype(np.float32)


def prepare_rows(x: np.ndarray, metric: str) -> np.ndarray:
    """A block of stored vectors (rows x dim) in the dtype its distances are computed in."""
    if metric == "hamming":
        return x
    want = compute_dtype(x.dtype)
    return x if x.dtype == want else x.astype(want)


def distances(q: np.ndarray, x: np.ndarray, metric: str) -> np.ndarray:
    """float32 distance of each row of ``x`` (n x dim) to the query ``q`` (dim,).

    Example:
        >>> import numpy as np
        >>> distances(np.array([1, 0], np.float32), np.array([[1, 0], [0, 2]], np.float32), "l2")
        array([0., 5.], dtype=float32)
    """
    if metric == "hamming":
        bits: np.ndarray = _POPCOUNT[np.bitwise_xor(x, q.astype(np.uint8))].sum(axis=1, dtype=np.int64)
        return bits.astype(np.float32)
    x = prepare_rows(x, metric)
    qq = q.astype(x.dtype, copy=False)
    if metric == "l2":
        diff = x - qq
        out: np.ndarray = np.einsum("ij,ij->i", diff, diff)
    elif metric == "dot":   # (einsum, not BLAS: see search.vector.l2_candidates)
        out = 1 - np.einsum("ij,j->i", x, qq)
    elif metric == "cosine":
        with np.errstate(divide="ignore", invalid="ignore"):
            norms = np.sqrt(np.einsum("ij,ij->i", x, x)) * np.sqrt(qq @ qq)
            out = 1 - np.einsum("ij,j->i", x, qq) / norms
    else:  # pragma: no cover - parse_nearest only lets METRICS through
        raise ValueError(metric)
    return out.astype(np.float32, copy=False)
