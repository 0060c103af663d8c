"""The statement cache of :func:`lance_duck.sql`: rewrites with placeholders where the references'
registration names go (:class:`Template`), found by the SQL text, or by its literal shape.

**By text** (``sql_statement_cache_entries``): a text rewritten before is not parsed again.

**By shape** (``sql_shape_cache_entries``): an application's statements differ in a number
(``... WHERE id = 7``, then ``id = 8``), so the text cache never sees them twice. The first text of
a shape (:mod:`.shapes`) is rewritten with each numeric literal replaced by a *mark*: a number of
the same kind made of a process-random stem and the literal's index. The rewrite is kept for the
shape when it provably reads no number's value: every mark comes out once in the rewritten SQL
and nowhere else (a reference's version or arguments, a count's filter, a name), except in the
float comparisons a filtered view applies (:mod:`.pushdown`), which :meth:`ShapeTemplate.filled`
computes again from the real literals, with the view's name. Each later text of the shape is the
kept rewrite with its own literals put where the marks are, without sqlglot. A shape whose rewrite
reads a number (``AT (VERSION => 3)``, ``count(*) ... WHERE id > 5``), that runs something while it
is rewritten (the ``lance_*`` table functions other than ``lance_scan``), or that names a variable
of the caller's scope is noted as such and rewritten per text, as before.
"""
from __future__ import annotations

import dataclasses
import re
import secrets
from dataclasses import dataclass
from typing import Any, Callable, Union, cast

from sqlglot import exp

from . import cache
from .pushdown import Term, number_value, view_name
from .rewrite import _TOKEN, LanceRef, Lookup, Rewritten, _is_local_table_dir, _rewrite_with, _Rewriter
from .search import Values
from .shapes import Shape, kind, literal_shape

_PLACEHOLDER = re.compile(rf"__lance_ref{_TOKEN}_(\d+)")
#: a mark: this stem, the literal's index in five digits, and a suffix of the literal's kind
_STEM = str(secrets.randbelow(9 * 10 ** 8) + 10 ** 8)
_SUFFIX = {"i": "", "d": ".5", "e": "e0"}
_MARKS = re.compile(rf"(?<![\w.]){_STEM}(\d{{5}})(?:\.5|e0)?(?![\w.])")   # (a whole token only)
_MOST_LITERALS = 10 ** 5
#: table functions that read or run something while the statement is rewritten
_RUNS_AT_REWRITE = re.compile(r"lance_(?!scan\b)", re.IGNORECASE)


@dataclass(frozen=True)
class Template:
    """A rewrite whose references are named ``__lance_ref<token>_<i>`` (``refs[i]``), and what it
    depended on besides the text: the names looked up among the caller's variables (all missing)
    and the quoted names probed as table directories (with what was found)."""

    rewritten: Rewritten
    refs: tuple[LanceRef, ...]
    asked: tuple[str, ...]
    probes: tuple[tuple[str, bool], ...]

    def still_holds(self, lookup: Lookup) -> bool:
        return all(lookup(n) is None for n in self.asked) and \
            all(_is_local_table_dir(n) == found for n, found in self.probes)

    def named(self, names: list[str]) -> Rewritten:
        """The rewrite with ``names[i]`` in place of the placeholder of ``refs[i]``."""
        return _renamed(self.rewritten, lambda text: _PLACEHOLDER.sub(lambda m: names[int(m.group(1))], text))


def _renamed(r: Rewritten, sub: Callable[[str], str]) -> Rewritten:
    """``r`` with ``sub`` applied to its SQL and to every generated name it holds."""
    return dataclasses.replace(
        r, sql=sub(r.sql), refs={sub(k): v for k, v in r.refs.items()},
        views={sub(k): (sub(old), terms) for k, (old, terms) in r.views.items()},
        count_qualifiers=frozenset(sub(q) for q in r.count_qualifiers),
        whole={sub(k): sub(v) for k, v in r.whole.items()})


@dataclass(frozen=True)
class ShapeTemplate:
    """The rewrite of a shape's marked text (``template``); ``marks[i]`` stands for literal ``i``,
    ``indices`` maps a mark's value to ``i``."""

    template: Template
    marks: tuple[str, ...]
    indices: dict[float, int]

    def filled(self, literals: tuple[str, ...]) -> Template | None:
        """The template of the text with these literals, or None when a view's comparison has no
        term for one of them (a literal too large for a double: the text is rewritten itself)."""
        r = self.template.rewritten
        views: dict[str, tuple[str, list[Term]]] = {}
        renamed: dict[str, str] = {}           # a view's name -> its name with these literals
        for name, (old, terms) in r.views.items():
            filled: list[Term] = []
            for col, what, value in terms:
                if what == "compare":
                    op, v, _ = value
                    got = number_value(literals[self.indices[abs(v)]], v < 0)
                    if got is None:
                        return None
                    value = (op, *got)
                filled.append((col, what, value))
            renamed[name] = view_name(old, filled)
            views[name] = (old, filled)

        def names(text: str) -> str:
            for a, b in renamed.items():        # (a view's name holds a hash: unique in the text)
                text = text.replace(a, b)
            return text
        out = _renamed(dataclasses.replace(r, views=views), names)
        out = dataclasses.replace(out, sql=_MARKS.sub(lambda m: literals[int(m.group(1))], out.sql))
        t = self.template
        return Template(out, t.refs, t.asked, t.probes)


#: kept for a shape whose rewrite reads a number's value (each of its texts is rewritten)
PER_TEXT = "per text"
Kept = Union[ShapeTemplate, str]


def template(query: str, lookup: Lookup, values: Values | None = None) -> Template:
    """The (cached) placeholder rewrite of ``query`` (see the module notes); kept unless it registers
    caller's variables."""
    if isinstance(query, str):
        hit = cache.statements.get(query)
        if hit is not None and hit.still_holds(lookup):
            return cast(Template, hit)
        shape = literal_shape(query) if len(query) < 65536 else None
        if shape is not None:
            kept = cache.shapes.get(shape.key)
            if kept is None:
                kept = cache.shapes.put(shape.key, _shape_template(shape, lookup))
            if isinstance(kept, ShapeTemplate):
                got = kept.filled(shape.literals)
                if got is not None and got.still_holds(lookup):
                    return got
    t = _rewritten(query, lookup, values)
    if not t.rewritten.objects:
        cache.statements.put(query, t)
    return t


def _rewritten(query: str, lookup: Lookup, values: Values | None) -> Template:
    order: list[LanceRef] = []

    def placeholder(ref: LanceRef) -> str:
        order.append(ref)
        return f"__lance_ref{_TOKEN}_{len(order) - 1}"

    rw = _Rewriter(placeholder, lookup, values)
    out = _rewrite_with(rw, query)
    return Template(out, tuple(order), tuple(rw.asked), tuple(rw.probes.items()))


def _shape_template(shape: Shape, lookup: Lookup) -> Kept:
    """The rewrite of ``shape``'s marked text when it reads no number's value, else :data:`PER_TEXT`."""
    n = len(shape.literals)
    if _RUNS_AT_REWRITE.search(shape.key) or n >= _MOST_LITERALS or _STEM in shape.key:
        return PER_TEXT
    marks = tuple(f"{_STEM}{i:05d}{_SUFFIX[kind(lit)]}" for i, lit in enumerate(shape.literals))
    each = iter(marks)
    marked = re.sub("\x00[ide]", lambda m: next(each), shape.key)
    try:
        t = _rewritten(marked, lookup, None)
    except Exception:  # noqa: BLE001 - the text itself is rewritten next, and raises its own error
        return PER_TEXT
    r = t.rewritten
    if r.objects:
        return PER_TEXT
    if sorted(m.group(0) for m in _MARKS.finditer(r.sql)) != sorted(marks):
        return PER_TEXT                          # a mark lost, changed or repeated by the rewrite
    if _STEM in repr((t.refs, r.refs, r.count_alias, r.count_qualifiers, r.whole, t.probes)):
        return PER_TEXT                          # a number read into a reference or a name
    if r.count_ref is not None and r.count_where is not None and any(
            _STEM in str(lit.this) for lit in r.count_where.find_all(exp.Literal)):
        return PER_TEXT                          # a count's filter (counted by lance_duck) holds a number
    indices = {float(m): i for i, m in enumerate(marks)}
    for _, terms in r.views.values():
        for term in terms:
            compared = term[1] == "compare" and abs(cast(Any, term[2])[1]) in indices
            if not compared and _STEM in repr(term):
                return PER_TEXT
    return ShapeTemplate(t, marks, indices)


__all__ = ["PER_TEXT", "ShapeTemplate", "Template", "template"]
