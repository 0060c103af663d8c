"""Blob v1 pages (2.1 ``blob_layout``): an inner page of (position u64, size u64) descriptions.

pylance returns the descriptions, not the bytes: ``struct<position: uint64, size: uint64>``.
Levels are smuggled into the descriptions: size 0 and position != 0 marks a null whose
``rep = position & 0xFFFF`` and ``def = (position >> 16) & 0xFFFF``.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa

from .... import trace
from ...._proto import encodings_v2_1_pb2 as pb
from ....errors import CorruptFileError, UnsupportedFeatureError
from ...blob_types import DESCRIPTION
from .. import repdef
from ..page import Buf, PageContext, PageData, PageMeta
from .constant import ConstantPage
from .fullzip import FullZipPage
from .miniblock import MiniBlockPage

_INNER: dict[str, type[MiniBlockPage] | type[ConstantPage] | type[FullZipPage]] = {
    "mini_block_layout": MiniBlockPage, "constant_layout": ConstantPage, "full_zip_layout": FullZipPage}


class BlobPage:
    def __init__(self, ctx: PageContext, page: PageMeta, layout: pb.BlobLayout) -> None:
        self.ctx = ctx
        self.what = ctx.what
        self.layers = repdef.check_layers(layout.layers, self.what)
        if repdef.num_lists(self.layers):
            raise UnsupportedFeatureError(f"{self.what}: blob columns inside lists are not supported")
        inner_ctx = PageContext(ctx.what + " (blob descriptions)", DESCRIPTION, None, ctx.minor)
        inner = _wrap(layout.inner_layout)
        kind = inner.WhichOneof("layout")
        if kind not in _INNER:
            raise UnsupportedFeatureError(f"{self.what}: page layout {kind!r} inside a blob layout is not supported")
        self.inner = _INNER[kind](inner_ctx, page, getattr(inner, kind))
        self.rows = int(page.length)
        trace.record("layout:blob")

    def meta_ranges(self) -> list[tuple[int, int]]:
        return self.inner.meta_ranges()

    def set_meta(self, bufs: Sequence[Buf]) -> None:
        self.inner.set_meta(bufs)

    def data_ranges(self, local: np.ndarray | None) -> list[tuple[int, int]]:
        return self.inner.data_ranges(local)

    def decode(self, data: Sequence[Buf], local: np.ndarray | None) -> PageData:
        pd = self.inner.decode(data, local)
        desc = pd.values
        if not pa.types.is_struct(desc.type) or desc.type.num_fields != 2:
            raise CorruptFileError(f"{self.what}: blob descriptions are not (position, size) pairs")
        pos = desc.field(0).to_numpy(zero_copy_only=False).astype(np.uint64)
        size = desc.field(1).to_numpy(zero_copy_only=False).astype(np.uint64)
        is_null = (size == 0) & (pos != 0)
        defs = np.where(is_null, (pos >> np.uint64(16)) & np.uint64(0xFFFF), 0).astype(np.uint16)
        valid = ~is_null
        kids = [pa.array(np.where(valid, pos, 0), pa.uint64()), pa.array(size, pa.uint64())]
        mask = pa.array(is_null) if is_null.any() else None
        kids = [k if mask is None else pa.array(k.to_numpy(), mask=is_null) for k in kids]
        values = pa.StructArray.from_arrays(kids, fields=list(self.ctx.arrow_type))
        return PageData(values, None, defs if is_null.any() else None, self.layers, pd.num_rows)


def _wrap(inner: object) -> pb.PageLayout:
    if isinstance(inner, pb.PageLayout):
        return inner
    raise CorruptFileError("blob layout without an inner page layout")
