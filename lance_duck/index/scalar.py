"""BTREE and BITMAP index readers: a column predicate -> the row ids / addresses that match.

Both are exact: the rows they return are exactly the indexed rows whose value satisfies the
predicate in the bound model's meaning (the scan's filter's): Arrow's comparisons, except that a
float NaN of either sign satisfies ``>`` / ``>=`` (every NaN above every number, ``-0.0 = 0.0``),
and ``neg_nan`` / ``not_neg_nan`` pick the NaNs with their sign bit set / every other value (the
pieces Lance's float order adds: :mod:`lance_duck.predicate.float_order`).

How pylance 14.0.2 stores floats (read from its files): a BTREE's ``page_data.lance`` holds each
page's values sorted nulls first, then in IEEE 754 totalOrder -- -NaN (larger payloads first) <
-inf < ... < -0.0 < 0.0 < ... < +inf < +NaN (by payload) -- and ``page_lookup.lance`` each page's
first and last value as min and max (min null when the page holds a null, max null only when it
holds nothing else), so a NaN with its sign bit set can be a min. A BITMAP's keys are the distinct
bit patterns in that order (a null key first; -0.0 and 0.0, and each NaN payload, keys of their
own). A ZONEMAP's min / max leave NaNs out (a NaN max aside) and ``nan_count`` counts both signs.

* BTREE: ``page_lookup.lance`` (min, max, null_count, page_idx per page of ``batch_size``
  rows) picks the pages that may match; those pages of ``page_data.lance`` (values sorted,
  ids) are read (cached per page) and matched.
* BITMAP: ``bitmap_page_lookup.lance`` holds the sorted keys (a null key for null values)
  and one serialized row-id tree map per key; the matching keys' maps are unioned.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import trace
from ..errors import CorruptFileError
from ..predicate.compiled import bool_mask
from ..predicate.kernels import is_negative_nan, order_keys
from .checks import check_bounds_order, check_sorted, check_value_type, check_zones, damaged, int_column, same_value
from .btree import integer_mask, pred_ints, sorted_integers, sorted_match
from .files import CACHE, IndexFile, cached, nbytes_of
from .bloom import zone_selections
from .roaring import FULL, decode_row_tree_map
from .terms import ColumnPred, Term, Terms
from .terms import Unsupported as Unsupported  # re-exported: scan/ and index/search.py catch it here

if TYPE_CHECKING:
    from ..io.fs import FileIO
    from .roaring import TreeMap

#: one BTREE page as kept in the cache: (its values, their ids, the values as sorted integers or None)
_Page = tuple[pa.Array, np.ndarray, Optional[np.ndarray]]

# Predicates an exact index answers (``!=`` and ``IS NOT NULL`` select most rows: scan instead);
# ``neg_nan`` / ``not_neg_nan``: a float is / is not a NaN with its sign bit set (null: neither);
# ``lance>`` / ``lance>=``: a float's ``>`` / ``>=`` in Lance's order (not a NaN with its sign bit set).
NAN_OPS = frozenset({"neg_nan", "not_neg_nan"})
LANCE_OPS = frozenset({"lance>", "lance>="})
EXACT_OPS = frozenset({"==", "<", "<=", ">", ">=", "in", "is_null"}) | NAN_OPS | LANCE_OPS
MAX_IN_PAGE_PROBES = 256
# An index is used only when it selects at most this share of its pages / keys (at least
# MIN_PAGES / MIN_KEYS of them): a predicate that keeps most rows is cheaper to scan with the
# data pages' own statistics than to turn into row offsets.
MAX_SHARE = 1 / 8
MIN_PAGES = 2
MIN_KEYS = 2


def _cast_value(value: Any, to: pa.DataType) -> Any:
    if value.type == to:
        return value
    try:
        return value.cast(to)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        raise Unsupported(f"value of type {value.type} against index keys of type {to}") from None


def value_mask(values: pa.Array, terms: Terms) -> np.ndarray:
    """Rows of ``values`` satisfying every term; a term is a tuple of ColumnPredicates on this
    column of which one must hold."""
    keep = np.ones(len(values), dtype=bool)
    for preds in terms:
        keep &= _any_mask(values, preds)
    return keep


def conjuncts_mask(conjuncts: Sequence[Any], columns: dict[str, pa.Array], n: int) -> np.ndarray:
    """Rows of ``columns`` (top-level name -> array of ``n`` rows) passing every conjunct, with
    compute kernels (no expression engine); Unsupported unless each conjunct is on a top-level
    column given here with ops an exact index answers."""
    keep: np.ndarray | None = None
    for c in conjuncts:
        path = tuple(c.path)
        if len(path) != 1 or path[0] not in columns:
            raise Unsupported(f"conjunct on {'.'.join(path)}")
        m = _any_mask(columns[path[0]], tuple(c.preds) if hasattr(c, "preds") else (c,))
        if keep is None and m.shape == (n,) and m.dtype == np.bool_ and m.flags.writeable:
            keep = m                    # (a fresh mask of its own: the first conjunct's is the start)
        elif keep is None:
            keep = np.ones(n, dtype=bool)
            keep &= m
        else:
            keep &= m
    return np.ones(n, dtype=bool) if keep is None else keep


def _any_mask(values: pa.Array, preds: Term) -> np.ndarray:
    fast = integer_mask(values, preds)
    if fast is not None:
        return fast
    keep = np.zeros(len(values), dtype=bool)
    for p in preds:
        if p.op not in EXACT_OPS:
            raise Unsupported(p.op)
        if p.op == "is_null":
            m = pc.is_null(values)
        elif p.op == "in":
            # SQL: a null never matches (``x IN (1, NULL)`` is not true for a null x)
            wanted = _cast_value(p.value, values.type)
            if pa.types.is_float32(values.type) or pa.types.is_float64(values.type):   # -0.0 IN (0.0)
                zero = pa.scalar(0.0, values.type)
                values, wanted = pc.add(values, zero), pc.add(wanted, zero)
            m = pc.is_in(values, value_set=wanted, skip_nulls=True)
        elif p.op in NAN_OPS or p.op in LANCE_OPS:
            if not pa.types.is_floating(values.type):
                raise Unsupported(f"{p.op} of {values.type}")
            neg = is_negative_nan(values)
            if p.op == "neg_nan":
                m = neg
            else:
                m = pc.invert(neg)
                if p.op in LANCE_OPS:
                    fn = pc.greater if p.op == "lance>" else pc.greater_equal
                    m = pc.and_(m, pc.or_(fn(values, _cast_value(p.value, values.type)), pc.is_nan(values)))
        else:
            fn = {"==": pc.equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
                  ">=": pc.greater_equal}[p.op]
            m = fn(values, _cast_value(p.value, values.type))
            if p.op in (">", ">=") and pa.types.is_floating(values.type):
                m = pc.or_(m, pc.is_nan(values))        # every NaN above every number
        keep |= bool_mask(m)
    return keep


# -- BTREE ------------------------------------------------------------------------------------
class BTreeIndex:
    #: the indexed column's type (set by the search; None: unchecked)
    value_type: pa.DataType | None = None

    def __init__(self, io: FileIO, lookup_path: str, data_path: str, sizes: dict[str, int]) -> None:
        self.io = io
        self.lookup_path = lookup_path
        self.data_path = data_path
        self.sizes = sizes

    def _lookup(self) -> tuple[Bounds, np.ndarray, int]:
        def load() -> tuple[Bounds, np.ndarray, int]:
            f = IndexFile(self.io, self.lookup_path, self.sizes.get("page_lookup.lance"))
            meta = f.metadata
            if meta.get("range_partitioned", "false") not in ("false", "False"):
                raise Unsupported("range-partitioned btree")
            batch = _batch_size(meta.get("batch_size", "4096"), self.lookup_path)
            mn, mx, nulls, page = f.read(["min", "max", "null_count", "page_idx"])
            check_value_type(mn.type, self.value_type, self.lookup_path, "page bounds")
            page_idx = page.to_numpy(zero_copy_only=False).astype(np.int64)
            _check_lookup(mn, mx, nulls, page_idx, batch, self.lookup_path)
            return Bounds(mn, mx, nulls, total_order=True), page_idx, batch
        return cached(("btree-lookup", self.lookup_path), load)

    def _data_file(self) -> IndexFile:
        def load() -> IndexFile:
            data = IndexFile(self.io, self.data_path, self.sizes.get("page_data.lance"))
            _, page_idx, batch = self._lookup()
            pages = -(-data.num_rows // batch)
            if pages != len(page_idx):
                raise damaged(self.data_path, f"{data.num_rows} rows make {pages} pages of {batch}, "
                                              f"page_lookup.lance lists {len(page_idx)}")
            return data
        return cached(("btree-data-file", self.data_path), load)

    def prewarm(self) -> None:
        """Read the page bounds and every page into the index cache (``prewarm_index``)."""
        _, page_idx, batch = self._lookup()
        missing = [int(p) for p in np.unique(page_idx).tolist() if CACHE.get(("btree-page", self.data_path, int(p))) is None]
        if missing:
            self._read_pages(self._data_file(), missing, batch)

    def search(self, terms: Terms, fragment_rows: dict[int, int] | None = None) -> np.ndarray:
        """Sorted unique uint64 ids (row addresses or stable row ids) of the matching rows
        (``fragment_rows``: unused, ids are checked by the caller)."""
        got = self._point(terms)
        if got is not None:
            return got
        bounds, page_idx, batch = self._lookup()
        pages = page_idx[bounds.may_match(terms)]
        if len(pages) > max(MIN_PAGES, len(page_idx) * MAX_SHARE):
            raise Unsupported(f"predicate keeps {len(pages)} of {len(page_idx)} btree pages")
        if len(pages) == 0:
            return np.empty(0, dtype=np.uint64)
        data = self._data_file()
        hits = []
        missing = []
        for pg in (pages.tolist() if len(pages) == 1 else np.unique(pages).tolist()):
            got = CACHE.get(("btree-page", self.data_path, int(pg)))
            if got is None:
                missing.append(int(pg))
            else:
                hits.append(got)
        if missing:
            hits.extend(self._read_pages(data, missing, batch))
        out = []
        for values, ids, ints in hits:
            pos = None if ints is None else sorted_match(ints, terms)
            if pos is None:
                m = value_mask(values, terms)
                if m.any():
                    out.append(ids[m])
                continue
            trace.record("path:btree-bisect")
            if pos.size:
                out.append(ids[pos])
        if not out:
            return np.empty(0, dtype=np.uint64)
        return _distinct(np.concatenate(out), self.data_path)

    def _point(self, terms: Terms) -> np.ndarray | None:
        """:meth:`search` of ``=``, a short ``IN`` or an AND of comparisons against integer
        literals over sorted integer page bounds (point lookups, ranges): each value interval's
        pages by two bisections, its rows in a page by two more, in Python ints; None when it
        does not apply (the general search answers)."""
        spans = _intervals(terms)
        if spans is None:
            return None
        bounds, page_idx, batch = self._lookup()
        if bounds.np is None or not bounds.np_sorted():
            return None
        low, high = bounds.int_limits()
        clipped: list[tuple[int, int]] = [
            (low if lo is None else max(lo, low), high if hi is None else min(hi, high)) for lo, hi in spans]
        clipped = [(lo, hi) for lo, hi in clipped if lo <= hi]
        mn, mx = bounds.np
        pages_of = [(int(mx.searchsorted(lo, "left")), int(mn.searchsorted(hi, "right"))) for lo, hi in clipped]
        npages, upto = 0, 0                    # distinct pages (spans ascending: so are their pages)
        for first, end in pages_of:
            npages += max(0, end - max(first, upto))
            upto = max(upto, end)
        if npages > max(MIN_PAGES, len(page_idx) * MAX_SHARE):
            raise Unsupported(f"predicate keeps {npages} of {len(page_idx)} btree pages")
        out = []
        pages: dict[int, _Page] = {}
        for (lo, hi), (first, end) in zip(clipped, pages_of):
            for pg in page_idx[first:end].tolist():
                known = pg in pages
                got = pages.get(pg) or CACHE.get(("btree-page", self.data_path, pg))
                if got is None:
                    got = self._read_pages(self._data_file(), [pg], batch)[0]
                pages[pg] = got
                values, ids, ints = got
                if ints is None:      # the whole filter over the page, once (not again per interval)
                    m = None if known else value_mask(values, terms)
                    if m is not None and m.any():
                        out.append(ids[m])
                    continue
                trace.record("path:btree-bisect")
                a, b = int(ints.searchsorted(lo, "left")), int(ints.searchsorted(hi, "right"))
                if b > a:
                    out.append(ids[a:b])
        if not out:
            return np.empty(0, dtype=np.uint64)
        return _distinct(out[0] if len(out) == 1 else np.concatenate(out), self.data_path)

    def _read_pages(self, data: IndexFile, pages: list[int], batch: int) -> list[_Page]:
        n = data.num_rows
        bounds = [(p * batch, min((p + 1) * batch, n)) for p in pages]
        if any(lo >= hi for lo, hi in bounds):
            raise CorruptFileError(f"{self.data_path}: page index beyond the file's {n} rows")
        rows: range | np.ndarray = range(*bounds[0]) if len(bounds) == 1 else \
            np.concatenate([np.arange(lo, hi, dtype=np.int64) for lo, hi in bounds])
        values, ids = data.read(["values", "ids"], rows)
        ids = ids.to_numpy(zero_copy_only=False).astype(np.uint64, copy=False)
        lookup = self._lookup()[0]
        out, start = [], 0
        for p, (lo, hi) in zip(pages, bounds):
            vals = values.slice(start, hi - lo)
            ints = sorted_integers(vals)
            _check_page(vals, ints, lookup, p, self.data_path)
            part = (vals, ids[start:start + hi - lo], ints)
            start += hi - lo
            CACHE.put(("btree-page", self.data_path, p), part, nbytes_of(part))
            out.append(part)
        return out


def _distinct(ids: np.ndarray, path: str) -> np.ndarray:
    """A BTREE's matched ids sorted: the index lists each row once, so a repeat is damage."""
    out = sorted_unique(ids)
    if len(out) != len(ids):
        raise damaged(path, f"{len(ids) - len(out)} matched row(s) listed twice")
    return out


def _batch_size(text: str, path: str) -> int:
    try:
        batch = int(text)
    except ValueError:
        batch = 0
    if not 0 < batch <= 1 << 31 or not text.isdigit():
        raise damaged(path, f"batch_size {text!r}")
    return batch


def _check_lookup(mn: pa.Array, mx: pa.Array, nulls: pa.Array, page_idx: np.ndarray, batch: int,
                  path: str) -> None:
    """A BTREE's page table: pages numbered 0, 1, ...; null counts within a page; a page's min
    null exactly when it holds nulls (they sort first); the bounds min0 <= max0 <= min1 <= ...
    in Lance's order (nulls first)."""
    n = len(page_idx)
    if not np.array_equal(page_idx, np.arange(n)):
        raise damaged(path, "page_idx is not 0, 1, 2, ...")
    nc = nulls.to_numpy(zero_copy_only=False).astype(np.int64)
    if nulls.null_count or (n and (nc.min() < 0 or nc.max() > batch)):
        raise damaged(path, "a page's null_count is out of range")
    if not np.array_equal(mn.is_null().to_numpy(zero_copy_only=False), nc > 0) \
            or np.any(mx.is_null().to_numpy(zero_copy_only=False) & (nc == 0)):
        raise damaged(path, "page bounds disagree with the pages' null counts")
    if pa.types.is_integer(mn.type) and mn.type == mx.type and not mn.null_count and not mx.null_count:
        lo, hi = mn.to_numpy(), mx.to_numpy()             # (one vectorised pass, no interleaving)
        if not bool((lo <= hi).all()) or (n > 1 and not bool((lo[1:] >= hi[:-1]).all())):
            raise damaged(path, "page bounds not in ascending order")
        return
    check_bounds_order(mn, mx, path, "page bounds")
    if n > 1:
        both = pa.concat_arrays([mn, mx]).take(pa.array(np.stack([np.arange(n), np.arange(n) + n], 1).ravel()))
        check_sorted(both, path, "page bounds")


def _check_page(vals: pa.Array, ints: np.ndarray | None, lookup: Bounds, p: int, path: str) -> None:
    """One BTREE page read from page_data.lance against its page_lookup.lance row: its null count,
    values sorted (nulls first), first and last value its min and max. (A damaged id is either
    not selected -- harmless -- or selects a row that fails the filter, which the scan reports.)"""
    n = len(vals)
    if not n:
        raise damaged(path, f"page {p} is empty")
    if ints is None and pa.types.is_integer(vals.type) and not vals.null_count:
        raise damaged(path, f"values of page {p} not in ascending order")   # (sorted_integers checked)
    if ints is not None and lookup.np is not None:         # integers without nulls: sorted already
        mn, mx = lookup.np
        if lookup.nulls[p] or ints[0] != mn[p] or ints[-1] != mx[p]:
            raise damaged(path, f"page {p} values span other bounds than page_lookup.lance records")
        return
    nulls = check_sorted(vals, path, f"values of page {p}")
    if nulls != int(lookup.nulls[p]):
        raise damaged(path, f"page {p} holds {nulls} nulls, page_lookup.lance says {int(lookup.nulls[p])}")
    if not same_value(vals[0], lookup.mn[p]) or not same_value(vals[n - 1], lookup.mx[p]):
        raise damaged(path, f"page {p} values span other bounds than page_lookup.lance records")


#: an ``IN`` of at most this many values is searched value by value (:meth:`BTreeIndex._point`)
POINT_VALUES = 32


def _intervals(terms: Terms) -> list[tuple[int | None, int | None]] | None:
    """The sorted, disjoint inclusive value intervals (None: open) holding exactly the integers
    that satisfy ``terms`` -- one ``IN`` of at most :data:`POINT_VALUES` integer literals, or
    an AND of ``=`` / ``<`` / ``<=`` / ``>`` / ``>=`` against integer literals -- or None."""
    if len(terms) == 1 and len(terms[0]) == 1 and terms[0][0].op == "in":
        v = terms[0][0].value
        if not isinstance(v, pa.Array) or not pa.types.is_integer(v.type) or len(v) > POINT_VALUES:
            return None
        return [(x, x) for x in sorted({x for x in v.to_pylist() if x is not None})]
    lo: int | None = None
    hi: int | None = None
    for preds in terms:
        if len(preds) != 1 or preds[0].op not in _BOUND_OPS:
            return None
        v = preds[0].value
        if not isinstance(v, pa.Scalar) or not pa.types.is_integer(v.type):
            return None
        x = v.as_py()
        if x is None:
            return None
        new_lo, new_hi = _BOUND_OPS[preds[0].op](x)
        if new_lo is not None:
            lo = new_lo if lo is None else max(lo, new_lo)
        if new_hi is not None:
            hi = new_hi if hi is None else min(hi, new_hi)
    return [(lo, hi)] if terms else None


_BOUND_OPS: dict[str, Callable[[int], tuple[int | None, int | None]]] = {"==": lambda x: (x, x), "<": lambda x: (None, x - 1), "<=": lambda x: (None, x),
              ">": lambda x: (x + 1, None), ">=": lambda x: (x, None)}


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """``a`` sorted without duplicates (already-sorted input, the usual case, is checked in one pass)."""
    if len(a) < 2 or bool(np.all(a[1:] > a[:-1])):
        return a
    a = np.sort(a)
    return a[np.concatenate(([True], a[1:] != a[:-1]))]


def _float_bound(a: pa.Array, fill: float) -> np.ndarray:
    """A float bound column as numpy, nulls replaced by ``fill``."""
    v: np.ndarray = a.to_numpy(zero_copy_only=False)
    if a.null_count:
        v = np.where(a.is_null().to_numpy(zero_copy_only=False), fill, v)
    return v


def _order_bounds(mn: pa.Array, mx: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(min keys, max keys, holds a value) of float bounds in totalOrder, as int64
    :func:`~lance_duck.predicate.kernels.order_keys`; a null min (the unit holds nulls) is open."""
    kmn = order_keys(mn).astype(np.int64)
    kmx = order_keys(mx).astype(np.int64)
    if mn.null_count:
        kmn = np.where(mn.is_null().to_numpy(zero_copy_only=False), np.iinfo(np.int64).min, kmn)
    has_values = mx.is_valid().to_numpy(zero_copy_only=False)
    return kmn, kmx, has_values


_KEY_MIN, _KEY_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


#: float width -> (float dtype, int dtype of its bits, the int's max)
_FLOAT_BITS: dict[int, tuple[Any, Any, int]] = {
    w: (f, i, int(np.iinfo(i).max)) for w, f, i in ((16, np.float16, np.int16), (32, np.float32, np.int32),
                                                   (64, np.float64, np.int64))}


def _key_of(value: float, t: pa.DataType) -> int:
    """:func:`~lance_duck.predicate.kernels.order_keys` of one float of type ``t``."""
    f, i, top = _FLOAT_BITS[t.bit_width]
    bits = int(np.array([value], f).view(i)[0])
    return bits if bits >= 0 else (bits ^ top) + 1


def _key_spans(op: str, value: Any, t: pa.DataType) -> list[tuple[int, int]]:
    """The inclusive spans of order keys (zeros merged) of the floats of type ``t`` satisfying
    ``op value`` in the bound model's meaning (NaNs of either sign satisfy ``>`` / ``>=``; the keys below
    -inf's are the NaNs with their sign bit set, those above +inf's the others)."""
    low = _key_of(-np.inf, t)
    neg_nans = (_KEY_MIN, low - 1)
    if op in NAN_OPS:
        return [neg_nans] if op == "neg_nan" else [(low, _KEY_MAX)]
    if op in LANCE_OPS:
        return _key_spans(op[5:], value, t)[:1]     # (without the -NaN span)
    if op == "in":
        vals = _cast_value(value, t).drop_null()
        return [(k, k) for k in np.unique(order_keys(vals)).tolist()] if len(vals) else []
    v = _cast_value(value, t)
    if not v.is_valid:
        return []                                  # a comparison with null holds nowhere
    x = v.as_py()
    if x != x:
        raise Unsupported("comparison with NaN")
    k = _key_of(x, t)
    return {"==": [(k, k)], "<": [(low, k - 1)], "<=": [(low, k)],
            ">": [(k + 1, _KEY_MAX), neg_nans], ">=": [(k, _KEY_MAX), neg_nans]}[op]


class Bounds:
    """Per-unit (btree page, zone) min, max and null count of a column: which units may hold
    rows satisfying a predicate. Numeric bounds without nulls are compared in numpy (one
    vectorised pass per predicate, all ``IN`` values at once); others with Arrow kernels.
    A null min / max (a unit holding nulls sorts them first) leaves that bound open."""

    def __init__(self, mn: pa.Array, mx: pa.Array, nulls: pa.Array, nans: pa.Array | None = None,
                 total_order: bool = False):
        self.mn, self.mx = mn, mx
        # floats bounded in totalOrder (a BTREE's pages: a -NaN may be a min): compared as keys
        self.keys = _order_bounds(mn, mx) if total_order and pa.types.is_floating(mn.type) else None
        self.nulls = nulls.to_numpy(zero_copy_only=False).astype(np.int64)
        self.floating = pa.types.is_floating(mn.type)
        # NaN count per unit (zone maps); None: unknown (float > / >= then cannot be answered)
        self.nans = None if nans is None else nans.to_numpy(zero_copy_only=False).astype(np.int64)
        self.np: tuple[np.ndarray, np.ndarray] | None
        if self.floating:
            # Lance orders floats totally, NaN above +inf: a NaN max is an open upper bound, a
            # NaN min an all-NaN unit. A null bound is left open.
            self.np = (_float_bound(mn, -np.inf), _float_bound(mx, np.nan))
        else:
            self.np = (mn.to_numpy(zero_copy_only=False), mx.to_numpy(zero_copy_only=False)) \
                if pa.types.is_integer(mn.type) and mn.null_count == 0 and mx.null_count == 0 else None

    def __len__(self) -> int:
        return len(self.mn)

    @property
    def nbytes(self) -> int:
        return int(self.mn.nbytes + self.mx.nbytes + 2 * self.nulls.nbytes)

    def may_match(self, terms: Terms) -> np.ndarray:
        """Sorted positions of the units that may hold a row satisfying every term."""
        keep = np.ones(len(self), dtype=bool)
        for preds in terms:
            keep &= self._any(preds)
        return np.flatnonzero(keep)

    def _any(self, preds: Term) -> np.ndarray:
        fast = self._any_int(preds)
        if fast is not None:
            return fast
        if self.keys is not None:
            return self._any_keys(preds)
        keep = np.zeros(len(self), dtype=bool)
        for p in preds:
            if p.op not in EXACT_OPS:
                raise Unsupported(p.op)
            if p.op == "is_null":
                keep |= self.nulls > 0
            elif p.op in NAN_OPS:                    # (zones: NaNs are counted, not bounded)
                if p.op == "not_neg_nan" or self.nans is None:
                    keep[:] = True
                else:
                    keep |= self.nans > 0
            elif p.op in LANCE_OPS:                  # (a superset: as ``>`` / ``>=``)
                keep |= self._compare(p.op[5:], _cast_value(p.value, self.mn.type))
            elif p.op == "in":
                vals = p.value.drop_null()           # a null never matches
                if len(vals) > MAX_IN_PAGE_PROBES:
                    keep[:] = True
                elif len(vals):
                    keep |= self._may_equal(_cast_value(vals, self.mn.type))
            else:
                keep |= self._compare(p.op, _cast_value(p.value, self.mn.type))
        return keep

    def _any_keys(self, preds: Term) -> np.ndarray:
        """:meth:`_any` over float bounds in totalOrder: each predicate as spans of
        :func:`~lance_duck.predicate.kernels.order_keys` (zeros merged), a unit kept when its
        [min, max] keys meet one."""
        assert self.keys is not None
        kmn, kmx, has_values = self.keys
        keep = np.zeros(len(self), dtype=bool)
        for p in preds:
            if p.op not in EXACT_OPS:
                raise Unsupported(p.op)
            if p.op == "is_null":
                keep |= self.nulls > 0
                continue
            for lo, hi in _key_spans(p.op, p.value, self.mn.type):
                if lo <= hi:
                    keep |= has_values & (kmn <= hi) & (kmx >= lo)
        return keep

    def np_sorted(self) -> bool:
        """Integer bounds whose mins and maxes are both non-decreasing (a BTREE's pages)."""
        return self._sorted()

    def int_limits(self) -> tuple[int, int]:
        """(min, max) of the integer bounds' type (worked out once)."""
        got = self.__dict__.get("_int_limits")
        if got is None:
            assert self.np is not None
            info = np.iinfo(self.np[0].dtype)
            got = self._int_limits = (int(info.min), int(info.max))
        return got

    def _sorted(self) -> bool:
        """Both the mins and the maxes are non-decreasing (a BTREE's pages, in value order);
        worked out once."""
        got = self.__dict__.get("_is_sorted")
        if got is None:
            mn, mx = self.np if self.np is not None else (None, None)
            got = self._is_sorted = mn is not None and mx is not None and not self.floating \
                and bool((mn[1:] >= mn[:-1]).all()) and bool((mx[1:] >= mx[:-1]).all())
        return got

    def _any_int(self, preds: Term) -> np.ndarray | None:
        """:meth:`_any` for integer bounds without nulls, each literal cast once to the bounds'
        type (:func:`pred_ints`); None when a predicate is not answered so. One ``=`` over
        sorted bounds (a BTREE's point lookup) is two bisections."""
        if self.np is None or self.floating:
            return None
        mn, mx = self.np
        if len(preds) == 1 and preds[0].op == "==" and self._sorted():
            xs = pred_ints(preds[0], mn.dtype)
            if xs is not None:
                keep = np.zeros(len(self), dtype=bool)
                if xs.size:                # units with min <= x <= max: a run of them
                    keep[int(mx.searchsorted(xs[0], "left")): int(mn.searchsorted(xs[0], "right"))] = True
                return keep
        keep = np.zeros(len(self), dtype=bool)
        for p in preds:
            if p.op == "is_null":
                keep |= self.nulls > 0
                continue
            if p.op not in EXACT_OPS:
                return None
            xs = pred_ints(p, mn.dtype)
            if xs is None or (p.op == "in" and xs.size > MAX_IN_PAGE_PROBES):
                return None
            if p.op == "in" or p.op == "==":
                if xs.size:
                    keep |= ((mn[:, None] <= xs) & (mx[:, None] >= xs)).any(axis=1)
            elif xs.size:                  # (a comparison with null holds nowhere)
                x = xs[0]
                keep |= {"<": mn.__lt__, "<=": mn.__le__, ">": mx.__gt__, ">=": mx.__ge__}[p.op](x)
        return keep

    def _may_equal(self, values: pa.Array) -> np.ndarray:
        """Units whose [min, max] holds one of ``values`` (of the bounds' type)."""
        if self.np is not None:
            v = values.to_numpy(zero_copy_only=False)
            mn, mx = self.np
            upper = mx[:, None] >= v
            if self.floating:
                upper |= np.isnan(mx)[:, None]
            hit: np.ndarray = ((mn[:, None] <= v) & upper).any(axis=1)
            return hit
        m = np.zeros(len(self), dtype=bool)
        for v in values:
            m |= pc.and_kleene(pc.less_equal(self.mn, v).fill_null(True),
                               pc.greater_equal(self.mx, v).fill_null(True)).to_numpy(zero_copy_only=False)
        return m

    def _compare(self, op: str, v: pa.Scalar) -> np.ndarray:
        if op == "==":
            return self._may_equal(pa.array([v]))
        if self.floating and op in (">", ">=") and self.np is not None:
            # NaN rows satisfy > and >= (it sorts above everything): zones holding NaN may match
            if self.nans is None:
                raise Unsupported(f"float {op} without NaN counts")
            mx = self.np[1]
            above: np.ndarray = (mx > v.as_py() if op == ">" else mx >= v.as_py()) | np.isnan(mx) | (self.nans > 0)
            return above
        if self.np is not None:
            x = v.as_py()
            mn, mx = self.np
            compared: np.ndarray = {"<": lambda: mn < x, "<=": lambda: mn <= x, ">": lambda: mx > x,
                                    ">=": lambda: mx >= x}[op]()
            return compared
        fn, arr = {"<": (pc.less, self.mn), "<=": (pc.less_equal, self.mn), ">": (pc.greater, self.mx),
                   ">=": (pc.greater_equal, self.mx)}[op]
        kept: np.ndarray = fn(arr, v).fill_null(True).to_numpy(zero_copy_only=False)
        return kept


# -- BITMAP -----------------------------------------------------------------------------------
class BitmapIndex:
    #: the indexed column's type (set by the search; None: unchecked)
    value_type: pa.DataType | None = None
    #: a LABEL_LIST's file carries ``lance:label_list_nulls``, a BITMAP's does not
    label_list = False

    def __init__(self, io: FileIO, path: str, size: int | None) -> None:
        self.io = io
        self.path = path
        self.size = size

    def _file(self) -> IndexFile:
        return cached(("bitmap-file", self.path), lambda: IndexFile(self.io, self.path, self.size))

    def _keys(self) -> pa.Array:
        def load() -> pa.Array:
            f = self._file()
            (keys,) = f.read(["keys"])
            check_value_type(keys.type, self.value_type, self.path, "keys")
            if ("lance:label_list_nulls" in f.metadata) != self.label_list:
                raise damaged(self.path, "a LABEL_LIST's file for a BITMAP or the reverse")
            check_sorted(keys, self.path, "keys", strict=True, max_nulls=1)
            stated = _stats_count(f.metadata.get("lance:index_stats"), self.path)
            if stated is not None and stated != len(keys):
                raise damaged(self.path, f"{len(keys)} keys, lance:index_stats says {stated} bitmaps")
            return keys
        return cached(("bitmap-keys", self.path), load)

    def prewarm(self) -> None:
        """Read the keys and every key's row map into the index cache (``prewarm_index``)."""
        self._maps(range(len(self._keys())))

    def search(self, terms: Terms, fragment_rows: dict[int, int]) -> np.ndarray | None:
        """Sorted unique uint64 ids; None when a map says "whole key" and the key is not a
        fragment of ``fragment_rows`` (fragment id -> physical rows)."""
        keys = self._keys()
        rows = np.flatnonzero(value_mask(keys, terms))
        if len(rows) > max(MIN_KEYS, len(keys) * MAX_SHARE):
            raise Unsupported(f"predicate keeps {len(rows)} of {len(keys)} bitmap keys")
        if len(rows) == 0:
            return np.empty(0, dtype=np.uint64)
        maps = self._maps(rows)
        ids = self._ids(maps, fragment_rows)
        if ids is not None and len(maps) > 1:      # a row has one value: keys' rows are disjoint
            total = sum(len(low) if low is not FULL else fragment_rows[k] for t in maps for k, low in t.items())
            if total != len(ids):
                raise damaged(self.path, "a row listed under two keys")
        return ids

    def _maps(self, rows: Iterable[int]) -> list[TreeMap]:
        """The decoded row-id tree maps of key rows ``rows`` (cached per key)."""
        parts = []
        missing = []
        for r in rows:
            got = CACHE.get(("bitmap-key", self.path, int(r)))
            if got is None:
                missing.append(int(r))
            else:
                parts.append(got)
        if missing:
            (blobs,) = self._file().read(["bitmaps"], np.asarray(missing, dtype=np.int64))
            for r, blob in zip(missing, blobs):
                if not blob.is_valid:
                    raise damaged(self.path, f"key row {r} has no bitmap")
                tree = decode_row_tree_map(blob.as_buffer(), f"{self.path}: bitmap of key row {r}")
                CACHE.put(("bitmap-key", self.path, r), tree, nbytes_of(tree))
                parts.append(tree)
        return parts

    @staticmethod
    def _ids(parts: list[TreeMap], fragment_rows: dict[int, int]) -> np.ndarray | None:
        """Sorted unique uint64 ids in the union of tree maps ``parts`` (None: see search)."""
        out = []
        for tree in parts:
            for key, low in tree.items():
                hi = np.uint64(key) << np.uint64(32)
                if low is FULL:
                    n = fragment_rows.get(key)
                    if n is None:
                        return None
                    out.append(np.arange(n, dtype=np.uint64) | hi)
                else:
                    out.append(low.astype(np.uint64) | hi)
        if not out:
            return np.empty(0, dtype=np.uint64)
        return sorted_unique(np.concatenate(out))


def _stats_count(text: str | None, path: str) -> int | None:
    """``num_bitmaps`` of a bitmap file's ``lance:index_stats`` (None when it has none)."""
    if text is None:
        return None
    import json
    try:
        got = json.loads(text).get("num_bitmaps")
    except (ValueError, AttributeError):
        raise damaged(path, f"lance:index_stats {text[:40]!r}") from None
    if got is not None and (not isinstance(got, int) or isinstance(got, bool)):
        raise damaged(path, f"lance:index_stats num_bitmaps {got!r}")
    return got


# -- LABEL_LIST -------------------------------------------------------------------------------
LABEL_OPS = frozenset({"has_any", "has_all"})


class LabelListIndex(BitmapIndex):
    """``bitmap_page_lookup.lance`` keyed by list element values: ``has_any`` is the union of
    the needles' maps, ``has_all`` their intersection. Exact for lists without null needles."""

    label_list = True

    def search(self, terms: Terms, fragment_rows: dict[int, int]) -> np.ndarray | None:
        keys = self._keys()
        result: np.ndarray | None = None
        for preds in terms:
            ids = np.empty(0, dtype=np.uint64)
            for p in preds:
                if p.op not in LABEL_OPS or p.value.null_count or len(p.value) == 0:
                    raise Unsupported(p.op)
                got = self._one(keys, p, fragment_rows)
                if got is None:
                    return None
                ids = sorted_unique(np.concatenate([ids, got])) if len(ids) else got
            result = ids if result is None else np.intersect1d(result, ids, assume_unique=True)
        return result if result is not None else np.empty(0, dtype=np.uint64)

    def _one(self, keys: pa.Array, p: ColumnPred, fragment_rows: dict[int, int]) -> np.ndarray | None:
        needles = pc.unique(_cast_value(p.value, keys.type))
        pos = pc.index_in(needles, value_set=keys).fill_null(-1).to_numpy(zero_copy_only=False)
        pos = pos.astype(np.int64)
        if p.op == "has_any":
            return self._ids(self._maps(np.unique(pos[pos >= 0])), fragment_rows)
        if np.any(pos < 0):                # a needle that is no key: no list holds them all
            return np.empty(0, dtype=np.uint64)
        out = None
        for r in pos:
            ids = self._ids(self._maps([int(r)]), fragment_rows)
            if ids is None:
                return None
            out = ids if out is None else np.intersect1d(out, ids, assume_unique=True)
            if len(out) == 0:
                break
        return out


# -- ZONEMAP ----------------------------------------------------------------------------------
class ZoneMapIndex:
    """``zonemap.lance``: per zone of a fragment (zone_start, zone_length in physical rows) the
    min, max, null_count and nan_count of the column. At most: the zones that may match."""

    #: the indexed column's type (set by the search; None: unchecked)
    value_type: pa.DataType | None = None

    def __init__(self, io: FileIO, path: str, size: int | None) -> None:
        self.io = io
        self.path = path
        self.size = size

    def _zones(self) -> tuple[Bounds, np.ndarray, np.ndarray, np.ndarray]:
        def load() -> tuple[Bounds, np.ndarray, np.ndarray, np.ndarray]:
            f = IndexFile(self.io, self.path, self.size)
            names = ["min", "max", "null_count", "fragment_id", "zone_start", "zone_length"]
            has_nans = any(fl.name == "nan_count" for fl in f.schema.fields)
            mn, mx, nulls, frag, start, length, *nans = f.read(names + ["nan_count"] * has_nans)

            def as_np(a: pa.Array) -> np.ndarray:
                return int_column(a, self.path, "a zone column")
            check_value_type(mn.type, self.value_type, self.path, "zone bounds")
            check_bounds_order(mn, mx, self.path, "zone bounds")
            check_zones(as_np(start), as_np(length), [as_np(nulls)] + [as_np(a) for a in nans], self.path)
            if pa.types.is_floating(mn.type):
                # a zone with no value but NaN / null has null bounds: it holds no ordinary value
                mn = pc.fill_null(mn, pa.scalar(np.nan, mn.type))
                mx = pc.fill_null(mx, pa.scalar(-np.inf, mx.type))
            bounds = Bounds(mn, mx, nulls, nans[0] if nans else None)
            return bounds, as_np(frag), as_np(start), as_np(length)
        return cached(("zonemap", self.path), load)

    def prewarm(self) -> None:
        """Read the zones into the index cache (``prewarm_index``)."""
        self._zones()

    def search(self, terms: Terms, fragment_rows: dict[int, int]) -> dict[int, np.ndarray]:
        """{fragment id: sorted offsets to read} for the fragments the file has zones of: the
        offsets of the zones that may match plus those no zone spans (rows deleted before the
        index was built leave gaps)."""
        bounds, frag, start, length = self._zones()
        keep = np.zeros(len(bounds), dtype=bool)
        keep[bounds.may_match(terms)] = True
        return zone_selections(frag, start, length, keep, fragment_rows, "zones", self.path)
