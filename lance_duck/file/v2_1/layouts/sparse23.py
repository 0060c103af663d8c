"""2.3 sparse-structure pages: per layer, the positions of its null (or valid) and non-empty slots,
plus the values of the valid leaf slots.

The values are an ordinary (translated) mini-block or full-zip page over the valid leaf slots
only; this page rebuilds the 2.1 repetition / definition levels (outermost layer first, one pass
per layer, vectorised) and one value slot per visible entry (nulls at the null items).

A fixed-size list of structs becomes a nullable item layer over its items, as 2.2 stores it: the
layers above it up to the enclosing list count items (``dim`` per list), and without an enclosing
list the page's rows are items (the reader's leaf multiplier; ``Unraveler.decimate`` groups them
back). Under a list, pylance 14.0.2 still declares ``dim`` entries per row (``row_unit``).
"""
from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa

from .... import trace
from ...._proto import encodings_v2_1_pb2 as pb
from ....encodings.bitmap import bool_array, primitive_array
from ....errors import CorruptFileError
from .. import repdef
from ..compression import decode_block
from ..direct_lists import Answer, DirectList
from ..page import Buf, PageBuffers, PageContext, PageData, PageMeta, entry_rows, trim
from ..planar23 import IntCodec, SparseFsl, SparseLayer, SparseLayout, SparseList, SparseValidity, fsl_dims
from ..values import as_fixed, uint_view, with_validity
from .common import u8
from .kinds import layout_page

_DICT_HEADER = 16


class SparsePage:
    """One 2.3 page with a sparse structure (nullable leaves, lists, all-null structs)."""

    def __init__(self, ctx: PageContext, page: PageMeta, layout: SparseLayout) -> None:
        self.ctx = ctx
        self.what = ctx.what
        self.lay = layout
        self.page_length = int(page.length)
        # fixed-size lists of structs under a list: the page counts ``row_unit`` entries per row
        # (pylance 14.0.2), a row selection lists whole rows in those units
        self.row_unit = fsl_dims(layout.layers)[1]
        self.rows = self.page_length // self.row_unit
        # 2.1 layers, innermost first: a validity is a nullable item, a list may be null and empty
        self.layers = [repdef.NULL_AND_EMPTY_LIST if isinstance(x, SparseList) else repdef.NULLABLE_ITEM
                       for x in reversed(layout.layers)]
        self.max_rep = repdef.num_lists(self.layers)
        self.codecs = [c for x in layout.layers for c in _codecs(x)]
        n_bufs = sum(c.has_buffer for c in self.codecs)
        offs, sizes = list(page.buffer_offsets), list(page.buffer_sizes)
        if len(offs) < n_bufs:
            raise CorruptFileError(f"{self.what}: sparse page with {len(offs)} buffers, its layers need {n_bufs}")
        self.level_bufs = list(zip(offs[len(offs) - n_bufs:], sizes[len(offs) - n_bufs:]))
        del offs[len(offs) - n_bufs:], sizes[len(sizes) - n_bufs:]
        self.inner = None
        if not isinstance(layout.values, pb.PageLayout) or layout.values.WhichOneof("layout") is not None:
            inner = PageBuffers(offs, sizes, layout.num_values)
            self.inner = layout_page(PageContext(ctx.what + " (valid values)", ctx.arrow_type, ctx.dict_type,
                                                 ctx.minor, ctx.keep_dictionary), inner, layout.values)
        elif offs:
            raise CorruptFileError(f"{self.what}: sparse page without values has {len(offs)} value buffers")
        trace.record("layout:sparse23" + ("" if len(layout.layers) == 1 else ":nested"))
        # list layers: offsets straight from their positions and lengths, else rep/def levels
        self.direct = _direct_rule(layout.layers)
        trace.record("sparse23:direct-list" if self.direct else "sparse23:levels")

    def meta_ranges(self) -> list[tuple[int, int]]:
        return self.inner.meta_ranges() if self.inner is not None else []

    def set_meta(self, bufs: Sequence[Buf]) -> None:
        if self.inner is not None:
            self.inner.set_meta(bufs)

    def data_ranges(self, local: np.ndarray | None) -> list[tuple[int, int]]:
        r = self.inner.data_ranges(None) if self.inner is not None else []
        self._n_inner = len(r)
        return r + self.level_bufs

    # -- levels ----------------------------------------------------------------------------------
    def _ints(self, c: IntCodec, raw: Buf | None, what: str) -> np.ndarray:
        if c.kind == "none":
            return np.zeros(0, np.int64)
        if c.kind == "const":
            return np.full(c.n, c.a, np.int64)
        if c.kind == "range":
            trace.record("sparse23:range")
            return c.a + c.b * np.arange(c.n, dtype=np.int64)
        if raw is None:
            raise CorruptFileError(f"{what}: {c.kind}-coded integers without their buffer")
        if c.kind == "delta":
            trace.record("sparse23:delta")
            d = uint_view(as_fixed(decode_block(c.encoding(what), u8(raw), c.n - 1, what), what))
            out = np.empty(c.n, np.int64)
            out[0] = c.a
            np.cumsum(d, dtype=np.int64, out=out[1:])
            out[1:] += c.a
            return out
        if c.kind == "plain":
            return uint_view(as_fixed(decode_block(c.encoding(what), u8(raw), c.n, what), what)).astype(np.int64)
        buf = u8(raw)   # dictionary indices follow a 16-byte header (pylance 14.0.2)
        if buf.size < _DICT_HEADER:
            raise CorruptFileError(f"{what}: dictionary-coded integers without their header")
        v = uint_view(as_fixed(decode_block(c.encoding(what), buf[_DICT_HEADER:], c.n, what), what)).astype(np.int64)
        trace.record("sparse23:dictionary")
        if v.size and (v.min() < 0 or v.max() >= c.k):
            raise CorruptFileError(f"{what}: dictionary index outside its {c.k} items")
        return c.a + c.b * v

    def _positions(self, c: IntCodec, raw: Buf | None, slots: int, what: str) -> np.ndarray:
        pos = self._ints(c, raw, what)
        if pos.size != c.n or (pos.size and (pos[0] < 0 or pos[-1] >= slots or (pos[1:] <= pos[:-1]).any())):
            raise CorruptFileError(f"{what}: sparse positions are not increasing slots below {slots}")
        return pos

    def _nulls(self, v: SparseValidity | None, raws: Iterator[Buf], slots: int, what: str) -> tuple[np.ndarray, np.ndarray]:
        """(null mask, null slots) of a validity layer over ``slots`` slots."""
        if v is None:
            return np.zeros(slots, bool), np.zeros(0, np.int64)
        pos = self._positions(v.positions, next(raws) if v.positions.has_buffer else None, slots, what)
        null = np.zeros(slots, bool) if v.null_positions else np.ones(slots, bool)
        null[pos] = v.null_positions
        return null, (pos if v.null_positions else np.flatnonzero(null))

    def _list(self, lay: SparseList, raws: Iterator[Buf], slots: int, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(non-empty slots, their lengths, null mask) of a list layer over ``slots`` slots, checked."""
        pos = self._positions(lay.nonempty, next(raws) if lay.nonempty.has_buffer else None, slots, what)
        lens = self._ints(lay.lengths, next(raws) if lay.lengths.has_buffer else None, what)
        null, _ = self._nulls(lay.validity, raws, slots, what)   # buffers in this order
        if lens.size != pos.size or (lens.size and lens.min() <= 0) or int(lens.sum()) != lay.num_children:
            raise CorruptFileError(f"{what}: list lengths do not add up to its {lay.num_children} items")
        if null[pos].any():
            raise CorruptFileError(f"{what}: a null list has items")
        return pos, lens, null

    def _direct(self, raws: Iterator[Buf]) -> DirectList:
        """The page's layers as list offsets and validity masks (see :func:`_direct_rule`)."""
        table = {key: i + 1 for i, key in enumerate(repdef.def_table(self.layers))}
        layers = self.lay.layers
        slots = self.page_length
        answers: list[Answer] = []   # outermost layer first
        first = 0            # first validity layer of the current segment (the layers between lists)
        for j, lay in enumerate(layers):
            if not isinstance(lay, SparseList):
                continue
            # the validity layers above this list, over its slots (the outermost null wins)
            d = self._defs_of(raws, range(first, j), slots, table) if j > first else None
            d = d if d is not None and d.any() else None
            answers.extend(self._validities(d, range(first, j), table))
            pos, lens, null = self._list(lay, raws, slots, f"{self.what} layer {j}")
            if d is not None:
                if d[pos].any():
                    raise CorruptFileError(f"{self.what} layer {j}: a list under a null parent has items")
                null |= d > 0
            cnt = np.zeros(slots, np.int64)
            cnt[pos] = lens
            off = np.zeros(slots + 1, np.int64)
            np.cumsum(cnt, out=off[1:])
            answers.append((off, ~null if null.any() else None))
            slots, first = lay.num_children, j + 1
        if first == len(layers) - 1:   # the items' validity
            item_null, nulls = self._nulls(_validity_layer(layers[first], self.what), raws, slots, f"{self.what} layer {first}")
            answers.append(~item_null if nulls.size else None)
        elif first < len(layers):      # structs in the list: the outermost null layer per item
            d = self._defs_of(raws, range(first, len(layers)), slots, table)
            answers.extend(self._validities(d if d.any() else None, range(first, len(layers)), table))
        answers.reverse()
        return DirectList(answers, self.layers, self.page_length)

    def _validities(self, defs: np.ndarray | None, layers: range, table: dict[Any, int]) -> list[np.ndarray | None]:
        """Validity of each of the validity ``layers`` (outermost first) from their def levels:
        not null at the layer nor at a layer above it."""
        out = []
        for j in layers:
            v = None if defs is None else defs < table[(len(self.lay.layers) - 1 - j, "null")]
            out.append(None if v is None or v.all() else v)
        return out

    def _defs_of(self, raws: Iterator[Buf], layers: range, slots: int, table: dict[Any, int]) -> np.ndarray:
        """Def level per slot of the validity ``layers`` (outermost first; the outermost null wins)."""
        defs = np.zeros(slots, np.uint16)
        for j in layers:
            _, nulls = self._nulls(_validity_layer(self.lay.layers[j], self.what), raws, slots, f"{self.what} layer {j}")
            nulls = nulls[defs[nulls] == 0]
            defs[nulls] = table[(len(self.lay.layers) - 1 - j, "null")]
        return defs

    def _plain_layers(self, raws: Iterator[Buf]) -> tuple[list[list[Any]], int]:
        """Every layer decoded outermost first, fixed-size lists expanded into their items:
        ``["v", null mask]`` or ``["l", non-empty slots, lengths, null mask, children]`` over the
        layer's slots, and the number of rows (top slots) after the expansion."""
        every, _ = fsl_dims(self.lay.layers)
        rows = full = int(self.page_length) // every
        out: list[list[Any]] = []
        for j, lay in enumerate(self.lay.layers):
            what = f"{self.what} layer {j}"
            if isinstance(lay, SparseValidity):
                out.append(["v", self._nulls(lay, raws, full, what)[0]])
                continue
            if isinstance(lay, SparseFsl):
                # the items of a fixed-size list become ``dim`` slots each; the layers above it up
                # to the enclosing list (or the rows) count items instead of lists
                trace.record("sparse23:fixed_size_list")
                out.append(["v", np.repeat(self._nulls(lay.validity, raws, full, what)[0], lay.dim)])
                for above in reversed(out[:-1]):
                    if above[0] == "v":
                        above[1] = np.repeat(above[1], lay.dim)
                        continue
                    above[2] = above[2] * lay.dim
                    above[4] *= lay.dim
                    break
                else:
                    rows *= lay.dim
                full *= lay.dim
                continue
            pos, lens, null = self._list(lay, raws, full, what)
            out.append(["l", pos, lens, null, lay.num_children])
            full = lay.num_children
        return out, rows

    def _levels(self, raws: Iterator[Buf]) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray, tuple[Any, ...]]:
        """(rep, def, entry of each leaf slot, leaf slot validity, (live leaf slots or None, leaf
        slots)) of every row of the page; the leaf slots under a null parent are not live."""
        table = {key: i + 1 for i, key in enumerate(repdef.def_table(self.layers))}
        plain, rows = self._plain_layers(raws)
        n_layers = len(plain)
        full = rows        # slots of the current layer; a validity keeps its slots for the next one
        live = None        # the slots not under a null of an outer validity (None: every slot)
        steps: list[tuple[Any, np.ndarray, Any, Any, np.ndarray | None]] = []   # per layer, over its live slots: (terminal mask, terminal slots, their defs,
        #              children per slot, non-empty slots)
        for j, lay in enumerate(plain):
            what = f"{self.what} layer {j}"
            inner_i = n_layers - 1 - j
            if lay[0] == "v":
                null = lay[1]
                if null.size != full:
                    raise CorruptFileError(f"{what}: validity of {null.size} slots, the layer has {full}")
                if live is not None:
                    null = null[live]
                null_idx = np.flatnonzero(null)
                nchild = None
                if j < n_layers - 1:   # the next layer's slots under a null here are dead
                    nchild = (~null).astype(np.int64)
                    live = (np.arange(full, dtype=np.int64) if live is None else live)[~null]
                steps.append((null, null_idx, table[(inner_i, "null")], nchild, None))
                continue
            _, pos, lens, null, num_children = lay
            if live is not None:
                compact = np.full(full, -1, np.int64)
                compact[live] = np.arange(live.size, dtype=np.int64)
                pos = compact[pos]
                if pos.size and pos.min() < 0:
                    raise CorruptFileError(f"{what}: a list under a null parent has items")
                null = null[live]
            nchild = np.zeros(null.size, np.int64)
            nchild[pos] = lens
            term = nchild == 0
            term_idx = np.flatnonzero(term)
            steps.append((term, term_idx, np.where(null[term_idx], table[(inner_i, "null")], table[(inner_i, "empty")]),
                          nchild, pos))
            full, live = num_children, None
        slots = full if live is None else live.size
        leaf_is_item = plain[-1][0] == "v"
        leaf_valid = ~steps[-1][0] if leaf_is_item else np.ones(slots, bool)
        # bottom-up: entries produced by every slot of every layer (None: one per slot)
        below = None
        counts: list[np.ndarray | None] = []
        for term, _, _, nchild, _ in reversed(steps):
            if below is None and len(counts) == 0 and leaf_is_item:
                cnt = None   # innermost validity: one entry per slot
            elif below is None:
                cnt = np.where(term, 1, nchild)
            else:
                cs = np.zeros(below.size + 1, np.int64)
                np.cumsum(below, out=cs[1:])
                first = np.cumsum(nchild) - nchild
                cnt = np.where(term, 1, cs[first + nchild] - cs[first])
            counts.append(cnt)
            below = cnt
        counts.reverse()
        total = int(counts[0].sum()) if counts[0] is not None else rows
        rep = np.zeros(total, np.uint16) if self.max_rep else None
        defs = np.zeros(total, np.uint16)
        if counts[0] is None:
            start = np.arange(total, dtype=np.int64)
        else:
            start = np.cumsum(counts[0]) - counts[0]
        if rep is not None:
            rep[start] = self.max_rep
        free = np.ones(total, bool)   # entries not yet taken by a terminal slot of an outer layer
        depth = 0
        for j, (term, term_idx, tdef, nchild, nonempty) in enumerate(steps):
            ends = start[term_idx]
            defs[ends] = tdef
            if j == len(steps) - 1 and leaf_is_item:
                break
            free[ends] = False
            if plain[j][0] == "v":
                start = start[~term]   # one child per valid slot, at the slot's entry
                continue
            inside = np.flatnonzero(free)   # entries of the children, in order
            child_cnt = counts[j + 1] if j + 1 < len(counts) else None
            if child_cnt is None:
                child_start = inside
            else:
                ccs = np.cumsum(child_cnt) - child_cnt
                child_start = inside[ccs]
            depth += 1
            if depth == self.max_rep == 1:
                # the only list: its children's level (0) is already there and the lists' first
                # children keep the row level they were given above (two full passes saved)
                start = child_start
                continue
            assert rep is not None     # depth counts list layers: there are some
            firsts = start[nonempty]   # a list's first child starts where the list does: keep its level
            kept = rep[firsts]
            if child_cnt is None:
                rep[free] = self.max_rep - depth
            else:
                rep[child_start] = self.max_rep - depth
            rep[firsts] = kept
            start = child_start
        return rep, defs, start, leaf_valid, (live, full)

    def _decode_direct(self, data: Sequence[Buf], local: np.ndarray | None) -> PageData:
        """Rows of a page with list layers, offsets built straight from their positions."""
        lists = self._direct(iter(data[self._n_inner:]))
        vals = self._values(data)
        n_items = lists.items
        valid = lists.item_valid
        if self.lay.per_slot and len(vals) == n_items:
            values = with_validity(pa.concat_arrays([vals]) if vals.offset else vals, valid)
        else:
            # values of the valid items only, or (per slot) of the items not under a null struct
            stored = valid
            if self.lay.per_slot:
                item = len(self.layers) > 1 and self.layers[1] not in repdef.LIST_LAYERS
                stored = lists.answers[1] if item else None
            n_stored = n_items if stored is None else int(np.count_nonzero(stored))
            if len(vals) != n_stored:
                raise CorruptFileError(f"{self.what}: {len(vals)} values for {n_stored} "
                                       f"{'slots' if self.lay.per_slot else 'valid slots'}")
            if stored is not None:   # one value per item, nulls at the null items
                slot = np.cumsum(stored, dtype=np.int64)
                slot -= 1
                np.maximum(slot, 0, out=slot)
                vals = vals.take(primitive_array(pa.int64(), slot, valid))
            values = vals
        if local is not None:
            lists, items = lists.select(np.asarray(local, np.int64))
            if isinstance(items, slice):
                values = values.slice(items.start, items.stop - items.start)
            else:
                values = values.take(pa.array(items))
        return PageData(values, None, None, self.layers, lists.rows, lists)

    def _values(self, data: Sequence[Buf]) -> pa.Array:
        """The page's stored values (valid leaf slots, or every leaf slot when ``per_slot``)."""
        if self.inner is not None:
            return self.inner.decode(data[:self._n_inner], None).values
        return pa.nulls(0, self.ctx.dict_type or self.ctx.arrow_type)

    @property
    def rows_only(self) -> bool:
        """Whether the page's only layer is the rows' validity over values of the valid rows
        (a nullable leaf: :meth:`compact` gives its values without expanding them)."""
        layers = self.lay.layers
        return (len(layers) == 1 and isinstance(layers[0], SparseValidity) and not self.lay.per_slot
                and self.inner is not None)

    def compact(self, data: Sequence[Buf]) -> tuple[pa.Array, np.ndarray, np.ndarray]:
        """A :attr:`rows_only` page's (values of the valid rows, validity per row, def levels
        per row): :meth:`decode` without the take that places the values at their rows."""
        rep, defs, _, leaf_valid, _ = self._levels(iter(data[self._n_inner:]))
        vals = self._values(data)
        n_valid = int(np.count_nonzero(leaf_valid))
        if rep is not None or leaf_valid.size != self.rows or len(vals) != n_valid:
            raise CorruptFileError(f"{self.what}: {len(vals)} values for {n_valid} valid rows")
        return vals, leaf_valid, defs

    def decode(self, data: Sequence[Buf], local: np.ndarray | None) -> PageData:
        if self.direct:
            return self._decode_direct(data, local)
        if local is not None and self.row_unit > 1:
            local = _whole_rows(np.asarray(local, np.int64), self.row_unit, self.what)
        raws = iter(data[self._n_inner:])
        rep, defs, leaf_entry, leaf_valid, (live, full) = self._levels(raws)
        vals = self._values(data)
        if self.lay.per_slot and live is not None and live.size < full == len(vals):
            vals = vals.take(pa.array(live))   # values of every leaf slot, under null parents too
        if self.lay.per_slot and len(vals) != leaf_valid.size:
            raise CorruptFileError(f"{self.what}: {len(vals)} values for {leaf_valid.size} slots")
        n_valid = int(np.count_nonzero(leaf_valid))
        if not self.lay.per_slot and len(vals) != n_valid:
            raise CorruptFileError(f"{self.what}: {len(vals)} values for {n_valid} valid slots")
        visible = defs <= repdef.max_visible_def(self.layers)
        if self.lay.per_slot and int(np.count_nonzero(visible)) == leaf_valid.size:
            # the visible entries are the leaf slots: mask the null ones in place
            values = with_validity(pa.concat_arrays([vals]) if vals.offset else vals, leaf_valid)
        else:
            if self.lay.per_slot:
                vals = vals.filter(bool_array(leaf_valid, leaf_valid.size))
            slot = np.full(defs.size, -1, np.int64)
            slot[leaf_entry[leaf_valid]] = np.arange(len(vals), dtype=np.int64)
            slot = slot[visible]
            values = vals.take(primitive_array(pa.int64(), np.where(slot < 0, 0, slot), slot >= 0))
        if local is not None:
            rows = entry_rows(rep, self.max_rep, 0) if rep is not None else None
            values, rep, kept_defs = trim(values, rep, defs, self.layers, rows, np.asarray(local, np.int64),
                                          self.what)
            n = len(local)
            return PageData(values, rep, kept_defs, self.layers, n)
        return PageData(values, rep, defs, self.layers, self.rows)


def _validity_layer(layer: SparseLayer, what: str) -> SparseValidity:
    """``layer`` where the structure needs a validity layer (items, structs under a list)."""
    if not isinstance(layer, SparseValidity):
        raise CorruptFileError(f"{what}: a {type(layer).__name__} layer where a validity layer belongs")
    return layer


def _direct_rule(layers: list[SparseLayer]) -> bool:
    """A page's rows decode straight to offsets when it has list layers and no fixed-size list
    (validity layers anywhere around them)."""
    kinds = [type(x) for x in layers]
    return SparseList in kinds and SparseFsl not in kinds


def _whole_rows(local: np.ndarray, unit: int, what: str) -> np.ndarray:
    """Rows of a selection given as ``unit`` consecutive entries per row."""
    rows = local[::unit] // unit
    if local.size % unit or not np.array_equal(local, (rows[:, None] * unit + np.arange(unit)).reshape(-1)):
        raise CorruptFileError(f"{what}: a row selection splits the {unit} entries of a row")
    return rows


def _codecs(layer: SparseLayer) -> list[IntCodec]:
    """The integer sequences of a layer in buffer order."""
    if isinstance(layer, SparseValidity):
        return [layer.positions]
    if isinstance(layer, SparseFsl):
        return [layer.validity.positions] if layer.validity else []
    return [layer.nonempty, layer.lengths] + ([layer.validity.positions] if layer.validity else [])
