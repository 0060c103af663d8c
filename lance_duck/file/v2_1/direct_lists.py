"""A page's nesting given directly as list offsets and validity masks (no rep/def levels).

A 2.3 sparse page stores, per list layer, the positions and lengths of its non-empty lists and the
positions of its nulls: the Arrow offsets and validity of every layer follow straight from them.
Building repetition / definition levels only for :class:`repdef.Unraveler` to turn them back into
offsets costs ~20 passes over the entries. :class:`DirectList` holds what the unraveler would
answer, layer by layer; :class:`DirectUnraveler` replays it to the assembler. A column mixing such
pages with level pages unravels the level pages on their own (:meth:`DirectList.from_levels`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np

from ...errors import CorruptFileError
from . import repdef

# per 2.1 layer, innermost first: an item layer's validity over its slots (None: all valid), or a
# list layer's (offsets int64 over its slots + 1, validity or None)
Answer = Any


@dataclass
class DirectList:
    """The validity and offsets of every layer of a page's rows, innermost layer first."""
    answers: list[Answer]
    layers: list[int]
    rows: int

    @property
    def items(self) -> int:
        """Slots of the innermost list's children."""
        return int(next(a for a, k in zip(self.answers, self.layers) if k in repdef.LIST_LAYERS)[0][-1])

    @property
    def item_valid(self) -> np.ndarray | None:
        """Validity of the leaf slots (not null at any layer under the innermost list)."""
        return None if self.layers[0] in repdef.LIST_LAYERS else self.answers[0]

    @classmethod
    def from_levels(cls, rep: np.ndarray | None, defs: np.ndarray | None, layers: list[int], rows: int,
                    what: str) -> DirectList:
        """The answers of a page given by its levels (a level page in a column of direct pages)."""
        unr = repdef.Unraveler(rep, defs, layers, what)
        return cls([unr.list_offsets() if k in repdef.LIST_LAYERS else unr.item_validity() for k in layers],
                   layers, rows)

    def select(self, rows: np.ndarray) -> tuple[DirectList, np.ndarray | slice]:
        """The selected ``rows`` (sorted local rows) and the positions of their leaf slots."""
        sel: np.ndarray | slice = rows
        if rows.size and int(rows[-1]) - int(rows[0]) + 1 == rows.size and bool((np.diff(rows) == 1).all()):
            sel = slice(int(rows[0]), int(rows[-1]) + 1)   # a run of rows
        out: list[Answer] = []
        for a, k in zip(reversed(self.answers), reversed(self.layers)):   # outermost first
            if k in repdef.LIST_LAYERS:
                o, v = a
                new, child = _children(o, sel)
                out.append((new, None if v is None else v[sel]))
                sel = child
            else:
                out.append(None if a is None else a[sel])
        out.reverse()
        return DirectList(out, self.layers, rows.size), sel


def _children(o: np.ndarray, sel: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray | slice]:
    """(offsets of the selected slots, positions of their children) of a list layer."""
    if isinstance(sel, slice):
        part = o[sel.start: sel.stop + 1]
        return part - part[0], slice(int(part[0]), int(part[-1]))
    starts, ends = o[sel], o[sel + 1]
    lens = ends - starts
    out = np.zeros(sel.size + 1, np.int64)
    np.cumsum(lens, out=out[1:])
    return out, np.repeat(starts - out[:-1], lens) + np.arange(int(out[-1]), dtype=np.int64)


def concat(parts: list[DirectList]) -> DirectList:
    """The rows of every part, in order (every part has the same layers)."""
    if len(parts) == 1:
        return parts[0]
    layers = parts[0].layers
    slots = [p.rows for p in parts]     # slots of the current layer per part, outermost first
    out: list[Answer] = []
    for i in range(len(layers) - 1, -1, -1):
        got = [p.answers[i] for p in parts]
        if layers[i] in repdef.LIST_LAYERS:
            kids = [int(o[-1]) for o, _ in got]
            base = np.cumsum([0] + kids[:-1])
            offsets = np.concatenate([got[0][0][:1]] + [o[1:] + b for (o, _), b in zip(got, base)])
            out.append((offsets, _cat([v for _, v in got], slots)))
            slots = kids
        else:
            out.append(_cat(got, slots))
    out.reverse()
    return DirectList(out, layers, sum(p.rows for p in parts))


class Levels(Protocol):
    """A decoded page's nesting (``page.PageData``): list offsets, or rep/def levels."""

    @property
    def lists(self) -> DirectList | None: ...
    @property
    def rep(self) -> np.ndarray | None: ...
    @property
    def defs(self) -> np.ndarray | None: ...
    @property
    def layers(self) -> list[int]: ...
    @property
    def num_rows(self) -> int: ...


def _cat(masks: list[np.ndarray | None], sizes: list[int]) -> np.ndarray | None:
    if all(m is None for m in masks):
        return None
    return np.concatenate([np.ones(n, bool) if m is None else m for m, n in zip(masks, sizes)])


def merge(pages: Sequence[Levels], layers: list[int], what: str) -> DirectList | None:
    """The pages' nesting as one :class:`DirectList` when some page has one (the level pages
    unravelled on their own), else None."""
    if not any(p.lists is not None for p in pages):
        return None
    parts = []
    for p in pages:
        parts.append(p.lists if p.lists is not None else
                     DirectList.from_levels(p.rep, p.defs, p.layers, p.num_rows, what))
    return concat(parts)


class DirectUnraveler:
    """:class:`repdef.Unraveler`'s answers (leaf outward) from a :class:`DirectList`."""

    def __init__(self, lists: DirectList, layers: list[int], what: str):
        self.lists = lists
        self.layers = layers
        self.what = what
        self.layer = 0

    def _next(self, want_list: bool) -> Answer:
        if self.layer >= len(self.layers):
            raise CorruptFileError(f"{self.what}: column has fewer nesting layers than its type")
        lay = self.layers[self.layer]
        if (lay in repdef.LIST_LAYERS) != want_list:
            raise CorruptFileError(f"{self.what}: layer {self.layer} is {'a list' if lay in repdef.LIST_LAYERS else 'an item'}"
                                   f" layer, the type needs {'a list' if want_list else 'an item'}")
        self.layer += 1
        return self.lists.answers[self.layer - 1]

    def item_validity(self) -> np.ndarray | None:
        """Validity of the items / structs at this depth (None = all valid); advances one layer."""
        a = self._next(False)
        return None if a is None else np.asarray(a)

    def list_offsets(self) -> tuple[np.ndarray, np.ndarray | None]:
        """(offsets int64 of len + 1, validity or None) of the next list layer outward."""
        o, v = self._next(True)
        return o, v

    def decimate(self, dim: int) -> None:
        raise CorruptFileError(f"{self.what}: a fixed-size list of structs over a page without its layer")
