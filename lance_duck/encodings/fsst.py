"""FSST string decompression, vectorised.

Used by: 2.0 ``Fsst`` (symbol table + a ``Binary`` over compressed bytes) and 2.1/2.2 ``Fsst``
(symbol table + ``Variable`` compressed strings; mini-block chunks and full-zip values).

Symbol table (both versions; 2312 bytes in pylance files, only a prefix is meaningful)::

    u64 LE header: bits 32..63 magic "FSST" (0x46535354), bit 24 encoder switch,
                   bits 16..23 suffix limit, bits 8..15 terminator, bits 0..7 symbol count N
    N x 8 bytes    symbols (first byte first, unused bytes zero)
    N x u8         symbol lengths (1..8), immediately after the symbols

With the switch off the "compressed" bytes are the original bytes. Otherwise each byte is a code:
c < 255 emits ``symbol[c][:len[c]]``; 255 is an escape and the next byte is emitted literally.

Decoding: classify escapes from runs of 0xFF (even positions in a run are escapes, the byte after an
escape is a literal), map every byte to a token (code, or 256 + literal byte) and its output length,
take an exclusive cumsum for output positions and write every token's 8 table bytes at its position
in one ordered scatter (later tokens overwrite the spill of earlier ones). Work proceeds in cache-sized
blocks of whole strings.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import CorruptFileError
from ._buf import BufferLike, as_u8, need

__all__ = ["SymbolTable", "parse_symbol_table", "decompress", "FSST_MAGIC", "SYMBOL_TABLE_SIZE"]

FSST_MAGIC = 0x46535354
SYMBOL_TABLE_SIZE = 2312
ESC = 255
_BLOCK = 1 << 17  # compressed bytes per block
_BAD = 64         # length sentinel for codes the table does not define
_EMPTY = 512      # token of an escape byte: emits nothing (its zero bytes are overwritten)


@dataclass(frozen=True)
class SymbolTable:
    """A parsed FSST table: ``table`` is (513, 8) uint8 (256 codes, 256 literal pseudo-codes, escape),
    ``lengths`` the 513 output lengths (``_BAD`` for undefined codes, 0 for the escape token)."""

    num_symbols: int
    enabled: bool          # the encoder switch; False = bytes stored uncompressed
    table: np.ndarray
    lengths: np.ndarray

    @property
    def table64(self) -> np.ndarray:
        return self.table.view("<u8").reshape(-1)


def parse_symbol_table(data: BufferLike | SymbolTable) -> SymbolTable:
    """Parse the 2.0 / 2.1 / 2.2 FSST symbol table bytes."""
    if isinstance(data, SymbolTable):
        return data
    buf = as_u8(data)
    need(buf, 8, "FSST symbol table")
    header = int.from_bytes(buf[:8].tobytes(), "little")
    if (header >> 32) != FSST_MAGIC:
        raise CorruptFileError(f"FSST symbol table: bad magic 0x{header >> 32:08x}")
    n = header & 0xFF
    need(buf, 8 + 9 * n, f"FSST symbol table with {n} symbols")
    table = np.zeros((513, 8), np.uint8)  # 256 codes, 256 literals, 1 empty token for escapes
    table[:n] = buf[8: 8 + 8 * n].reshape(n, 8)
    table[256:512, 0] = np.arange(256, dtype=np.uint8)
    lengths = np.full(513, _BAD, np.uint8)
    lens = buf[8 + 8 * n: 8 + 9 * n]
    if n and (lens.min() < 1 or lens.max() > 8):
        raise CorruptFileError("FSST symbol table: symbol length outside 1..8")
    lengths[:n] = lens
    lengths[256:512] = 1
    lengths[_EMPTY] = 0
    return SymbolTable(n, bool(header >> 24 & 1), table, lengths)


def _decode_region(st: SymbolTable, region: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode compressed bytes; returns (output bytes, output position of every input byte + end)."""
    m = region.size
    tok = region.astype(np.uint16)
    ff = np.flatnonzero(region == ESC)
    if ff.size:
        # position of each 0xFF inside its run of consecutive 0xFF bytes: even = escape
        brk = np.empty(ff.size, np.bool_)
        brk[0] = True
        np.not_equal(ff[1:], ff[:-1] + 1, out=brk[1:])
        run_start = np.maximum.accumulate(np.where(brk, np.arange(ff.size), 0))
        esc = ff[((np.arange(ff.size) - run_start) & 1) == 0]
        lit = esc + 1
        if lit.size and lit[-1] >= m:
            raise CorruptFileError("FSST: compressed data ends with a dangling escape")
        tok[lit] += 256
        tok[esc] = _EMPTY
    lens = st.lengths[tok]
    if lens.max(initial=0) == _BAD:
        raise CorruptFileError(f"FSST: code outside the {st.num_symbols}-symbol table")
    pos = np.empty(m + 1, np.int64)
    pos[0] = 0
    np.cumsum(lens, out=pos[1:])
    total = int(pos[-1])
    out = np.zeros(total + 8, np.uint8)
    if m:
        starts = pos[:-1]
        vals = st.table64[tok]
        windows = np.ndarray(shape=(total + 1,), dtype="<u8", buffer=out, strides=(1,))
        windows[starts] = vals  # ordered scatter: each later token overwrites the previous spill
    return out[:total], pos


def decompress(symbol_table: BufferLike | SymbolTable, offsets: np.ndarray, data: BufferLike
               ) -> tuple[np.ndarray, np.ndarray]:
    """Decompress strings ``data[offsets[i]:offsets[i+1]]``; returns (int64 offsets from 0, uint8 bytes)."""
    st = parse_symbol_table(symbol_table)
    buf = as_u8(data)
    offs = np.asarray(offsets).astype(np.int64, copy=False)
    if offs.size == 0:
        return np.zeros(1, np.int64), np.empty(0, np.uint8)
    base, end = int(offs[0]), int(offs[-1])
    if base < 0 or end > buf.size or (offs.size > 1 and (np.diff(offs) < 0).any()):
        raise CorruptFileError("FSST: string offsets are not increasing within the data buffer")
    if not st.enabled:
        return offs - base, buf[base:end]
    rel = offs - base
    if end - base <= _BLOCK:
        out, pos = _decode_region(st, buf[base:end])
        return pos[rel], out
    # blocks of whole strings, ~_BLOCK compressed bytes each
    cuts = np.searchsorted(rel, np.arange(_BLOCK, end - base, _BLOCK), side="left")
    cuts = np.unique(np.concatenate([[0], cuts, [rel.size - 1]]))
    parts = []
    out_offs = np.empty(rel.size, np.int64)
    done = 0
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        out, pos = _decode_region(st, buf[base + rel[a]: base + rel[b]])
        out_offs[a: b + 1] = pos[rel[a: b + 1] - rel[a]] + done
        done += out.size
        parts.append(out)
    return out_offs, np.concatenate(parts)
