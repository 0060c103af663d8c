"""One row of a mini-block page read with Python ints (``path:point-row``): a point lookup's read.

A lean read (:class:`~.column.LeanColumn`) of a single row of a page without repetition or
definition levels locates the row's chunk by bisection over the page's chunk table (kept as
Python lists), parses the chunk header with ``struct`` and reads the one value where it lies:
an InlineBitpacking value (dictionary indices included) by its FastLanes position, a flat value
by its offset, a Variable / FSST-over-Variable string by its two offset words. Every size and
offset is checked as the vectorised path checks it; other encodings are not handled here (the
column's ordinary lean path reads them). The value becomes an Arrow array through the page's own
value finishing, so types and dictionaries come out exactly as from the other paths.
"""
from __future__ import annotations

from typing import Sequence

import struct
from bisect import bisect_right

import numpy as np
import pyarrow as pa

from ... import trace
from ...encodings import fastlanes, fsst
from ...errors import CorruptFileError
from . import _kernels
from .compression.common import encoding_kind
from .page import Buf, PageData
from .layouts.miniblock import MiniBlockPage
from .values import Fixed, VarBin

_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
#: offset width of the string / binary types a point read builds directly
_OFFSETS = {pa.string(): np.int32, pa.binary(): np.int32, pa.large_string(): np.int64,
            pa.large_binary(): np.int64}


def _plain_type(page: MiniBlockPage, kind: str, bits: int) -> pa.DataType | None:
    """The page's Arrow type when one value of it is built here straight from its bytes: a
    fixed-width number / temporal type of ``bits`` bits, or a plain string / binary type (no
    page or field dictionary, no extension type); else None (the page's value code finishes it)."""
    ctx = page.ctx
    t = ctx.arrow_type
    if page.has_dict or ctx.dict_type is not None or isinstance(t, pa.ExtensionType):
        return None
    if kind == "var":
        return t if t in _OFFSETS else None
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t):
        try:
            width = t.bit_width
        except ValueError:
            return None
        return t if width == bits and bits in _UINT else None
    return None


class PointPage:
    """A lean mini-block page ready for one-row reads (made once per page, shares nothing
    mutable): ``lean_plan`` / ``lean_decode`` as :class:`~.layouts.miniblock.MiniBlockPage`'s,
    for one local row."""

    def __init__(self, page: MiniBlockPage, kind: str, bits: int, symbols: bytes | None) -> None:
        self.page = page
        self.what = page.what
        self.kind = kind                 # "bp", "flat" or "var" (FSST when ``symbols``)
        self.bits = bits                 # bp: T; flat: bits per value; var: offset word bits
        self.symbols = symbols
        self.chunk_rows = page.chunk_rows.tolist()
        self.counts = page.counts.tolist()
        self.starts = page.starts.tolist()
        self.sizes = page.sizes.tolist()
        self.base = int(page.bufs[1][0])
        size_fmt = "I" if page.large else "H"
        self.header = struct.Struct("<H" + size_fmt * page.num_bufs)
        hdr = self.header.size
        self.hdr_pad = (hdr + 7) // 8 * 8
        self.plain = _plain_type(page, kind, bits)
        self._codes: list[bytes] | None = None      # FSST: each code's symbol (made on first use)
        self._fsst_enabled = True

    @classmethod
    def of(cls, page: MiniBlockPage) -> PointPage | None:
        """The point reader of a lean page, or None when its encoding is not one read here."""
        if page.has_rep or page.has_def or page.num_bufs < 1 or not len(page.counts):
            return None
        enc = page.lay.value_compression
        kind = encoding_kind(enc)
        if kind == "inline_bitpacking":
            t = int(enc.inline_bitpacking.uncompressed_bits_per_value)
            return cls(page, "bp", t, None) if t in _UINT else None
        if kind == "flat":
            bits = int(enc.flat.bits_per_value)
            return cls(page, "flat", bits, None) if bits in _UINT and not page.has_dict else None
        symbols = None
        if kind == "fsst":
            symbols = bytes(enc.fsst.symbol_table)
            enc = enc.fsst.values
            if encoding_kind(enc) != "variable":
                return None
            kind = "variable"
        if kind == "variable" and not page.has_dict:
            off = enc.variable.offsets
            if off.WhichOneof("compression") != "flat" or int(off.flat.bits_per_value) not in (32, 64):
                return None              # (2.3-coded offsets: the ordinary path)
            return cls(page, "var", int(off.flat.bits_per_value), symbols)
        return None

    def lean_plan(self, row: int) -> tuple[int, None, list[tuple[int, int]]]:
        """(the chunk holding local row ``row``, None, [its byte range])."""
        c = bisect_right(self.chunk_rows, row) - 1
        if c < 0 or row - self.chunk_rows[c] >= self.counts[c]:
            raise CorruptFileError(f"{self.what}: row {row} is in no chunk")
        return c, None, [(self.base + self.starts[c], self.sizes[c])]

    def lean_decode(self, data: Sequence[Buf], c: int, _runs: None, row: int) -> PageData:
        """The row's value from its chunk's bytes ``data[0]``."""
        trace.record("path:point-row")
        buf = data[0]
        if isinstance(buf, np.ndarray):
            buf = np.ascontiguousarray(buf).view(np.uint8).data
        size = self.sizes[c]
        if len(buf) != size or size < self.hdr_pad:
            raise CorruptFileError(f"{self.what}: chunk smaller than its header")
        words = self.header.unpack_from(buf, 0)
        at = self.hdr_pad                # the first value buffer (the one these encodings use)
        end = at
        for s in words[1:]:
            end += (s + 7) // 8 * 8
        if end > size:
            raise CorruptFileError(f"{self.what}: chunk buffers overrun the chunk")
        vsize = words[1]
        j = row - self.chunk_rows[c]
        p = self.page
        raw: Fixed | VarBin
        if self.kind == "var":
            raw = self._string(buf, at, vsize, j, self.counts[c])
            if self.plain is not None:   # (one string: its two offsets, no checks pass again)
                offs = np.array([0, raw.data.size], _OFFSETS[self.plain])
                arr = pa.Array.from_buffers(self.plain, 1, [None, pa.py_buffer(offs), pa.py_buffer(raw.data)],
                                            null_count=0)
                return PageData(arr, None, None, p.layers, 1)
        elif self.kind == "flat":
            nb = self.bits // 8
            if vsize < self.counts[c] * nb:
                raise CorruptFileError(f"{self.what}: flat chunk shorter than its values")
            if self.plain is not None:
                value = pa.py_buffer(bytes(buf[at + j * nb: at + (j + 1) * nb]))
                return PageData(pa.Array.from_buffers(self.plain, 1, [None, value], null_count=0),
                                None, None, p.layers, 1)
            raw = Fixed(np.frombuffer(buf, _UINT[self.bits], 1, at + j * nb), self.bits, 1)
        else:
            v = self._packed(buf, at, vsize, j)
            if self.plain is not None:
                value = pa.py_buffer(v.to_bytes(self.bits // 8, "little"))
                return PageData(pa.Array.from_buffers(self.plain, 1, [None, value], null_count=0),
                                None, None, p.layers, 1)
            if p.has_dict and p.ctx.dict_type is None and p.ctx.keep_dictionary:
                items = p._dictionary_items()
                if v >= len(items):
                    raise CorruptFileError(f"{self.what}: dictionary index {v} >= {len(items)} items")
                arr = pa.DictionaryArray.from_buffers(pa.dictionary(pa.int32(), items.type), 1,
                                                      [None, pa.py_buffer(v.to_bytes(4, "little"))],
                                                      items, null_count=0)
                return PageData(arr, None, None, p.layers, 1)
            raw = Fixed(np.array([v], _UINT[self.bits]), self.bits, 1)
        return PageData(p._values(raw, 1), None, None, p.layers, 1)

    def _packed(self, buf: bytes | memoryview, at: int, vsize: int, j: int) -> int:
        """Value ``j`` of an InlineBitpacking chunk (a T-bit width word, then one packed block)."""
        t = self.bits
        nb = t // 8
        width = int.from_bytes(buf[at: at + nb], "little") if vsize >= nb else -1
        if not 0 <= width <= t or vsize < nb + width * 1024 // 8 or j >= 1024:
            raise CorruptFileError(f"{self.what}: bit width outside 0..{t} or chunk shorter than its width needs")
        block = np.frombuffer(buf, np.uint8, vsize, at)
        one = np.array([nb, width, j], np.int64)
        return int(fastlanes.extract(block, one[:1], one[1:2], one[2:], t)[0])

    def _string(self, buf: bytes | memoryview, at: int, vsize: int, j: int, count: int) -> VarBin:
        """String ``j`` of a Variable chunk (its two offset words), FSST-decoded if need be."""
        ob = self.bits // 8
        if (count + 1) * ob > vsize:
            raise CorruptFileError(f"{self.what}: variable chunk shorter than its offsets")
        s = int.from_bytes(buf[at + j * ob: at + (j + 1) * ob], "little")
        e = int.from_bytes(buf[at + (j + 1) * ob: at + (j + 2) * ob], "little")
        if s < (count + 1) * ob or e < s or e > vsize:
            raise CorruptFileError(f"{self.what}: variable offsets are not increasing or leave the chunk")
        data = np.frombuffer(buf, np.uint8, e - s, at + s)
        offsets = np.array([0, e - s], np.int64)
        if self.symbols is None:
            return VarBin(offsets, data)
        text = self._fsst_plain(bytes(buf[at + s: at + e]))
        if text is not None:
            return VarBin(np.array([0, len(text)], np.int64), np.frombuffer(text, np.uint8))
        o, d = _kernels.fsst_decompress(self.symbols, offsets, data)
        return VarBin(o, d)

    def _fsst_plain(self, comp: bytes) -> bytes | None:
        """One FSST string without escapes, every code a defined symbol: its symbols joined (a
        C-level map over the codes, no numpy call); None for anything else (escapes, undefined
        codes: the vectorised decoder reads -- or rejects -- those)."""
        codes = self._codes
        if codes is None:
            st = fsst.parse_symbol_table(self.symbols)
            codes = self._codes = [] if not st.enabled else \
                [st.rows[c, :int(st.lengths[c])].tobytes() for c in range(st.num_symbols)]
            self._fsst_enabled = st.enabled
        if not self._fsst_enabled:
            return comp                  # (the encoder's switch off: the bytes are the text)
        if not comp:
            return b""
        if max(comp) >= len(codes):      # an escape (255) or an undefined code
            return None
        return b"".join(map(codes.__getitem__, comp))
