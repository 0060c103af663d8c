"""Simple per-column conjuncts for pruning, and a min/max decision that uses them.

Pruning only ever *skips* data that cannot match; the exact filter still runs on what is
read.  So extraction is conservative: an AND conjunct we do not understand is dropped (the
others still prune), an OR with any part we do not understand is dropped whole, and an
Expression we cannot decode gives no conjuncts at all.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Union

import pyarrow as pa
import pyarrow.compute as pc

from . import arrow_introspect as ai
from .regex_runs import required_runs
from .bound import BCall, BCompare, BIn, BIsNull, BLike, BLit, BNot, BOr, BRef, BoundExpr
from .expressions import FLIPPED, conjuncts as _split_and


@dataclass(frozen=True)
class ColumnPredicate:
    """``path op value``; op is one of == != < <= > >= in is_null is_valid, has_any /
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
    return pa.types.is_floating(t)


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


# -- from our bound model --------------------------------------------------------------------
def _from_bound_atom(node: BoundExpr) -> ColumnPredicate | AnyOf | None:
    if isinstance(node, BCompare):
        left, right, op = node.left, node.right, node.op
        if isinstance(left, BLit) and isinstance(right, BRef):
            left, right, op = right, left, FLIPPED[op]
        if isinstance(left, BRef) and isinstance(right, BLit) and left.type == right.type \
                and _usable(op, left.type, right.scalar):
            return ColumnPredicate(left.path, op, right.scalar)
        return None
    if isinstance(node, BIn) and isinstance(node.arg, BRef):
        if _is_float(node.arg.type) and pc.any(pc.is_nan(node.values)).as_py():
            return None
        return ColumnPredicate(node.arg.path, "in", node.values)
    if isinstance(node, BIsNull) and isinstance(node.arg, BRef):
        return ColumnPredicate(node.arg.path, "is_null")
    if isinstance(node, BNot) and isinstance(node.arg, BIsNull) and isinstance(node.arg.arg, BRef):
        return ColumnPredicate(node.arg.arg.path, "is_valid")
    if isinstance(node, BOr):
        return _any_of([_from_bound_atom(a) for a in node.args])
    if isinstance(node, BCall) and node.args and isinstance(node.args[0], BRef):
        return _list_set_atom(node, node.args[0]) or _text_atom(node, node.args[0])
    if isinstance(node, BLike) and isinstance(node.arg, BRef):
        return _substrings(node.arg.path, node.arg.type, like_literals(node.pattern),
                           _substring_op(node.ignore_case, node.pattern))
    return None


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


def _text_atom(node: BCall, ref: BRef) -> ColumnPredicate | AnyOf | None:
    """``contains`` / ``starts_with`` / ``ends_with`` / a metacharacter-free ``regexp_like``
    with a constant string: the column holds that substring."""
    if node.name not in _SUBSTRING_FUNCS or len(node.args) != 2 or node.options \
            or not isinstance(node.args[1], BLit) or not pa.types.is_string(node.args[1].scalar.type):
        return None
    needle = node.args[1].scalar.as_py()
    if needle is None:
        return None
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


def _any_of(parts: list) -> AnyOf | None:
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
    out = []
    for c in _split_and(bound):
        p = _from_bound_atom(c)
        if p is not None:
            out.append(p)
    return out


# -- from a pyarrow Expression (what DuckDB pushes) ------------------------------------------
_X_CMP = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
          "greater_equal": ">="}


def _x_and(node: ai.XNode) -> list[ai.XNode]:
    if isinstance(node, ai.XCall) and node.name in ("and_kleene", "and"):
        return [c for a in node.args for c in _x_and(a)]
    return [node]


def _x_atom(node: ai.XNode, schema: pa.Schema | None) -> ColumnPredicate | AnyOf | None:
    if not isinstance(node, ai.XCall):
        return None
    a = node.args
    if node.name in _X_CMP and len(a) == 2:
        op = _X_CMP[node.name]
        left, right = a
        if isinstance(left, ai.XLiteral) and isinstance(right, ai.XField):
            left, right, op = right, left, FLIPPED[op]
        if isinstance(left, ai.XField) and isinstance(right, ai.XLiteral):
            t = _field_type(schema, left.path)
            if t is None or t != right.scalar.type or not _usable(op, t, right.scalar):
                return None
            return ColumnPredicate(left.path, op, right.scalar)
        return None
    if node.name == "is_in" and len(a) == 1 and isinstance(a[0], ai.XField):
        values = ai.option(node.options, "value_set")
        if values is None or not values.is_valid:
            return None
        arr = values.values
        t = _field_type(schema, a[0].path)
        if t is None or arr.null_count or arr.type != t:
            return None
        if _is_float(t) and pc.any(pc.is_nan(arr)).as_py():
            return None
        return ColumnPredicate(a[0].path, "in", arr)
    if node.name == "if_else" and len(a) == 3:
        # DuckDB's null-preserving IN: if_else(is_valid(x), is_in(x, ...), null)
        cond, then, other = a
        if isinstance(cond, ai.XCall) and cond.name == "is_valid" and isinstance(other, ai.XLiteral) \
                and not other.scalar.is_valid:
            inner = _x_atom(then, schema)
            if isinstance(inner, ColumnPredicate) and inner.op == "in" and (cond.args[0] == ai.XField(inner.path)):
                return inner
        return None
    if node.name in ("is_null", "is_valid") and len(a) == 1 and isinstance(a[0], ai.XField):
        if node.name == "is_null" and ai.flag(node.options, "nan_is_null"):
            return None
        if _field_type(schema, a[0].path) is None:
            return None
        return ColumnPredicate(a[0].path, node.name)
    if node.name == "invert" and len(a) == 1 and isinstance(a[0], ai.XCall) and a[0].name == "is_null" \
            and len(a[0].args) == 1 and isinstance(a[0].args[0], ai.XField) \
            and not ai.flag(a[0].options, "nan_is_null"):
        return ColumnPredicate(a[0].args[0].path, "is_valid")
    if node.name in ("or_kleene", "or"):
        return _any_of([_x_atom(x, schema) for x in a])
    if node.name in _X_SUBSTRING and len(a) == 1 and isinstance(a[0], ai.XField):
        pattern = ai.option(node.options, "pattern")
        pattern = pattern.as_py() if isinstance(pattern, pa.Scalar) else pattern
        t = _field_type(schema, a[0].path)
        if not isinstance(pattern, str) or t is None:
            return None
        ignore_case = bool(ai.flag(node.options, "ignore_case"))
        if node.name == "match_substring_regex":
            return _regex_atom(a[0].path, t, pattern, ignore_case)
        return _substrings(a[0].path, t, like_literals(pattern) if node.name == "match_like" else [pattern],
                           _substring_op(ignore_case, pattern))
    return None


_X_SUBSTRING = frozenset({"match_substring", "match_like", "starts_with", "ends_with", "match_substring_regex"})


def _field_type(schema: pa.Schema | None, path: tuple[str, ...]) -> pa.DataType | None:
    if schema is None:
        return None
    try:
        t = schema.field(path[0]).type
        for p in path[1:]:
            if not pa.types.is_struct(t):
                return None
            t = t.field(p).type
        return t
    except (KeyError, IndexError):
        return None


def conjuncts_from_expression(expr: pc.Expression, schema: pa.Schema | None) -> list[Conjunct]:
    """Per-column conjuncts of a pyarrow Expression; [] when it cannot be understood."""
    try:
        tree = ai.decode(expr)
    except ai.IntrospectionError:
        return []
    out = []
    for c in _x_and(tree):
        p = _x_atom(c, schema)
        if p is not None:
            out.append(p)
    return out


def expression_is_conjuncts(expr: pc.Expression, num_conjuncts: int) -> bool:
    """``expr`` is exactly the AND of its ``num_conjuncts`` conjuncts from
    :func:`conjuncts_from_expression` (one per top-level AND operand: none was dropped)."""
    try:
        tree = ai.decode(expr)
    except ai.IntrospectionError:
        return False
    return len(_x_and(tree)) == num_conjuncts


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
    if p.op == "is_valid":
        return not all_null
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
        return {
            "==": lo <= v <= hi, "!=": not (lo == hi == v), "<": lo < v, "<=": lo <= v,
            ">": hi > v, ">=": hi >= v,
        }[p.op]
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
