"""SQL filter strings (pylance's dialect) -> the unbound model, via sqlglot.

pylance parses filters with a dialect in which only backticks quote identifiers, so
``"x"`` is a string; ``==`` means ``=``; list indexes are 1-based.  :class:`LanceFilterDialect`
copies that, and :func:`parse_filter` maps sqlglot's tree onto :mod:`.expressions`.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import re
from typing import Any, cast

import pyarrow as pa
import sqlglot
from sqlglot import exp, tokens
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError

from ..errors import InvalidArgumentError, UnsupportedFeatureError
from ._deep import call_deep
from .expressions import (
    And, Call, Cast, Compare, Expr, In, IsBool, IsNull, Like, Lit, Not, Or, Ref, parse_datetime,
)


class LanceFilterDialect(Dialect):
    """pylance's filter dialect: backtick identifiers, double quotes are strings."""

    INDEX_OFFSET = 1

    class Tokenizer(tokens.Tokenizer):
        QUOTES = ["'", '"']
        IDENTIFIERS = ["`"]


_CMP: dict[type[exp.Expression], str] = {exp.EQ: "==", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_ARITH: dict[type[exp.Expression], str] = {exp.Add: "add", exp.Sub: "subtract", exp.Mul: "multiply", exp.Div: "divide", exp.Mod: "mod"}
_UNARY: dict[type[exp.Expression], str] = {exp.Lower: "lower", exp.Upper: "upper", exp.Length: "length", exp.Abs: "abs",
          exp.IsNan: "is_nan", exp.ArraySize: "array_length"}
_BINARY: dict[type[exp.Expression], str] = {exp.RegexpLike: "regexp_like", exp.StartsWith: "starts_with", exp.EndsWith: "ends_with",
           exp.Contains: "contains", exp.ArrayContains: "array_has"}
_ANONYMOUS = {"list_contains": "array_has", "array_has": "array_has", "array_contains": "array_has",
              "regexp_match": "regexp_like", "regexp_like": "regexp_like", "character_length": "length",
              "char_length": "length", "length": "length", "array_length": "array_length",
              "list_length": "array_length", "cardinality": "array_length", "isnan": "is_nan",
              "starts_with": "starts_with", "ends_with": "ends_with", "lower": "lower", "upper": "upper",
              "octet_length": "octet_length"}
#: DataFusion's list-set membership functions (second argument: a constant list).
_LIST_SET = {"array_has_any": "array_has_any", "list_has_any": "array_has_any",
             "arrays_overlap": "array_has_any", "array_has_all": "array_has_all",
             "list_has_all": "array_has_all"}
_DATE_PARTS = {"year", "month", "day", "hour", "minute", "second", "quarter", "week",
               "dow", "doy", "millisecond", "microsecond", "nanosecond"}


def sql_type_to_arrow(dt: exp.DataType) -> pa.DataType:
    """Arrow type for a SQL type name in a CAST or typed literal."""
    t = dt.this
    T = exp.DataType.Type
    simple = {
        T.BOOLEAN: pa.bool_(), T.TINYINT: pa.int8(), T.SMALLINT: pa.int16(), T.INT: pa.int32(),
        T.BIGINT: pa.int64(), T.UTINYINT: pa.uint8(), T.USMALLINT: pa.uint16(), T.UINT: pa.uint32(),
        T.UBIGINT: pa.uint64(), T.FLOAT: pa.float32(), T.DOUBLE: pa.float64(), T.DATE: pa.date32(),
        T.TIMESTAMP: pa.timestamp("ns"), T.DATETIME: pa.timestamp("ns"), T.VARCHAR: pa.string(),
        T.TEXT: pa.string(), T.CHAR: pa.string(), T.BINARY: pa.binary(), T.VARBINARY: pa.binary(),
        T.TIMESTAMPTZ: pa.timestamp("ns", "UTC"),
    }
    if t in simple:
        return simple[t]
    if t in (T.DECIMAL, T.BIGDECIMAL):
        params = [int(p.this.this) for p in dt.expressions]
        precision, scale = (params + [38, 0][len(params):])[:2] if params else (38, 10)
        return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
    raise UnsupportedFeatureError(f"unsupported type in filter: {dt.sql()}")


def _literal(node: exp.Literal) -> Lit:
    text = node.this
    if node.is_string:
        return Lit(text)
    if any(c in text for c in ".eE"):
        return Lit(decimal.Decimal(text) if "e" not in text.lower() else float(text))
    return Lit(int(text))


def _typed_literal(value: Any, to: pa.DataType) -> Lit:
    """Fold ``CAST(<literal> AS type)``, ``DATE '...'``, ``TIMESTAMP '...'`` into a typed literal."""
    try:
        if value is None:
            return Lit(None, to)
        if pa.types.is_date(to):
            v = _dt.date.fromisoformat(str(value).strip()) if isinstance(value, str) else value
        elif pa.types.is_timestamp(to):
            v = parse_datetime(str(value)) if isinstance(value, str) else value
            if pa.types.is_timestamp(to) and to.tz is None and getattr(v, "tzinfo", None) is not None:
                v = v.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        elif pa.types.is_decimal(to):
            v = decimal.Decimal(str(value))
        elif pa.types.is_floating(to):
            v = float(value)
        elif pa.types.is_integer(to):
            v = int(value) if not isinstance(value, str) else int(value.strip())
        elif pa.types.is_boolean(to):
            v = value if isinstance(value, bool) else str(value).strip().lower() in ("true", "t", "1")
        elif pa.types.is_string(to):
            v = str(value)
        else:
            v = value
        return Lit(pa.scalar(v, to).as_py(), to)
    except (ValueError, TypeError, pa.ArrowException, decimal.InvalidOperation) as e:
        raise InvalidArgumentError(f"cannot read {value!r} as {to}: {e}") from None


def _escape_like(pattern: str, escape: str) -> str:
    """Rewrite a LIKE pattern with a custom ESCAPE character to backslash escapes."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == escape and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out.append("\\" + nxt if nxt in "%_\\" else nxt)
            i += 2
            continue
        out.append("\\\\" if c == "\\" else c)
        i += 1
    return "".join(out)


class _Converter:
    def __init__(self, text: str):
        self.text = text

    def fail(self, node: exp.Expression, what: str = "unsupported expression") -> None:
        raise UnsupportedFeatureError(f"{what} in filter {_short(self.text)}: {node.sql()[:200]}")

    def convert(self, node: exp.Expression) -> Expr:
        n = node
        if isinstance(n, exp.Paren):
            return self.convert(n.this)
        if isinstance(n, (exp.And, exp.Or)):
            parts = tuple(self.convert(a) for a in _chain(n))
            return And(parts) if isinstance(n, exp.And) else Or(parts)
        if isinstance(n, exp.Not):
            return Not(self.convert(n.this))
        if type(n) in _CMP:
            return Compare(_CMP[type(n)], self.convert(n.this), self.convert(n.expression))
        if isinstance(n, exp.Column):
            return Ref(tuple(p.name for p in n.parts))
        if isinstance(n, exp.Dot):
            return Ref(self._path(n))
        if isinstance(n, exp.Literal):
            return _literal(n)
        if isinstance(n, exp.Boolean):
            return Lit(bool(n.this), pa.bool_())
        if isinstance(n, exp.Null):
            return Lit(None)
        if isinstance(n, exp.Neg):
            inner = self.convert(n.this)
            if isinstance(inner, Lit) and inner.value is not None and not isinstance(inner.value, str):
                return Lit(-inner.value, inner.type)
            return Call("negate", (inner,))
        if isinstance(n, (exp.Cast, exp.TryCast)):
            to = sql_type_to_arrow(n.to)
            inner = self.convert(n.this)
            if isinstance(inner, Lit):
                return _typed_literal(inner.value, to)
            return Cast(inner, to)
        if isinstance(n, exp.Between):
            arg = self.convert(n.this)
            return And((Compare(">=", arg, self.convert(n.args["low"])),
                        Compare("<=", arg, self.convert(n.args["high"]))))
        if isinstance(n, exp.In):
            if n.args.get("query") or n.args.get("unnest") or n.args.get("field"):
                self.fail(n, "subquery")
            values = [self.convert(v) for v in n.expressions]
            lits = [v for v in values if isinstance(v, Lit)]
            if len(lits) != len(values):
                arg = self.convert(n.this)
                return Or(tuple(Compare("==", arg, v) for v in values))
            return In(self.convert(n.this), tuple(lits))
        if isinstance(n, exp.Is):
            arg = self.convert(n.this)
            rhs = n.expression
            if isinstance(rhs, exp.Null):
                return IsNull(arg)
            if isinstance(rhs, exp.Boolean):
                return IsBool(arg, bool(rhs.this))
            self.fail(n)
        if isinstance(n, exp.Escape):
            like = n.this
            esc = n.expression
            if not isinstance(like, (exp.Like, exp.ILike)) or not isinstance(esc, exp.Literal):
                self.fail(n)
            return self._like(like, esc.this)
        if isinstance(n, (exp.Like, exp.ILike)):
            return self._like(n, None)
        if type(n) in _ARITH:
            return Call(_ARITH[type(n)], (self.convert(n.this), self.convert(n.expression)))
        if type(n) in _UNARY:
            return Call(_UNARY[type(n)], (self.convert(n.this),))
        if isinstance(n, exp.RegexpLike) and n.args.get("flag") is not None:
            return Call("regexp_like", (self.convert(n.this), self.convert(n.expression),
                                        self.convert(n.args["flag"])))
        if type(n) in _BINARY:
            return Call(_BINARY[type(n)], (self.convert(n.this), self.convert(n.expression)))
        if isinstance(n, exp.Coalesce):
            return Call("coalesce", tuple(self.convert(a) for a in [n.this, *n.expressions]))
        if isinstance(n, exp.Concat):
            return Call("concat", tuple(self.convert(a) for a in n.expressions))
        if isinstance(n, exp.Bracket):
            return self._bracket(n)
        if isinstance(n, exp.DateTrunc):
            unit = n.args["unit"]
            return Call("date_trunc", (self.convert(n.this),), (str(unit.name).lower(),))
        if isinstance(n, exp.ArrayContainsAll):
            return self._list_set("array_has_all", n, [n.this, n.expression])
        if isinstance(n, exp.ArrayOverlaps):
            return self._list_set("array_has_any", n, [n.this, n.expression])
        if isinstance(n, exp.Anonymous):
            return self._anonymous(n)
        if isinstance(n, exp.Func):
            name = n.sql_name().lower()
            args = [a for a in n.args.values() if isinstance(a, exp.Expression)]
            if name in _ANONYMOUS:
                return Call(_ANONYMOUS[name], tuple(self.convert(a) for a in args))
        self.fail(n)
        raise AssertionError  # unreachable

    def _path(self, node: exp.Expression) -> tuple[str, ...]:
        if isinstance(node, exp.Dot):
            return self._path(node.this) + (node.expression.name,)
        if isinstance(node, exp.Column):
            return tuple(p.name for p in node.parts)
        self.fail(node)
        raise AssertionError

    def _like(self, n: exp.Expression, escape: str | None) -> Expr:
        pat = n.expression
        if not isinstance(pat, exp.Literal) or not pat.is_string:
            self.fail(n, "LIKE needs a constant string pattern")
        pattern = pat.this if escape is None else _escape_like(pat.this, escape)
        out: Expr = Like(self.convert(n.this), pattern, isinstance(n, exp.ILike))
        return Not(out) if n.args.get("negate") else out

    def _list_set(self, name: str, n: exp.Expression, args: list[Any]) -> Expr:
        """``array_has_any(col, [v, ...])``: Call(name, (col,), options=(constant Lits...))."""
        if len(args) != 2:
            self.fail(n, f"{name} takes two arguments")
        needles = args[1]
        if isinstance(needles, exp.Array):
            items = needles.expressions
        elif isinstance(needles, exp.Anonymous) and str(needles.this).lower() in ("make_array", "make_list"):
            items = needles.expressions
        else:
            self.fail(n, f"{name} needs a constant list such as ['a', 'b'] as its second argument")
            raise AssertionError
        values = tuple(self.convert(v) for v in items)
        if not all(isinstance(v, Lit) for v in values):
            self.fail(n, f"{name} needs constant list elements")
        return Call(name, (self.convert(args[0]),), values)

    def _bracket(self, n: exp.Bracket) -> Expr:
        base = self.convert(n.this)
        if len(n.expressions) != 1:
            self.fail(n)
        key = n.expressions[0]
        if isinstance(key, exp.Literal) and key.is_string:
            if isinstance(base, Ref):
                return Ref(base.path + (key.this,))
            return Call("struct_field", (base,), (key.this,))
        if isinstance(key, exp.Literal):
            return Call("list_element", (base,), (int(key.this),))  # already 0-based (INDEX_OFFSET)
        self.fail(n, "list index must be a constant")
        raise AssertionError

    def _anonymous(self, n: exp.Anonymous) -> Expr:
        name = str(n.this).lower()
        args = n.expressions
        if name == "get_field" and len(args) == 2 and isinstance(args[1], exp.Literal):
            base = self.convert(args[0])
            if isinstance(base, Ref):
                return Ref(base.path + (args[1].this,))
            return Call("struct_field", (base,), (args[1].this,))
        if name in ("date_part", "datepart") and len(args) == 2 and isinstance(args[0], exp.Literal):
            part = args[0].this.lower()
            if part not in _DATE_PARTS:
                self.fail(n, f"unknown date part {part!r}")
            return Call("date_part", (self.convert(args[1]),), (part,))
        if name in ("date_trunc",) and len(args) == 2 and isinstance(args[0], exp.Literal):
            return Call("date_trunc", (self.convert(args[1]),), (args[0].this.lower(),))
        if name in _ANONYMOUS:
            return Call(_ANONYMOUS[name], tuple(self.convert(a) for a in args))
        if name in _LIST_SET:
            return self._list_set(_LIST_SET[name], n, args)
        self.fail(n, f"unknown function {name!r}")
        raise AssertionError


def _chain(node: exp.Expression) -> list[exp.Expression]:
    """Operands of an AND (or OR) chain, parentheses looked through, in order; no recursion."""
    kind = type(node)
    out: list[exp.Expression] = []
    stack = [node]
    while stack:
        n = stack.pop()
        while isinstance(n, exp.Paren) and isinstance(n.this, kind):
            n = n.this
        if type(n) is kind:
            stack.append(n.expression)
            stack.append(n.this)
        else:
            out.append(n)
    return out


#: Nesting deeper than this (AND / OR chains and parentheses not counted) is refused.
MAX_FILTER_DEPTH = 1000


def _depth(tree: exp.Expression) -> int:
    """Nesting depth of ``tree``; a chain of one boolean operator and parentheses count once."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        n, d = stack.pop()
        deepest = max(deepest, d)
        for child in n.iter_expressions():
            same = isinstance(child, exp.Paren) or (type(child) is type(n) and isinstance(n, exp.Connector))
            leaf = isinstance(child, (exp.Column, exp.Literal, exp.Identifier, exp.Boolean, exp.Null))
            stack.append((child, d if same or leaf else d + 1))
    return deepest


_OPERATOR = {exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=",
             exp.And: "AND", exp.Or: "OR", exp.Not: "NOT", exp.Like: "LIKE", exp.ILike: "ILIKE",
             exp.In: "IN", exp.Is: "IS", exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/",
             exp.Mod: "%", exp.Neg: "-", exp.Between: "BETWEEN"}


def _explain_parse_error(e: ParseError) -> str:
    """sqlglot's first parse error in the user's terms: what is wrong, and where."""
    errors = getattr(e, "errors", None) or []
    if not errors:
        return "syntax error"
    err = errors[0]
    desc = str(err.get("description", ""))
    highlight = str(err.get("highlight", "")).strip()
    col = err.get("col")
    where = f" (column {col})" if col else ""
    missing = re.match(r"Required keyword: '(\w+)' missing for <class '[\w.]*\.(\w+)'>", desc)
    if missing:
        key, cls = missing.groups()
        op = next((v for k, v in _OPERATOR.items() if k.__name__ == cls), highlight or cls)
        if cls == "Between":
            return f"BETWEEN needs 'low AND high'{where}"
        if key == "expression":
            return f"{op!r} is missing its right-hand side{where}"
        if key == "this":
            return f"{op!r} is missing its operand{where}"
        return f"incomplete {op!r} expression{where}"
    if desc.startswith("Expecting "):
        return f"expected {desc[len('Expecting '):]!r} near {highlight!r}{where}"
    if desc.startswith("Invalid expression") or desc.startswith("Unexpected"):
        return f"unexpected {highlight!r}{where}"
    return f"{desc.splitlines()[0]}{where}"


def _explain_token_error(text: str) -> str:
    for quote, what in (("'", "string"), ('"', "string"), ("`", "quoted identifier")):
        if text.count(quote) % 2:
            return f"unterminated {what} (an odd number of {quote} quotes)"
    return "cannot split it into tokens"


def _parse_tree(text: str, check_depth: bool = False) -> exp.Expression:
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(f"filter must be a non-empty SQL string, got {text!r}")
    try:
        # sqlglot types its result as its Expr base; every parsed node is an Expression
        tree = cast(exp.Expression, sqlglot.parse_one(text, read=LanceFilterDialect))
    except ParseError as e:
        raise InvalidArgumentError(f"cannot parse filter {_short(text)}: {_explain_parse_error(e)}") from None
    except TokenError:
        raise InvalidArgumentError(f"cannot parse filter {_short(text)}: {_explain_token_error(text)}") from None
    if isinstance(tree, exp.Alias):
        raise InvalidArgumentError(f"cannot parse filter {_short(text)}: unexpected {tree.alias!r}")
    if check_depth and _depth(tree) > MAX_FILTER_DEPTH:
        raise InvalidArgumentError(
            f"filter {_short(text)} is nested more than {MAX_FILTER_DEPTH} levels deep")
    return tree


def _short(text: str) -> str:
    return repr(text) if len(text) <= 200 else repr(text[:200]) + "..."


def parse_sql_tree(text: str) -> exp.Expression:
    """The sqlglot tree of a filter string (pylance's dialect)."""
    return call_deep(lambda: _parse_tree(text), f"filter {_short(text)}", lambda: _parse_tree(text, True))


# A long flat chain ``col = 1 OR col = 2 OR ...`` (tools generate 20,000 terms) is read without
# sqlglot, which needs seconds for it.  Anything else in the text falls back to sqlglot.
_FAST_MIN_CHARS = 10_000
_WS = "[ \t\r\n]*"
_FAST_TERM = re.compile(_WS + r"([A-Za-z_][A-Za-z0-9_]*)" + _WS + r"(==|=|!=|<>|<=|>=|<|>)" + _WS
                        + r"(-?[0-9]+|'(?:[^'\\]|'')*')" + _WS)
_FAST_JOIN = re.compile(r"(AND|OR)(?=[ \t\r\n])", re.IGNORECASE)
_FAST_OPS = {"==": "==", "=": "==", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _fast_chain(text: str) -> Expr | None:
    """The model of a long chain of ``column op literal`` terms joined by one of AND / OR, or None."""
    if len(text) < _FAST_MIN_CHARS:
        return None
    keywords = LanceFilterDialect.Tokenizer.KEYWORDS
    terms: list[Expr] = []
    joiner = None
    pos, end = 0, len(text)
    while True:
        m = _FAST_TERM.match(text, pos)
        if m is None:
            return None
        name, op, lit = m.groups()
        if name.upper() in keywords:
            return None
        value = int(lit) if lit[0] != "'" else lit[1:-1].replace("''", "'")
        terms.append(Compare(_FAST_OPS[op], Ref((name,)), Lit(value)))
        pos = m.end()
        if pos == end:
            break
        if text[pos - 1] not in " \t\r\n":
            return None
        j = _FAST_JOIN.match(text, pos)
        if j is None or (joiner is not None and j.group(1).upper() != joiner):
            return None
        joiner = j.group(1).upper()
        pos = j.end()
    if len(terms) == 1:
        return terms[0]
    return Or(tuple(terms)) if joiner == "OR" else And(tuple(terms))


def parse_filter(text: str) -> Expr:
    """Parse a pylance-dialect SQL filter into the unbound model."""
    if isinstance(text, str):
        fast = _fast_chain(text)
        if fast is not None:
            return fast
    # Input that recursed past Python's default limit is parsed again on a big stack, and
    # refused past MAX_FILTER_DEPTH levels (Arrow evaluates expressions recursively too).
    return call_deep(lambda: _Converter(text).convert(_parse_tree(text)), f"filter {_short(text)}",
                     lambda: _Converter(text).convert(_parse_tree(text, True)))
