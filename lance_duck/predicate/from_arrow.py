"""A user's ``pyarrow.compute.Expression`` read into the bound model (:mod:`.bound`).

An Expression that compares no float is evaluated as given (:func:`from_expression`); the bound
tree made here is what the rest of lance_duck reads from it -- the columns it needs, per-column conjuncts for pruning and
indices, the AND / OR tree exact indices count -- with the same code as a SQL filter's
(:mod:`.pruning`, :mod:`.bool_tree`). The tree comes from :mod:`.arrow_introspect` (pyarrow has no
public walker), the only reader of Arrow's serialized form.

In :func:`from_expression` every node keeps the Arrow meaning, or becomes :class:`~.bound.BOpaque`
(read no further):

* ``and`` / ``and_kleene`` -> :class:`BAnd`, ``or_kleene`` -> :class:`BOr`; a plain ``or`` (null when
  an operand is null, even with a true one) is opaque. A plain ``and`` keeps exactly the rows
  Kleene's does, and the model is only ever read for the rows a filter keeps.
* ``is_in`` (false, not null, on a null) -> ``BIsBool(BIn(...), True)``; DuckDB's null-preserving
  ``if_else(is_valid(x), is_in(x, ...), null)`` -> ``BIn``. A value set holding a null is opaque.
* A float ``x > c`` / ``x >= c``: Arrow's NaN compares false, the bound model's total order puts it
  above every number, so it becomes ``x > c AND NOT is_nan(x)``.
* ``is_nan`` -> ``BCall("is_nan")`` (the same in both meanings).
* ``match_substring`` / ``starts_with`` / ``ends_with`` / ``match_like`` -> :class:`BLike` (the
  pattern escaped), ``match_substring_regex`` -> ``regexp_like`` (flag ``i`` when ignoring case).

``from_lance_order(expr, schema)`` reads a user's Expression in pylance's meaning instead, the one
lance_duck's scans evaluate (pylance hands it to DataFusion): floats compare in Lance's order, IEEE
754 totalOrder with the zeros equal (-NaN < -inf < ... < -0.0 = 0.0 < ... < +inf < +NaN, a NaN equal
only to a NaN of the same bits; :mod:`.float_order` builds those nodes), and ``is_in`` is SQL's
``IN`` (null on a null row, so ``~x.isin([1])`` drops it). Every other call stays
Arrow's own (a :class:`BOpaque` with its options and result type, evaluated by Arrow), a plain
``and`` below the top-level chain included.

``from_expression(..., total_order=True)`` reads an Expression DuckDB 1.x pushed instead: DuckDB
built it from its own predicates (``col op literal``, ``is_in``, ``is_nan``, ``is_null`` /
``is_valid``, ``AND`` / ``OR``) and means them in its total order, so comparisons are read as they
stand in the bound model (NaN equals NaN and sorts above every number; a float literal its column's
type holds exactly takes that type), and an ``is_in`` value set
of another type than its column (Python ints or floats) is cast to the column's type, values it
cannot hold exactly left out (they equal no value of the column).
"""
from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from . import arrow_introspect as ai
from . import float_order
from .expressions import FLIPPED
from .bound import BAnd, BCall, BCast, BCompare, BIn, BIsBool, BIsNull, BLike, BLit, BNot, BOpaque, BOr, BRef, \
    BoundExpr

_COMPARE = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
            "greater_equal": ">="}
_AND = frozenset({"and", "and_", "and_kleene"})
_KLEENE_AND = frozenset({"and_kleene"})
_OR = frozenset({"or_kleene"})
_LIKE_SPECIAL = str.maketrans({"%": "\\%", "_": "\\_", "\\": "\\\\"})


class Untranslatable(Exception):
    """The Expression could not be read (its payload is private to Arrow): nothing is inferred."""


def from_lance_order(expr: pc.Expression, schema: pa.Schema) -> BoundExpr | None:
    """``expr`` as a bound tree in pylance's meaning (see the module), or None when it holds no
    ``is_in`` and no comparison touching a float (Arrow's meaning is pylance's there).

    Raises:
        Untranslatable: the Expression's serialized form could not be read.
        InvalidArgumentError: it names a column ``schema`` lacks, or calls a function that
            cannot take its arguments.
    """
    try:
        tree = ai.decode(expr)
    except ai.IntrospectionError as e:
        raise Untranslatable(str(e)) from None
    reader = _Reader(schema, lance_order=True)
    try:
        out = reader.node(tree, top=True)
    except ai.IntrospectionError as e:
        raise Untranslatable(str(e)) from None
    if reader.missing:
        raise InvalidArgumentError(f"filter refers to unknown column(s) {sorted(reader.missing)}: {expr}")
    return out if reader.differs else None


def from_expression(expr: pc.Expression, schema: pa.Schema, *, total_order: bool = False) -> BoundExpr:
    """``expr`` as a bound tree over ``schema``: in Arrow's meaning, or with ``total_order`` in
    DuckDB's (see the module).

    Raises:
        Untranslatable: the Expression's serialized form could not be read.
        InvalidArgumentError: it names a top-level column ``schema`` lacks.
    """
    try:
        tree = ai.decode(expr)
    except ai.IntrospectionError as e:
        raise Untranslatable(str(e)) from None
    reader = _Reader(schema, total_order)
    out = reader.node(tree)
    if reader.missing:
        raise InvalidArgumentError(f"filter refers to unknown column(s) {sorted(reader.missing)}: {expr}")
    return out


class _Reader:
    def __init__(self, schema: pa.Schema, total_order: bool = False, lance_order: bool = False):
        self.schema = schema
        self.total_order = total_order
        self.lance_order = lance_order
        self.differs = False                # (lance_order) a part whose meaning is not Arrow's was read
        self.missing: set[str] = set()
        self.calls: dict[str, Callable[[ai.XCall, tuple[BoundExpr, ...]], BoundExpr]] = {
            "is_in": self._is_in, "if_else": self._if_else, "is_null": self._is_null,
            "is_valid": lambda n, a: BNot(BIsNull(a[0])) if len(a) == 1 else self.opaque(n, a),
            "invert": lambda n, a: BNot(a[0]) if len(a) == 1 else self.opaque(n, a),
            "match_like": self._like, "match_substring": self._like,
            "starts_with": self._like, "ends_with": self._like, "match_substring_regex": self._regex,
            "is_nan": lambda n, a: BCall("is_nan", a, (), pa.bool_()) if len(a) == 1 else self.opaque(n, a),
        }

    def node(self, x: ai.XNode, top: bool = False) -> BoundExpr:
        if isinstance(x, ai.XLiteral):
            return BLit(x.scalar)
        if isinstance(x, ai.XField):
            return self.field(x.path)
        # a plain ``and`` (null when an operand is null) keeps the rows Kleene's does: read as
        # one only where nothing above it reads its nulls (the top-level chain), in Lance's order
        ands = _AND if top or not self.lance_order else _KLEENE_AND
        if x.name in ands:
            return BAnd(tuple(self.node(a, top) for a in _chain(x, ands)))
        if x.name == "or_kleene":
            return BOr(tuple(self.node(a) for a in _chain(x, _OR)))
        args = tuple(self.node(a) for a in x.args)
        if x.name in _COMPARE and len(args) == 2:
            if self.lance_order:
                return self._lance_compare(_COMPARE[x.name], args[0], args[1], x)
            if self.total_order:
                return BCompare(_COMPARE[x.name], _typed_as(args[0], args[1]), _typed_as(args[1], args[0]))
            return arrow_compare(_COMPARE[x.name], args[0], args[1])
        handler = self.calls.get(x.name)
        return handler(x, args) if handler is not None else self.opaque(x, args)

    def opaque(self, x: ai.XCall, args: tuple[BoundExpr, ...]) -> BoundExpr:
        """A call this model does not read: in Lance's order, Arrow's own function with its
        options and result type (evaluated as Arrow evaluates it)."""
        if not self.lance_order:
            return _opaque(x, args)
        options = ai.function_options(x.options)
        return BOpaque(x.name, args, _result_type(x.name, args, options), options)

    def _lance_compare(self, op: str, a: BoundExpr, b: BoundExpr, x: ai.XCall) -> BoundExpr:
        if not (pa.types.is_floating(a.type) or pa.types.is_floating(b.type)):
            if not _comparable(a.type, b.type):
                return self.opaque(x, (a, b))
            if isinstance(a, BLit) and isinstance(b, BRef):
                a, b, op = b, a, FLIPPED[op]
            if isinstance(a, BRef) and isinstance(b, BLit) and pa.types.is_integer(a.type) \
                    and pa.types.is_integer(b.type) and a.type != b.type and b.scalar.is_valid:
                cast = _exactly_as(pa.array([b.scalar.as_py()], b.type), a.type)   # (an atom for indices)
                b = BLit(cast[0]) if cast is not None and len(cast) == 1 else b
            return BCompare(op, a, b)
        self.differs = True
        if isinstance(a, BLit) and isinstance(b, BRef):
            a, b, op = b, a, FLIPPED[op]
        lit = _exact_literal(b, a.type) if isinstance(a, BRef) and pa.types.is_floating(a.type) else None
        return float_order.compare(op, a, b, lit)

    def field(self, path: tuple[str, ...]) -> BoundExpr:
        if path[0] not in self.schema.names:
            self.missing.add(path[0])
            return BRef(path, pa.null())
        t = self.schema.field(path[0]).type
        for name in path[1:]:
            if not pa.types.is_struct(t) or t.get_field_index(name) < 0:
                if self.lance_order:
                    raise InvalidArgumentError(f"filter refers to unknown field {'.'.join(path)!r}")
                return BOpaque("field_ref", (BRef(path[:1], self.schema.field(path[0]).type),), pa.null())
            t = t.field(name).type
        return BRef(path, t)

    def _is_in(self, x: ai.XCall, args: tuple[BoundExpr, ...]) -> BoundExpr:
        values = ai.option(x.options, "value_set")
        if self.lance_order and len(args) == 1 and values is not None and values.is_valid:
            return self._lance_is_in(args[0], values.values)
        if len(args) != 1 or not isinstance(args[0], BRef) or values is None or not values.is_valid:
            return self.opaque(x, args)
        arr = values.values
        if arr.null_count:
            return self.opaque(x, args)
        if arr.type != args[0].type:
            cast = _exactly_as(arr, args[0].type) if self.total_order else None
            if cast is None:
                return self.opaque(x, args)
            arr = cast
        return BIsBool(BIn(args[0], arr, False), True)

    def _lance_is_in(self, arg: BoundExpr, arr: pa.Array) -> BoundExpr:
        """SQL's ``IN`` (null on a null row; with a null in the list, null where nothing matches):
        a :class:`BIn`, on floats when the value set is NaN-free and of the column's type (``-0.0``
        and ``0.0`` match alike there too), else the batch kernel of Lance's order."""
        self.differs = True
        has_null, values = arr.null_count > 0, arr.drop_null()
        if not (pa.types.is_floating(arg.type) or pa.types.is_floating(values.type)):
            same = values if values.type == arg.type else _exactly_as(values, arg.type)
            if same is not None:
                return BIn(arg, same, has_null)
            return BIn(BCast(arg, values.type), values, has_null)
        return float_order.is_in(arg, values, has_null)

    def _if_else(self, x: ai.XCall, args: tuple[BoundExpr, ...]) -> BoundExpr:
        if len(args) == 3:
            cond, then, other = args
            found = then.arg if isinstance(then, BIsBool) and then.value else then    # (Lance's: SQL IN)
            if isinstance(cond, BNot) and isinstance(cond.arg, BIsNull) and isinstance(cond.arg.arg, BRef) \
                    and isinstance(found, BIn) and isinstance(found.arg, BRef) and not found.has_null \
                    and found.arg.path == cond.arg.arg.path and isinstance(other, BLit) \
                    and not other.scalar.is_valid:
                return found
        return self.opaque(x, args)

    def _is_null(self, x: ai.XCall, args: tuple[BoundExpr, ...]) -> BoundExpr:
        if len(args) != 1 or ai.flag(x.options, "nan_is_null"):
            return self.opaque(x, args)
        return BIsNull(args[0])

    def _like(self, x: ai.XCall, args: tuple[BoundExpr, ...]) -> BoundExpr:
        pattern = _pattern(x)
        if len(args) != 1 or pattern is None:
            return self.opaque(x, args)
        if x.name != "match_like":
            escaped = pattern.translate(_LIKE_SPECIAL)
            pattern = {"match_substring": f"%{escaped}%", "starts_with": f"{escaped}%",
                       "ends_with": f"%{escaped}"}[x.name]
        return BLike(args[0], pattern, ai.flag(x.options, "ignore_case"))

    def _regex(self, x: ai.XCall, args: tuple[BoundExpr, ...]) -> BoundExpr:
        pattern = _pattern(x)
        if len(args) != 1 or pattern is None:
            return self.opaque(x, args)
        flags = (BLit(pa.scalar("i")),) if ai.flag(x.options, "ignore_case") else ()
        return BCall("regexp_like", (args[0], BLit(pa.scalar(pattern)), *flags), (), pa.bool_())


def _result_type(name: str, args: tuple[BoundExpr, ...], options: pc.FunctionOptions | None) -> pa.DataType:
    """The type Arrow's ``name`` gives on arguments of these types (called on empty arrays)."""
    probe = [a.scalar if isinstance(a, BLit) else pa.array([], a.type) for a in args]
    try:
        out = pc.call_function(name, probe, options)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowKeyError) as e:
        raise InvalidArgumentError(f"filter function {name!r} cannot take "
                                   f"({', '.join(str(a.type) for a in args)}): {e}") from None
    return out.type


def _comparable(a: pa.DataType, b: pa.DataType) -> bool:
    """Arrow compares values of these types (a ``BCompare`` of them evaluates as Arrow's)."""
    try:
        pc.equal(pa.array([], a), pa.array([], b))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return False
    return True


def _exact_literal(lit: BoundExpr, t: pa.DataType) -> BLit | None:
    """A number literal as float type ``t`` when ``t`` holds it exactly (a null: null of ``t``)."""
    if not isinstance(lit, BLit):
        return None
    s = lit.scalar
    if s.type == t:
        return lit
    if not (pa.types.is_floating(s.type) or pa.types.is_integer(s.type) or pa.types.is_null(s.type)):
        return None
    if not s.is_valid:
        return BLit(pa.scalar(None, t))
    cast = _exactly_as(pa.array([s.as_py()], s.type), t)
    return BLit(cast[0]) if cast is not None and len(cast) == 1 else None


def _typed_as(lit: BoundExpr, other: BoundExpr) -> BoundExpr:
    """A float literal compared with a float column of another type, as that type when it holds the
    value exactly (DuckDB hands a FLOAT column's literal over as a Python float)."""
    if isinstance(lit, BLit) and isinstance(other, BRef) and pa.types.is_floating(lit.type) \
            and pa.types.is_floating(other.type) and lit.type != other.type and lit.scalar.is_valid:
        cast = _exactly_as(pa.array([lit.scalar.as_py()], lit.type), other.type)
        if cast is not None and len(cast) == 1:
            return BLit(cast[0])
    return lit


def _exactly_as(values: pa.Array, t: pa.DataType) -> pa.Array | None:
    """``values`` cast to ``t`` (a float value set: the values ``t`` cannot hold exactly left out,
    they equal no value of it); None when they do not convert exactly."""
    try:
        if not (pa.types.is_floating(t) and pa.types.is_floating(values.type)):
            return values.cast(t)          # a safe cast: fails on a value ``t`` cannot hold
        cast = values.cast(t, safe=False)
        back = cast.cast(values.type, safe=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    same = pc.or_(pc.fill_null(pc.equal(back, values), False), pc.and_(pc.is_nan(back), pc.is_nan(values)))
    return cast.filter(same)


def _chain(x: ai.XCall, names: frozenset[str]) -> list[ai.XNode]:
    """The operands of a chain of ``names`` calls, nested ones spliced in, in order (without
    recursion: DuckDB builds long chains left-deep)."""
    out: list[ai.XNode] = []
    stack: list[ai.XNode] = [x]
    while stack:
        n = stack.pop()
        if isinstance(n, ai.XCall) and n.name in names:
            stack.extend(reversed(n.args))
        else:
            out.append(n)
    return out


def _pattern(x: ai.XCall) -> str | None:
    pattern = ai.option(x.options, "pattern")
    pattern = pattern.as_py() if isinstance(pattern, pa.Scalar) else pattern
    return pattern if isinstance(pattern, str) else None


def _opaque(x: ai.XCall, args: tuple[BoundExpr, ...]) -> BoundExpr:
    return BOpaque(x.name, args)


def arrow_compare(op: str, left: BoundExpr, right: BoundExpr) -> BoundExpr:
    """``left op right`` with Arrow's meaning (a NaN compares false) in the bound model."""
    node = BCompare(op, left, right)
    # Arrow: NaN compares false; the bound model's total order puts NaN above every number
    above = left if op in (">", ">=") else right if op in ("<", "<=") else None
    if isinstance(above, BRef) and pa.types.is_floating(above.type):
        return BAnd((node, BNot(BCall("is_nan", (above,), (), pa.bool_()))))
    return node


__all__ = ["Untranslatable", "arrow_compare", "from_expression", "from_lance_order"]
