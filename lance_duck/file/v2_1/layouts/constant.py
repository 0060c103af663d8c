"""Constant / all-null pages (``constant_layout``): one value or null for every slot, plus levels.

| inline_value | buffers | meaning                                            |
| absent       | 0       | all null, no levels                                |
| absent       | 2       | all null; buffer 0 = rep, 1 = def (empty = absent) |
| present      | 0 / 2   | inline constant (+ rep, def)                       |
| absent       | 1 / 3   | constant in a value buffer (+ rep, def)  (2.2)     |

Level buffers are raw u16 unless rep/def compression is set (2.2).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa

from .... import trace
from ...._proto import encodings_v2_1_pb2 as pb
from ....errors import CorruptFileError
from .. import repdef
from ..compression import decode_block
from ..page import Buf, PageContext, PageData, PageMeta, entry_rows, trim
from ..values import as_fixed, uint_view
from .common import PageBase, u8


class ConstantPage(PageBase[pb.ConstantLayout]):
    def __init__(self, ctx: PageContext, page: PageMeta, layout: pb.ConstantLayout) -> None:
        super().__init__(ctx, page, layout)
        self.inline = layout.inline_value if layout.HasField("inline_value") else None
        nb = len(self.bufs)
        if nb not in (0, 1, 2, 3) or (self.inline is not None and nb not in (0, 2)):
            raise CorruptFileError(f"{self.what}: constant page with {nb} buffers")
        self.has_value_buf = self.inline is None and nb in (1, 3)
        self.all_null = self.inline is None and not self.has_value_buf
        trace.record("layout:constant:" + ("allnull" if self.all_null else "inline" if self.inline is not None
                                           else "valuebuf"))

    def meta_ranges(self) -> list[tuple[int, int]]:
        return []

    def set_meta(self, bufs: Sequence[Buf]) -> None:
        pass

    def data_ranges(self, local: np.ndarray | None) -> list[tuple[int, int]]:
        return list(self.bufs)

    def _levels(self, raw: np.ndarray, comp_field: str, n_field: str) -> np.ndarray | None:
        if raw.size == 0:
            return None
        if self.lay.HasField(comp_field):
            n = int(getattr(self.lay, n_field))
            trace.record("constant:compressed-levels")
            levels = as_fixed(decode_block(getattr(self.lay, comp_field), raw, n, self.what), self.what)
            return uint_view(levels).astype(np.uint16)
        if raw.size % 2:
            raise CorruptFileError(f"{self.what}: raw level buffer of odd size")
        return np.ascontiguousarray(raw).view("<u2")

    def decode(self, data: Sequence[Buf], local: np.ndarray | None) -> PageData:
        bufs = [u8(b) for b in data]
        value_buf = bufs.pop(0) if self.has_value_buf else None
        rep = defs = None
        if len(bufs) == 2:
            rep = self._levels(bufs[0], "rep_compression", "num_rep_values")
            defs = self._levels(bufs[1], "def_compression", "num_def_values")
        layers = self.layers
        max_rep = repdef.num_lists(layers)
        if rep is None and defs is None and self.all_null:
            # every row null at the innermost nullable layer
            if max_rep:
                raise CorruptFileError(f"{self.what}: all-null list page without levels")
            defs = np.ones(self.rows, np.uint16) if repdef.max_visible_def(layers) >= 1 else None
        n_entries = rep.size if rep is not None else defs.size if defs is not None else self.rows
        if defs is not None and defs.size != n_entries:
            raise CorruptFileError(f"{self.what}: {defs.size} def levels for {n_entries} entries")
        if rep is None and n_entries != self.rows:
            raise CorruptFileError(f"{self.what}: {n_entries} levels for {self.rows} rows")
        if local is not None:
            if rep is None:
                keep = local
                n_entries = keep.size
                defs = None if defs is None else defs[keep]
            else:
                er = entry_rows(rep, max_rep, 0)
                dummy = pa.nulls(self._slots(defs, n_entries, layers))
                _, rep, defs = trim(dummy, rep, defs, layers, er, local, self.what)
                assert rep is not None      # trim keeps the levels it is given
                n_entries = rep.size
        n_slots = self._slots(defs, n_entries, layers)
        values = self._value_array(value_buf, n_slots)
        return PageData(values, rep, defs, layers, self.rows if local is None else local.size)

    @staticmethod
    def _slots(defs: np.ndarray | None, n_entries: int, layers: list[int]) -> int:
        if defs is None:
            return n_entries
        return int(np.count_nonzero(defs <= repdef.max_visible_def(layers)))

    def _value_array(self, value_buf: np.ndarray | None, n: int) -> pa.Array:
        t = self.ctx.arrow_type
        if self.all_null:
            arr = pa.nulls(n, t)
        else:
            one = self._one_value(value_buf)
            arr = pa.repeat(one, n) if n else pa.array([], t)
            if arr.type != t:
                arr = arr.cast(t)
        if self.ctx.dict_type is not None:
            arr = arr.dictionary_encode().cast(self.ctx.dict_type) if not self.all_null else pa.nulls(n, self.ctx.dict_type)
        return arr

    def _one_value(self, value_buf: np.ndarray | None) -> pa.Scalar:
        t = self.ctx.arrow_type
        st = t.storage_type if isinstance(t, pa.ExtensionType) else t
        if self.inline is not None:
            raw = np.frombuffer(self.inline, np.uint8)
            if pa.types.is_boolean(st):
                arr = pa.array([bool(raw[0] & 1)]) if raw.size else None
            else:
                w = (st.bit_width or 0) // 8
                if w <= 0 or raw.size != w:
                    raise CorruptFileError(f"{self.what}: inline constant of {raw.size} bytes for {t}")
                arr = pa.Array.from_buffers(st, 1, [None, pa.py_buffer(raw.copy())])
            if arr is None:
                raise CorruptFileError(f"{self.what}: empty inline boolean constant")
        elif value_buf is None:
            raise CorruptFileError(f"{self.what}: constant page without its value")
        else:
            arr = _scalar_from_buffer(value_buf, st, self.what)
        if isinstance(t, pa.ExtensionType):
            arr = pa.ExtensionArray.from_storage(t, arr)
        return arr[0]


def _scalar_from_buffer(buf: np.ndarray, t: pa.DataType, what: str) -> pa.Array:
    """A length-1 Arrow array serialized as u32 count, u32 sizes, buffers (no validity)."""
    if buf.size < 4:
        raise CorruptFileError(f"{what}: constant value buffer too short")
    k = int(buf[:4].view("<u4")[0])
    if k > 8 or buf.size < 4 + 4 * k:
        raise CorruptFileError(f"{what}: constant value buffer declares {k} buffers")
    sizes = np.ascontiguousarray(buf[4: 4 + 4 * k]).view("<u4").astype(np.int64)
    pos = 4 + 4 * k
    parts = []
    for s in sizes.tolist():
        if pos + s > buf.size:
            raise CorruptFileError(f"{what}: constant value buffer truncated")
        parts.append(pa.py_buffer(buf[pos: pos + s].copy()))
        pos += s
    try:
        arr = pa.Array.from_buffers(t, 1, [None] + parts)
        arr.validate(full=True)
    except (pa.ArrowInvalid, ValueError, IndexError) as exc:
        raise CorruptFileError(f"{what}: constant value buffer does not hold a {t} value: {exc}") from exc
    return arr
