"""The numba kernels behind :mod:`lance_duck.encodings._compiled` (imported only from there, and
only when numba is installed). Compiled once per machine into numba's on-disk cache.

FSST: the output size first (:func:`fsst_total`: a sum of the codes' symbol lengths; with escapes
:func:`fsst_sizes`, which also checks every escape and code), then the bytes and every string's
end offset (:func:`fsst_expand`), each code's symbol written as one unaligned 8-byte store (the
table's rows are zero-padded to 8 bytes; a store that would pass ``limit`` is written byte by
byte, so pieces of one output can be written concurrently; short escape-free strings take
:func:`fsst_expand_short`, one flat loop with no branch per string). All release the GIL.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

#: error codes of :func:`fsst_sizes`
OK, DANGLING_ESCAPE, UNDEFINED_CODE = 0, 1, 2


@intrinsic
def _store_u64(typingctx: Any, arr: Any, pos: Any, val: Any) -> Any:  # pragma: no cover - compiled
    """``arr[pos : pos + 8] = val`` (little-endian) for a uint8 array, any alignment."""
    sig = types.void(arr, types.int64, types.uint64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        builder.store(args[2], builder.bitcast(ptr, ir.IntType(64).as_pointer()), align=1)
        return context.get_dummy_value()
    return sig, codegen


@njit(cache=True, nogil=True, boundscheck=False)
def fsst_total(comp: np.ndarray, start: int, end: int, lens: np.ndarray) -> int:  # pragma: no cover
    """Output bytes of the escape-free codes ``comp[start:end]`` (checked defined by the caller);
    four running sums (one dependency chain per sum: 0.37 ns per code against 0.66 with one)."""
    a = 0
    b = 0
    c = 0
    d = 0
    i = start
    while i + 4 <= end:
        a += lens[comp[i]]
        b += lens[comp[i + 1]]
        c += lens[comp[i + 2]]
        d += lens[comp[i + 3]]
        i += 4
    while i < end:
        a += lens[comp[i]]
        i += 1
    return a + b + c + d


@njit(cache=True, nogil=True, boundscheck=False)
def fsst_sizes(comp: np.ndarray, offs: np.ndarray, lens: np.ndarray, nsym: int,
               ends: np.ndarray) -> tuple[int, int]:  # pragma: no cover - compiled
    """Codes with escapes: checks them and returns (error code, output bytes); ``ends`` is a
    scratch here (written, then overwritten by :func:`fsst_expand`)."""
    total = 0
    for s in range(offs.size - 1):
        i = offs[s]
        e = offs[s + 1]
        while i < e:
            c = comp[i]
            if c == 255:
                if i + 1 >= e:
                    return DANGLING_ESCAPE, 0
                total += 1
                i += 2
            else:
                if c >= nsym:
                    return UNDEFINED_CODE, 0
                total += lens[c]
                i += 1
        ends[s] = total
    return OK, total


@njit(cache=True, nogil=True, boundscheck=False)
def fsst_expand(comp: np.ndarray, offs: np.ndarray, syms: np.ndarray, lens: np.ndarray, out: np.ndarray,
                at: int, limit: int, ends: np.ndarray, escapes: bool) -> int:  # pragma: no cover
    """Decode the checked strings ``comp[offs[s]:offs[s+1]]`` into ``out`` from ``at`` (never
    writing at or past ``limit``) and their end offsets into ``ends[s]``; returns the end."""
    p = at
    stop = limit - 8
    for s in range(offs.size - 1):
        i = offs[s]
        e = offs[s + 1]
        if not escapes and p + 8 * (e - i) <= limit:
            # every store of the string stays inside the output: no check per code, two codes
            # per turn (long strings: 0.70 against 1.13 ns per code)
            while i + 2 <= e:
                c0 = comp[i]
                c1 = comp[i + 1]
                _store_u64(out, p, syms[c0])  # type: ignore[call-arg]
                p += lens[c0]
                _store_u64(out, p, syms[c1])
                p += lens[c1]
                i += 2
            if i < e:
                c0 = comp[i]
                _store_u64(out, p, syms[c0])  # type: ignore[call-arg]
                p += lens[c0]
            ends[s] = p
            continue
        while i < e:
            c = comp[i]
            if escapes and c == 255:
                out[p] = comp[i + 1]
                p += 1
                i += 2
                continue
            if p <= stop:
                _store_u64(out, p, syms[c])  # type: ignore[call-arg]  # (typingctx is numba's)
            else:
                v = syms[c]
                for k in range(lens[c]):
                    out[p + k] = (v >> (8 * k)) & 0xFF
            p += lens[c]
            i += 1
        ends[s] = p
    return p


@njit(cache=True, nogil=True, boundscheck=False)
def fsst_expand_short(comp: np.ndarray, offs: np.ndarray, syms: np.ndarray, lens: np.ndarray, out: np.ndarray,
                      at: int, limit: int, ends: np.ndarray) -> int:  # pragma: no cover - compiled
    """:func:`fsst_expand` for escape-free short strings whose output is under 2 GiB: one flat
    loop over the codes (no branch per string) that notes each code's output position, then every
    string's end read from those positions (short strings: 1.45 against 1.9 ns per code)."""
    a = offs[0]
    b = offs[offs.size - 1]
    pos = np.empty(b - a + 1, np.int32)      # output position of each code, from ``at``
    p = at
    stop = limit - 8
    i = a
    while i < b and p <= stop:
        c = comp[i]
        _store_u64(out, p, syms[c])  # type: ignore[call-arg]
        pos[i - a] = p - at
        p += lens[c]
        i += 1
    while i < b:        # the last codes: byte by byte, never at or past ``limit``
        c = comp[i]
        v = syms[c]
        pos[i - a] = p - at
        for k in range(lens[c]):
            out[p + k] = (v >> (8 * k)) & 0xFF
        p += lens[c]
        i += 1
    pos[b - a] = p - at
    for s in range(offs.size - 1):
        ends[s] = at + pos[offs[s + 1] - a]
    return p


def readonly(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a``: the kernels' inputs are always passed read-only, so numba
    compiles (and loads) one specialization whatever the caller's buffer was."""
    v: np.ndarray = a.view()
    v.flags.writeable = False
    return v


def warm_up() -> None:
    """Call every kernel with every argument type the decoder passes (int32 and int64 end
    offsets): the first call of a signature loads it from numba's cache (or compiles it), which
    then happens here, on the loading thread, and not in a decode."""
    comp = readonly(np.array([0, 1, 255, 65, 0], np.uint8))
    offs = readonly(np.array([0, 2, 5], np.int64))
    lens = np.ones(512, np.uint8)
    syms = np.arange(256, dtype=np.uint64)
    out = np.zeros(16, np.uint8)
    fsst_total(comp, 0, 2, lens)
    for dt in (np.int32, np.int64):
        ends = np.zeros(2, dt)
        fsst_sizes(comp, offs, lens, 2, ends)
        fsst_expand(comp, offs, syms, lens, out, 0, 16, ends, True)
        fsst_expand_short(comp, offs, syms, lens, out, 0, 16, ends)
    blocks = readonly(np.zeros(1024 * 8 + 8, np.uint8))
    starts = readonly(np.zeros(1, np.int64))
    dst = readonly(np.zeros(1, np.int64))
    for dt in (np.uint64, np.uint32, np.uint16):
        fastlanes(blocks, starts, 3, np.empty((1, 1024), dt))
        for n in (1024, 5):
            fastlanes_place(blocks, starts, 3, dst, readonly(np.full(1, n, np.int64)), np.empty(1024, dt),
                            np.empty(1024, dt))


# FastLanes unpacking: one pass over a block's packed words, each value written at its place in the
# FastLanes order (the numpy kernel makes ~6 passes: gather, shifts, or, mask, scatter).

@intrinsic
def _bits(typingctx: Any, like: Any) -> Any:  # pragma: no cover - compiled
    """The bit width of ``like``'s element type, a compile-time constant."""
    bits = like.dtype.bitwidth
    sig = types.int64(like)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return context.get_constant(types.int64, bits)
    return sig, codegen


@intrinsic
def _word(typingctx: Any, x: Any, like: Any) -> Any:  # pragma: no cover - compiled
    """``x`` (an int64) truncated to ``like``'s element type (``_word(-1, out)``: all ones)."""
    t = like.dtype
    sig = t(types.int64, like)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.trunc(args[0], ir.IntType(t.bitwidth)) if t.bitwidth < 64 else args[0]
    return sig, codegen


@intrinsic
def _load(typingctx: Any, arr: Any, pos: Any, like: Any) -> Any:  # pragma: no cover - compiled
    """``arr[pos : pos + T/8]`` as a little-endian word of ``like``'s T-bit element type, for a
    uint8 array, any alignment."""
    t = like.dtype
    sig = t(arr, types.int64, like)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        return builder.load(builder.bitcast(ptr, ir.IntType(t.bitwidth).as_pointer()), align=1)
    return sig, codegen


@njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _block(buf: np.ndarray, base: int, w: int, row: np.ndarray) -> None:  # pragma: no cover - compiled
    """Unpack the T-bit block of width ``w`` (1..T) whose packed words start at byte ``base`` of
    ``buf`` into ``row`` (1024 values of the T-bit unsigned type), each value at its place in the
    FastLanes order."""
    T: int = _bits(row)  # type: ignore[call-arg]
    lanes = 1024 // T
    mask = _word(-1, row) >> _word(T - w, row)
    for r in range(T):
        bit = r * w
        k = bit // T
        s = _word(bit % T, row)
        dst = ((0, 4, 2, 6, 1, 5, 3, 7)[r >> 3]) * 16 + (r & 7) * 128
        at = base + k * 128
        if bit % T + w > T:
            back = _word(T - bit % T, row)
            for lane in range(lanes):
                v = ((_load(buf, at + lane * (T // 8), row) >> s)
                     | (_load(buf, at + 128 + lane * (T // 8), row) << back))
                row[dst + lane] = v & mask
        else:
            for lane in range(lanes):
                row[dst + lane] = (_load(buf, at + lane * (T // 8), row) >> s) & mask


@njit(cache=True, nogil=True, boundscheck=False)
def fastlanes(buf: np.ndarray, offs: np.ndarray, w: int, out: np.ndarray) -> None:  # pragma: no cover
    """Unpack the T-bit blocks of width ``w`` (1..T) whose packed words start at byte ``offs[i]``
    of ``buf`` (bounds checked by the caller) into ``out`` (k, 1024) of the T-bit unsigned type
    (16, 32 or 64), C-contiguous. One source for every word width: numba compiles one
    specialization per ``out`` dtype with T a constant (the same machine code as a kernel
    written per width)."""
    for i in range(offs.size):
        _block(buf, offs[i], w, out[i])


@njit(cache=True, nogil=True, boundscheck=False)
def fastlanes_place(buf: np.ndarray, offs: np.ndarray, w: int, dst: np.ndarray, lens: np.ndarray,
                    res: np.ndarray, scratch: np.ndarray) -> None:  # pragma: no cover
    """As :func:`fastlanes`, but block i's first ``lens[i]`` values land at ``res[dst[i]:]`` (1-D,
    the targets disjoint and inside ``res``, checked by the caller): a whole block is unpacked in
    place, a short one through ``scratch`` (1024 values)."""
    for i in range(offs.size):
        d = dst[i]
        n = lens[i]
        if n == 1024:
            _block(buf, offs[i], w, res[d: d + 1024])
        elif n > 0:
            _block(buf, offs[i], w, scratch)
            for j in range(n):
                res[d + j] = scratch[j]
