"""Repetition / definition levels -> validity masks and list offsets (vectorised).

Layers are listed innermost first (format notes, section 3). Def value 0 means "valid all the
way down"; each layer consumes def values: nullable item 1 (null), nullable list 1 (null),
emptyable list 1 (empty), null-and-empty list 2 (null, empty), all-valid layers none.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from ...errors import CorruptFileError, UnsupportedFeatureError

ALL_VALID_ITEM, ALL_VALID_LIST, NULLABLE_ITEM, NULLABLE_LIST, EMPTYABLE_LIST, NULL_AND_EMPTY_LIST = 1, 2, 3, 4, 5, 6
LIST_LAYERS = (ALL_VALID_LIST, NULLABLE_LIST, EMPTYABLE_LIST, NULL_AND_EMPTY_LIST)
_KINDS = {ALL_VALID_ITEM: (), NULLABLE_ITEM: ("null",), ALL_VALID_LIST: (), NULLABLE_LIST: ("null",),
          EMPTYABLE_LIST: ("empty",), NULL_AND_EMPTY_LIST: ("null", "empty")}


def check_layers(layers: Iterable[int], what: str) -> list[int]:
    out = [int(x) for x in layers]
    for x in out:
        if x not in _KINDS:
            raise UnsupportedFeatureError(f"{what}: unknown rep/def layer kind {x}")
    return out


def def_table(layers: list[int]) -> list[tuple[int, str]]:
    """(layer index, kind) for def values 1, 2, ... (def 0 = valid)."""
    out = []
    for i, lay in enumerate(layers):
        for k in _KINDS[lay]:
            out.append((i, k))
    return out


def num_lists(layers: list[int]) -> int:
    return sum(1 for x in layers if x in LIST_LAYERS)


def max_visible_def(layers: list[int]) -> int:
    """Def values <= this own a value slot (layers before the first list layer)."""
    n = 0
    for lay in layers:
        if lay in LIST_LAYERS:
            break
        n += len(_KINDS[lay])
    return n


def merge_layers(all_layers: list[list[int]], what: str) -> list[int]:
    """The most general layer description covering every page's layers."""
    n = len(all_layers[0])
    if any(len(x) != n for x in all_layers):
        raise CorruptFileError(f"{what}: pages disagree on the nesting depth")
    out = []
    for i in range(n):
        kinds = {x[i] for x in all_layers}
        is_list = {k in LIST_LAYERS for k in kinds}
        if len(is_list) != 1:
            raise CorruptFileError(f"{what}: pages disagree on nesting layer {i}")
        if is_list.pop():
            has_null = bool(kinds & {NULLABLE_LIST, NULL_AND_EMPTY_LIST})
            has_empty = bool(kinds & {EMPTYABLE_LIST, NULL_AND_EMPTY_LIST})
            out.append(NULL_AND_EMPTY_LIST if has_null and has_empty else NULLABLE_LIST if has_null
                       else EMPTYABLE_LIST if has_empty else ALL_VALID_LIST)
        else:
            out.append(NULLABLE_ITEM if NULLABLE_ITEM in kinds else ALL_VALID_ITEM)
    return out


def remap_def(defs: np.ndarray | None, page_layers: list[int], target: list[int], n: int) -> np.ndarray | None:
    """Page def levels renumbered for the merged ``target`` layers (None = all valid)."""
    if page_layers == target:
        return defs
    tgt = {key: i + 1 for i, key in enumerate(def_table(target))}
    lut = np.zeros(len(def_table(page_layers)) + 1, np.uint16)
    for i, key in enumerate(def_table(page_layers)):
        lut[i + 1] = tgt[key]
    if defs is None:
        return None
    if defs.size and int(defs.max()) >= lut.size:
        raise CorruptFileError(f"def level {int(defs.max())} exceeds the page's layers")
    remapped: np.ndarray = lut[defs]
    return remapped


class Unraveler:
    """Walks the layers of one leaf column (all pages concatenated) from the leaf outward."""

    def __init__(self, rep: np.ndarray | None, defs: np.ndarray | None, layers: list[int], what: str):
        self._pending: np.ndarray | None = None
        self._rep: np.ndarray | None = rep
        self._defs: np.ndarray | None = defs
        self._items: tuple[np.ndarray, int, np.ndarray] | None = None   # (levels, threshold, item levels)
        self.layers = layers
        self.what = what
        self.layer = 0
        self.def_cmp = 0
        self.rep_cmp = 0
        # levels_to_rep[def]: list layers at or below the layer producing that def value
        lut = [0]
        lists = 0
        for lay in layers:
            if lay in LIST_LAYERS:
                lists += 1
            lut.extend([lists] * len(_KINDS[lay]))
        self.levels_to_rep = np.array(lut, np.int64)
        if defs is not None and defs.size and int(defs.max()) >= len(lut):
            raise CorruptFileError(f"{what}: def level {int(defs.max())} exceeds the layers {layers}")
        if rep is not None and rep.size and int(rep.max()) > lists:
            raise CorruptFileError(f"{what}: rep level {int(rep.max())} exceeds {lists} list layers")

    def _apply_pending(self) -> None:
        keep = self._pending
        if keep is not None:
            self._pending = None
            assert self._rep is not None        # rows are kept only of a list layer's levels
            self._rep = self._rep[keep] - 1
            if self._defs is not None:
                self._defs = self._defs[keep]

    @property
    def rep(self) -> np.ndarray | None:
        self._apply_pending()
        return self._rep

    @rep.setter
    def rep(self, v: np.ndarray | None) -> None:
        self._rep = v

    @property
    def defs(self) -> np.ndarray | None:
        self._apply_pending()
        return self._defs

    @defs.setter
    def defs(self, v: np.ndarray | None) -> None:
        self._defs = v

    def _next_layer(self, want_list: bool) -> int:
        if self.layer >= len(self.layers):
            raise CorruptFileError(f"{self.what}: column has fewer nesting layers than its type")
        lay = self.layers[self.layer]
        if (lay in LIST_LAYERS) != want_list:
            raise CorruptFileError(f"{self.what}: layer {self.layer} is {'a list' if lay in LIST_LAYERS else 'an item'}"
                                   f" layer, the type needs {'a list' if want_list else 'an item'}")
        return lay

    def item_validity(self) -> np.ndarray | None:
        """Validity of the items/structs at this depth (None = all valid); advances one layer."""
        lay = self._next_layer(False)
        self.layer += 1
        if lay == ALL_VALID_ITEM or self.defs is None:
            return None
        d = self.defs
        if self.rep_cmp > 0 or self.rep is not None:
            # entries of lists at or below this depth: levels_to_rep is non-decreasing, so
            # "levels_to_rep[d] <= rep_cmp" is "d < thr"
            thr = int(np.searchsorted(self.levels_to_rep, self.rep_cmp, side="right"))
            if thr < self.levels_to_rep.size:
                # the item entries at this depth; a struct's validity comes right after its first
                # child's from the same levels: filtered once for both
                kept = self._items
                if kept is not None and kept[0] is d and kept[1] == thr:
                    d = kept[2]
                else:
                    filtered = d[d < thr]
                    self._items = (d, thr, filtered)
                    d = filtered
        valid = d <= self.def_cmp
        self.def_cmp += 1
        return valid

    def decimate(self, dim: int) -> None:
        """Keep every ``dim``-th item entry (fixed-size list of structs: its items -> the lists).

        Under a list the entries of null or empty outer lists (and of nulls outside them) stand
        alone; every other entry is an item, ``dim`` consecutive ones per fixed-size list."""
        rep, d = self.rep, self.defs
        if rep is not None:
            item = np.ones(rep.size, bool)
            if d is not None:
                thr = int(np.searchsorted(self.levels_to_rep, self.rep_cmp, side="right"))
                item = d < thr
            pos = np.flatnonzero(item)
            if pos.size % dim or (rep[pos.reshape(-1, dim)[:, 1:]] != 0).any():
                raise CorruptFileError(f"{self.what}: {pos.size} item entries are not whole lists of {dim}")
            keep = ~item
            keep[pos[::dim]] = True
            self.rep = rep[keep]
            if d is not None:
                self.defs = d[keep]
            return
        if self.defs is not None:
            if self.defs.size % dim:
                raise CorruptFileError(f"{self.what}: {self.defs.size} entries are not whole lists of {dim}")
            self.defs = self.defs[::dim]

    def list_offsets(self) -> tuple[np.ndarray, np.ndarray | None]:
        """(offsets int64 of len+1, validity or None) for the list layer at this depth."""
        lay = self._next_layer(True)
        self.layer += 1
        rep, d = self.rep, self.defs
        if rep is None:
            raise CorruptFileError(f"{self.what}: list column without repetition levels")
        starts = rep != 0
        if d is None:
            pos = np.flatnonzero(starts)
            offsets = np.empty(pos.size + 1, np.int64)
            offsets[:-1] = pos
            offsets[-1] = rep.size
            validity = None
        else:
            valid = self.def_cmp
            null = empty = -1
            if lay == NULLABLE_LIST:
                null = valid + 1
            elif lay == EMPTYABLE_LIST:
                empty = valid + 1
            elif lay == NULL_AND_EMPTY_LIST:
                null, empty = valid + 1, valid + 2
            self.def_cmp += len(_KINDS[lay])
            hi = max(null, empty, valid)
            max_level = hi
            for nxt in self.layers[self.layer:]:
                if nxt in LIST_LAYERS:
                    break
                if nxt == NULLABLE_ITEM:
                    max_level += 1
            # entries that start a list at this depth or above; those with d > valid are null /
            # empty lists (no child item). Every other entry is one child item, so a list's
            # offset is its entry index minus the number of childless entries before it.
            sidx = np.flatnonzero(starts)
            ds = d[sidx]
            childless = ds > valid
            n_childless = int(np.count_nonzero(childless))
            if n_childless:
                before = np.cumsum(childless, dtype=np.int64)
                before -= childless
                sidx -= before
            in_layer = ds <= max_level
            offsets = np.empty(int(np.count_nonzero(in_layer)) + 1, np.int64)
            if offsets.size == sidx.size + 1:
                offsets[:-1] = sidx
                dl = ds
            else:
                offsets[:-1] = sidx[in_layer]
                dl = ds[in_layer]
            offsets[-1] = rep.size - n_childless
            is_null = (dl == null) | ((dl > hi) & (dl <= max_level))
            validity = None if not is_null.any() else ~is_null
        self._pending = starts    # applied lazily: the outermost list never needs it
        self.rep_cmp += 1
        return offsets, validity
