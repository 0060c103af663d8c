"""Reader of the Rust ``fst`` crate's serialized map (format version 3), which holds an INVERTED
index partition's tokens: token bytes -> token id.

Layout (learned from the crate's documentation and pylance's files): a 16-byte header (u64 version,
u64 type), then nodes written leaves first; a node is read *backwards* from its state byte at its
address. The file ends with u64 key count, u64 root address and a u32 checksum (masked CRC-32C). A key's value is
the sum of the outputs on its path plus the final node's final output.

State byte, top bits: ``11`` one transition to the node written just before (no output); ``10``
one transition with an explicit address and an output; ``0F`` any number of transitions (F =
final). The low six bits name a common input byte (or 0: the byte follows). Address 0 is the empty
final node; a transition address is stored as a delta back from the node's first byte.
"""
from __future__ import annotations

import struct

from ...errors import CorruptFileError

_COMMON = (b"te/oasripcnw.hlm-du012g=:bf3y5&_4v9678k%?xCDASFIBEjPTzRNM+LOqHGWUV,YKJZXQ;)(~[]$!'*@"
           + bytes(range(0, 32)) + b' "#<>\\^`{|}' + bytes(range(0x7F, 0x100)))
_INDEX_THRESHOLD = 32      # AnyTrans nodes with more transitions carry a 256-byte input index
_VERSION = 3
#: the footer's checksum (masked CRC-32C of every byte before it) is checked up to this size (a
#: pure-Python CRC costs ~0.5 s per MiB; larger FSTs get the structural checks only)
CHECKSUM_MAX_BYTES = 1 << 20


def _crc_table() -> list[int]:
    out = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        out.append(c)
    return out


_CRC = _crc_table()


def masked_crc32c(data: bytes) -> int:
    """CRC-32C of ``data``, masked as the ``fst`` crate stores it."""
    c = 0xFFFFFFFF
    table = _CRC
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    c ^= 0xFFFFFFFF
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _common(idx: int) -> int | None:
    return None if idx == 0 else _COMMON[idx - 1]


class FstMap:
    """One serialized map; :meth:`get` walks only the key's path, :meth:`items` decodes all of it."""

    def __init__(self, data: bytes, what: str):
        self.data = bytes(data)
        self.what = what
        n = len(self.data)
        if n < 36:
            raise CorruptFileError(f"{what}: token FST of {n} bytes is truncated")
        version, _ty = struct.unpack_from("<QQ", self.data, 0)
        if version != _VERSION:
            raise CorruptFileError(f"{what}: token FST format version {version} (3 is read)")
        self.count, self.root = struct.unpack_from("<QQ", self.data, n - 20)
        if n <= CHECKSUM_MAX_BYTES:
            (stored,) = struct.unpack_from("<I", self.data, n - 4)
            if masked_crc32c(self.data[:-4]) != stored:
                raise CorruptFileError(f"{what}: token FST checksum mismatch")
        if not 16 <= self.root < n - 20:
            raise CorruptFileError(f"{what}: token FST root address {self.root} is out of range")

    def __len__(self) -> int:
        return int(self.count)

    # -- nodes -------------------------------------------------------------------------------------
    def _uint(self, at: int, size: int) -> int:
        if at < 0 or at + size > len(self.data):
            raise CorruptFileError(f"{self.what}: token FST node reads outside the data")
        return int.from_bytes(self.data[at:at + size], "little")

    def _node(self, addr: int) -> tuple[bool, int, list[tuple[int, int, int]]]:
        """(final, final output, [(input byte, output, target address)]) of the node at ``addr``."""
        d = self.data
        if not 0 <= addr < len(d):
            raise CorruptFileError(f"{self.what}: token FST address {addr} is out of range")
        if addr == 0:      # the empty final node written first
            return True, 0, []
        s = d[addr]
        kind = s >> 6
        if kind == 0b11:                      # one transition to the node written just before
            c = _common(s & 0x3F)
            inp = c if c is not None else d[addr - 1]
            end = addr - (0 if c is not None else 1)
            return False, 0, [(inp, 0, end - 1)]
        if kind == 0b10:                      # one transition, explicit address
            c = _common(s & 0x3F)
            ilen = 0 if c is not None else 1
            inp = c if c is not None else d[addr - 1]
            sizes = d[addr - ilen - 1]
            tsize, osize = sizes >> 4, sizes & 0x0F
            at = addr - ilen - 1 - tsize
            delta = self._uint(at, tsize)
            out = self._uint(at - osize, osize)
            end = at - osize
            return False, 0, [(inp, out, end - delta if delta else 0)]
        final = bool(s & 0x40)
        n = s & 0x3F
        nlen = 0
        if n == 0:
            n = d[addr - 1]
            n = 256 if n == 1 else n
            nlen = 1
        sizes = d[addr - nlen - 1]
        tsize, osize = sizes >> 4, sizes & 0x0F
        index = 256 if n > _INDEX_THRESHOLD else 0
        inputs_end = addr - nlen - 1 - index          # inputs in [inputs_end - n, inputs_end), last first
        taddr_end = inputs_end - n
        outs_end = taddr_end - n * tsize
        end = outs_end - n * osize - (osize if final else 0)
        trans = []
        for i in range(n):
            inp = d[inputs_end - 1 - i]
            delta = self._uint(taddr_end - (i + 1) * tsize, tsize)
            out = self._uint(outs_end - (i + 1) * osize, osize) if osize else 0
            trans.append((inp, out, end - delta if delta else 0))
        fout = self._uint(end, osize) if (final and osize) else 0
        return final, fout, trans

    # -- queries -----------------------------------------------------------------------------------
    def get(self, key: bytes) -> int | None:
        """The value of ``key``, or None when the map does not hold it."""
        addr, total = int(self.root), 0
        for b in key:
            final, _, trans = self._node(addr)
            for inp, out, target in trans:
                if inp == b:
                    total += out
                    addr = target
                    break
            else:
                return None
        final, fout, _ = self._node(addr)
        return total + fout if final else None

    def items(self) -> dict[bytes, int]:
        """Every key and value (a depth-first walk; for fuzzy and prefix matching)."""
        out: dict[bytes, int] = {}
        stack = [(int(self.root), b"", 0)]
        while stack:
            addr, prefix, total = stack.pop()
            final, fout, trans = self._node(addr)
            if final:
                out[prefix] = total + fout
            for inp, o, target in trans:
                stack.append((target, prefix + bytes((inp,)), total + o))
        if len(out) != self.count:
            raise CorruptFileError(f"{self.what}: token FST holds {len(out)} keys, its footer says {self.count}")
        return out
