"""Literal runs every match of an RE2 pattern contains (for NGRAM candidates), and DuckDB's ILIKE as RE2.

:func:`required_runs` reads a pattern conservatively: a literal character extends the current run;
anything else -- ``.``, a class, an anchor, an escape other than an escaped punctuation character,
a group boundary -- ends it. A character or group that may be absent (``*``, ``?``, ``{0,n}``) adds
nothing; one repeated at least once (``+``, ``{n,m}`` with n >= 1) ends the run after it and starts
the next with it. A group adds the runs of its contents when it has no ``|``, nothing otherwise. A
``|`` at the top level gives one list of runs per alternative (every match contains all the runs of
at least one of them). Anything unknown (an escape RE2 may read otherwise, an unbalanced bracket)
makes the pattern unreadable: None, and the caller scans. The runs are exact substrings of every
match, so NGRAM trigram candidates of them are a superset of the matching rows (the full pattern is
re-applied to the candidates).

Case-insensitive patterns (``(?i)`` anywhere, or the engine's ``ignore_case``): under RE2's case
folding an ASCII letter matches itself in either case, and ``k`` the Kelvin sign U+212A and ``s``
the long s U+017F, which the NGRAM tokenizer lower-cases / folds to ``k`` / ``s``; the tokens are
lower-cased: the candidates stay a superset.

:func:`duckdb_ilike_regex`: DuckDB's ``ILIKE`` lower-cases both sides (Unicode simple mapping, code
point by code point) and compares; the only code points it lower-cases to an ASCII character are
U+0130 (to ``i``) and U+212A (to ``k``) (checked over every code point). RE2's case folding matches
U+212A to ``k`` but not U+0130 to ``i``, so ``i`` becomes ``[iI\\x{130}]``. The NGRAM tokenizer
lower-cases U+0130 to ``i`` followed by a combining dot (U+0307), which ends the trigrams at that
``i``: that class contributes an ``i`` that ends its run.
"""
from __future__ import annotations

from typing import cast

#: The class :func:`duckdb_ilike_regex` writes for ``i`` (read back by :func:`required_runs`).
ILIKE_I = "[iI\\x{130}]"
_ILIKE_I_BODY = ILIKE_I[1:-1]
_RE2_SPECIAL = frozenset("\\.^$|?*+()[]{}")
_ZERO_WIDTH_OR_CLASS_ESCAPES = frozenset("dDwWsSbBAzC")
_CONTROL_ESCAPES = frozenset("afnrtv")


def duckdb_ilike_regex(pattern: str) -> str:
    """An RE2 pattern matching (at least) every string DuckDB's ``s ILIKE pattern`` keeps, for an
    ASCII ``pattern`` without backslashes (``%`` any run, ``_`` one code point, newlines included)."""
    out = ["(?is)^"]
    for c in pattern:
        if c == "%":
            out.append(".*")
        elif c == "_":
            out.append(".")
        elif c in "iI":
            out.append(ILIKE_I)
        else:
            out.append("\\" + c if c in _RE2_SPECIAL else c)
    out.append("$")
    return "".join(out)


class _Unreadable(Exception):
    pass


class _Reader:
    def __init__(self, pattern: str):
        self.p = pattern
        self.i = 0
        self.ignore_case = False

    def peek(self) -> str:
        return self.p[self.i] if self.i < len(self.p) else ""

    def alternatives(self) -> list[list[str]]:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence())
        return branches

    def sequence(self) -> list[str]:
        runs: list[str] = []
        cur: list[str] = []

        def flush() -> None:
            if cur:
                runs.append("".join(cur))
                cur.clear()

        while self.i < len(self.p) and self.peek() not in "|)":
            kind, value = self.atom()
            least = self.quantifier()
            if kind == "char" and isinstance(value, str):
                if least is None:
                    cur.append(value)
                elif least == 0:
                    flush()
                else:                              # repeated: c+ ... the last c precedes what follows
                    cur.append(value)
                    flush()
                    cur.append(value)
            elif kind == "i":                      # ILIKE's i: ends a run, even repeated
                if least != 0:
                    cur.append("i")
                flush()
            elif kind == "group":
                flush()
                if least != 0:
                    runs.extend(cast(list[str], value))
            else:
                flush()
        flush()
        return runs

    def quantifier(self) -> int | None:
        """The least count of a repetition after an atom (None: none)."""
        c = self.peek()
        least: int | None
        if c in ("*", "?"):
            least, self.i = 0, self.i + 1
        elif c == "+":
            least, self.i = 1, self.i + 1
        elif c == "{":
            end = self.p.find("}", self.i)
            body = self.p[self.i + 1:end] if end > 0 else ""
            lo, _, hi = body.partition(",")
            if not lo.isdigit() or not (hi == "" or hi.isdigit()):
                return None                     # RE2: a literal '{' (read as the next atom)
            least, self.i = int(lo), end + 1
        else:
            return None
        if self.peek() == "?":                  # non-greedy
            self.i += 1
        return least

    def atom(self) -> tuple[str, list[str] | str]:
        c = self.peek()
        self.i += 1
        if c == "(":
            return self.group()
        if c == "[":
            return self.char_class()
        if c == "\\":
            return self.escape()
        if c in ".^$":
            return "break", ""
        if c in "*+?)":
            raise _Unreadable(c)
        return "char", c

    def group(self) -> tuple[str, list[str] | str]:
        if self.peek() == "?":
            self.i += 1
            if self.p.startswith(("P<", "<"), self.i):     # named group
                end = self.p.find(">", self.i)
                if end < 0:
                    raise _Unreadable("group name")
                self.i = end + 1
            else:
                flags = []
                while self.peek() and self.peek() not in ":)":
                    flags.append(self.peek())
                    self.i += 1
                if not set(flags) <= set("imsU-"):
                    raise _Unreadable("flags")
                on = "".join(flags).split("-", 1)[0]
                self.ignore_case |= "i" in on
                if self.peek() == ")":                    # (?flags): no group, nothing matched
                    self.i += 1
                    return "break", ""
                self.i += 1                               # ':'
        branches = self.alternatives()
        if self.peek() != ")":
            raise _Unreadable("unbalanced (")
        self.i += 1
        return "group", branches[0] if len(branches) == 1 else []

    def char_class(self) -> tuple[str, str]:
        start = self.i
        if self.peek() == "^":
            self.i += 1
        if self.peek() == "]":
            self.i += 1
        while self.i < len(self.p) and self.p[self.i] != "]":
            if self.p[self.i] == "\\":
                self.i += 1
            elif self.p.startswith("[:", self.i):
                end = self.p.find(":]", self.i + 2)
                if end < 0:
                    raise _Unreadable("[:")
                self.i = end + 1
            self.i += 1
        if self.i >= len(self.p):
            raise _Unreadable("unbalanced [")
        body = self.p[start:self.i]
        self.i += 1
        return ("i" if body == _ILIKE_I_BODY else "break"), body

    def escape(self) -> tuple[str, str]:
        c = self.peek()
        self.i += 1
        if not c:
            raise _Unreadable("trailing backslash")
        if c.isascii() and not c.isalnum():
            return "char", c
        if c in _ZERO_WIDTH_OR_CLASS_ESCAPES or c in _CONTROL_ESCAPES:
            return "break", ""
        if c in "pP":                            # \pL, \p{Greek}: a class
            self._skip_braced(c, 1)
            return "break", ""
        if c == "x":                             # \x41, \x{263a}: one character (left out)
            self._skip_braced(c, 2)
            return "break", ""
        if c == "Q":                             # \Q...\E: a literal text (left out)
            end = self.p.find("\\E", self.i)
            self.i = len(self.p) if end < 0 else end + 2
            return "break", ""
        raise _Unreadable("\\" + c)

    def _skip_braced(self, c: str, short: int) -> None:
        """Step past an escape's ``{...}`` argument, or its ``short`` characters without braces."""
        if self.peek() == "{":
            end = self.p.find("}", self.i)
            if end < 0:
                raise _Unreadable("\\" + c + "{")
            self.i = end + 1
        else:
            self.i += short


def required_runs(pattern: str) -> tuple[list[list[str]], bool] | None:
    """(per top-level alternative, the literal strings each of its matches contains; whether a
    ``(?i)`` flag appears), or None when the pattern is not read (see the module notes)."""
    r = _Reader(pattern)
    try:
        branches = r.alternatives()
    except _Unreadable:
        return None
    if r.i != len(pattern):                      # a stray ')'
        return None
    return branches, r.ignore_case


__all__ = ["ILIKE_I", "duckdb_ilike_regex", "required_runs"]
