"""A page's list layers given directly as offsets and validity masks (no rep/def levels).

A 2.3 sparse page stores, per list layer, the positions and lengths of its non-empty lists and the
positions of its nulls: the Arrow offsets and validity of every list layer follow straight from
them. Building repetition / definition levels only for :class:`repdef.Unraveler` to turn them back
into offsets costs ~20 passes over the entries. :class:`DirectList` carries the offsets instead,
:class:`DirectUnraveler` answers the assembler from them, and :meth:`DirectList.levels` still gives
the levels when a column mixes such pages with level pages.

The layers are cut into segments by the list layers (outermost first): segment 0 are the validity
layers over the rows, segment k those over the children of list k, the last one over the items.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import CorruptFileError
from . import repdef

@dataclass
class DirectList:
    """The structure of a page's rows: per list layer (outermost first) its offsets and validity,
    per segment the def level of its validity layers."""
    offsets: list[np.ndarray]        # per list: int64 over the list's slots (+ 1)
    valid: list[np.ndarray | None]   # per list: bool per slot, not null (nor under a null parent)
    defs: list[np.ndarray | None]    # per segment: u16 per slot, def level of its layers (0 = valid)
    item_valid: np.ndarray | None    # bool per item: not null at any layer under the last list
    seg_layers: list[int]            # item layers per segment

    @property
    def rows(self) -> int:
        return int(self.offsets[0].size - 1)

    def select(self, rows: np.ndarray) -> tuple[DirectList, np.ndarray | slice]:
        """The selected ``rows`` (sorted local rows) and the positions of their items."""
        sel: np.ndarray | slice = rows
        if rows.size and int(rows[-1]) - int(rows[0]) + 1 == rows.size and bool((np.diff(rows) == 1).all()):
            sel = slice(int(rows[0]), int(rows[-1]) + 1)   # a run of rows
        offsets, valid, defs = [], [], []
        for o, v, d in zip(self.offsets, self.valid, self.defs):
            defs.append(None if d is None else d[sel])
            valid.append(None if v is None else v[sel])
            new, sel = _children(o, sel)
            offsets.append(new)
        d = self.defs[-1]
        return DirectList(offsets, valid, defs + [None if d is None else d[sel]],
                          None if self.item_valid is None else self.item_valid[sel], self.seg_layers), sel

    def _list_index(self, k: int) -> int:
        """Index of list ``k`` (outermost first) in the 2.1 layers (innermost first)."""
        return sum(self.seg_layers[k + 1:]) + len(self.offsets) - 1 - k

    def levels(self, layers: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The 2.1 (rep, def) levels of these rows for the page's ``layers``."""
        table = {key: i + 1 for i, key in enumerate(repdef.def_table(layers))}
        n_items = int(self.offsets[-1][-1])
        rep = np.zeros(n_items, np.uint16)
        if self.defs[-1] is not None:
            defs = self.defs[-1].astype(np.uint16)
        elif self.item_valid is not None:
            defs = np.where(self.item_valid, 0, table[(0, "null")]).astype(np.uint16)
        else:
            defs = np.zeros(n_items, np.uint16)
        start = np.arange(n_items, dtype=np.int64)   # first entry of each slot of the segment
        max_rep = len(self.offsets)
        for k in range(max_rep - 1, -1, -1):         # innermost list first
            o, i = self.offsets[k], self._list_index(k)
            lens = np.diff(o)
            childless = np.flatnonzero(lens == 0)
            v = self.valid[k]
            own_null = np.zeros(childless.size, bool) if v is None else ~v[childless]
            d = np.where(own_null, table.get((i, "null"), 0), table.get((i, "empty"), 0)).astype(np.uint16)
            seg = self.defs[k]
            if seg is not None:
                sd = seg[childless]
                d = np.where(sd > 0, sd, d)
            if childless.size and not d.all():
                raise CorruptFileError(f"lists of layers {layers}: a null or empty list the layers cannot express")
            level = max_rep - k
            firsts = start[o[:-1][lens > 0]]
            rep[firsts] = np.maximum(rep[firsts], level)
            # childless slots: one entry each, before the entries of the slot that follows them
            child_at = np.append(start, rep.size)[o]    # first entry of each slot's children (or the next's)
            rep = np.insert(rep, child_at[childless], level)
            defs = np.insert(defs, child_at[childless], d)
            # first entry of each slot of the segment above: its first child's, or its own entry,
            # after the entries inserted for the childless slots before it
            shift = np.cumsum(lens == 0) - (lens == 0)
            start = child_at[:-1] + shift
        return rep, defs


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

    def cat(arrays: list, sizes: list[int], fill) -> np.ndarray | None:
        if all(a is None for a in arrays):
            return None
        return np.concatenate([np.full(n, fill) if a is None else a for a, n in zip(arrays, sizes)])
    offsets, valid, defs = [], [], []
    for k in range(len(parts[0].offsets)):
        slots = [p.offsets[k].size - 1 for p in parts]
        kids = [int(p.offsets[k][-1]) for p in parts]
        base = np.cumsum([0] + kids[:-1])
        offsets.append(np.concatenate([parts[0].offsets[k][:1]] + [p.offsets[k][1:] + b for p, b in zip(parts, base)]))
        valid.append(cat([p.valid[k] for p in parts], slots, True))
        defs.append(cat([p.defs[k] for p in parts], slots, np.uint16(0)))
    items = [int(p.offsets[-1][-1]) for p in parts]
    defs.append(cat([p.defs[-1] for p in parts], items, np.uint16(0)))
    return DirectList(offsets, valid, defs, cat([p.item_valid for p in parts], items, True), parts[0].seg_layers)


def merge(pages: list, layers: list[int]) -> DirectList | None:
    """The pages' lists as one :class:`DirectList` when every page has one over ``layers``; else
    None, the pages given as offsets then carrying their rep / def levels instead."""
    if all(p.lists is not None and p.layers == layers for p in pages):
        return concat([p.lists for p in pages])
    for p in pages:
        if p.lists is not None:
            p.rep, p.defs = p.lists.levels(p.layers)
            p.lists = None
    return None


class DirectUnraveler:
    """:class:`repdef.Unraveler`'s answers (leaf outward) from a :class:`DirectList`."""

    def __init__(self, lists: DirectList, layers: list[int], what: str):
        if repdef.num_lists(layers) != len(lists.offsets) or len(layers) != sum(lists.seg_layers) + len(lists.offsets):
            raise CorruptFileError(f"{what}: direct list offsets for layers {layers}")
        self.lists = lists
        self.layers = layers
        self.what = what
        self.layer = 0
        self.def_cmp = 0
        self.seg = len(lists.offsets)   # the segment of the next item layer

    def _next_layer(self, want_list: bool) -> int:
        if self.layer >= len(self.layers):
            raise CorruptFileError(f"{self.what}: column has fewer nesting layers than its type")
        lay = self.layers[self.layer]
        if (lay in repdef.LIST_LAYERS) != want_list:
            raise CorruptFileError(f"{self.what}: layer {self.layer} is {'a list' if lay in repdef.LIST_LAYERS else 'an item'}"
                                   f" layer, the type needs {'a list' if want_list else 'an item'}")
        self.layer += 1
        return lay

    def item_validity(self) -> np.ndarray | None:
        """Validity of the items / structs at this depth (None = all valid); advances one layer."""
        lay = self._next_layer(False)
        if lay == repdef.ALL_VALID_ITEM:
            return None
        self.def_cmp += 1
        if self.layer == 1:   # the leaf: not null at any layer
            return self.lists.item_valid
        d = self.lists.defs[self.seg]   # a struct: not null at it or above in its segment
        return None if d is None else d < self.def_cmp

    def list_offsets(self) -> tuple[np.ndarray, np.ndarray | None]:
        """(offsets int64 of len + 1, validity or None) of the next list layer outward."""
        lay = self._next_layer(True)
        self.def_cmp += len(repdef.def_table([lay]))
        self.seg -= 1
        return self.lists.offsets[self.seg], self.lists.valid[self.seg]

    def decimate(self, dim: int) -> None:
        raise CorruptFileError(f"{self.what}: a fixed-size list of structs over a page without its layer")
