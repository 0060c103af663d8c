"""Simple per-column conjuncts for pruning, and a min/max decision that uses them.

Pruning only ever *skips* data that cannot match; the exact filter still runs on what is
read.  So extraction is conservative: an AND conjunct we do not understand is dropped (the
others still prune), an OR with any part we do not understand is dropped whole, and an
Expression we cannot decode gives no conjuncts at all. Conjuncts are read from the bound model
(:mod:`.bound`) by one extractor, :func:`atom`, whatever the filter's source (SQL, a pyarrow
Expression read by :mod:`.from_arrow`, an engine's translator).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import singledispatch
from typing import Any, Iterable, Mapping, Union

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from .bound import BAnd, BCall, BCompare, BIn, BIsBool, BIsNull, BLike, BLit, BNot, BOr, BRef, BoundExpr
from .from_arrow import Untranslatable, from_expression
from .regex_runs import required_runs
from .expressions import FLIPPED, conjuncts as _split_and


@dataclass(frozen=True)
class ColumnPredicate:
    """``path op value``; op is one of == != < <= > >= in is_null is_valid, neg_nan /
    not_neg_nan (a float is / is not a NaN with its sign bit set, which Lance's float order puts
    below -inf: :mod:`.float_order`; a null is neither), lance> / lance>= (a float's ``>`` /
    ``>=`` in Lance's order: ``x > c AND NOT is_negative_nan(x)``, as one predicate where it is
    an operand of an OR), has_any /
    has_all (a list column holds one / every element of ``value``, a non-empty array without
    nulls), contains (a string column holds every string of ``value`` as a substring,
    case-sensitive: implied by ``contains``, ``LIKE``, ``starts_with``...), or icontains (the
    same ignoring case, for ASCII strings only: implied by ``ILIKE`` with an ASCII pattern)."""

    path: tuple[str, ...]
    op: str
    value: Any = None  # pa.Scalar for comparisons, pa.Array for "in", None otherwise

    @property
    def column(self) -> str:
        return self.path[0]


@dataclass(frozen=True)
class AnyOf:
    """An OR of predicates on one column."""

    path: tuple[str, ...]
    preds: tuple[ColumnPredicate, ...]

    @property
    def column(self) -> str:
        return self.path[0]


Conjunct = Union[ColumnPredicate, AnyOf]


def _is_float(t: pa.DataType) -> bool:
    return bool(pa.types.is_floating(t))


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


def _nan(s: pa.Scalar) -> bool:
    return _is_nan(s.as_py())


def _usable(op: str, t: pa.DataType, value: pa.Scalar) -> bool:
    if not value.is_valid or _nan(value):
        return False
    # Under the total float order NaN rows satisfy > and >= (and !=): those conjuncts are kept,
    # and whoever answers them must count NaN (zone maps' nan_count; see _pred_may_match).
    return not (_is_float(t) and op == "!=")


# -- the atom extractor: one bound node -> a per-column conjunct, or None ------------------------
@singledispatch
def atom(node: BoundExpr) -> Conjunct | None:
    """The per-column conjunct ``node`` is exactly (the rows where it is true), or None."""
    return None


@atom.register
def _compare_atom(node: BCompare) -> Conjunct | None:
    left, right, op = node.left, node.right, node.op
    if isinstance(left, BLit) and isinstance(right, BRef):
        left, right, op = right, left, FLIPPED[op]
    if isinstance(left, BRef) and isinstance(right, BLit) and left.type == right.type \
            and _usable(op, left.type, right.scalar):
        return ColumnPredicate(left.path, op, right.scalar)
    return None


@atom.register
def _in_atom(node: BIn) -> Conjunct | None:
    if not isinstance(node.arg, BRef):
        return None
    if _is_float(node.arg.type) and pc.any(pc.is_nan(node.values)).as_py():
        return None
    return ColumnPredicate(node.arg.path, "in", node.values)


@atom.register
def _is_null_atom(node: BIsNull) -> Conjunct | None:
    return ColumnPredicate(node.arg.path, "is_null") if isinstance(node.arg, BRef) else None


@atom.register
def _not_atom(node: BNot) -> Conjunct | None:
    if isinstance(node.arg, BIsNull) and isinstance(node.arg.arg, BRef):
        return ColumnPredicate(node.arg.arg.path, "is_valid")
    ref = _negative_nan_of(node.arg)
    return ColumnPredicate(ref.path, "not_neg_nan") if ref is not None else None


@atom.register
def _and_atom(node: BAnd) -> Conjunct | None:
    """Lance's float ``x > c`` / ``x >= c`` (``x > c AND NOT is_negative_nan(x)``, :mod:`.float_order`)
    as one predicate: an OR of it and others on ``x`` is then one conjunct."""
    if len(node.args) != 2 or not isinstance(node.args[0], BCompare) or not isinstance(node.args[1], BNot):
        return None                     # (shapes checked first: no walk into other ANDs)
    cmp, rest = atom(node.args[0]), atom(node.args[1])
    if isinstance(cmp, ColumnPredicate) and isinstance(rest, ColumnPredicate) and cmp.op in (">", ">=") \
            and rest.op == "not_neg_nan" and cmp.path == rest.path:
        return ColumnPredicate(cmp.path, "lance" + cmp.op, cmp.value)
    return None


def _negative_nan_of(node: BoundExpr) -> BRef | None:
    """The float column of ``is_negative_nan(column)`` (:mod:`.float_order`), else None."""
    if isinstance(node, BCall) and node.name == "is_negative_nan" and len(node.args) == 1 \
            and isinstance(node.args[0], BRef) and _is_float(node.args[0].type):
        return node.args[0]
    return None


@atom.register
def _is_true_atom(node: BIsBool) -> Conjunct | None:
    return atom(node.arg) if node.value else None      # ``x IS TRUE`` keeps the rows ``x`` keeps


@atom.register
def _or_atom(node: BOr) -> Conjunct | None:
    parts: list[BoundExpr] = []
    stack: list[BoundExpr] = [node]
    while stack:                        # nested ORs spliced in without recursion
        n = stack.pop()
        if isinstance(n, BOr):
            stack.extend(reversed(n.args))
        else:
            parts.append(n)
    return _any_of([atom(a) for a in parts])


@atom.register
def _call_atom(node: BCall) -> Conjunct | None:
    ref = _negative_nan_of(node)
    if ref is not None:
        return ColumnPredicate(ref.path, "neg_nan")
    if node.args and isinstance(node.args[0], BRef):
        return _list_set_atom(node, node.args[0]) or _text_atom(node, node.args[0])
    return None


@atom.register
def _like_atom(node: BLike) -> Conjunct | None:
    if not isinstance(node.arg, BRef):
        return None
    return _substrings(node.arg.path, node.arg.type, like_literals(node.pattern),
                       _substring_op(node.ignore_case, node.pattern))


_SUBSTRING_FUNCS = frozenset({"contains", "starts_with", "ends_with", "regexp_like"})
_REGEX_META = frozenset("\\.^$|?*+()[]{}")


def like_literals(pattern: str) -> list[str]:
    """The literal runs of a LIKE pattern (backslash escapes): every match contains each."""
    runs, cur, i = [], [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            cur.append(pattern[i + 1])
            i += 2
            continue
        if ch in "%_":
            runs.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    runs.append("".join(cur))
    return [r for r in runs if r]


def _substring_op(ignore_case: bool, pattern: str) -> str | None:
    """contains, icontains for a case-insensitive ASCII pattern, None otherwise: under Unicode
    case folding only ASCII letters and U+212A / U+017F (which the NGRAM tokenizer lower-cases /
    folds to k / s) match an ASCII letter, so the trigrams of an ASCII needle stay exact."""
    if not ignore_case:
        return "contains"
    return "icontains" if pattern.isascii() else None


def _substrings(path: tuple[str, ...], t: pa.DataType, needles: list[str],
                op: str | None = "contains") -> ColumnPredicate | None:
    if op is None or not needles or not (pa.types.is_string(t) or pa.types.is_large_string(t)):
        return None
    return ColumnPredicate(path, op, pa.array(needles, pa.string()))


def _text_atom(node: BCall, ref: BRef) -> Conjunct | None:
    """``contains`` / ``starts_with`` / ``ends_with`` / a metacharacter-free ``regexp_like``
    with a constant string: the column holds that substring (``regexp_like``'s flag ``i``: its
    literal runs ignoring case)."""
    if node.name not in _SUBSTRING_FUNCS or len(node.args) not in (2, 3) or node.options \
            or not isinstance(node.args[1], BLit) or not pa.types.is_string(node.args[1].scalar.type):
        return None
    needle = node.args[1].scalar.as_py()
    if needle is None:
        return None
    if len(node.args) == 3:
        flags = node.args[2]
        if node.name != "regexp_like" or not isinstance(flags, BLit) or flags.scalar.as_py() != "i":
            return None
        return _regex_atom(ref.path, ref.type, needle, True)
    if node.name == "regexp_like" and _REGEX_META & set(needle):
        return _regex_atom(ref.path, ref.type, needle, False)
    return _substrings(ref.path, ref.type, [needle])


def _regex_atom(path: tuple[str, ...], t: pa.DataType, pattern: str,
                ignore_case: bool) -> ColumnPredicate | AnyOf | None:
    """An RE2 pattern's literal runs (:mod:`.regex_runs`) as contains / icontains: every match
    holds all the runs of one top-level alternative."""
    read = required_runs(pattern)
    if read is None:
        return None
    branches, flagged = read
    op = "icontains" if ignore_case or flagged else "contains"
    if len(branches) == 1:
        return _substrings(path, t, branches[0], op)
    return _any_of([_substrings(path, t, runs, op) for runs in branches])


def _list_set_atom(node: BCall, ref: BRef) -> ColumnPredicate | None:
    """``array_has_any(col, [..])`` / ``array_has_all`` / ``array_has(col, v)`` as has_any /
    has_all; only without null elements (a null element matches null elements) and non-empty."""
    path = ref.path
    if node.name in ("array_has_any", "array_has_all"):
        needles = node.options[0]
        if len(needles) == 0 or needles.null_count:
            return None
        return ColumnPredicate(path, "has_any" if node.name == "array_has_any" else "has_all", needles)
    if node.name == "array_has" and len(node.args) == 2 and isinstance(node.args[1], BLit) \
            and node.args[1].scalar.is_valid:
        scalar = node.args[1].scalar
        return ColumnPredicate(path, "has_any", pa.array([scalar.as_py()], scalar.type))
    return None


def _any_of(parts: list[Conjunct | None]) -> AnyOf | None:
    flat: list[ColumnPredicate] = []
    for p in parts:
        if p is None:
            return None
        flat.extend(p.preds if isinstance(p, AnyOf) else [p])
    paths = {p.path for p in flat}
    if len(paths) != 1:
        return None
    return AnyOf(paths.pop(), tuple(flat))


def conjuncts_from_bound(bound: BoundExpr) -> list[Conjunct]:
    """The per-column conjuncts of the top-level AND operands of ``bound`` (the others dropped)."""
    out = []
    for c in _split_and(bound):
        p = atom(c)
        if p is not None:
            out.append(p)
    return out


def conjuncts_from_expression(expr: pc.Expression, schema: pa.Schema | None) -> list[Conjunct]:
    """Per-column conjuncts of a pyarrow Expression; [] when it cannot be understood."""
    if schema is None:
        return []
    try:
        bound = from_expression(expr, schema)
    except (Untranslatable, InvalidArgumentError):
        return []
    return conjuncts_from_bound(bound)


# -- decisions -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ColumnStats:
    """What is known about a column in some unit of data (fragment, page...)."""

    min: Any = None          # pa.Scalar or Python value, None = unknown
    max: Any = None
    null_count: int | None = None
    num_rows: int | None = None
    nan_count: int | None = None  # floats: NaN values (sorting above +inf); None = unknown


def _py(v: Any) -> Any:
    return v.as_py() if isinstance(v, pa.Scalar) else v


_MINMAX_OPS = frozenset({"==", "!=", "<", "<=", ">", ">=", "in"})


def _pred_may_match(p: ColumnPredicate, s: ColumnStats) -> bool:
    all_null = s.null_count is not None and s.num_rows is not None and s.null_count == s.num_rows
    if p.op == "is_null":
        return s.null_count is None or s.null_count > 0
    if p.op == "is_valid" or p.op == "not_neg_nan":
        return not all_null
    if p.op == "neg_nan":                            # a NaN (of either sign) may be there
        return not all_null and (s.nan_count is None or s.nan_count > 0 or _is_nan(_py(s.max))
                                 or _is_nan(_py(s.min)))
    if p.op in ("lance>", "lance>="):              # (a superset: any NaN kept)
        p = ColumnPredicate(p.path, p.op[5:], p.value)
    if p.op not in _MINMAX_OPS:
        return True
    if all_null:
        return False
    lo, hi = _py(s.min), _py(s.max)
    if isinstance(p.value, pa.Scalar) and _is_float(p.value.type) and p.op in (">", ">="):
        if s.nan_count is None or s.nan_count > 0:   # NaN satisfies > and >=
            return True
    if _is_nan(hi):                                  # NaN max: an open upper bound
        hi = float("inf")
    if lo is None or hi is None:
        return True
    try:
        if p.op == "in":
            return any(lo <= v <= hi for v in p.value.to_pylist())
        v = _py(p.value)
        return bool({
            "==": lo <= v <= hi, "!=": not (lo == hi == v), "<": lo < v, "<=": lo <= v,
            ">": hi > v, ">=": hi >= v,
        }[p.op])
    except TypeError:
        return True


def may_match(conjuncts: Iterable[Conjunct], stats: Mapping[Any, ColumnStats]) -> bool:
    """False only if some conjunct provably matches no row given ``stats``.

    ``stats`` is keyed by column path tuples (``("s", "a")``) or top-level names.
    """
    for c in conjuncts:
        s = stats.get(c.path) or (stats.get(c.path[0]) if len(c.path) == 1 else None)
        if s is None:
            continue
        preds = c.preds if isinstance(c, AnyOf) else (c,)
        if not any(_pred_may_match(p, s) for p in preds):
            return False
    return True
