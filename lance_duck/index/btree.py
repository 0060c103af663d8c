"""BTREE pages of integer values searched by bisection (a point lookup's or a range's rows).

A ``page_data.lance`` page holds its values sorted (ids alongside). When the values are
integers without nulls, the rows satisfying ``=``, ``<``, ``<=``, ``>``, ``>=``, ``IN`` and
``IS NULL`` are runs of the sorted values found with ``searchsorted``: a few calls instead of
comparing every value of the page. Anything else (other types, nulls, other operators, values
that do not cast exactly) answers None and the caller compares the values as before.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from .terms import ColumnPred, Term, Terms

#: operators answered by bisection
SORTED_OPS = frozenset({"==", "<", "<=", ">", ">=", "in", "is_null"})


def sorted_integers(values: pa.Array) -> np.ndarray | None:
    """The page's values as a numpy array when they are integers without nulls, sorted
    ascending (checked once, when the page is cached), else None."""
    if not pa.types.is_integer(values.type) or values.null_count:
        return None
    v: np.ndarray = values.to_numpy(zero_copy_only=False)
    if v.size > 1 and not bool((v[1:] >= v[:-1]).all()):
        return None
    return v


def sorted_match(v: np.ndarray, terms: Terms) -> np.ndarray | None:
    """Positions (sorted) of the values of ``v`` (sorted integers) satisfying every term (a tuple
    of predicates of which one must hold), or None when a predicate is not answered here."""
    per_term: list[list[tuple[int, int]]] = []
    for preds in terms:
        spans: list[tuple[int, int]] = []
        for p in preds:
            got = _spans(v, p)
            if got is None:
                return None
            spans.extend((lo, hi) for lo, hi in got if hi > lo)
        per_term.append(spans)
    if not per_term:
        return None
    if all(len(s) <= 1 for s in per_term):
        # one run per term (``=``, a range, ``a <= x AND x <= b``): the runs' intersection
        if any(not s for s in per_term):
            return np.empty(0, np.int64)
        lo, hi = max(s[0][0] for s in per_term), min(s[0][1] for s in per_term)
        return np.arange(lo, max(lo, hi), dtype=np.int64)
    keep = np.ones(v.size, dtype=bool)
    for spans in per_term:
        m = np.zeros(v.size, dtype=bool)
        for lo, hi in spans:
            m[lo:hi] = True
        keep &= m
    return np.flatnonzero(keep)


def _spans(v: np.ndarray, p: ColumnPred) -> list[tuple[int, int]] | None:
    """[lo, hi) runs of ``v`` where predicate ``p`` holds (None: not answered here)."""
    if p.op not in SORTED_OPS:
        return None
    if p.op == "is_null":
        return []                      # the page holds no nulls
    xs = pred_ints(p, v.dtype)
    if xs is None:
        return None
    if p.op == "in":
        lo = np.searchsorted(v, xs, side="left").tolist()
        hi = np.searchsorted(v, xs, side="right").tolist()
        return list(zip(lo, hi))
    if xs.size != 1:
        return None
    x = xs[0]
    left, right = int(np.searchsorted(v, x, side="left")), int(np.searchsorted(v, x, side="right"))
    return {"==": [(left, right)], "<": [(0, left)], "<=": [(0, right)],
            ">": [(right, v.size)], ">=": [(left, v.size)]}[p.op]


def pred_ints(p: ColumnPred, dtype: np.dtype[Any]) -> np.ndarray | None:
    """The integer value(s) of predicate ``p`` (``in``: its non-null values; a comparison: one
    value, none for a null literal) as a ``dtype`` array, cast once: a scalar literal is read as
    a Python int and range-checked (no Arrow array is built). None when a value is not an
    integer exactly representable in ``dtype``."""
    if p.op == "in":
        return _exact_ints(p.value, dtype)
    v = p.value
    if not isinstance(v, pa.Scalar) or not pa.types.is_integer(v.type):
        return None
    x = v.as_py()
    if x is None:
        return np.empty(0, dtype)
    lim = _LIMITS.get(dtype)
    if lim is None:
        info = np.iinfo(dtype)
        lim = (int(info.min), int(info.max))
    if not lim[0] <= x <= lim[1]:
        return None
    return np.array([x], dtype)


#: the range of each integer dtype (constants)
_LIMITS: dict[np.dtype, tuple[int, int]] = {
    np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
    for t in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")}


def _exact_ints(values: Any, dtype: np.dtype[Any]) -> np.ndarray | None:
    """Non-null integer ``values`` (a pyarrow Array) as ``dtype``, when each is exactly
    representable in it (else None: e.g. a fraction, or a value outside the column's range)."""
    if not isinstance(values, pa.Array) or not pa.types.is_integer(values.type):
        return None
    vals = values.drop_null().to_numpy(zero_copy_only=False)
    info = np.iinfo(dtype)
    if vals.size and (int(vals.min()) < info.min or int(vals.max()) > info.max):
        return None
    exact: np.ndarray = vals.astype(dtype)
    return exact


def integer_mask(values: pa.Array, preds: Term) -> np.ndarray | None:
    """Rows of ``values`` (integers without nulls: a few selected rows re-checked) where one of
    ``preds`` holds, compared in numpy; None when not answered here (other types, nulls,
    operators, or values that do not cast exactly)."""
    if not pa.types.is_integer(values.type) or values.null_count:
        return None
    if len(values) <= FEW_ROWS:
        return _few_mask(values, preds)
    v = values.to_numpy(zero_copy_only=False)
    if len(preds) == 1 and preds[0].op in _COMPARE:     # (one comparison: its result is the mask)
        one = pred_ints(preds[0], v.dtype)
        if one is None:
            return None
        return _COMPARE[preds[0].op](v, one[0]) if one.size else np.zeros(v.size, dtype=bool)
    keep = np.zeros(v.size, dtype=bool)
    for p in preds:
        if p.op not in SORTED_OPS:
            return None
        if p.op == "is_null":
            continue
        xs = pred_ints(p, v.dtype)
        if xs is None:
            return None
        if p.op == "in":
            keep |= np.isin(v, xs)
        elif xs.size:                  # (a comparison with null holds nowhere)
            keep |= _COMPARE[p.op](v, xs[0])
    return keep


_COMPARE = {"==": np.equal, "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}


#: :func:`integer_mask` of at most this many rows (a point lookup's re-check) compares Python ints
FEW_ROWS = 8
_NP_TYPES = {t: np.dtype(t.to_pandas_dtype()) for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(),
                                                       pa.uint16(), pa.uint32(), pa.uint64())}
_PY_COMPARE = {"==": int.__eq__, "<": int.__lt__, "<=": int.__le__, ">": int.__gt__, ">=": int.__ge__}


def _few_mask(values: pa.Array, preds: Term) -> np.ndarray | None:
    """:func:`integer_mask` of a few values (integers without nulls), compared as Python ints
    (each literal cast to the column's type exactly as for the numpy comparison)."""
    dtype = _NP_TYPES.get(values.type)
    if dtype is None:
        return None
    v = values.to_pylist()
    keep = [False] * len(v)
    for p in preds:
        if p.op not in SORTED_OPS:
            return None
        if p.op == "is_null":
            continue
        xs = pred_ints(p, dtype)
        if xs is None:
            return None
        if p.op == "in":
            wanted = set(xs.tolist())
            keep = [k or x in wanted for k, x in zip(keep, v)]
        elif xs.size:                  # (a comparison with null holds nowhere)
            cmp, x = _PY_COMPARE[p.op], int(xs[0])
            keep = [k or cmp(y, x) for k, y in zip(keep, v)]
    return np.array(keep, dtype=bool)
