"""Substring conjuncts of a ``lance_duck.sql`` query, handed to the Lance scan (NGRAM indices).

DuckDB pushes comparisons, ``IN`` and ``IS NULL`` into an Arrow dataset scan, but no string
function: ``col LIKE '%x%'``, ``ILIKE``, ``contains``, ``LIKE 'x%'``, ``starts_with`` / ``prefix``,
``ends_with`` / ``suffix`` and ``regexp_matches`` reach the scan as nothing at all (DuckDB 2.0:
no filter, and no prefix range either). So for a query that reads one Lance reference alone
(one ``SELECT``, that table its only one, no join), :func:`substring_terms` takes those
conjuncts from the top-level ``WHERE`` -- and ORs of them (``contains(a, 'x') OR b LIKE '%y%'``);
:mod:`.duckdb` registers a filtered view of the table (:func:`arrow_filter`), and DuckDB still
applies its whole ``WHERE``. A ``WHERE`` conjunct holds for every row the query keeps, so a view
keeping a superset of its rows changes no result; it lets the scan ask the NGRAM index and read
the other columns for the matching rows only. Only forms the scan evaluates with DuckDB's meaning
(or a superset of it) are taken: a plain column of the table, a string literal; ``LIKE`` without
``ESCAPE`` or backslashes (DuckDB has no default escape character, Arrow's ``match_like`` has
one); ``ILIKE`` with an ASCII pattern: the only non-ASCII characters DuckDB lower-cases to ASCII
are U+0130 (to ``i``) and U+212A (to ``k``, which RE2's case folding matches too), so Arrow's
case-insensitive ``match_like`` keeps every row DuckDB keeps for a pattern without ``i``, and an
RE2 pattern with ``[iI\\x{130}]`` for ``i`` does for the others (``predicate.regex_runs``); NGRAM
answers both; ``regexp_matches(col, pattern)`` without options (both engines run RE2 with its
default options; a pattern without metacharacters is a ``contains``, the others give NGRAM the
literal runs every match holds).

DuckDB pushes no comparison on a ``DOUBLE`` column either (``amount > 230``, ``amount > 230.0``:
nothing reaches the scan), so a top-level conjunct ``col op number`` (``>``, ``>=``, ``<``, ``<=``,
``=``) on a ``float64`` column goes to the view too, as a SQL filter (:func:`comparison_filter`)
that a ZONEMAP or BTREE answers, compiled in DuckDB's meaning (``NaN > 230`` holds for every NaN:
``predicate.compiled.compile_duckdb_sql``; a user's SQL filter puts a NaN with its sign bit set
below -inf, as pylance does). DuckDB reads an exponent literal as a correctly rounded
DOUBLE, and an integer or decimal of at most 15 digits as ``digits / 10^scale`` (two exact
doubles, one correctly rounded division): Python's ``float`` of the text is the same value, so
the view compares with it as written. A longer literal may come out an ulp off: its bound is
loosened by a relative 2^-40 (the view keeps a superset; DuckDB's own ``WHERE`` is exact).
"""
from __future__ import annotations

import hashlib
import math
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from ...predicate import CompiledFilter, compile_bound
from ...predicate.bound import BAnd, BCall, BLike, BLit, BOr, BRef, BoundExpr
from ...predicate.regex_runs import duckdb_ilike_regex

#: (column as written, kind, literal); kind: like, ilike, contains, starts_with, ends_with, regexp;
#: or ("", "any", (term, ...)): one of those terms holds (an OR in the WHERE clause).
Term = tuple[str, str, Any]
#: RE2 metacharacters: a pattern without them matches where it occurs as a substring.
_REGEX_META = frozenset("\\.^$|?*+()[]{}")
_FUNCTIONS: dict[type[exp.Expression], str] = {
    exp.Contains: "contains", exp.StartsWith: "starts_with", exp.EndsWith: "ends_with"}
_ANONYMOUS = {"prefix": "starts_with", "suffix": "ends_with", "contains": "contains",
              "starts_with": "starts_with", "ends_with": "ends_with"}


def _column(node: exp.Expression, table: exp.Table) -> str | None:
    if not isinstance(node, exp.Column) or node.args.get("db") or node.args.get("catalog"):
        return None
    qualifier = node.table
    if qualifier and qualifier not in (table.alias_or_name, table.name):
        return None
    return node.name


def _string(node: exp.Expression | None) -> str | None:
    return node.this if isinstance(node, exp.Literal) and node.is_string else None


def _regex_term(col: str, pattern: str) -> Term | None:
    if not _REGEX_META & set(pattern):
        return col, "contains", pattern
    try:                                        # a pattern RE2 refuses: DuckDB reports it
        pc.match_substring_regex(pa.array([""], pa.string()), pattern=pattern)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return col, "regexp", pattern


def _term(c: exp.Expression, table: exp.Table) -> Term | None:
    if isinstance(c, exp.Or):
        alternatives = [_term(cast(exp.Expression, a.unnest()), table) for a in c.flatten()]
        if any(t is None or t[1] == "any" for t in alternatives):
            return None
        return "", "any", tuple(cast(list[Term], alternatives))
    if isinstance(c, (exp.Like, exp.ILike)) and not c.args.get("negate"):
        col, lit = _column(c.this, table), _string(c.expression)
        if col is None or lit is None or "\\" in lit:
            return None
        if isinstance(c, exp.ILike):
            return (col, "ilike", lit) if lit.isascii() else None
        return col, "like", lit
    if isinstance(c, exp.RegexpLike):
        col, lit = _column(c.this, table), _string(c.expression)
        if col is None or lit is None or c.args.get("flag") is not None:
            return None
        return _regex_term(col, lit)
    kind = _FUNCTIONS.get(type(c))
    if kind is not None:
        args = [c.this, c.expression]
    elif isinstance(c, exp.Anonymous) and str(c.this).lower() in _ANONYMOUS:
        kind, args = _ANONYMOUS[str(c.this).lower()], list(c.expressions)
    else:
        return None
    if len(args) != 2:
        return None
    col, lit = _column(args[0], table), _string(args[1])
    return None if col is None or lit is None else (col, kind, lit)


_COMPARISONS: dict[type[exp.Expression], str] = {exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<=",
                                                 exp.EQ: "="}
_MIRRORED = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "=": "="}


def _number(node: exp.Expression) -> tuple[float, bool] | None:
    """A finite numeric literal (``230``, ``-1.5``, ``2e3``) and whether DuckDB's DOUBLE of it
    is surely Python's (see the module notes), or None."""
    negative = isinstance(node, exp.Neg)
    if negative:
        node = node.this
    if not isinstance(node, exp.Literal) or node.is_string:
        return None
    return number_value(str(node.this), negative)


def number_value(text: str, negative: bool) -> tuple[float, bool] | None:
    """:func:`_number` of the literal written ``text`` (negated when ``negative``)."""
    try:
        v = float(text)
    except ValueError:
        return None
    exact = "e" in text.lower() or len(text.replace(".", "").lstrip("0")) <= 15
    return ((-v if negative else v), exact) if math.isfinite(v) else None


def _comparison_term(c: exp.Expression, table: exp.Table) -> Term | None:
    """``col op number`` (either way round) as ``(col, "compare", (op, number, exact))``, or None."""
    op = _COMPARISONS.get(type(c))
    if op is None:
        return None
    col, num = _column(c.this, table), _number(c.expression)
    if col is None or num is None:
        col, num, op = _column(c.expression, table), _number(c.this), _MIRRORED[op]
    return None if col is None or num is None else (col, "compare", (op, *num))


def substring_terms(tree: exp.Expression) -> tuple[exp.Table, list[Term]] | None:
    """The query's only table and the substring conjuncts of its ``WHERE``, and its numeric
    comparisons (see :func:`comparison_filter`) (None: none usable)."""
    if not isinstance(tree, exp.Select) or tree.args.get("joins") or tree.args.get("with"):
        return None
    tables = list(tree.find_all(exp.Table))
    from_ = tree.args.get("from_", tree.args.get("from"))
    where = tree.args.get("where")
    if len(tables) != 1 or from_ is None or tables[0].parent is not from_ or where is None:
        return None
    table = tables[0]
    conjuncts = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
    terms = [t for c in conjuncts if isinstance(c, exp.Expression)
             and (t := _term(cast(exp.Expression, c.unnest()), table)
                  or _comparison_term(cast(exp.Expression, c.unnest()), table)) is not None]
    return (table, terms) if terms else None


def view_name(name: str, terms: list[Term]) -> str:
    """The registration name of the filtered view of ``name`` (one per distinct filter)."""
    return f"{name}_s{hashlib.sha1(repr(terms).encode()).hexdigest()[:10]}"


def _bound(schema: pa.Schema, term: Term) -> BoundExpr | None:
    """One term in lance_duck's filter model, keeping (at least) the rows DuckDB keeps, or None."""
    col, kind, lit = term
    if kind == "any":                          # every alternative, or the OR would lose rows
        alternatives = [_bound(schema, t) for t in lit]
        if not alternatives or any(e is None for e in alternatives):
            return None
        return BOr(tuple(e for e in alternatives if e is not None))
    fields = [f for f in schema if f.name.lower() == col.lower()]
    if kind == "compare" or len(fields) != 1 or not (pa.types.is_string(fields[0].type)
                                                     or pa.types.is_large_string(fields[0].type)):
        return None
    ref = BRef((fields[0].name,), fields[0].type)
    if kind == "ilike":
        return _ilike(ref, lit)
    if kind == "like":
        return BLike(ref, lit, False)
    name = {"contains": "contains", "starts_with": "starts_with", "ends_with": "ends_with",
            "regexp": "regexp_like"}[kind]
    return BCall(name, (ref, BLit(pa.scalar(lit))), (), pa.bool_())


def _ilike(ref: BRef, pattern: str) -> BoundExpr:
    """DuckDB's ``ILIKE`` (an ASCII pattern, no backslash), or a superset: a case-insensitive
    ``LIKE``, and for a pattern with ``i`` an RE2 pattern also matching U+0130 there (DuckDB
    lower-cases it to ``i``; see :mod:`lance_duck.predicate.regex_runs`)."""
    if "i" not in pattern.lower():
        return BLike(ref, pattern, True)
    return BCall("regexp_like", (ref, BLit(pa.scalar(duckdb_ilike_regex(pattern)))), (), pa.bool_())


def arrow_filter(schema: pa.Schema, terms: list[Term]) -> CompiledFilter | None:
    """The conjunction of the terms on top-level string columns (DuckDB matches column names
    case-insensitively: a name matching no column, or two, is left out) as lance_duck's filter
    model, or None."""
    parts = tuple(e for e in (_bound(schema, term) for term in terms) if e is not None)
    if not parts:
        return None
    return compile_bound(parts[0] if len(parts) == 1 else BAnd(parts), schema)


#: Relative slack of a comparison's bound in the view (see the module notes).
COMPARISON_SLACK = 2.0 ** -40


def comparison_filter(schema: pa.Schema, terms: list[Term]) -> str | None:
    """The numeric comparisons among ``terms`` on ``float64`` columns as a SQL filter (pylance's
    dialect) keeping at least the rows DuckDB keeps, or None."""
    parts = []
    for col, kind, value in terms:
        fields = [f for f in schema if f.name.lower() == col.lower()]
        if kind != "compare" or len(fields) != 1 or not pa.types.is_float64(fields[0].type) \
                or "`" in fields[0].name:
            continue
        op, v, exact = value
        name = f"`{fields[0].name}`"
        if exact:
            parts.append(f"{name} {op} {v!r}")
            continue
        slack = abs(v) * COMPARISON_SLACK + 1e-300
        lo, hi = v - slack, v + slack
        if not (math.isfinite(lo) and math.isfinite(hi)):
            continue
        if op in (">", ">="):
            parts.append(f"{name} >= {lo!r}")
        elif op in ("<", "<="):
            parts.append(f"{name} <= {hi!r}")
        else:
            parts.append(f"{name} >= {lo!r} AND {name} <= {hi!r}")
    return " AND ".join(parts) or None


__all__ = ["COMPARISON_SLACK", "Term", "arrow_filter", "comparison_filter", "number_value", "substring_terms",
           "view_name"]
