"""BTREE pages of integer values searched by bisection (a point lookup's or a range's rows).

A ``page_data.lance`` page holds its values sorted (ids alongside). When the values are
integers without nulls, the rows satisfying ``=``, ``<``, ``<=``, ``>``, ``>=``, ``IN`` and
``IS NULL`` are runs of the sorted values found with ``searchsorted``: a few calls instead of
comparing every value of the page. Anything else (other types, nulls, other operators, values
that do not cast exactly) answers None and the caller compares the values as before.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

#: operators answered by bisection
SORTED_OPS = frozenset({"==", "<", "<=", ">", ">=", "in", "is_null"})


def sorted_integers(values: pa.Array) -> np.ndarray | None:
    """The page's values as a numpy array when they are integers without nulls, sorted
    ascending (checked once, when the page is cached), else None."""
    if not pa.types.is_integer(values.type) or values.null_count:
        return None
    v = values.to_numpy(zero_copy_only=False)
    if v.size > 1 and not bool((v[1:] >= v[:-1]).all()):
        return None
    return v


def sorted_match(v: np.ndarray, terms) -> np.ndarray | None:
    """Positions (sorted) of the values of ``v`` (sorted integers) satisfying every term (a tuple
    of predicates of which one must hold), or None when a predicate is not answered here."""
    keep: np.ndarray | None = None
    for preds in terms:
        m = np.zeros(v.size, dtype=bool)
        for p in preds:
            spans = _spans(v, p)
            if spans is None:
                return None
            for lo, hi in spans:
                m[lo:hi] = True
        keep = m if keep is None else keep & m
    return np.flatnonzero(keep) if keep is not None else None


def _spans(v: np.ndarray, p) -> list[tuple[int, int]] | None:
    """[lo, hi) runs of ``v`` where predicate ``p`` holds (None: not answered here)."""
    if p.op not in SORTED_OPS:
        return None
    if p.op == "is_null":
        return []                      # the page holds no nulls
    if p.op == "in":
        xs = _exact_ints(p.value, v.dtype)
        if xs is None:
            return None
        lo = np.searchsorted(v, xs, side="left").tolist()
        hi = np.searchsorted(v, xs, side="right").tolist()
        return list(zip(lo, hi))
    xs = _exact_ints(pa.array([p.value]), v.dtype)
    if xs is None or xs.size != 1:
        return None
    x = xs[0]
    left, right = int(np.searchsorted(v, x, side="left")), int(np.searchsorted(v, x, side="right"))
    return {"==": [(left, right)], "<": [(0, left)], "<=": [(0, right)],
            ">": [(right, v.size)], ">=": [(left, v.size)]}[p.op]


def _exact_ints(values, dtype: np.dtype) -> np.ndarray | None:
    """Non-null integer ``values`` (a pyarrow Array) as ``dtype``, when each is exactly
    representable in it (else None: e.g. a fraction, or a value outside the column's range)."""
    if not isinstance(values, pa.Array) or not pa.types.is_integer(values.type):
        return None
    vals = values.drop_null().to_numpy(zero_copy_only=False)
    info = np.iinfo(dtype)
    if vals.size and (int(vals.min()) < info.min or int(vals.max()) > info.max):
        return None
    return vals.astype(dtype)


def integer_mask(values: pa.Array, preds) -> np.ndarray | None:
    """Rows of ``values`` (integers without nulls: a few selected rows re-checked) where one of
    ``preds`` holds, compared in numpy; None when not answered here (other types, nulls,
    operators, or values that do not cast exactly)."""
    if not pa.types.is_integer(values.type) or values.null_count:
        return None
    v = values.to_numpy(zero_copy_only=False)
    keep = np.zeros(v.size, dtype=bool)
    for p in preds:
        if p.op not in SORTED_OPS:
            return None
        if p.op == "is_null":
            continue
        xs = _exact_ints(p.value if p.op == "in" else pa.array([p.value]), v.dtype)
        if xs is None:
            return None
        if p.op == "in":
            keep |= np.isin(v, xs)
        elif xs.size:                  # (a comparison with null holds nowhere)
            keep |= _COMPARE[p.op](v, xs[0])
    return keep


_COMPARE = {"==": np.equal, "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}
