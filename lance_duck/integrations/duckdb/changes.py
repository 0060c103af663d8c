"""``lance_changes('t.lance', from => 3, to => 'release-2', ...)`` in :func:`lance_duck.sql`.

``from`` (and ``to``) are reserved words in DuckDB and sqlglot, so the argument names are renamed
in the text first (:func:`rename_reserved`: only inside a ``lance_changes(...)`` call, strings and
quoted names left alone); the call is then read from sqlglot's tree (:func:`changes_table`) and its
rows (:func:`lance_duck.changes`, materialised: a relation may be read more than once) are
registered on the connection like a caller's Arrow table.

Arguments: the uri first, then ``from`` and ``to`` (named, or second and third), ``columns =>
['a', 'b']``, ``filter => 'sql'``, ``branch => 'name'``, ``storage_options => {...}``.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Iterable

import pyarrow as pa
from sqlglot import exp

from ...errors import InvalidArgumentError

NAME = "lance_changes"
_CALL = re.compile(r"\blance_changes\s*\(", re.IGNORECASE)
_RESERVED = re.compile(r"\b(from|to)(\s*(?:=>|:=))", re.IGNORECASE)
_ARGS = ("from_version", "to_version", "columns", "filter", "branch", "storage_options")

#: the SQL front-end's reader of a constant: (node, what it is) -> its Python value
Literal = Callable[[exp.Expression, str], Any]


def _call_end(text: str, start: int) -> int:
    """Index of the ``)`` closing the call whose ``(`` is at ``start - 1`` (or len(text))."""
    depth, i, n = 1, start, len(text)
    while i < n:
        c = text[i]
        if c in "'\"":
            j = text.find(c, i + 1)
            while j != -1 and j + 1 < n and text[j + 1] == c:     # doubled quote inside
                j = text.find(c, j + 2)
            i = n if j == -1 else j + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return n


def _rename_outside_quotes(part: str) -> str:
    out, i, n = [], 0, len(part)
    while i < n:
        c = part[i]
        if c in "'\"":
            j = part.find(c, i + 1)
            while j != -1 and j + 1 < n and part[j + 1] == c:
                j = part.find(c, j + 2)
            j = n if j == -1 else j + 1
            out.append(part[i:j])
            i = j
            continue
        k = i
        while k < n and part[k] not in "'\"":
            k += 1
        out.append(_RESERVED.sub(lambda m: f"{m.group(1).lower()}_version{m.group(2)}", part[i:k]))
        i = k
    return "".join(out)


def rename_reserved(query: str) -> str:
    """``from =>`` / ``to =>`` inside ``lance_changes(...)`` calls renamed ``from_version`` /
    ``to_version`` (the text is unchanged when it has no such call)."""
    if not isinstance(query, str) or "lance_changes" not in query.lower():
        return query
    out, pos = [], 0
    for m in _CALL.finditer(query):
        if m.start() < pos:
            continue
        end = _call_end(query, m.end())
        out.append(query[pos:m.end()])
        out.append(_rename_outside_quotes(query[m.end():end]))
        pos = end
    out.append(query[pos:])
    return "".join(out)


def is_changes_call(table: exp.Expression) -> bool:
    """Whether a FROM / JOIN item is a ``lance_changes(...)`` call."""
    return (isinstance(table, exp.Table) and isinstance(table.this, exp.Anonymous)
            and str(table.this.this).lower() == NAME)


def _value(node: exp.Expression, what: str, literal: Literal) -> Any:
    if isinstance(node, exp.Array):
        return [literal(e, what) for e in node.expressions]
    return literal(node, what)


def changes_table(fn: exp.Anonymous, literal: Literal,
                  options: Callable[[exp.Expression], Iterable[tuple[str, str]]]) -> pa.Table:
    """The rows of one ``lance_changes(...)`` call (``literal`` / ``options``: the SQL front-end's
    readers of constants and of ``storage_options`` structs)."""
    args = list(fn.expressions)
    if not args or isinstance(args[0], (exp.Kwarg, exp.PropertyEQ)):
        raise InvalidArgumentError("lance_changes() needs the table uri as its first argument")
    uri = literal(args[0], "lance_changes uri")
    kw: dict[str, Any] = {}
    positional = ["from_version", "to_version"]
    named = False
    for a in args[1:]:
        if isinstance(a, (exp.Kwarg, exp.PropertyEQ)):
            key = a.this.name.lower()
            node = a.expression
            named = True
        elif positional and not named:
            key, node = positional.pop(0), a
        else:
            raise InvalidArgumentError(f"lance_changes('{uri}'): after from and to, use named arguments "
                                       f"(columns => ...), got {a.sql('duckdb')}")
        if key in positional:
            positional.remove(key)
        if key not in _ARGS:
            raise InvalidArgumentError(f"lance_changes('{uri}'): unknown argument {key!r}; expected from, to, "
                                       "columns, filter, branch, storage_options")
        if key in kw:
            raise InvalidArgumentError(f"lance_changes('{uri}'): {key.replace('_version', '')} given twice")
        kw[key] = dict(options(node)) if key == "storage_options" else _value(node, key, literal)
    if "from_version" not in kw:
        raise InvalidArgumentError(f"lance_changes('{uri}'): from => <version> is required (0: from the start)")
    from ...changefeed import changes   # lazy: the change feed costs ~30 ms to import, most queries never use it

    return changes(str(uri), kw["from_version"], kw.get("to_version"), kw.get("columns"), kw.get("filter"),
                   branch=kw.get("branch"), storage_options=kw.get("storage_options")).read_all()
