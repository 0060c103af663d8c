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

Decoding is an Arrow ``take``: the table becomes a 512-entry ``binary`` array (codes 0..254, the
escape as an empty value, then the 256 one-byte literals), every compressed byte becomes a token
(its code, or ``256 + byte`` after an escape), and taking the tokens from the table writes the
output bytes and the offsets of every token in C++. Escapes are classified from runs of 0xFF
(even positions in a run are escapes, the byte after an escape is a literal); without escapes the
compressed bytes are the tokens as they are (uint8, no copy). Arrow's binary take costs ~7 ns
per token whatever the token length, so an escape-free input of at least
:data:`PAIR_MIN_TOKENS` codes whose strings average :data:`PAIR_MIN_CODES_PER_STRING` codes
is read as uint16 code pairs and taken from a 65536-entry pair
table (built with one 131072-entry take, ~1 ms; the halved token count makes long FSST strings
~1.6x faster). Tried, and slower or no faster (session 9 measured them again, thread CPU
time, pylance pages): numpy scatters of padded 8-byte symbols (overlapping unaligned uint64
stores, ~10 ns per code), an Arrow bitmap filter over symbols gathered as fixed 8- or 16-byte
slots (per-run memcpy: 8.4 / 5.8 ns per code against 7.3 single / 6.0 paired takes), binary-view
arrays built in numpy (one 16-byte view per code or pair) cast to ``binary`` (~5.5 ns per item),
a per-byte index (``np.repeat``) gather (~22 ns per code), list-view compaction (flatten ~470 ns
per code), a numpy-built pair table (3x slower to build than the take); measured again later (CPU time, the
``fsst_strings`` pages: 14M codes of 1.8 bytes): the output as little-endian 64-bit words, each
code's symbol shifted to its byte position, a cumsum of the shifted symbols differenced at word
boundaries plus the spill of each word's last code (no compaction; blocks of 32-128K codes):
6.5-7.5 ns per code, no faster than the take; symbols gathered as 8-byte slots and compacted
by an Arrow filter with a gathered per-code length bitmap: 9.7 ns. Every Arrow kernel that
writes variable-width items pays ~5-7 ns per item (a memcpy call and a Status per item); fewer,
longer items (pairs) are the only lever. Code pairs do not pay for short strings (~5 codes): the
pair table of a page costs ~1 ms to build and misses the L2 cache (600 KB), and the fix-up of
strings ending inside a pair eats the rest. Large inputs are cut at string boundaries into
pieces of about :data:`PIECE_TOKENS` tokens -- on the calling thread, from
:data:`PARALLEL_MIN_TOKENS` on, in a multiple of the kernel pool's workers -- taken concurrently
on the pool (on a pool thread, decoding one of several pages, with the help of the idle worker)
and joined with one copy, split on the pool as well; mini-block pages are instead split into
groups of whole chunks by the 2.1+ reader (``file/v2_1/compression/miniblock._mb_fsst_grouped``),
which run on the same pool.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Callable, Sequence
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _state
from .. import trace
from ..errors import CorruptFileError
from . import _compiled, _threads
from ._buf import BufferLike, as_u8, empty, need

__all__ = ["SymbolTable", "parse_symbol_table", "decompress", "decompress_many", "FSST_MAGIC", "SYMBOL_TABLE_SIZE"]

FSST_MAGIC = 0x46535354
SYMBOL_TABLE_SIZE = 2312
ESC = 255
PIECE_TOKENS = 1 << 20  # tokens per piece of a large input (see the module docstring)
PARALLEL_MIN_TOKENS = 1 << 19  # inputs this large are split for the kernel pool's threads
PAIR_MIN_TOKENS = 1 << 18  # escape-free inputs this large are taken two codes at a time ...
PAIR_MIN_CODES_PER_STRING = 8  # ... when their strings average this many codes
SHORT_MAX_CODES_PER_STRING = 8  # compiled: escape-free strings averaging fewer codes take the flat kernel
_SMALL_TOKENS = (1 << 31) // 8  # fewer tokens than this cannot produce 2 GiB of output
FEW_STRINGS, FEW_STRING_BYTES = 16, 1024  # at most this many strings of this many code bytes: symbols joined
TINY_TOKENS = 256  # inputs this small (a few selected strings) are expanded in numpy: an Arrow
# take releases and re-takes the GIL, which costs 0.1-0.2 ms under DuckDB's threads


@dataclass(frozen=True)
class SymbolTable:
    """A parsed FSST table: ``values`` is the 512-entry ``binary`` token table (codes 0..254
    (undefined ones empty), the escape 255 empty, literal byte b at 256 + b)."""

    num_symbols: int
    enabled: bool          # the encoder switch; False = bytes stored uncompressed
    values: pa.BinaryArray
    lengths: np.ndarray    # output length of the 512 tokens
    rows: np.ndarray       # the 512 tokens' bytes as rows of 8 (zero-padded), for tiny inputs

    @cached_property
    def codes(self) -> list[bytes]:
        """Each defined code's symbol as ``bytes`` (codes ``0 .. num_symbols - 1``), for :func:`_join_few`."""
        return [self.rows[c, :int(self.lengths[c])].tobytes() for c in range(self.num_symbols)]

    @cached_property
    def large_values(self) -> pa.LargeBinaryArray:
        """``values`` with int64 offsets (for a piece whose output could pass 2 GiB)."""
        return self.values.cast(pa.large_binary())

    @cached_property
    def pairs(self) -> pa.BinaryArray:
        """The 65536-entry table of code pairs: entry ``a + 256 * b`` is ``values[a] + values[b]``
        (codes 0..255; 255, the escape, is empty and pads an odd token count)."""
        codes = np.empty((256, 256, 2), np.uint8)       # [b, a] -> (a, b)
        codes[:, :, 0] = np.arange(256, dtype=np.uint8)[None, :]
        codes[:, :, 1] = np.arange(256, dtype=np.uint8)[:, None]
        both = pc.take(self.values, pa.array(codes.reshape(-1)))
        _, offs, data = both.buffers()
        # entries a and b are adjacent in ``both``: the pair spans the offsets 2j .. 2j + 2
        pair_offs = np.frombuffer(offs, np.int32, 2 * 65536 + 1)[::2].copy()
        return pa.BinaryArray.from_buffers(pa.binary(), 65536, [None, pa.py_buffer(pair_offs), data])


def parse_symbol_table(data: BufferLike | SymbolTable) -> SymbolTable:
    """Parse the 2.0 / 2.1 / 2.2 FSST symbol table bytes (``bytes`` -- a page's metadata -- are
    parsed once: repeated reads of a page reuse the table and its pair table)."""
    if isinstance(data, SymbolTable):
        return data
    if isinstance(data, bytes):
        return _parse_cached(data)
    return _parse(data)


@_state.memo("fsst_tables")   # a pair table is ~0.6 MB
def _parse_cached(data: bytes) -> SymbolTable:
    return _parse(data)


def _parse(data: BufferLike) -> SymbolTable:
    buf = as_u8(data)
    need(buf, 8, "FSST symbol table")
    header = int.from_bytes(buf[:8].tobytes(), "little")
    if (header >> 32) != FSST_MAGIC:
        raise CorruptFileError(f"FSST symbol table: bad magic 0x{header >> 32:08x}")
    n = header & 0xFF
    need(buf, 8 + 9 * n, f"FSST symbol table with {n} symbols")
    lens = buf[8 + 8 * n: 8 + 9 * n]
    if n and (lens.min() < 1 or lens.max() > 8):
        raise CorruptFileError("FSST symbol table: symbol length outside 1..8")
    table = np.zeros((512, 8), np.uint8)
    table[:n] = buf[8: 8 + 8 * n].reshape(n, 8)
    table[256:, 0] = np.arange(256, dtype=np.uint8)
    lengths = np.zeros(512, np.int64)
    lengths[:n] = lens
    lengths[256:] = 1
    offsets = np.zeros(513, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data_bytes = table[np.arange(8) < lengths[:, None]]
    values = pa.BinaryArray.from_buffers(pa.binary(), 512,
                                         [None, pa.py_buffer(offsets), pa.py_buffer(data_bytes)])
    return SymbolTable(n, bool(header >> 24 & 1), values, lengths.astype(np.uint8), table)


def _tokens(st: SymbolTable, region: np.ndarray) -> np.ndarray:
    """Token of every compressed byte (uint8 codes when there is no escape), validated."""
    m = region.size
    top = int(region.max()) if m else 0  # cheap, and no mask as large as the input
    ff = np.flatnonzero(region == ESC) if top == ESC else np.empty(0, np.int64)
    if ff.size == 0:
        tok, lit = region, ff
    else:
        # position of each 0xFF inside its run of consecutive 0xFF bytes: even = escape
        brk = np.empty(ff.size, np.bool_)
        brk[0] = True
        np.not_equal(ff[1:], ff[:-1] + 1, out=brk[1:])
        run_start = np.maximum.accumulate(np.where(brk, np.arange(ff.size), 0))
        esc = ff[((np.arange(ff.size) - run_start) & 1) == 0]
        lit = esc + 1
        if lit[-1] >= m:
            raise CorruptFileError("FSST: compressed data ends with a dangling escape")
        tok = region.astype(np.uint16)
        tok[lit] += 256
        trace.record("path:fsst:escapes")
    n = st.num_symbols
    if n < ESC and top >= n:
        # codes n..254 are undefined: bytes >= n that are neither escapes nor literals
        over = int(np.count_nonzero(region >= n)) - lit.size
        if lit.size:
            over -= int(np.count_nonzero(region[lit] >= n))
        if over > 0:
            raise CorruptFileError(f"FSST: code outside the {n}-symbol table")
    return tok


def decompress(symbol_table: BufferLike | SymbolTable, offsets: np.ndarray, data: BufferLike,
               *, int32_offsets: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Decompress strings ``data[offsets[i]:offsets[i+1]]``; returns (offsets from 0, uint8 bytes).

    The offsets are int64, or with ``int32_offsets`` int32 whenever the output is certain to
    stay below 2 GiB (fewer than 2**28 tokens of at most 8 bytes) -- the offsets of an Arrow
    ``string`` / ``binary`` array as they are, with no conversion pass."""
    st = parse_symbol_table(symbol_table)
    buf = as_u8(data)
    offs = np.asarray(offsets).astype(np.int64, copy=False)
    if offs.size == 0:
        return np.zeros(1, np.int64), np.empty(0, np.uint8)
    base, end = int(offs[0]), int(offs[-1])
    if base < 0 or end > buf.size or (offs[1:] < offs[:-1]).any():
        raise CorruptFileError("FSST: string offsets are not increasing within the data buffer")
    small = int32_offsets and end - base < _SMALL_TOKENS
    if not st.enabled:
        return (offs - base).astype(np.int32 if small else np.int64, copy=False), buf[base:end]
    if offs.size <= FEW_STRINGS + 1 and end - base <= FEW_STRING_BYTES:
        few = _join_few(st, buf[base:end].tobytes(), (offs - base).tolist(), small)
        if few is not None:
            return few
    kernels = _compiled.fsst_kernels(end - base) if end > base else None
    if kernels is not None:
        return _decompress_compiled(kernels, st, buf, offs, small)
    tok = _tokens(st, buf[base:end])
    rel = offs - base if base else offs
    nstr = rel.size - 1
    # pairs pay off for long strings only (short ones spend the gain on their odd ends)
    pairs = tok.dtype == np.uint8 and tok.size >= max(PAIR_MIN_TOKENS, PAIR_MIN_CODES_PER_STRING * nstr)
    if pairs:
        trace.record("path:fsst:pairs")
        _ = st.pairs      # built once, before the pieces run concurrently
    out = empty(nstr + 1, np.int32 if small else np.int64)
    out[0] = 0
    pieces = min(_piece_count(tok.size), nstr)
    if pieces < 2:
        return out, _take_strings(st, tok, rel[1:], out[1:], pairs)
    # cut at the first string boundary at or after every PIECE_TOKENS-th token (a long string
    # stays whole); the piece of strings a..b writes their end offsets, relative to its first
    # output byte, into out[a+1 : b+1] and is then shifted by the bytes of the pieces before it
    step = -(-tok.size // pieces)
    cuts = np.searchsorted(rel, np.arange(step, tok.size, step, dtype=np.int64)).tolist()
    bounds = [0] + sorted({c for c in cuts if 0 < c < nstr}) + [nstr]

    def piece(ab: tuple[int, int]) -> np.ndarray:
        a, b = ab
        r0 = int(rel[a])
        return _take_strings(st, tok[r0: rel[b]], rel[a + 1: b + 1] - r0, out[a + 1: b + 1], pairs)
    spans = list(zip(bounds[:-1], bounds[1:]))
    trace.record("path:fsst:pieces", len(spans))
    datas = _threads.map_parts(piece, spans)
    starts = np.cumsum([0] + [d.size for d in datas]).tolist()
    joined = empty(starts[-1], np.uint8)

    def place(i: int) -> None:   # one add and one copy per piece (of ~PIECE_TOKENS tokens)
        (a, b), d = spans[i], datas[i]
        if starts[i]:
            out[a + 1: b + 1] += starts[i]
        joined[starts[i]: starts[i + 1]] = d
    _threads.map_parts(place, range(len(spans)))   # (split too: the copies are column-sized)
    return out, joined


def _checked(symbol_table: BufferLike | SymbolTable, offsets: np.ndarray, data: BufferLike
             ) -> tuple[SymbolTable, np.ndarray, np.ndarray]:
    """(parsed table, bytes, int64 offsets) of one input, its offsets checked increasing inside its bytes."""
    st = parse_symbol_table(symbol_table)
    buf = as_u8(data)
    offs = np.asarray(offsets).astype(np.int64, copy=False)
    if offs.size == 0:
        raise CorruptFileError("FSST: an input without string offsets")
    if int(offs[0]) < 0 or int(offs[-1]) > buf.size or (offs[1:] < offs[:-1]).any():
        raise CorruptFileError("FSST: string offsets are not increasing within the data buffer")
    return st, buf, offs


def decompress_many(inputs: Sequence[tuple[BufferLike | SymbolTable, np.ndarray, BufferLike]], *,
                    int32_offsets: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """:func:`decompress` of several inputs -- each ``(symbol table, offsets, data)``, e.g. the
    pages of one column -- into one output: every input's strings in order, as (offsets from 0,
    bytes). The pieces of all inputs are decoded side by side on the kernel pool and land in the
    one output (numpy: one join of the pieces; compiled: written in place), so a column of many
    pages is not joined once per page and again across pages."""
    if len(inputs) == 1:
        return decompress(*inputs[0], int32_offsets=int32_offsets)
    checked = [_checked(*i) for i in inputs]
    nstr = [o.size - 1 for _, _, o in checked]
    codes = [int(o[-1] - o[0]) for _, _, o in checked]
    total_codes = sum(codes)
    small = int32_offsets and total_codes < _SMALL_TOKENS
    out = empty(sum(nstr) + 1, np.int32 if small else np.int64)
    out[0] = 0
    first = np.cumsum([0] + nstr).tolist()          # each input's first string in ``out``
    pieces = max(1, _piece_count(total_codes))
    step = max(1, -(-total_codes // pieces))
    kernels = _compiled.fsst_kernels(total_codes) if all(st.enabled for st, _, _ in checked) else None
    if kernels is not None:
        return _many_compiled(kernels, checked, out, first, step)
    work: list[tuple[int, int, int, Callable[[], np.ndarray]]] = []   # (first string of its input, a, b, run)
    for (st, buf, offs), g in zip(checked, first):
        work.extend((g, a, b, run) for a, b, run in _numpy_pieces(st, buf, offs, out[g:], step))
    trace.record("path:fsst:many", (len(checked), len(work)))
    datas = _threads.map_parts(lambda w: w[3](), work)
    return out, _join_pieces(out, [(g, a, b) for g, a, b, _ in work], datas)


def _numpy_pieces(st: SymbolTable, buf: np.ndarray, offs: np.ndarray, out: np.ndarray, step: int
                  ) -> list[tuple[int, int, Callable[[], np.ndarray]]]:
    """The pieces of one input of :func:`decompress_many` (numpy kernels), ``(a, b, run)``:
    ``run()`` writes the ends of strings ``a .. b - 1``, relative to the piece's own first output
    byte, into ``out[a + 1 : b + 1]`` and returns the piece's bytes."""
    base, end = int(offs[0]), int(offs[-1])
    nstr = offs.size - 1
    rel = offs - base if base else offs
    if not st.enabled or nstr == 0:
        def raw() -> np.ndarray:      # (the encoder switch off: the bytes as they are)
            np.copyto(out[1: nstr + 1], rel[1:], casting="unsafe")
            return buf[base:end]
        return [(0, nstr, raw)]
    tok = _tokens(st, buf[base:end])
    pairs = tok.dtype == np.uint8 and tok.size >= max(PAIR_MIN_TOKENS, PAIR_MIN_CODES_PER_STRING * nstr)
    if pairs:
        trace.record("path:fsst:pairs")
        _ = st.pairs      # built once, before the pieces run concurrently
    cuts = np.searchsorted(rel, np.arange(step, tok.size, step, dtype=np.int64)).tolist()
    bounds = [0] + sorted({c for c in cuts if 0 < c < nstr}) + [nstr]

    def piece(a: int, b: int) -> Callable[[], np.ndarray]:
        def run() -> np.ndarray:
            r0 = int(rel[a])
            return _take_strings(st, tok[r0: rel[b]], rel[a + 1: b + 1] - r0, out[a + 1: b + 1], pairs)
        return run
    return [(a, b, piece(a, b)) for a, b in zip(bounds[:-1], bounds[1:])]


def _join_pieces(out: np.ndarray, spans: list[tuple[int, int, int]], datas: list[np.ndarray]) -> np.ndarray:
    """Pieces' bytes joined into one buffer, each piece's string ends (``out[g + a + 1 : g + b + 1]``,
    relative to its own bytes) shifted by the bytes before it; one add and one copy per piece,
    split on the kernel pool."""
    starts = np.cumsum([0] + [d.size for d in datas]).tolist()
    joined = empty(starts[-1], np.uint8)

    def place(i: int) -> None:
        g, a, b = spans[i]
        if starts[i]:
            out[g + a + 1: g + b + 1] += starts[i]
        joined[starts[i]: starts[i + 1]] = datas[i]
    _threads.map_parts(place, range(len(datas)))
    return joined


def _many_compiled(kernels: ModuleType, checked: list[tuple[SymbolTable, np.ndarray, np.ndarray]],
                   out: np.ndarray, first: list[int], step: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`decompress_many` with the compiled kernels: the output size of every piece of every
    input, then each piece expanded straight into its span of the one output (its string ends
    written as final offsets)."""
    spans: list[tuple[int, int, int]] = []   # (input, first string, last string + 1)
    ins = []
    for k, (st, buf, offs) in enumerate(checked):
        nstr = offs.size - 1
        base, end = int(offs[0]), int(offs[-1])
        nsym = min(st.num_symbols, ESC)
        escapes = end > base and int(buf[base:end].max()) >= nsym
        if escapes:
            trace.record("path:fsst:escapes")
        ins.append((kernels.readonly(buf), kernels.readonly(offs), st.rows[:256].view("<u8").reshape(-1),
                    nsym, escapes))
        cuts = np.searchsorted(offs, base + np.arange(step, end - base, step)).tolist()
        bounds = [0] + sorted({c for c in cuts if 0 < c < nstr}) + [nstr]
        spans.extend((k, a, b) for a, b in zip(bounds[:-1], bounds[1:]))
    trace.record("path:fsst:compiled", len(spans))

    def size(span: tuple[int, int, int]) -> int:
        k, a, b = span
        st, (buf, offs, _, nsym, escapes) = checked[k][0], ins[k]
        if not escapes:
            return int(kernels.fsst_total(buf, int(offs[a]), int(offs[b]), st.lengths))
        g = first[k]
        err, total = kernels.fsst_sizes(buf, offs[a: b + 1], st.lengths, nsym, out[g + a + 1: g + b + 1])
        if err == kernels.DANGLING_ESCAPE:
            raise CorruptFileError("FSST: compressed data ends with a dangling escape")
        if err == kernels.UNDEFINED_CODE:
            raise CorruptFileError(f"FSST: code outside the {st.num_symbols}-symbol table")
        return int(total)
    sizes: list[int] = _threads.map_parts(size, spans)
    starts = np.cumsum([0] + sizes).tolist()
    data = empty(max(starts[-1], 1), np.uint8)

    def expand(i: int) -> None:
        k, a, b = spans[i]
        st, (buf, offs, syms, _, escapes) = checked[k][0], ins[k]
        g = first[k]
        ends = out[g + a + 1: g + b + 1]
        short = (not escapes and int(offs[b] - offs[a]) < SHORT_MAX_CODES_PER_STRING * (b - a)
                 and starts[i + 1] - starts[i] < 1 << 31)
        if short:
            kernels.fsst_expand_short(buf, offs[a: b + 1], syms, st.lengths, data, starts[i], starts[i + 1], ends)
        else:
            kernels.fsst_expand(buf, offs[a: b + 1], syms, st.lengths, data, starts[i], starts[i + 1], ends, escapes)
    _threads.map_parts(expand, range(len(spans)))
    return out, data[: starts[-1]]


def _join_few(st: SymbolTable, comp: bytes, rel: list[int], small: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`decompress` of a few short escape-free strings: each string's symbols joined (a
    C-level map over its codes, no numpy pass per token); None when a code is an escape or
    undefined (the vectorised path reads -- or rejects -- those)."""
    codes = st.codes
    if comp and max(comp) >= len(codes):
        return None
    trace.record("path:fsst:few")
    parts = [b"".join(map(codes.__getitem__, comp[a:b])) for a, b in zip(rel[:-1], rel[1:])]
    out = np.zeros(len(parts) + 1, np.int32 if small else np.int64)
    np.cumsum([len(p) for p in parts], out=out[1:])
    return out, np.frombuffer(b"".join(parts), np.uint8)


def _decompress_compiled(kernels: ModuleType, st: SymbolTable, buf: np.ndarray, offs: np.ndarray,
                         small: bool) -> tuple[np.ndarray, np.ndarray]:
    """:func:`decompress` with the compiled kernels (``encodings._compiled``): the output size
    (escape-free codes: a sum of symbol lengths; with escapes a pass that checks them), then the
    bytes and end offsets written straight into one output (pieces of a large input run both
    passes on the kernel pool, each writing its own span)."""
    nstr = offs.size - 1
    base, end = int(offs[0]), int(offs[-1])
    buf, offs = kernels.readonly(buf), kernels.readonly(offs)   # (one compiled signature)
    out = empty(nstr + 1, np.int32 if small else np.int64)
    out[0] = 0
    nsym = min(st.num_symbols, ESC)
    escapes = int(buf[base:end].max()) >= nsym    # an escape or an undefined code: the checking pass
    if escapes:
        trace.record("path:fsst:escapes")
    pieces = min(_piece_count(end - base), nstr)
    bounds = [0, nstr]
    if pieces > 1:
        step = -(-(end - base) // pieces)
        cuts = np.searchsorted(offs, base + np.arange(step, end - base, step)).tolist()
        bounds = [0] + sorted({c for c in cuts if 0 < c < nstr}) + [nstr]
    spans = list(zip(bounds[:-1], bounds[1:]))
    trace.record("path:fsst:compiled", len(spans))
    syms = st.rows[:256].view("<u8").reshape(-1)

    def size(ab: tuple[int, int]) -> int:
        a, b = ab
        if not escapes:
            return int(kernels.fsst_total(buf, int(offs[a]), int(offs[b]), st.lengths))
        err, total = kernels.fsst_sizes(buf, offs[a: b + 1], st.lengths, nsym, out[a + 1: b + 1])
        if err == kernels.DANGLING_ESCAPE:
            raise CorruptFileError("FSST: compressed data ends with a dangling escape")
        if err == kernels.UNDEFINED_CODE:
            raise CorruptFileError(f"FSST: code outside the {st.num_symbols}-symbol table")
        return int(total)
    starts = np.cumsum([0] + _threads.map_parts(size, spans)).tolist()
    data = empty(max(starts[-1], 1), np.uint8)

    # short escape-free strings: the flat kernel (no branch per string; int32 positions per piece)
    short = (not escapes and end - base < SHORT_MAX_CODES_PER_STRING * nstr
             and max(starts[i + 1] - starts[i] for i in range(len(spans))) < 1 << 31)
    if short:
        trace.record("path:fsst:compiled-short")

    def expand(i: int) -> None:
        a, b = spans[i]
        if short:
            kernels.fsst_expand_short(buf, offs[a: b + 1], syms, st.lengths, data, starts[i], starts[i + 1],
                                      out[a + 1: b + 1])
        else:
            kernels.fsst_expand(buf, offs[a: b + 1], syms, st.lengths, data, starts[i], starts[i + 1],
                                out[a + 1: b + 1], escapes)
    _threads.map_parts(expand, range(len(spans)))
    return out, data[: starts[-1]]


def _piece_count(tokens: int) -> int:
    """Pieces for ``tokens`` tokens: one per :data:`PIECE_TOKENS`, and when the kernel pool can
    take them (not on a pool thread) at least two from :data:`PARALLEL_MIN_TOKENS` on, in a
    multiple of the pool's workers (3 pieces on 2 threads take as long as 4). On a kernel pool
    thread an input cut anyway is cut in a multiple of the workers too (its idle partner helps),
    but a smaller one is not split: the partner usually decodes a page of its own, and a split
    nobody helps with costs a join copy."""
    pieces = tokens // PIECE_TOKENS
    workers = _threads.parallel_workers()
    if workers > 1 and tokens >= PARALLEL_MIN_TOKENS:
        return -(-max(pieces, 1) // workers) * workers
    shared = _threads.parallel_workers(shared=True)
    if pieces > 1 and shared > 1:
        return -(-pieces // shared) * shared
    return pieces


def _take_strings(st: SymbolTable, tok: np.ndarray, ends: np.ndarray, out: np.ndarray,
                  pairs: bool = False) -> np.ndarray:
    """Take ``tok`` from the token table (or with ``pairs`` uint8 codes from the pair table);
    writes the output offset of token position ``ends[i]`` into ``out[i]`` and returns the
    output bytes."""
    if tok.size <= TINY_TOKENS:
        return _take_tiny(st, tok, ends, out)
    if pairs and tok.size < _SMALL_TOKENS:
        return _take_pairs(st, tok, ends, out)
    values = st.values if tok.size < _SMALL_TOKENS else st.large_values
    # tokens are < 512 by construction (uint8 codes, or 256 + byte after an escape)
    res = pc.take(values, pa.array(tok), boundscheck=False)
    _, pos_buf, data_buf = res.buffers()
    pos = np.frombuffer(pos_buf, np.int32 if values is st.values else np.int64, tok.size + 1)
    _gather_into(pos, ends, out)
    total = int(pos[-1])
    return np.frombuffer(data_buf, np.uint8, total) if total else np.empty(0, np.uint8)


def _take_tiny(st: SymbolTable, tok: np.ndarray, ends: np.ndarray, out: np.ndarray) -> np.ndarray:
    """:func:`_take_strings` for a few tokens, in numpy only: each token's 8-byte row, masked to
    its length."""
    lens = st.lengths[tok]
    pos = np.zeros(tok.size + 1, np.int64)
    np.cumsum(lens, out=pos[1:])
    trace.record("path:fsst:tiny", int(tok.size))
    _gather_into(pos, ends, out)
    rows: np.ndarray = st.rows[tok][np.arange(8) < lens[:, None]]
    return rows


def _gather_into(pos: np.ndarray, idx: np.ndarray, out: np.ndarray) -> None:
    """``out[:] = pos[idx]`` (idx within pos: checked by the callers), without a temporary when
    the dtypes agree (np.take's "raise" mode would buffer)."""
    if pos.dtype == out.dtype:
        np.take(pos, idx, out=out, mode="clip")
    else:
        out[:] = pos[idx]


def _take_pairs(st: SymbolTable, tok: np.ndarray, ends: np.ndarray, out: np.ndarray) -> np.ndarray:
    """:func:`_take_strings` for escape-free uint8 codes, two codes per take from ``st.pairs``
    (half the tokens; an odd count is padded with the empty escape code). A string ending
    after an odd number of codes ends inside a pair: its end is the pair's start plus the
    length of its last code."""
    if tok.size & 1:
        padded = np.empty(tok.size + 1, np.uint8)
        padded[:-1] = tok
        padded[-1] = ESC
    else:
        padded = tok
    res = pc.take(st.pairs, pa.array(padded.view("<u2")), boundscheck=False)
    _, pos_buf, data_buf = res.buffers()
    pos = np.frombuffer(pos_buf, np.int32, padded.size // 2 + 1)
    _gather_into(pos, ends >> 1, out)
    # + the length of the last code of the strings ending at odd positions: no masks, a
    # multiply by the parity (an even end's "last code" is read but multiplied by 0)
    last = st.lengths.take(tok.take(ends - 1, mode="clip"))
    last *= (ends & 1).astype(np.uint8)
    np.add(out, last, out=out, casting="unsafe")
    total = int(pos[-1])
    return np.frombuffer(data_buf, np.uint8, total) if total else np.empty(0, np.uint8)
