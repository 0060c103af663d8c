"""A page's one list layer given directly as offsets and validity masks (no rep/def levels).

A 2.3 sparse page with a single list layer (item validity layers below and above it) knows its lists' offsets from the stored positions and lengths; building
repetition / definition levels only for :class:`repdef.Unraveler` to turn them back into offsets
costs ~20 passes over the entries. :class:`DirectList` carries the offsets instead,
:class:`DirectUnraveler` answers the assembler from them, and :meth:`DirectList.levels` still
gives the levels when a column mixes such pages with level pages.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import CorruptFileError
from . import repdef


@dataclass
class DirectList:
    """The structure of a page's rows around its one list layer (2.1 layers, innermost first:
    ``item_layers`` item layers under the list, the list, item layers above it)."""
    offsets: np.ndarray              # int64, rows + 1: the list's items per row
    list_valid: np.ndarray | None    # bool per row: the list is not null (nor under a null parent)
    outer_defs: np.ndarray | None    # u16 per row: def level of the layers above the list (0 = valid)
    item_valid: np.ndarray | None    # bool per item: not null at any layer under the list
    item_layers: int                 # item layers under the list
    item_defs: np.ndarray | None = None  # u16 per item: def level under the list (two layers or more)

    @property
    def rows(self) -> int:
        return int(self.offsets.size - 1)

    def select(self, rows: np.ndarray) -> tuple[DirectList, np.ndarray | slice]:
        """The selected ``rows`` (sorted local rows) and the positions of their items."""
        o = self.offsets
        starts, ends = o[rows], o[rows + 1]
        lens = ends - starts
        out = np.zeros(rows.size + 1, np.int64)
        np.cumsum(lens, out=out[1:])
        if rows.size and int(rows[-1]) - int(rows[0]) + 1 == rows.size and bool((np.diff(rows) == 1).all()):
            items: np.ndarray | slice = slice(int(starts[0]), int(ends[-1]))   # a run of rows
        else:
            items = np.repeat(starts - out[:-1], lens) + np.arange(int(out[-1]), dtype=np.int64)
        return DirectList(out,
                          None if self.list_valid is None else self.list_valid[rows],
                          None if self.outer_defs is None else self.outer_defs[rows],
                          None if self.item_valid is None else self.item_valid[items],
                          self.item_layers, None if self.item_defs is None else self.item_defs[items]), items

    def levels(self, layers: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The 2.1 (rep, def) levels of these rows for the page's ``layers``."""
        table = {key: i + 1 for i, key in enumerate(repdef.def_table(layers))}
        lst = self.item_layers
        lens = np.diff(self.offsets)
        childless = lens == 0
        cnt = np.where(childless, 1, lens)
        start = np.cumsum(cnt) - cnt
        total = int(cnt.sum())
        rep = np.zeros(total, np.uint16)
        rep[start] = repdef.num_lists(layers)
        defs = np.zeros(total, np.uint16)
        cl = np.flatnonzero(childless)
        items = np.ones(total, bool)
        items[start[cl]] = False
        if self.item_defs is not None:
            defs[items] = self.item_defs
        elif self.item_valid is not None:
            defs[items] = np.where(self.item_valid, 0, table[(0, "null")]).astype(np.uint16)
        own_null = np.zeros(cl.size, bool) if self.list_valid is None else ~self.list_valid[cl]
        null, empty = table.get((lst, "null"), 0), table.get((lst, "empty"), 0)
        d = np.where(own_null, null, empty).astype(np.uint16)
        if self.outer_defs is not None:
            od = self.outer_defs[cl]
            d = np.where(od > 0, od, d)
        if cl.size and not d.all():
            raise CorruptFileError(f"lists of layers {layers}: a null or empty list the layers cannot express")
        defs[start[cl]] = d
        return rep, defs


def concat(parts: list[DirectList]) -> DirectList:
    """The rows of every part, in order (every part has the same layers)."""
    if len(parts) == 1:
        return parts[0]
    sizes = [int(p.offsets[-1]) for p in parts]
    base = np.cumsum([0] + sizes[:-1])
    offsets = np.concatenate([parts[0].offsets[:1]] + [p.offsets[1:] + b for p, b in zip(parts, base)])

    def cat(arrays: list, sizes: list[int], fill) -> np.ndarray | None:
        if all(a is None for a in arrays):
            return None
        return np.concatenate([np.full(n, fill) if a is None else a for a, n in zip(arrays, sizes)])
    rows = [p.rows for p in parts]
    return DirectList(offsets,
                      cat([p.list_valid for p in parts], rows, True),
                      cat([p.outer_defs for p in parts], rows, np.uint16(0)),
                      cat([p.item_valid for p in parts], sizes, True),
                      parts[0].item_layers, cat([p.item_defs for p in parts], sizes, np.uint16(0)))


class DirectUnraveler:
    """:class:`repdef.Unraveler`'s answers (leaf outward) from a :class:`DirectList`."""

    def __init__(self, lists: DirectList, layers: list[int], what: str):
        if repdef.num_lists(layers) != 1 or layers[lists.item_layers] not in repdef.LIST_LAYERS:
            raise CorruptFileError(f"{what}: direct list offsets for layers {layers}")
        self.lists = lists
        self.layers = layers
        self.what = what
        self.layer = 0
        self.def_cmp = 0

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
        if self.layer - 1 < self.lists.item_layers:
            if self.layer == 1:   # the leaf: not null at any layer
                return self.lists.item_valid
            d = self.lists.item_defs   # a struct in the list: not null at it or above
            return None if d is None else d < self.def_cmp
        d = self.lists.outer_defs
        return None if d is None else d < self.def_cmp

    def list_offsets(self) -> tuple[np.ndarray, np.ndarray | None]:
        """(offsets int64 of len + 1, validity or None) of the list layer."""
        lay = self._next_layer(True)
        self.def_cmp += len(repdef.def_table([lay]))
        return self.lists.offsets, self.lists.list_valid

    def decimate(self, dim: int) -> None:
        raise CorruptFileError(f"{self.what}: a fixed-size list of structs over a page without its layer")


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
