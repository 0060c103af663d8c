"""The unbound predicate model: what a filter says, before it meets a schema.

Nodes are small frozen dataclasses.  Column references carry a name path (``s.a`` ->
``("s", "a")``); literals carry a Python value and, when the SQL typed them
(``DATE '...'``, ``CAST(1.5 AS DECIMAL(10,2))``), an Arrow type.  :func:`bind` turns this
tree into the bound model of :mod:`.bound`, where every node knows its Arrow type.
"""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


class Expr:
    """Base class of unbound nodes."""


@dataclass(frozen=True)
class Ref(Expr):
    """A column, or a field inside struct columns (``path[0]`` is top-level)."""

    path: tuple[str, ...]


@dataclass(frozen=True)
class Lit(Expr):
    """A constant; ``type`` is None when the SQL did not type it (coerced at bind)."""

    value: Any
    type: pa.DataType | None = None


@dataclass(frozen=True)
class Call(Expr):
    """A scalar function by canonical name (see :mod:`.kernels`)."""

    name: str
    args: tuple[Expr, ...]
    options: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Cast(Expr):
    arg: Expr
    to: pa.DataType


@dataclass(frozen=True)
class Compare(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class And(Expr):
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Or(Expr):
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Not(Expr):
    arg: Expr


@dataclass(frozen=True)
class IsNull(Expr):
    arg: Expr


@dataclass(frozen=True)
class IsBool(Expr):
    """``x IS TRUE`` / ``x IS FALSE`` (never null)."""

    arg: Expr
    value: bool


@dataclass(frozen=True)
class In(Expr):
    arg: Expr
    values: tuple[Lit, ...] = field(default=())


@dataclass(frozen=True)
class Like(Expr):
    """SQL LIKE with the pattern normalised to backslash escapes."""

    arg: Expr
    pattern: str
    ignore_case: bool = False


def conjuncts(expr: Any) -> list[Any]:
    """Top-level AND operands of an (unbound or bound) expression."""
    if type(expr).__name__ in ("And", "BAnd"):
        out: list[Any] = []
        for a in expr.args:
            out.extend(conjuncts(a))
        return out
    return [expr]


_FRACTION = re.compile(r"(\d{2}:\d{2}:\d{2})\.(\d+)")


def parse_datetime(text: str) -> _dt.datetime:
    """A timestamp literal's text as a datetime, on every Python: a fraction of any length (``.5``,
    ``.0000015``: cut to microseconds) and a ``Z`` zone, which ``fromisoformat`` takes only from 3.11."""
    text = _FRACTION.sub(lambda m: f"{m.group(1)}.{(m.group(2) + '00000')[:6]}", text.strip(), count=1)
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return _dt.datetime.fromisoformat(text)

