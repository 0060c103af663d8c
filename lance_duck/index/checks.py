"""Consistency checks of index data as it is read (index files carry no checksums).

Each check is vectorised over what a query reads anyway (a BTREE's page bounds, one page, a
bitmap index's keys, a zone table) and raises :class:`CorruptFileError` naming the file; the
search then leaves the index unused for that query (``index.search``), so damage costs a scan,
never rows. The orders checked are Lance's: nulls first, then ascending values, floats in IEEE
754 totalOrder as pylance sorts them (-NaN < -inf < ... < -0.0 < 0.0 < ... < +inf < +NaN, NaNs by
payload; :func:`total_order_keys`).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CorruptFileError


def damaged(path: str, why: str) -> CorruptFileError:
    """The error of a damaged index file ``path``."""
    return CorruptFileError(f"{path}: index file is damaged ({why})")


def int_column(a: pa.Array, path: str, what: str) -> np.ndarray:
    """An integer column that must have no nulls, as int64 (a u64 past int64 turns negative,
    which the range checks reject)."""
    if a.null_count:
        raise damaged(path, f"{what} has nulls")
    ints: np.ndarray = a.to_numpy(zero_copy_only=False).astype(np.int64)
    return ints


def _nulls_first(a: pa.Array) -> int | None:
    """How many leading nulls ``a`` has, None when a null follows a value."""
    k = int(a.null_count)
    if k == 0:
        return 0
    if k == len(a) or a.slice(0, k).null_count == k:
        return k
    return None


_INT_OF_WIDTH = {16: np.int16, 32: np.int32, 64: np.int64}


def total_order_keys(a: pa.Array) -> np.ndarray:
    """Signed integers ordered as the floats ``a`` (no nulls) are in IEEE 754 totalOrder, every
    bit pattern its own key (-0.0 below 0.0, NaNs by sign and payload): how pylance sorts a
    BTREE's pages and a BITMAP's keys."""
    dtype = _INT_OF_WIDTH[a.type.bit_width]
    buf = a.buffers()[1]
    bits = np.frombuffer(buf, dtype=dtype, count=a.offset + len(a))[a.offset:]
    out: np.ndarray = np.where(bits < 0, bits ^ np.iinfo(dtype).max, bits)
    return out


def _ordered(a: pa.Array, strict: bool) -> bool:
    """The non-null values of ``a`` (no nulls) ascend (``strict``: without repeats)."""
    if len(a) < 2:
        return True
    t = a.type
    if pa.types.is_floating(t):
        k = total_order_keys(a)
        return bool((k[1:] > k[:-1]).all() if strict else (k[1:] >= k[:-1]).all())
    if pa.types.is_integer(t) or pa.types.is_temporal(t) or pa.types.is_boolean(t):
        v = a.to_numpy(zero_copy_only=False)
        if v.dtype == object:
            v = pc.cast(a, pa.int64()).to_numpy() if not pa.types.is_boolean(t) else v.astype(bool)
        return bool((v[1:] > v[:-1]).all() if strict else (v[1:] >= v[:-1]).all())
    try:
        fn = pc.greater if strict else pc.greater_equal
        return bool(pc.all(fn(a.slice(1), a.slice(0, len(a) - 1))).as_py())
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return True                            # an order the kernels do not define: unchecked


def check_sorted(a: pa.Array, path: str, what: str, *, strict: bool = False, max_nulls: int | None = None) -> int:
    """``a`` holds its nulls first (at most ``max_nulls``), then values in ascending order
    (``strict``: each once); returns the number of nulls."""
    k = _nulls_first(a)
    if k is None or (max_nulls is not None and k > max_nulls):
        raise damaged(path, f"{what}: nulls out of place")
    if not _ordered(a.slice(k), strict):
        raise damaged(path, f"{what} not in ascending order")
    return k


def same_value(a: pa.Scalar, b: pa.Scalar) -> bool:
    """Two scalars hold the same value (both null, both NaN, or equal)."""
    if not a.is_valid or not b.is_valid:
        return bool(a.is_valid == b.is_valid)
    if a.type != b.type:
        return False
    if pa.types.is_floating(a.type):
        x, y = a.as_py(), b.as_py()
        return bool(x == y or (x != x and y != y))
    return bool(a.equals(b))


def check_bounds_order(mn: pa.Array, mx: pa.Array, path: str, what: str) -> None:
    """Per unit ``min <= max`` where both are values (a NaN max holds anything; a NaN min only a
    NaN max, unless its sign bit is set: such a NaN is below -inf)."""
    if mn.type != mx.type:
        raise damaged(path, f"{what}: min is {mn.type}, max {mx.type}")
    if len(mn) == 0:
        return
    if pa.types.is_floating(mn.type):
        lo = mn.fill_null(-np.inf).to_numpy(zero_copy_only=False)
        hi = mx.fill_null(np.inf).to_numpy(zero_copy_only=False)
        ok = (lo <= hi) | np.isnan(hi) | (np.isnan(lo) & np.signbit(lo))
    else:
        try:
            ok = pc.less_equal(mn, mx).fill_null(True).to_numpy(zero_copy_only=False)
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return
    if not ok.all():
        raise damaged(path, f"{what}: a min above its max (unit {int(np.argmin(ok))})")


def check_zones(start: np.ndarray, length: np.ndarray, counts: list[np.ndarray], path: str) -> None:
    """Zone spans are non-negative and hold their null / NaN counts."""
    if len(start) and (start.min() < 0 or length.min() < 0 or (start + length).min() < 0):
        raise damaged(path, "a zone with a negative start or length")
    total = sum(counts) if counts else None
    if total is not None and len(start) and (np.any(total > length) or min(c.min() for c in counts) < 0):
        raise damaged(path, "a zone counts more nulls / NaNs than it spans")


def _plain(t: pa.DataType) -> pa.DataType:
    """A value type as an index stores it: dictionary values, extension storage, large_* as small."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if isinstance(t, pa.ExtensionType):
        t = t.storage_type
    return {pa.large_string(): pa.string(), pa.large_binary(): pa.binary(),
            pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}.get(t, t)


def check_value_type(got: pa.DataType, want: pa.DataType | None, path: str, what: str) -> None:
    """The index file's values are of the indexed column's type (integers, floats, strings,
    binary, booleans and dates compared; other types are not)."""
    if want is None:
        return
    a, b = _plain(got), _plain(want)
    plain = (pa.types.is_integer, pa.types.is_floating, pa.types.is_string, pa.types.is_binary,
             pa.types.is_boolean, pa.types.is_date)
    if a != b and any(f(a) or f(b) for f in plain):
        raise damaged(path, f"{what} are {got}, the indexed column is {want}: another column's index?")
