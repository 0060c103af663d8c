"""Arrow compute implementations of the predicate functions.

Every kernel takes pyarrow values that are either all ``pc.Expression`` (building a
pushed-down expression) or arrays/scalars (evaluating on a batch): ``pyarrow.compute``
functions accept both.  Kernels that pyarrow Expressions cannot express raise
:class:`NotExpressible` in expression mode; they run as a residual on batches.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError, UnsupportedFeatureError


class NotExpressible(Exception):
    """This node needs batch evaluation (no pyarrow Expression form)."""


def _is_expr(v: Any) -> bool:
    return isinstance(v, pc.Expression)


def _mod(a: Any, b: Any) -> Any:
    # No modulo kernel: a - trunc(a / b) * b  (SQL remainder takes the dividend's sign).
    q = pc.divide(a, b)
    return pc.subtract(a, pc.multiply(pc.trunc(q) if _float_like(q) else q, b))


def _float_like(v: Any) -> bool:
    t = getattr(v, "type", None)
    return t is not None and pa.types.is_floating(t)


def _list_element(lst: Any, index: int) -> Any:
    # pc.list_element raises out of range; SQL gives null. A one-wide fixed slice pads with null.
    return pc.list_element(pc.list_slice(lst, index, index + 1, return_fixed_size_list=True), 0)


def _array_has(lst: Any, value: Any) -> Any:
    if _is_expr(lst) or _is_expr(value):
        raise NotExpressible("array_has")
    if isinstance(lst, pa.ChunkedArray):
        lst = lst.combine_chunks()
    if isinstance(value, pa.Scalar) and not value.is_valid:
        return pa.nulls(len(lst), pa.bool_())
    flat = pc.list_flatten(lst)
    parents = pc.list_parent_indices(lst).to_numpy(zero_copy_only=False)
    if isinstance(value, pa.Scalar) and flat.type != value.type:
        value = value.cast(flat.type)
    hit = pc.fill_null(pc.equal(flat, value), False).to_numpy(zero_copy_only=False)
    counts = np.bincount(parents[hit], minlength=len(lst)) if len(lst) else np.zeros(0, np.int64)
    return pa.array(counts > 0, mask=lst.is_null().to_numpy(zero_copy_only=False))


def _list_parts(lst: Any) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """(flattened elements, their row numbers, per-row null mask) of a list array."""
    if isinstance(lst, pa.ChunkedArray):
        lst = lst.combine_chunks()
    flat = pc.list_flatten(lst)
    parents = pc.list_parent_indices(lst).to_numpy(zero_copy_only=False)
    return flat, parents, lst.is_null().to_numpy(zero_copy_only=False)


def _needle_index(flat: pa.Array, needles: pa.Array) -> tuple[np.ndarray, int]:
    """Per element, the position of its value among the distinct ``needles`` (-1: none); a null
    needle matches null elements (DataFusion's array_has_any / array_has_all do)."""
    distinct = pc.unique(needles.drop_null())
    if distinct.type != flat.type:
        distinct = distinct.cast(flat.type)
    pos = pc.index_in(flat, value_set=distinct).fill_null(-1).to_numpy(zero_copy_only=False)
    pos = pos.astype(np.int64)
    k = len(distinct)
    if needles.null_count:
        pos[flat.is_null().to_numpy(zero_copy_only=False)] = k
        k += 1
    return pos, k


def _array_has_set(lst: Any, needles: pa.Array, want_all: bool) -> Any:
    """``array_has_any(lst, needles)`` / ``array_has_all``: null for a null list, except that an
    empty needle list gives false (any) / true (all) on every row."""
    if _is_expr(lst):
        raise NotExpressible("array_has_all" if want_all else "array_has_any")
    n = len(lst)
    if len(needles) == 0:
        return pa.array(np.full(n, want_all, dtype=bool))
    flat, parents, null_rows = _list_parts(lst)
    pos, k = _needle_index(flat, needles)
    hit = pos >= 0
    if not want_all:
        found = np.bincount(parents[hit], minlength=n) > 0 if n else np.zeros(0, bool)
    else:
        keys = np.unique(parents[hit].astype(np.int64) * k + pos[hit])
        found = np.bincount(keys // k, minlength=n) == k if n else np.zeros(0, bool)
    return pa.array(found, mask=null_rows)


_DATE_PARTS: dict[str, Callable[[Any], Any]] = {
    "year": pc.year, "month": pc.month, "day": pc.day, "hour": pc.hour, "minute": pc.minute,
    "second": pc.second, "quarter": pc.quarter, "week": pc.iso_week, "doy": pc.day_of_year,
    "millisecond": pc.millisecond, "microsecond": pc.microsecond, "nanosecond": pc.nanosecond,
    "dow": lambda v: pc.day_of_week(v, count_from_zero=True, week_start=7),
}


def _lift(args: list[Any]) -> list[Any]:
    """In expression mode, constants must be Expressions too (``pc.less(scalar, expr)`` fails)."""
    if any(_is_expr(v) for v in args):
        return [pc.scalar(v) if isinstance(v, pa.Scalar) else v for v in args]
    return list(args)


_PATTERN_FUNCS = {"regexp_like", "starts_with", "ends_with", "contains"}


def call(name: str, args: list[Any], options: tuple[Any, ...]) -> Any:
    """Apply the kernel ``name`` to already-built arguments."""
    a = args if name in _PATTERN_FUNCS or name.startswith("array_has") else _lift(args)
    if name == "add":
        return pc.add_checked(a[0], a[1])
    if name == "subtract":
        return pc.subtract_checked(a[0], a[1])
    if name == "multiply":
        return pc.multiply_checked(a[0], a[1])
    if name == "divide":
        return pc.divide_checked(a[0], a[1])
    if name == "mod":
        return _mod(a[0], a[1])
    if name == "negate":
        return pc.negate_checked(a[0])
    if name == "abs":
        return pc.abs_checked(a[0])
    if name == "lower":
        return pc.utf8_lower(a[0])
    if name == "upper":
        return pc.utf8_upper(a[0])
    if name == "length":
        return pc.utf8_length(a[0])
    if name == "octet_length":
        return pc.binary_length(a[0])
    if name == "is_nan":
        return pc.is_nan(a[0])
    if name == "float_order_compare":
        return float_order_compare(options[0], a[0], a[1], *options[1:])
    if name == "float_order_in":
        return float_order_in(a[0], options[0], options[1])
    if name == "is_negative_nan":
        return is_negative_nan(a[0])
    if name == "coalesce":
        return pc.coalesce(*a)
    if name == "concat":
        return pc.binary_join_element_wise(*a, "")
    if name == "regexp_like":
        return pc.match_substring_regex(a[0], pattern=_regex_with_flags(a, name))
    if name == "starts_with":
        return pc.starts_with(a[0], pattern=_const_str(a[1], name))
    if name == "ends_with":
        return pc.ends_with(a[0], pattern=_const_str(a[1], name))
    if name == "contains":
        return pc.match_substring(a[0], pattern=_const_str(a[1], name))
    if name == "array_length":
        return pc.list_value_length(a[0])
    if name == "list_element":
        return _list_element(a[0], options[0])
    if name == "struct_field":
        return pc.struct_field(a[0], [options[0]])
    if name == "array_has":
        return _array_has(a[0], a[1])
    if name in ("array_has_any", "array_has_all"):
        return _array_has_set(a[0], options[0], name == "array_has_all")
    if name == "date_part":
        return _DATE_PARTS[options[0]](a[0])
    if name == "date_trunc":
        return pc.floor_temporal(a[0], unit=options[0])
    raise UnsupportedFeatureError(f"unknown filter function {name!r}")


def _const_str(v: Any, name: str) -> str:
    if isinstance(v, pa.Scalar) and isinstance(v.as_py(), str):
        text: str = v.as_py()
        return text
    raise UnsupportedFeatureError(f"{name}() needs a constant string pattern")


_REGEX_FLAGS = frozenset("imsU")


def _regex_with_flags(a: list[Any], name: str) -> str:
    """The pattern of ``regexp_like(s, pattern[, flags])``, its flags as an inline ``(?flags)`` group.

    The flags pylance's engine accepts and RE2 shares: ``i`` (case-insensitive), ``m`` (multi-line),
    ``s`` (``.`` matches newline), ``U`` (swap greediness); any other flag is refused by name."""
    pattern = _const_str(a[1], name)
    if len(a) < 3:
        return pattern
    if len(a) > 3:
        raise InvalidArgumentError(f"{name}() takes at most 3 arguments (string, pattern, flags)")
    flags = _const_str(a[2], name)
    bad = sorted(set(flags) - _REGEX_FLAGS)
    if bad:
        raise UnsupportedFeatureError(f"{name}() flag(s) {', '.join(map(repr, bad))} are not supported "
                                      f"(supported: i, m, s, U)")
    return f"(?{flags}){pattern}" if flags else pattern


_CMP_FN = {"==": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal,
           ">": pc.greater, ">=": pc.greater_equal}


def _nan_term(v: Any, t: pa.DataType | None, const: Any = None) -> Any:
    """is_nan(v) as a kernel value, or a Python bool when it is known statically."""
    if const is not None:
        x = const.as_py()
        return isinstance(x, float) and x != x
    if t is not None and pa.types.is_floating(t):
        return pc.is_nan(v)
    return False


def _valid_term(v: Any, const: Any = None) -> Any:
    if const is not None:
        return const.is_valid
    return pc.is_valid(v)


def _and(a: Any, b: Any) -> Any:
    if a is False or b is False:
        return False
    if a is True:
        return b
    if b is True:
        return a
    return pc.and_kleene(a, b)


def _or(a: Any, b: Any) -> Any:
    if b is False:
        return a
    if b is True:
        return pc.or_kleene(a, True)
    return pc.or_kleene(a, b)


def _not(a: Any) -> Any:
    return (not a) if isinstance(a, bool) else pc.invert(a)


def call_compare(op: str, a: Any, b: Any, ta: pa.DataType | None = None, tb: pa.DataType | None = None) -> Any:
    """SQL comparison; floats use the total order (NaN equals NaN and sorts above all numbers)."""
    ta = ta if ta is not None else getattr(a, "type", None)
    tb = tb if tb is not None else getattr(b, "type", None)
    base = _CMP_FN[op](*_lift([a, b]))
    floats = any(t is not None and pa.types.is_floating(t) for t in (ta, tb))
    if not floats:
        return base
    ca = a if isinstance(a, pa.Scalar) else None
    cb = b if isinstance(b, pa.Scalar) else None
    if (ca is not None and not ca.is_valid) or (cb is not None and not cb.is_valid):
        return base  # comparing with NULL is NULL
    a, b = _lift([a, b])
    na, nb = _nan_term(a, ta, ca), _nan_term(b, tb, cb)
    if na is False and nb is False:
        return base
    if op == "==":
        return _or(base, _and(na, nb))
    if op == "!=":
        both = _and(na, nb)
        return base if both is False else pc.and_kleene(base, _not(both))
    if op == "<":
        return _or(base, _and(nb, _not(na)))
    if op == "<=":
        return _or(base, _and(nb, _valid_term(a, ca)))
    if op == ">":
        return _or(base, _and(na, _not(nb)))
    return _or(base, _and(na, _valid_term(b, cb)))  # ">="


_REGEX_SPECIAL = set("\\.^$|?*+()[]{}")


def signed_zeros(t: pa.DataType | None) -> bool:
    """``t`` is a float type whose ``-0.0`` and ``0.0`` hash apart (``is_in``) while comparing equal."""
    return t is not None and (pa.types.is_float32(t) or pa.types.is_float64(t))


def unsigned_zero(v: Any, t: pa.DataType) -> Any:
    """``v`` (array, scalar or expression of float type ``t``) with ``-0.0`` made ``0.0`` (x + 0.0)."""
    return pc.add(v, pa.scalar(0.0, t))


def like_to_regex(pattern: str) -> str:
    """An anchored RE2 pattern equal to SQL ``LIKE pattern`` (backslash escapes ``%``, ``_``, ``\\``)."""
    out = ["(?s)^"]
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            i += 1
            c = pattern[i]
            out.append("\\" + c if c in _REGEX_SPECIAL else c)
        elif c == "%":
            out.append(".*")
        elif c == "_":
            out.append(".")
        else:
            out.append("\\" + c if c in _REGEX_SPECIAL else c)
        i += 1
    out.append("$")
    return "".join(out)


# -- Lance's float order (pylance's meaning of a pyarrow Expression) -----------------------------
# IEEE 754 totalOrder with the zeros equal: -NaN < -inf < ... < -0.0 = 0.0 < ... < +inf < +NaN,
# NaNs ordered by sign and payload (a NaN equals only a NaN of the same bits). No Arrow kernel
# reads a float's bits, so these run on batches only (NotExpressible in expression mode).

_INT_OF_WIDTH = {16: np.int16, 32: np.int32, 64: np.int64}


def order_keys(values: pa.Array, merge_zeros: bool = True) -> np.ndarray:
    """Signed integers ordered as the float ``values`` are in Lance's order (a null's key is
    arbitrary): the bits of a negative float with their magnitude flipped, the zeros merged
    (``merge_zeros=False``: IEEE 754 totalOrder itself, -0.0 below 0.0)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    dtype = _INT_OF_WIDTH[values.type.bit_width]
    buf = values.buffers()[1]
    if buf is None:
        return np.zeros(len(values), dtype)
    bits = np.frombuffer(buf, dtype=dtype, count=values.offset + len(values))[values.offset:]
    neg = bits < 0
    return np.where(neg, (bits ^ np.iinfo(dtype).max) + neg.astype(dtype) if merge_zeros else
                    bits ^ np.iinfo(dtype).max, bits)


def _float_type(*types: pa.DataType) -> pa.DataType:
    """The float type two operands are compared in: the widest float among them."""
    floats = [t for t in types if pa.types.is_floating(t)]
    return max(floats, key=lambda t: t.bit_width) if floats else pa.float64()


def _ordered(v: Any, t: pa.DataType, merge_zeros: bool = True) -> tuple[np.ndarray, np.ndarray, bool]:
    """(keys, valid mask, is a scalar) of an operand cast to the float type ``t``."""
    if isinstance(v, pa.Scalar):
        if not v.is_valid:
            return np.zeros(1, np.int64), np.zeros(1, bool), True
        v = pa.repeat(v, 1)
        scalar = True
    else:
        scalar = False
    if isinstance(v, pa.ChunkedArray):
        v = v.combine_chunks()
    if v.type != t:
        v = pc.cast(v, t, safe=False)
    valid = np.ones(len(v), bool) if not v.null_count else \
        pc.is_valid(v).to_numpy(zero_copy_only=False)
    return order_keys(v, merge_zeros), valid, scalar


_NP_CMP: dict[str, Callable[[Any, Any], Any]] = {
    "==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater,
    ">=": np.greater_equal}


def float_order_compare(op: str, a: Any, b: Any, distinct_zeros: bool = False) -> Any:
    """``a op b`` in Lance's float order (null when either side is null); ``distinct_zeros``: in
    IEEE 754 totalOrder itself, -0.0 below 0.0 (pylance's comparison of two expressions)."""
    if _is_expr(a) or _is_expr(b):
        raise NotExpressible("float order comparison")
    t = _float_type(a.type, b.type)
    ka, va, sa = _ordered(a, t, not distinct_zeros)
    kb, vb, sb = _ordered(b, t, not distinct_zeros)
    got = _NP_CMP[op](ka, kb)
    valid = va & vb
    if sa and sb:
        return pa.scalar(bool(got[0]) if valid[0] else None, pa.bool_())
    return pa.array(got, pa.bool_(), mask=~valid if not valid.all() else None)


def float_order_in(a: Any, values: pa.Array, has_null: bool) -> Any:
    """SQL ``a IN (values)`` in Lance's float order (``values`` without nulls; ``has_null``: the
    list had one, so a row matching nothing is null)."""
    if _is_expr(a):
        raise NotExpressible("float order IN")
    t = _float_type(a.type, values.type)
    ka, va, sa = _ordered(a, t)
    kv, _, _ = _ordered(values, t)
    got = np.isin(ka, kv)
    null = ~va if not has_null else ~va | ~got
    if sa:
        return pa.scalar(None if null[0] else bool(got[0]), pa.bool_())
    return pa.array(got, pa.bool_(), mask=null if null.any() else None)


def is_negative_nan(a: Any) -> Any:
    """A NaN with its sign bit set (Lance's float order puts it below -inf); null on null."""
    if _is_expr(a):
        raise NotExpressible("is_negative_nan")
    if isinstance(a, pa.Scalar):
        x = a.as_py()
        return pa.scalar(None if x is None else bool(x != x and np.signbit(x)), pa.bool_())
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    if pa.types.is_float16(a.type):
        a = a.cast(pa.float32())
    bits = a.view(pa.int32() if pa.types.is_float32(a.type) else pa.int64())    # (zero-copy)
    return pc.and_(pc.is_nan(a), pc.less(bits, 0))
