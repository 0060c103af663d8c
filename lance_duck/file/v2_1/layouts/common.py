"""Helpers shared by the page layouts: byte views, value finishing, dictionaries, the page base."""
from __future__ import annotations

from typing import Generic, Iterable, Protocol, TypeVar

import numpy as np
import pyarrow as pa

from ....errors import CorruptFileError
from .. import repdef
from ..page import Buf, PageContext, PageMeta
from ..values import Fixed, Values, to_arrow, uint_view


def u8(b: Buf) -> np.ndarray:
    if isinstance(b, np.ndarray):
        return b.view(np.uint8).reshape(-1)
    return np.frombuffer(b, np.uint8)


def finish_values(ctx: PageContext, raw: Values, n: int) -> pa.Array:
    """Decoded values -> Arrow array of the leaf type (dictionary-typed fields: see apply_dictionary)."""
    if ctx.dict_type is not None:
        # a dictionary-typed field written without a page dictionary: encode on the fly
        arr = to_arrow(raw, ctx.arrow_type)
        return arr.dictionary_encode().cast(ctx.dict_type)
    arr = to_arrow(raw, ctx.arrow_type)
    if len(arr) != n:
        raise CorruptFileError(f"{ctx.what}: decoded {len(arr)} values, expected {n}")
    return arr


def apply_dictionary(ctx: PageContext, dict_vals: Values, indices: np.ndarray | pa.Array) -> pa.Array:
    """Page values from dictionary items (decoded, or already Arrow) and indices (a DictionaryArray
    for dictionary fields)."""
    items = dict_vals if isinstance(dict_vals, pa.Array) else to_arrow(dict_vals, ctx.arrow_type)
    idx = np.asarray(indices)
    if idx.size and int(idx.max()) >= len(items):
        raise CorruptFileError(f"{ctx.what}: dictionary index {int(idx.max())} >= {len(items)} items")
    if ctx.dict_type is not None:
        keys = pa.array(idx.astype(np.dtype(str(ctx.dict_type.index_type)), copy=False))
        return pa.DictionaryArray.from_arrays(keys, items)
    if ctx.keep_dictionary:
        # (unsigned 32-bit indices, each below the item count just checked: the same bits as int32)
        keys = idx.view(np.int32) if idx.dtype == np.uint32 else idx.astype(np.int32, copy=False)
        # unsigned indices were just checked below the item count: Arrow's own check (a second
        # pass over the indices, ~0.3 ms per 500k) is skipped; signed ones keep it
        return pa.DictionaryArray.from_arrays(pa.array(keys), items, safe=idx.dtype.kind != "u")
    return items.take(pa.array(idx))


__all__ = ["u8", "finish_values", "apply_dictionary", "Fixed", "uint_view"]


class Layered(Protocol):
    """A page layout message with rep/def layers (mini-block, constant, full-zip)."""

    @property
    def layers(self) -> Iterable[int]: ...


L = TypeVar("L", bound=Layered)


class PageBase(Generic[L]):
    """What every page layout keeps: its context, layout message, layers, buffers and row count."""

    def __init__(self, ctx: PageContext, page: PageMeta, layout: L) -> None:
        self.ctx = ctx
        self.what = ctx.what
        self.lay = layout
        self.layers = repdef.check_layers(layout.layers, self.what)
        self.bufs = list(zip(page.buffer_offsets, page.buffer_sizes))
        self.rows = int(page.length)
