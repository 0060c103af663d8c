"""2.3 indexed zipped values: a dictionary stored as a full-zip page plus one index per slot.

The dictionary (buffers 1 and 2: zipped items and their repetition index) is read and decoded
with the page metadata, once; the indices (buffer 0) are decoded for the whole page and the
selected slots taken from the dictionary.
"""
from __future__ import annotations

from typing import Sequence


import numpy as np

from ....errors import CorruptFileError
from .. import repdef
from ..compression import decode_block
from ..page import Buf, PageBuffers, PageContext, PageData, PageMeta
from ..planar23 import IndexedLayout
from ..values import as_fixed, uint_view
from .common import apply_dictionary, u8
from .fullzip import FullZipPage


class IndexedPage:
    """One page (or the values of a sparse page) of indexed zipped values."""

    def __init__(self, ctx: PageContext, page: PageMeta, layout: IndexedLayout) -> None:
        self.ctx = ctx
        self.what = ctx.what
        self.lay = layout
        self.rows = int(page.length)
        self.layers = [repdef.ALL_VALID_ITEM]
        bufs = list(zip(page.buffer_offsets, page.buffer_sizes))
        if len(bufs) != 3:
            raise CorruptFileError(f"{self.what}: indexed zipped values with {len(bufs)} buffers (expected 3)")
        self.index_buf = bufs[0]
        items = PageBuffers([b[0] for b in bufs[1:]], [b[1] for b in bufs[1:]], layout.num_dictionary_items)
        dict_ctx = PageContext(ctx.what + " dictionary", ctx.arrow_type, None, ctx.minor)
        self.items = FullZipPage(dict_ctx, items, layout.dictionary.full_zip_layout)

    def meta_ranges(self) -> list[tuple[int, int]]:
        return self.items.meta_ranges() + self.items.data_ranges(None)

    def set_meta(self, bufs: Sequence[Buf]) -> None:
        k = len(self.items.meta_ranges())
        self.items.set_meta(bufs[:k])
        self.items.data_ranges(None)
        self.dictionary = self.items.decode(list(bufs[k:]), None).values

    def data_ranges(self, local: np.ndarray | None) -> list[tuple[int, int]]:
        return [self.index_buf]

    def decode(self, data: Sequence[Buf], local: np.ndarray | None) -> PageData:
        idx = uint_view(as_fixed(decode_block(self.lay.indices, u8(data[0]), self.rows, self.what), self.what)).astype(np.int64)
        if local is not None:
            idx = idx[local]
        values = apply_dictionary(self.ctx, self.dictionary, idx)
        return PageData(values, None, None, self.layers, int(idx.size))
