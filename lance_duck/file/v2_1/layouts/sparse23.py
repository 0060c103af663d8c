"""2.3 sparse-structure pages: a list of null (or valid) row positions plus the valid rows' values.

The values are an ordinary (translated) mini-block or constant page over the valid rows only; this
page expands them to one slot per row (nulls at the other rows) with def level 1 at null rows.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyarrow as pa

from .... import trace
from ....errors import CorruptFileError
from ..compression import decode_block
from ..page import PageContext, PageData
from ..planar23 import SparseLayout
from ..values import uint_view
from .common import u8

_NULLABLE_ITEM = 3


class SparsePage:
    """One 2.3 page with a sparse validity structure (a nullable leaf outside lists)."""

    def __init__(self, ctx: PageContext, page, layout: SparseLayout):
        from ..column import make_page
        self.ctx = ctx
        self.what = ctx.what
        self.lay = layout
        self.rows = int(page.length)
        self.layers = [_NULLABLE_ITEM]
        offs, sizes = list(page.buffer_offsets), list(page.buffer_sizes)
        self.has_positions = layout.positions is not None and layout.range is None
        dict_rows = layout.values.HasField("mini_block_layout") and layout.values.mini_block_layout.HasField(
            "dictionary")  # dictionary indices are stored for every row, valid or not
        if self.has_positions:
            if not offs:
                raise CorruptFileError(f"{self.what}: sparse page without a positions buffer")
            self.pos_buf = (offs.pop(), sizes.pop())
        n_valid = self.rows - layout.num_positions if layout.null_positions else layout.num_positions
        self.per_row = dict_rows
        inner = SimpleNamespace(buffer_offsets=offs, buffer_sizes=sizes, length=self.rows if dict_rows else n_valid)
        self.inner = make_page(PageContext(ctx.what + " (valid rows)", ctx.arrow_type, ctx.dict_type, ctx.minor,
                                       ctx.keep_dictionary), inner, layout.values)
        trace.record("layout:sparse23")

    def meta_ranges(self):
        return self.inner.meta_ranges()

    def set_meta(self, bufs) -> None:
        self.inner.set_meta(bufs)

    def data_ranges(self, local):
        r = self.inner.data_ranges(None)
        self._n_inner = len(r)
        return r + ([self.pos_buf] if self.has_positions else [])

    def _positions(self, raw) -> np.ndarray:
        lay, n = self.lay, self.lay.num_positions
        if lay.range is not None:
            start, step = lay.range
            pos = start + step * np.arange(n, dtype=np.int64)
            trace.record("sparse23:range-positions")
        elif not self.has_positions:
            return np.zeros(0, np.int64)
        elif lay.delta is None:
            pos = uint_view(decode_block(lay.positions, u8(raw), n, self.what)).astype(np.int64)
        else:
            bits, base = lay.delta
            if bits not in (8, 16, 32, 64):
                raise CorruptFileError(f"{self.what}: delta positions of {bits} bits")
            d = uint_view(decode_block(lay.positions, u8(raw), n - 1, self.what)).astype(np.int64)
            pos = np.empty(n, np.int64)
            pos[0] = base
            np.cumsum(d, out=pos[1:])
            pos[1:] += base
            trace.record("sparse23:delta-positions")
        if pos.size != n or (n and (pos.min() < 0 or pos.max() >= self.rows or np.any(np.diff(pos) <= 0))):
            raise CorruptFileError(f"{self.what}: sparse positions are not increasing rows below {self.rows}")
        return pos

    def decode(self, data: list, local: np.ndarray | None) -> PageData:
        inner = self.inner.decode(data[:self._n_inner], None)
        pos = self._positions(data[self._n_inner] if self.has_positions else None)
        valid = np.zeros(self.rows, bool) if not self.lay.null_positions else np.ones(self.rows, bool)
        valid[pos] = not self.lay.null_positions
        if self.per_row:
            if len(inner.values) != self.rows:
                raise CorruptFileError(f"{self.what}: {len(inner.values)} values for {self.rows} rows")
            keep = valid if local is None else valid[local]
            rows = np.arange(self.rows, dtype=np.int64) if local is None else local
            values = inner.values.take(pa.array(rows, mask=~keep))
            return PageData(values, None, (~keep).astype(np.uint16), self.layers, int(keep.size))
        if len(inner.values) != int(valid.sum()):
            raise CorruptFileError(f"{self.what}: {len(inner.values)} values for {int(valid.sum())} valid rows")
        if local is not None:
            valid = valid[local]
            slot = (np.cumsum(self._valid_all(pos), dtype=np.int64) - 1)[local]
        else:
            slot = np.cumsum(valid, dtype=np.int64) - 1
        idx = pa.array(np.where(valid, slot, 0), mask=~valid)
        values = inner.values.take(idx)
        defs = (~valid).astype(np.uint16)
        return PageData(values, None, defs, self.layers, int(valid.size))

    def _valid_all(self, pos: np.ndarray) -> np.ndarray:
        valid = np.zeros(self.rows, bool) if not self.lay.null_positions else np.ones(self.rows, bool)
        valid[pos] = not self.lay.null_positions
        return valid
