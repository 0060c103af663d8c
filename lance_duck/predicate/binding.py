"""Bind an unbound filter to an Arrow schema: resolve columns, type literals, check types.

Literals are coerced to the type of what they are compared with (a string compared with a
date column becomes a date, ``1.5`` compared with a decimal becomes that decimal, a naive
``TIMESTAMP '...'`` compared with a zoned column is read in that zone).  Every function
node is type-checked by running its kernel on empty arrays, so type errors surface at bind
time with the filter text, not in the middle of a scan.
"""
from __future__ import annotations

import datetime as _dt
import decimal
from typing import Any, Callable, cast

import pyarrow as pa

from .. import _state
from ..errors import InvalidArgumentError, LanceDuckError
from . import kernels
from .bound import (
    BAnd, BCall, BCast, BCompare, BIn, BIsBool, BIsNull, BLike, BLit, BNot, BOr, BRef, BoundExpr,
)
from .expressions import And, Call, Cast, Compare, Expr, In, IsBool, IsNull, Like, Lit, Not, Or, Ref, parse_datetime

#: Virtual columns the scanner can provide on request.
SPECIAL_COLUMNS = {"_rowid": pa.uint64(), "_rowaddr": pa.uint64(), "_rowoffset": pa.uint64()}


def bind(expr: Expr, schema: pa.Schema, exact_time: bool = False) -> BoundExpr:
    """Resolve ``expr`` against ``schema``; raises :class:`InvalidArgumentError` on bad input.

    A ``TIMESTAMP`` literal finer than the timestamp column it is compared with is cut toward zero
    to the column's unit, as pylance does (its cast; ``ts_s = TIMESTAMP '... 00:00:00.5'`` matches
    ``00:00:00``); ``exact_time`` compares the exact instants instead (DuckDB's meaning)."""
    return _Binder(schema, exact_time).bind(expr)


def _field_id(f: pa.Field) -> int | None:
    md = f.metadata or {}
    for key in (b"lance:field_id", b"PARQUET:field_id"):
        if key in md:
            try:
                return int(md[key])
            except ValueError:
                return None
    return None


def resolve_path(schema: pa.Schema, path: tuple[str, ...]) -> tuple[tuple[str, ...], pa.Field]:
    """Find a (possibly nested) field; exact names first, then a unique case-insensitive match."""
    fields = list(schema)
    out: list[str] = []
    field = None
    for i, part in enumerate(path):
        if field is not None:
            if not pa.types.is_struct(field.type):
                raise InvalidArgumentError(
                    f"column {'.'.join(out)!r} is {field.type}, not a struct: cannot read {part!r} in it")
            fields = [field.type.field(j) for j in range(field.type.num_fields)]
        match = [f for f in fields if f.name == part] or [f for f in fields if f.name.lower() == part.lower()]
        if len(match) != 1:
            where = "" if not out else f" in struct {'.'.join(out)!r}"
            names = ", ".join(f.name for f in fields)
            if i == 0 and part in SPECIAL_COLUMNS and len(path) == 1:
                return (part,), pa.field(part, SPECIAL_COLUMNS[part])
            raise InvalidArgumentError(
                f"unknown column {'.'.join(path)!r} in filter{where} (available: {names})")
        field = match[0]
        out.append(field.name)
    assert field is not None
    return tuple(out), field


@_state.memo("empty_arrays")
def _empty(t: pa.DataType) -> pa.Array:
    return pa.array([], type=t)


def _probe(node: BoundExpr) -> Any:
    """A stand-in value of ``node`` for type checking: scalars stay scalars."""
    return node.scalar if isinstance(node, BLit) else _empty(node.type)


class _Binder:
    def __init__(self, schema: pa.Schema, exact_time: bool = False):
        self.schema = schema
        self.exact_time = exact_time
        self.refs: dict[tuple[str, ...], BRef] = {}

    def bind(self, e: Expr) -> BoundExpr:
        method = getattr(self, "_" + type(e).__name__)
        out: BoundExpr = method(e)
        return out

    # -- leaves --------------------------------------------------------------------------
    def _Ref(self, e: Ref) -> BoundExpr:
        if e.path not in self.refs:
            path, f = resolve_path(self.schema, e.path)
            self.refs[e.path] = BRef(path, f.type, _field_id(f) if len(path) == 1 else None)
        return self.refs[e.path]

    def _Lit(self, e: Lit) -> BoundExpr:
        if e.type is not None:
            return BLit(pa.scalar(e.value, e.type))
        v = e.value
        if isinstance(v, decimal.Decimal):
            return BLit(pa.scalar(float(v)))
        if v is None:
            return BLit(pa.scalar(None, pa.null()))
        return BLit(pa.scalar(v))

    # -- boolean structure ---------------------------------------------------------------
    def _And(self, e: And) -> BoundExpr:
        args = _equalities_to_in([self._boolean(a) for a in e.args], "!=")
        return args[0] if len(args) == 1 else BAnd(tuple(args))

    def _Or(self, e: Or) -> BoundExpr:
        merged, dropped = self._long_equality_groups(e.args)
        bound = [merged[i] if i in merged else self._boolean(a)
                 for i, a in enumerate(e.args) if i not in dropped]
        args = _equalities_to_in(bound)
        return args[0] if len(args) == 1 else BOr(tuple(args))

    def _long_equality_groups(self, args: tuple[Expr, ...]) -> tuple[dict[int, BoundExpr], set[int]]:
        """``col = <untyped literal>`` terms of an OR, 32+ on one column: one ``IN`` each, bound
        in bulk (what binding every term and :func:`_equalities_to_in` would give, faster)."""
        groups: dict[tuple[str, ...], list[tuple[int, Compare, Ref, Lit]]] = {}
        for i, a in enumerate(args):
            if isinstance(a, Compare) and a.op == "==":
                ref, lit = (a.left, a.right) if isinstance(a.left, Ref) else (a.right, a.left)
                if isinstance(ref, Ref) and isinstance(lit, Lit) and lit.type is None:
                    groups.setdefault(ref.path, []).append((i, a, ref, lit))
        merged: dict[int, BoundExpr] = {}
        dropped: set[int] = set()
        for members in groups.values():
            if len(members) < _MIN_IN_GROUP:
                continue
            bound = self.bind(members[0][2])
            if not _in_friendly(bound.type):
                continue
            kept = []
            for i, cmp, r, lit in members:
                sc = self._coerce_lit(lit, bound.type, cmp, r)
                if sc.type == bound.type:
                    kept.append((i, sc))
            if len(kept) < _MIN_IN_GROUP:
                continue
            values = pa.array([sc.as_py() for _, sc in kept if sc.is_valid], type=bound.type)
            merged[kept[0][0]] = BIn(bound, values, any(not sc.is_valid for _, sc in kept))
            dropped.update(i for i, _ in kept[1:])
        return merged, dropped

    def _Not(self, e: Not) -> BoundExpr:
        return BNot(self._boolean(e.arg))

    def _boolean(self, e: Expr) -> BoundExpr:
        b = self.bind(e)
        if isinstance(b, BLit) and b.type == pa.null():
            return BLit(pa.scalar(None, pa.bool_()))
        if not pa.types.is_boolean(b.type):
            raise InvalidArgumentError(f"filter operand must be boolean, got {b.type}: {_show(e)}")
        return b

    def _IsNull(self, e: IsNull) -> BoundExpr:
        return BIsNull(self.bind(e.arg))

    def _IsBool(self, e: IsBool) -> BoundExpr:
        return BIsBool(self._boolean(e.arg), e.value)

    # -- predicates ----------------------------------------------------------------------
    def _Compare(self, e: Compare) -> BoundExpr:
        left, right = self._coerce_pair(e.left, e.right, e)
        node = BCompare(e.op, left, right)
        self._check(node, lambda: kernels.call_compare(e.op, _probe(left), _probe(right)))
        return node

    def _In(self, e: In) -> BoundExpr:
        arg = self.bind(e.arg)
        has_null = any(v.value is None for v in e.values)
        scalars = []
        for v in e.values:
            if v.value is None:
                continue
            if _finer_than_column(v, arg.type):   # exactly: never equal; pylance: its cast, toward zero
                if not self.exact_time:
                    scalars.append(coerce_value(_cut_toward_zero(v.value, cast(pa.TimestampType, arg.type).unit),
                                                arg.type))
                continue
            scalars.append(self._coerce_lit(v, arg.type, e, e.arg))
        # A value that the column's type cannot hold exactly can never match: drop it. A dictionary
        # column's values are of its value type (Arrow's is_in takes them, not a dictionary set).
        t = arg.type.value_type if pa.types.is_dictionary(arg.type) else arg.type
        kept = [s for s in (_exactly_as(s, t) for s in scalars) if s is not None]
        try:
            values = pa.array([s.as_py() for s in kept], type=t)
        except (pa.ArrowException, TypeError, ValueError):
            raise InvalidArgumentError(f"IN list values do not fit {_show(e.arg)} ({arg.type}): {_show(e)}") from None
        return BIn(arg, values, has_null)

    def _Like(self, e: Like) -> BoundExpr:
        arg = self.bind(e.arg)
        if not (pa.types.is_string(arg.type) or pa.types.is_large_string(arg.type)
                or pa.types.is_string_view(arg.type)):
            raise InvalidArgumentError(f"LIKE needs a string operand, got {arg.type}: {_show(e)}")
        return BLike(arg, e.pattern, e.ignore_case)

    # -- values --------------------------------------------------------------------------
    def _Cast(self, e: Cast) -> BoundExpr:
        arg = self.bind(e.arg)
        node = BCast(arg, e.to)
        self._check(node, lambda: _probe(arg).cast(e.to))
        return node

    def _Call(self, e: Call) -> BoundExpr:
        if e.name in ("array_has_any", "array_has_all"):
            return self._list_set(e)
        args = [self.bind(a) for a in e.args]
        if e.name in ("add", "subtract", "multiply", "divide", "mod", "coalesce", "array_has",
                                 "concat") \
                and len(args) >= 2:
            args = self._unify_literals(e, args)
        try:
            probe = kernels.call(e.name, [_probe(a) for a in args], e.options)
        except kernels.NotExpressible:
            probe = None
        except (pa.ArrowException, TypeError, ValueError) as ex:
            raise InvalidArgumentError(f"type error in filter: {_show(e)}: {ex}") from None
        out_type = probe.type if probe is not None else pa.bool_()
        return BCall(e.name, tuple(args), e.options, out_type)

    def _list_set(self, e: Call) -> BoundExpr:
        """``array_has_any(list, [..])``: the constant elements coerced to the list's value type."""
        arg = self.bind(e.args[0])
        t = arg.type
        if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)):
            raise InvalidArgumentError(f"{e.name} needs a list column, got {t}: {_show(e)}")
        vt = t.value_type
        scalars = [self._coerce_lit(v, vt, e, e.args[0]) for v in e.options]
        try:
            needles = pa.array([s.as_py() for s in scalars], type=vt)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            raise InvalidArgumentError(
                f"{e.name} list values do not fit the elements of {_show(e.args[0])} ({vt}): {_show(e)}") from None
        return BCall(e.name, (arg,), (needles,), pa.bool_())

    def _unify_literals(self, e: Call, args: list[BoundExpr]) -> list[BoundExpr]:
        """Untyped literals in arithmetic / coalesce / array_has take the other operand's type."""
        typed = [a for a, src in zip(args, e.args) if not (isinstance(src, Lit) and src.type is None)]
        if not typed:
            return args
        target = typed[0].type
        if e.name == "array_has":
            if not (pa.types.is_list(target) or pa.types.is_large_list(target)
                    or pa.types.is_fixed_size_list(target)):
                raise InvalidArgumentError(f"array_has needs a list column, got {target}: {_show(e)}")
            target = target.value_type
        out = []
        for a, src in zip(args, e.args):
            if isinstance(src, Lit) and src.type is None and src.value is not None:
                if e.name in ("divide", "mod", "add", "subtract", "multiply") and \
                        pa.types.is_integer(target) and not isinstance(src.value, int):
                    out.append(a)
                    continue
                out.append(BLit(self._coerce_lit(src, target, e)))
            else:
                out.append(a)
        return out

    # -- coercion ------------------------------------------------------------------------
    def _coerce_pair(self, le: Expr, re: Expr, where: Expr) -> tuple[BoundExpr, BoundExpr]:
        l_untyped = le if isinstance(le, Lit) and le.type is None else None
        r_untyped = re if isinstance(re, Lit) and re.type is None else None
        if l_untyped is not None and r_untyped is None:
            right = self.bind(re)
            return BLit(self._coerce_lit(l_untyped, right.type, where, re)), right
        left = self.bind(le)
        if r_untyped is not None and l_untyped is None:
            return left, BLit(self._coerce_lit(r_untyped, left.type, where, le))
        right = self.bind(re)
        return self._align_typed(left, right)

    def _align_typed(self, left: BoundExpr, right: BoundExpr) -> tuple[BoundExpr, BoundExpr]:
        """Two typed sides: move a typed literal onto the other side's temporal/string type."""
        if isinstance(right, BLit) and not isinstance(left, BLit):
            lit, other = right, left
            swapped = False
        elif isinstance(left, BLit) and not isinstance(right, BLit):
            lit, other = left, right
            swapped = True
        else:
            return left, right
        lt, ot = lit.type, other.type
        new_lit, new_other = lit, other
        if pa.types.is_timestamp(ot) and (pa.types.is_timestamp(lt) or pa.types.is_date(lt)):
            value = lit.scalar.as_py()
            if value is not None:
                if isinstance(value, _dt.datetime):
                    value = _to_zone(value, lt.tz if pa.types.is_timestamp(lt) else None, ot.tz)
                else:
                    value = _to_zone(_dt.datetime.combine(value, _dt.time()), None, ot.tz)
            unit = ot.unit
            if pa.types.is_timestamp(lt) and _finer(lt.unit, ot.unit) and not _exact_in(value, ot.unit):
                if self.exact_time:
                    unit = lt.unit
                    new_other = BCast(other, pa.timestamp(unit, ot.tz))
                else:
                    value = _to_zone(_cut_toward_zero(lit.scalar.as_py(), ot.unit), lt.tz, ot.tz)
            new_lit = BLit(pa.scalar(value, pa.timestamp(unit, ot.tz)))
        elif pa.types.is_date(ot) and pa.types.is_timestamp(lt):
            new_other = BCast(other, pa.timestamp(lt.unit, lt.tz))
        elif pa.types.is_date(ot) and pa.types.is_date(lt):
            new_lit = BLit(lit.scalar.cast(ot))
        elif (pa.types.is_large_string(ot) or pa.types.is_string_view(ot)) and pa.types.is_string(lt):
            new_lit = BLit(lit.scalar.cast(ot))
        return (new_other, new_lit) if not swapped else (new_lit, new_other)

    def _coerce_lit(self, lit: Lit, target: pa.DataType, where: Any, other: Any = None) -> pa.Scalar:
        try:
            return coerce_value(lit.value, target)
        except (pa.ArrowException, TypeError, ValueError, decimal.InvalidOperation, OverflowError):
            what = f"{_show(other)} ({target})" if isinstance(other, Expr) else str(target)
            raise InvalidArgumentError(
                f"cannot compare {what} with {_sql_literal(lit)}: not a valid {_kind(target)}") from None

    def _check(self, node: BoundExpr, fn: Callable[[], Any]) -> None:
        try:
            fn()
        except (pa.ArrowException, TypeError, ValueError) as ex:
            raise InvalidArgumentError(f"type error in filter: {_describe(node)}: {ex}") from None


def _in_friendly(t: pa.DataType) -> bool:
    """Types whose ``=`` is exactly ``is_in`` membership (floats differ on NaN)."""
    return bool(pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_decimal(t)
            or pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_boolean(t))


#: Shorter chains of equalities stay as they are (pruning sees each term).
_MIN_IN_GROUP = 32


def _equalities_to_in(args: list[BoundExpr], op: str = "==") -> list[BoundExpr]:
    """``x = 1 OR x = 2 OR ...`` -> ``x IN (1, 2, ...)``: same three-valued result, one kernel.
    With ``op="!="`` (the terms of an AND): ``x != 1 AND x != 2 AND ...`` -> ``NOT (x IN (1, 2, ...))``
    (null for a null ``x``, false on a match, else true -- or null when the list holds a null).

    Long OR chains (pylance answers 20,000 terms) would otherwise make an Expression too deep
    for Arrow to evaluate, and thousands of kernels run on every batch.
    """
    groups: dict[tuple[str, ...], list[tuple[int, BRef, BLit]]] = {}
    for i, a in enumerate(args):
        if isinstance(a, BCompare) and a.op == op:
            ref, lit = (a.left, a.right) if isinstance(a.right, BLit) else (a.right, a.left)
            if isinstance(ref, BRef) and isinstance(lit, BLit) and lit.type == ref.type \
                    and _in_friendly(ref.type):
                groups.setdefault(ref.path, []).append((i, ref, lit))
    merged: dict[int, BoundExpr] = {}
    dropped: set[int] = set()
    for members in groups.values():
        if len(members) < _MIN_IN_GROUP:
            continue
        idx = [i for i, _, _ in members]
        ref = members[0][1]
        scalars = [lit.scalar for _, _, lit in members]
        values = pa.array([sc.as_py() for sc in scalars if sc.is_valid], type=ref.type)
        found = BIn(ref, values, any(not sc.is_valid for sc in scalars))
        merged[idx[0]] = found if op == "==" else BNot(found)
        dropped.update(idx[1:])
    if not merged:
        return args
    return [merged.get(i, a) for i, a in enumerate(args) if i not in dropped]


def _kind(t: pa.DataType) -> str:
    """A type in words for messages: 'int64 number', 'date', 'timestamp[us]'..."""
    if pa.types.is_integer(t):
        return f"{t} integer"
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return f"{t} number"
    if pa.types.is_boolean(t):
        return "boolean (true / false)"
    if pa.types.is_date(t):
        return "date (YYYY-MM-DD)"
    if pa.types.is_timestamp(t):
        return f"{t} (YYYY-MM-DD HH:MM:SS)"
    return str(t)


def _exactly_as(s: pa.Scalar, t: pa.DataType) -> pa.Scalar | None:
    if s.type == t:
        return s
    try:
        c = s.cast(t, safe=True)
        return c if c.cast(s.type, safe=True).equals(s) else None
    except (pa.ArrowException, OverflowError, ValueError):
        return None


_UNITS = ["s", "ms", "us", "ns"]


def _finer(a: str, b: str) -> bool:
    return _UNITS.index(a) > _UNITS.index(b)


def _finer_than_column(lit: Lit, t: pa.DataType) -> bool:
    """A datetime literal off the grid of the seconds / milliseconds timestamp column type ``t``."""
    return pa.types.is_timestamp(t) and isinstance(lit.value, _dt.datetime) and not _exact_in(
        _to_zone(lit.value, None, t.tz), t.unit)


def _cut_toward_zero(value: _dt.datetime, unit: str) -> _dt.datetime:
    """``value`` cut toward zero to whole seconds / milliseconds on its own clock (a naive literal's
    wall clock, before it is read in a column's zone), as pylance's cast does."""
    epoch = _dt.datetime(1970, 1, 1)
    micros = (value.replace(tzinfo=None) - epoch) // _dt.timedelta(microseconds=1)
    per = 1_000_000 if unit == "s" else 1_000
    cut = abs(micros) // per * per * (1 if micros >= 0 else -1)
    return (epoch + _dt.timedelta(microseconds=cut)).replace(tzinfo=value.tzinfo)


def _exact_in(value: Any, unit: str) -> bool:
    if value is None or not isinstance(value, _dt.datetime):
        return True
    us = value.microsecond
    return {"s": us == 0, "ms": us % 1000 == 0}.get(unit, True)


def _to_zone(value: _dt.datetime, from_tz: str | None, to_tz: str | None) -> _dt.datetime:
    """Re-express a literal for a column: naive literals are wall-clock time in the column's zone."""
    if value.tzinfo is None and from_tz is not None:
        value = value.replace(tzinfo=_zone(from_tz))
    if to_tz is None:
        return value.astimezone(_dt.timezone.utc).replace(tzinfo=None) if value.tzinfo else value
    if value.tzinfo is None:
        value = value.replace(tzinfo=_zone(to_tz))
    return value.astimezone(_dt.timezone.utc)


def _zone(name: str) -> _dt.tzinfo:
    if name.upper() in ("UTC", "Z", "+00:00"):
        return _dt.timezone.utc
    if name[:1] in "+-":
        sign = 1 if name[0] == "+" else -1
        hh, mm = name[1:].split(":")
        return _dt.timezone(sign * _dt.timedelta(hours=int(hh), minutes=int(mm)))
    from zoneinfo import ZoneInfo
    return ZoneInfo(name)


def coerce_value(value: Any, target: pa.DataType) -> pa.Scalar:
    """A Python literal as a scalar that can meet a value of type ``target``."""
    if value is None:
        return pa.scalar(None, target)
    if pa.types.is_dictionary(target):
        target = target.value_type
    if pa.types.is_boolean(target):
        if isinstance(value, bool):
            return pa.scalar(value)
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return pa.scalar(value.lower() == "true")
        raise TypeError("not a boolean")
    if isinstance(value, bool):
        return pa.scalar(value)
    if pa.types.is_integer(target):
        if isinstance(value, str):
            value = int(value.strip())
        if isinstance(value, int):
            try:
                return pa.scalar(value, target)
            except (pa.ArrowException, OverflowError):
                return pa.scalar(value, pa.int64()) if -2**63 <= value < 2**63 else pa.scalar(float(value))
        if isinstance(value, decimal.Decimal):
            return pa.scalar(float(value)) if value != int(value) else coerce_value(int(value), target)
        return pa.scalar(float(value))
    if pa.types.is_floating(target):
        return pa.scalar(float(value), pa.float64() if target != pa.float32() else target) \
            if not isinstance(value, str) else pa.scalar(float(value), target)
    if pa.types.is_decimal(target):
        d = decimal.Decimal(str(value).strip()) if not isinstance(value, float) else decimal.Decimal(repr(value))
        q = decimal.Decimal(1).scaleb(-target.scale)
        if d == d.quantize(q):
            try:
                return pa.scalar(d.quantize(q), target)
            except (pa.ArrowException, OverflowError):
                pass
        return pa.scalar(d)
    if pa.types.is_date(target):
        if isinstance(value, str):
            value = _dt.date.fromisoformat(value.strip())
        return pa.scalar(value, target)
    if pa.types.is_timestamp(target):
        if isinstance(value, str):
            value = parse_datetime(value)
        if isinstance(value, _dt.datetime):
            value = _to_zone(value, None, target.tz)
        return pa.scalar(value, target)
    if pa.types.is_string(target) or pa.types.is_large_string(target) or pa.types.is_string_view(target):
        if not isinstance(value, str):
            raise TypeError("not a string")
        return pa.scalar(value, target)
    if pa.types.is_binary(target) or pa.types.is_large_binary(target):
        return pa.scalar(value.encode() if isinstance(value, str) else value, target)
    if pa.types.is_duration(target):
        if isinstance(value, int):
            return pa.scalar(value, target)
        raise TypeError("durations compare with integers in the column's unit")
    if pa.types.is_time(target) and isinstance(value, str):
        return pa.scalar(_dt.time.fromisoformat(value.strip()), target)
    if isinstance(value, decimal.Decimal):
        return pa.scalar(float(value))
    return pa.scalar(value, target)


def _show(e: Any) -> str:
    """An unbound expression as the SQL the user wrote (close enough to find it), shortened."""
    text = to_sql(e) if isinstance(e, Expr) else str(e)
    return text if len(text) <= 200 else text[:197] + "..."


def _name(path: tuple[str, ...]) -> str:
    return ".".join(p if p.isidentifier() else f"`{p}`" for p in path)


def _sql_literal(lit: Lit) -> str:
    v = lit.value
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, _dt.datetime):
        return f"TIMESTAMP '{v.isoformat(sep=' ')}'"
    if isinstance(v, _dt.date):
        return f"DATE '{v.isoformat()}'"
    return str(v)


def to_sql(e: Expr) -> str:
    """SQL text of an unbound expression (for messages)."""
    if isinstance(e, Ref):
        return _name(e.path)
    if isinstance(e, Lit):
        return _sql_literal(e)
    if isinstance(e, Compare):
        return f"{to_sql(e.left)} {'=' if e.op == '==' else e.op} {to_sql(e.right)}"
    if isinstance(e, (And, Or)):
        word = " AND " if isinstance(e, And) else " OR "
        parts = [to_sql(a) for a in e.args[:20]] + (["..."] if len(e.args) > 20 else [])
        return word.join(f"({p})" if isinstance(a, (And, Or)) else p for p, a in zip(parts, e.args))
    if isinstance(e, Not):
        return f"NOT ({to_sql(e.arg)})"
    if isinstance(e, IsNull):
        return f"{to_sql(e.arg)} IS NULL"
    if isinstance(e, IsBool):
        return f"{to_sql(e.arg)} IS {'TRUE' if e.value else 'FALSE'}"
    if isinstance(e, In):
        return f"{to_sql(e.arg)} IN ({', '.join(to_sql(v) for v in e.values[:20])}" \
               f"{', ...' if len(e.values) > 20 else ''})"
    if isinstance(e, Like):
        return f"{to_sql(e.arg)} {'ILIKE' if e.ignore_case else 'LIKE'} {_sql_literal(Lit(e.pattern))}"
    if isinstance(e, Cast):
        return f"CAST({to_sql(e.arg)} AS {e.to})"
    if isinstance(e, Call):
        ops = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "mod": "%"}
        if e.name in ops and len(e.args) == 2:
            return f"{to_sql(e.args[0])} {ops[e.name]} {to_sql(e.args[1])}"
        if e.name in ("array_has_any", "array_has_all"):
            return f"{e.name}({to_sql(e.args[0])}, [{', '.join(to_sql(o) for o in e.options)}])"
        args = [to_sql(a) for a in e.args] + [repr(o) for o in e.options]
        return f"{e.name}({', '.join(args)})"
    return type(e).__name__


def _describe(node: BoundExpr) -> str:
    if isinstance(node, BCompare):
        return f"{_describe(node.left)} {'=' if node.op == '==' else node.op} {_describe(node.right)}"
    if isinstance(node, BRef):
        return f"{_name(node.path)} ({node.type})"
    if isinstance(node, BLit):
        return f"{_sql_literal(Lit(node.scalar.as_py()))} ({node.type})"
    return type(node).__name__


__all__ = ["bind", "coerce_value", "resolve_path", "SPECIAL_COLUMNS", "LanceDuckError"]
