"""Evaluating a pyarrow Expression too long for Arrow in one piece (long AND / OR chains).

Arrow canonicalises an Expression before evaluating it: it flattens chains of an associative
call (``and_kleene``, ``or_kleene``...) into one left-deep chain and recurses along it, so a chain
of about 10,000 terms overflows the C++ stack and kills the process, balanced or not. Filters
that long reach a scan as Expressions built by DuckDB's pushdown (``WHERE i != 0 AND i != 1
AND ...``) or by lance_duck itself. :func:`plan` reads the Expression's serialized tree (see
:mod:`.arrow_introspect`) without recursion, splits its top-level AND / OR chains into groups of
at most :data:`MAX_PIECE_ITEMS` elements, each a small Expression of its own, and
:meth:`Pieces.evaluate` evaluates the groups separately and combines their results with the
same kernel (both are associative; Kleene logic gives the same answer whatever the grouping).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from .. import _state
from ..errors import UnsupportedFeatureError
from . import arrow_introspect as ai
from ._deep import on_big_stack

#: Serialized elements (a comparison is four: call, field, literal, end) Arrow gets in one Expression
MAX_PIECE_ITEMS = 4000
#: Associative boolean calls whose chains are split
CHAINS = frozenset({"and_kleene", "or_kleene", "and", "or"})
#: Nesting of differently-named chains followed (an AND of ORs of ANDs ...)
MAX_NESTING = 100


@dataclass(frozen=True)
class Pieces:
    """An Expression as groups evaluated apart: ``op`` over ``parts`` (Expressions or Pieces);
    ``op == "invert"``: the negation of the single part."""

    op: str
    parts: tuple[Any, ...]

    def evaluate(self, batch: pa.RecordBatch, run: Callable[[pa.RecordBatch, pc.Expression], pa.Array]) -> pa.Array:
        """The Expression's value on ``batch``; ``run`` evaluates one small Expression."""
        values = [p.evaluate(batch, run) if isinstance(p, Pieces) else run(batch, p) for p in self.parts]
        if self.op == "invert":
            return pc.invert(values[0])
        while len(values) > 1:
            paired = [pc.call_function(self.op, [values[i], values[i + 1]]) for i in range(0, len(values) - 1, 2)]
            if len(values) % 2:
                paired.append(values[-1])
            values = paired
        return values[0]


def plan(expr: pc.Expression) -> Pieces | None:
    """``expr`` split into pieces Arrow evaluates safely, or None when it is small enough whole.

    Raises UnsupportedFeatureError for a long Expression that is no chain of AND / OR (or NOT) at
    its top (nothing Arrow could evaluate either)."""
    try:
        fn, args = expr.__reduce__()
        payload = args[0].to_pybytes()
    except Exception:  # noqa: BLE001 - a private format: evaluated whole, as before
        return None
    if len(payload) < MAX_PIECE_ITEMS * 16:      # fewer elements than that: no need to look
        return None
    try:
        reader = ipc.open_file(pa.BufferReader(payload))
        batch = reader.get_batch(0) if reader.num_record_batches else None
        items = ai._ordered_metadata(reader.schema, limit=len(payload))
    except Exception as exc:  # noqa: BLE001 - unreadable: too long to hand Arrow whole either
        raise UnsupportedFeatureError(f"filter expression of {len(payload)} serialized bytes is too long "
                                      f"to evaluate, and its form could not be read ({exc})") from None
    if len(items) <= MAX_PIECE_ITEMS:
        return None
    return _Splitter(fn, items, batch).pieces(0, 0)


class _Splitter:
    def __init__(self, deserialize: Callable[..., Any], items: list[tuple[str, str]], batch: pa.RecordBatch | None):
        self.deserialize, self.items, self.batch = deserialize, items, batch
        self.end: dict[int, int] = {}              # start of an element -> its last item
        self.children: dict[int, list[int]] = {}   # start of a call -> starts of its arguments
        stack: list[int] = []
        i = 0
        while i < len(items):
            key, val = items[i]
            if key == "call":
                self.children[i] = []
                if stack:
                    self.children[stack[-1]].append(i)
                stack.append(i)
            elif key == "end":
                if not stack:
                    raise UnsupportedFeatureError("filter expression: unbalanced serialized form")
                self.end[stack.pop()] = i
            elif key == "options":
                pass
            else:
                last = i + int(val) if key == "nested_field_ref" else i
                if stack:
                    self.children[stack[-1]].append(i)
                self.end[i] = last
                i = last
            i += 1

    def size(self, start: int) -> int:
        return self.end[start] - start + 1

    def pieces(self, start: int, nesting: int) -> Pieces:
        key, name = self.items[start]
        if nesting > MAX_NESTING or key != "call" or (name not in CHAINS and name != "invert"):
            raise UnsupportedFeatureError(
                f"filter expression of {len(self.items)} elements is too long to evaluate: its "
                f"{name!r} at depth {nesting} holds {self.size(start)} (at most {MAX_PIECE_ITEMS} are "
                "evaluated in one piece below anything but AND, OR and NOT)")
        if name == "invert":
            (arg,) = self.children[start]
            return Pieces("invert", (self.part(arg, nesting),))
        terms, stack = [], [start]            # the chain's terms, left to right, without recursion
        while stack:
            s = stack.pop()
            if self.items[s] == ("call", name):
                stack.extend(reversed(self.children[s]))
            else:
                terms.append(s)
        parts: list[Any] = []
        group: list[int] = []
        used = 0
        for t in terms:
            n = self.size(t)
            if n > MAX_PIECE_ITEMS:
                parts.append(self.pieces(t, nesting + 1))
                continue
            if used + n > MAX_PIECE_ITEMS and group:
                parts.append(self.expression(name, group))
                group, used = [], 0
            group.append(t)
            used += n
        if group:
            parts.append(self.expression(name, group))
        return Pieces(name, tuple(parts))

    def part(self, start: int, nesting: int) -> Any:
        return self.pieces(start, nesting + 1) if self.size(start) > MAX_PIECE_ITEMS else self.expression("", [start])

    def expression(self, op: str, starts: Sequence[int]) -> pc.Expression:
        """The terms at ``starts`` joined by ``op`` (left-deep) as an Expression of their own."""
        spans = [self.items[s:self.end[s] + 1] for s in starts]
        out: list[tuple[str, str]] = [("call", op)] * (len(spans) - 1) + list(spans[0])
        for span in spans[1:]:
            out.extend(span)
            out.append(("end", op))
        columns: dict[int, int] = {}
        renumbered = []
        for key, val in out:
            if key in ("literal", "options"):
                val = str(columns.setdefault(int(val), len(columns)))
            renumbered.append((key, val))
        source = self.batch
        if columns and source is not None:
            fields = [source.schema.field(c) for c in columns]
            schema = pa.schema(fields, metadata=pa.KeyValueMetadata(renumbered))
            batch = pa.RecordBatch.from_arrays([source.column(c) for c in columns], schema=schema)
        else:
            schema = pa.schema([], metadata=pa.KeyValueMetadata(renumbered))
            batch = None
        sink = pa.BufferOutputStream()
        with ipc.new_file(sink, schema) as writer:
            if batch is not None:
                writer.write_batch(batch)
        return self.deserialize(sink.getvalue())


_PLANS = _state.cache("long_filter_plans")


def cached_plan(expr: pc.Expression) -> Pieces | None:
    """:func:`plan` of ``expr`` (worked out on a big stack), remembered for the last few Expression
    objects (a scan evaluates the same one on every batch)."""
    hit = _PLANS.get(id(expr))
    if hit is not None and hit[0] is expr:
        known: Pieces | None = hit[1]
        return known
    got = on_big_stack(lambda: plan(expr))     # serializing a deep Expression recurses in C++
    _PLANS.put(id(expr), (expr, got), 1)       # the entry keeps expr alive: its id stays its own
    return got


__all__ = ["MAX_PIECE_ITEMS", "Pieces", "cached_plan", "on_big_stack", "plan"]
