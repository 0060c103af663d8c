"""The literal shape of SQL text: the text with its numeric literals cut out, and those literals.

An application looks rows up with statements that differ only in a number (``... WHERE id = 7``,
``... WHERE id = 8``). Two texts with one shape bind alike on DuckDB (same tables, same columns;
only an error a value itself causes, an integer too large for its type, differs), and rewrite
alike when the rewrite reads no number's value (:func:`.rewrite._template` proves that per shape).

:func:`literal_shape` is one regular-expression pass: string literals, quoted identifiers and
line comments are kept whole (a number inside them is part of the shape), and a number is a
plain decimal token (``7``, ``7.5``, ``.5``, ``7.``, ``1e-3``) standing alone, not part of a name
(``t1``), of ``1_000``, ``0x1F`` or ``a.1``. Text whose tokens the pass cannot be sure of has no
shape (None): a backslash (``E'...'`` escapes), ``$`` (parameters, dollar quoting), a backtick,
a block comment, a NUL character, or a quote left open.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_TOKENS = re.compile(r"""
    (?P<kept>'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*)
  | (?<![\w.])(?P<number>(?:\d+\.?\d*|\.\d+)(?P<exp>[eE][+-]?\d+)?)(?![\w.])
""", re.VERBOSE)
#: characters that, outside the tokens above, make a text's tokens uncertain
_UNSURE = re.compile(r"['\"`$\\\x00]|/\*")


@dataclass(frozen=True)
class Shape:
    """``key``: the text with each number replaced by a mark of its kind (``\\x00i`` an integer,
    ``\\x00d`` a decimal, ``\\x00e`` with an exponent); ``literals``: the numbers as written, in order."""

    key: str
    literals: tuple[str, ...]


def kind(literal: str) -> str:
    """``i``, ``d`` or ``e``: the lexical kind of a numeric literal (what its mark in a key says)."""
    if "e" in literal or "E" in literal:
        return "e"
    return "d" if "." in literal else "i"


def literal_shape(text: str) -> Shape | None:
    """The shape of ``text``, or None when its tokens are uncertain (see the module notes)."""
    parts: list[str] = []
    literals: list[str] = []
    pos = 0
    for m in _TOKENS.finditer(text):
        gap = text[pos:m.start()]
        if _UNSURE.search(gap):
            return None
        parts.append(gap)
        number = m.group("number")
        if number is None:
            parts.append(m.group("kept"))
        else:
            parts.append("\x00" + kind(number))
            literals.append(number)
        pos = m.end()
    rest = text[pos:]
    if _UNSURE.search(rest):
        return None
    parts.append(rest)
    return Shape("".join(parts), tuple(literals))


__all__ = ["Shape", "kind", "literal_shape"]
