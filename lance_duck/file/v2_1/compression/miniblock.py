"""Mini-block values: the value buffers of many chunks at once -> values (format notes, section 5).

A sparse selection decodes only the selected values where the encoding allows it
(:func:`decode_miniblock_selected`).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .... import trace
from ....encodings import _threads, bss, fastlanes, fsst, rle
from ....encodings._buf import empty, uint_dtype
from ...._proto import encodings_v2_1_pb2 as pb
from ....errors import CorruptFileError, UnsupportedFeatureError
from .. import _kernels
from ..gather import gather_bytes, read_uint, segment_index
from ..values import Fixed, FslValues, Packed, Values, VarBin, uint_view
from . import offsets23
from .common import UDT, ChunkSet, flat_bits, fsl_layers, encoding_kind




def decode_miniblock(enc: pb.CompressiveEncoding, cs: ChunkSet, what: str) -> Values:
    kind = encoding_kind(enc)
    trace.record(f"mb:{kind}")
    fn = _MB.get(kind)
    if fn is None:
        raise UnsupportedFeatureError(f"{what}: encoding {kind!r} is not supported in mini-block pages")
    return fn(getattr(enc, kind), cs, what)


def decode_miniblock_selected(enc: pb.CompressiveEncoding, cs: ChunkSet, idx: np.ndarray,
                              what: str) -> Values | None:
    """Only values ``idx`` (sorted positions among the chunks' values) of a mini-block page, or
    None when the encoding gains nothing from knowing them (the caller then decodes all values).

    FSST over Variable: the compressed strings are selected first, so only those are
    decompressed (a sparse take touches most chunks of a page but few of their strings).
    """
    kind = encoding_kind(enc)
    if kind == "variable":
        trace.record("mb:variable")
        trace.record("path:selected:variable")
        return _variable_selected(enc.variable, cs, idx, what)
    if kind == "flat" and int(enc.flat.bits_per_value) % 8 == 0:
        trace.record("mb:flat")
        trace.record("path:selected:flat")
        return _flat_selected(enc.flat, cs, idx, what)
    if kind == "flat" and int(enc.flat.bits_per_value) == 1:
        trace.record("mb:flat")
        trace.record("path:selected:bits")
        return _bits_selected(cs, idx, what)
    if kind == "inline_bitpacking":
        trace.record("mb:inline_bitpacking")
        trace.record("path:selected:inline_bitpacking")
        return _inline_bp_selected(enc.inline_bitpacking, cs, idx, what)
    if kind != "fsst" or encoding_kind(enc.fsst.values) != "variable":
        return None
    trace.record("mb:fsst")
    trace.record("path:selected:fsst")
    comp = _variable_selected(enc.fsst.values.variable, cs, idx, what)
    o, d = _kernels.fsst_decompress(enc.fsst.symbol_table, comp.offsets, comp.data)
    return VarBin(o, d)


def _chunk_of(cs: ChunkSet, idx: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    """(chunk, position inside it) of every selected value: a shift and a mask when every chunk
    but the last holds the same power-of-two count (mini-block chunks nearly always do)."""
    counts = cs.counts
    if idx.size and (int(idx[0]) < 0 or int(idx[-1]) >= int(counts.sum())):
        raise CorruptFileError(f"{what}: fewer values than selected rows")
    n0 = int(counts[0]) if counts.size else 0
    if n0 > 0 and n0 & (n0 - 1) == 0 and int(counts[-1]) <= n0 and bool((counts[:-1] == n0).all()):
        shift = n0.bit_length() - 1
        return idx >> shift, idx & (n0 - 1)
    cstart = np.cumsum(counts) - counts
    c = np.searchsorted(cstart, idx, side="right") - 1
    return c, idx - cstart[c]


#: A selection holding at least one value in this many of the chunks' values (per T), in chunks
#: of one bit width, unpacks the chunks whole and gathers: the one-width block kernel beats the
#: per-value reads of ``fastlanes.extract_blocks`` above ~25% of 8/16-bit values, ~33% of
#: 32-bit, ~50% of 64-bit ones (measured, 245 chunks); mixed widths always read per value.
DENSE_SELECTION = {8: 4, 16: 4, 32: 3, 64: 2}
#: ... and more chunks than this (unpacking a few blocks costs more than reading their values)
FEW_CHUNKS = 4


def _inline_bp_selected(m: pb.InlineBitpacking, cs: ChunkSet, idx: np.ndarray, what: str) -> Fixed:
    """Values ``idx`` of InlineBitpacking chunks (a width word + one packed 1024-value block
    each), extracted from the packed words one by one (no block is unpacked); a dense
    selection of one-width chunks unpacks them and gathers."""
    t, data, offs, sizes = _inline_bp_chunks(m, cs, what)
    if idx.size * DENSE_SELECTION[t] >= cs.total and offs.size > FEW_CHUNKS:
        widths = read_uint(data, offs, t // 8, what)
        if int(widths[0]) > 0 and bool((widths == widths[0]).all()):
            trace.record("path:selected:unpack-gather")
            full = _mb_inline_bp(m, cs, what)
            if int(idx[0]) < 0 or int(idx[-1]) >= full.n:
                raise CorruptFileError(f"{what}: fewer values than selected rows")
            return Fixed(uint_view(full)[idx], full.bits, int(idx.size))
    n = int(idx.size)
    if n > fastlanes.FEW_VALUES and offs.size <= RUN_CHUNKS and int(idx[-1]) - int(idx[0]) + 1 <= 2 * n:
        # a run of values with a few gaps (a short LIMIT past deleted rows): the run, then the values
        a, b = int(idx[0]), int(idx[-1]) + 1
        trace.record("path:selected:run")
        run = _inline_bp_run(t, data, offs.tolist(), sizes.tolist(), cs.counts.tolist(), a, b, what)
        return Fixed(run if b - a == n else run[idx - a], t, n)
    if offs.size == 1:             # one chunk (a point lookup): its width word read as an int
        o, nb = int(offs[0]), t // 8
        if idx.size and (int(idx[0]) < 0 or int(idx[-1]) >= int(cs.counts[0])):
            raise CorruptFileError(f"{what}: fewer values than selected rows")
        width = int.from_bytes(data[o: o + nb].tobytes(), "little") if 0 <= o <= data.size - nb else -1
        if not 0 <= width <= t or int(sizes[0]) < nb + width * 1024 // 8:
            raise CorruptFileError(f"{what}: bit width outside 0..{t} or chunk shorter than its width needs")
        return Fixed(fastlanes.extract(data, np.full(idx.size, o + nb), np.full(idx.size, width), idx, t),
                     t, int(idx.size))
    if n and offs.size <= RUN_CHUNKS and int(idx[-1]) - int(idx[0]) + 1 == n:
        trace.record("path:selected:run")
        return Fixed(_inline_bp_run(t, data, offs.tolist(), sizes.tolist(), cs.counts.tolist(),
                                    int(idx[0]), int(idx[-1]) + 1, what), t, n)
    c, j = _chunk_of(cs, idx, what)
    # every chunk given holds selected values: widths and sizes checked once per chunk
    w = read_uint(data, offs, t // 8, what)
    if ((w < 0) | (w > t)).any() or (sizes < t // 8 + w * 1024 // 8).any():
        raise CorruptFileError(f"{what}: bit width outside 0..{t} or chunk shorter than its width needs")
    return Fixed(fastlanes.extract_blocks(data, offs + t // 8, w, c, j, t), t, int(idx.size))


#: a contiguous run of selected values in at most this many chunks is read chunk by chunk
RUN_CHUNKS = 8


def _inline_bp_run(t: int, data: np.ndarray, offs: list[int], sizes: list[int], counts: list[int], a: int, b: int,
                   what: str) -> np.ndarray:
    """Values ``a .. b - 1`` of a few InlineBitpacking chunks: per chunk the run crosses, its
    width word read as an int and its piece extracted with sliced position tables."""
    nb = t // 8
    out = np.empty(b - a, uint_dtype(t))
    start = 0
    for o, size, count in zip(offs, sizes, counts):   # (a few chunks, not values)
        lo, hi = max(a - start, 0), min(b - start, count)
        if lo < hi:
            width = int.from_bytes(data[o: o + nb].tobytes(), "little") if 0 <= o <= data.size - nb else -1
            if not 0 <= width <= t or size < nb + width * 1024 // 8 or count > 1024:
                raise CorruptFileError(f"{what}: bit width outside 0..{t} or chunk shorter than its width needs")
            fastlanes.extract_run(data, o + nb, width, lo, hi, t, out[start + lo - a: start + hi - a])
        start += count
    if start < b or a < 0:
        raise CorruptFileError(f"{what}: fewer values than selected rows")
    return out


def _flat_selected(m: pb.Flat, cs: ChunkSet, idx: np.ndarray, what: str) -> Fixed:
    """Values ``idx`` of flat chunks of whole-byte values, each read at its own position."""
    _need_bufs(cs, 1, what)
    width = int(m.bits_per_value) // 8
    data, offs, sizes = cs.bufs[0]
    if (sizes < cs.counts * width).any():
        raise CorruptFileError(f"{what}: flat chunk shorter than its values")
    if offs.size == 1:             # one chunk (a few neighbouring rows): its values as (count, width) rows
        o, count = int(offs[0]), int(cs.counts[0])
        if idx.size and (int(idx[0]) < 0 or int(idx[-1]) >= count):
            raise CorruptFileError(f"{what}: fewer values than selected rows")
        if o < 0 or o + count * width > data.size:
            raise CorruptFileError(f"{what}: a value lies outside its chunk data")
        return Fixed(data[o: o + count * width].reshape(count, width)[idx].reshape(-1), width * 8, int(idx.size))
    c, j = _chunk_of(cs, idx, what)
    at = offs[c] + j * width
    if at.size and (int(at.min()) < 0 or int(at.max()) + width > data.size):
        raise CorruptFileError(f"{what}: a value lies outside its chunk data")
    rows = np.lib.stride_tricks.as_strided(data, shape=(max(data.size - width + 1, 0), width),
                                           strides=(data.strides[0], data.strides[0]), writeable=False)
    return Fixed(rows[at].reshape(-1), width * 8, int(idx.size))


def _bits_selected(cs: ChunkSet, idx: np.ndarray, what: str) -> Fixed:
    """Values ``idx`` of flat 1-bit chunks (booleans, LSB first), each bit read where it lies."""
    _need_bufs(cs, 1, what)
    data, offs, sizes = cs.bufs[0]
    if (sizes < (cs.counts + 7) // 8).any():
        raise CorruptFileError(f"{what}: boolean chunk shorter than its values")
    c, j = _chunk_of(cs, idx, what)
    at = offs[c] + (j >> 3)
    if at.size and (int(at.min()) < 0 or int(at.max()) >= data.size):
        raise CorruptFileError(f"{what}: a value lies outside its chunk data")
    bits = (data[at] >> (j & 7).astype(np.uint8)) & 1
    return Fixed(bits.astype(np.bool_), 1, int(idx.size))


def decode_miniblock_runs(enc: pb.CompressiveEncoding, cs: ChunkSet, a: int, b: int, dead: np.ndarray,
                          what: str) -> Fixed | None:
    """Values ``a .. b - 1`` of the chunks but those at the sorted positions ``dead`` (a task's
    deleted rows), or None when the encoding is not flat whole-byte values. The live runs
    between dead values, cut at the chunk edges they cross, are copied by one gather."""
    if encoding_kind(enc) != "flat" or int(enc.flat.bits_per_value) % 8:
        return None
    trace.record("path:live-runs")
    _need_bufs(cs, 1, what)
    width = int(enc.flat.bits_per_value) // 8
    data, offs, sizes = cs.bufs[0]
    counts = cs.counts
    if (sizes < counts * width).any():
        raise CorruptFileError(f"{what}: flat chunk shorter than its values")
    cstart = np.cumsum(counts) - counts
    if a < 0 or b > int(cs.total) or (dead.size and (int(dead[0]) < a or int(dead[-1]) >= b)):
        raise CorruptFileError(f"{what}: fewer values than selected rows")
    run_a = np.concatenate(([a], dead + 1))
    run_b = np.concatenate((dead, [b]))
    full = run_b > run_a
    run_a, run_b = run_a[full], run_b[full]
    # chunk starts strictly inside a run start a piece of it
    r = np.maximum(np.searchsorted(run_a, cstart, side="right") - 1, 0)
    inside = (cstart > run_a[r]) & (cstart < run_b[r])
    piece_a = np.sort(np.concatenate((run_a, cstart[inside])))
    pr = np.searchsorted(run_a, piece_a, side="right") - 1
    pc = np.searchsorted(cstart, piece_a, side="right") - 1
    piece_b = np.minimum(run_b[pr], cstart[pc] + counts[pc])
    out = gather_bytes(data, offs[pc] + (piece_a - cstart[pc]) * width, (piece_b - piece_a) * width, what)
    return Fixed(out, width * 8, b - a - int(dead.size))


def _variable_selected(m: pb.Variable, cs: ChunkSet, idx: np.ndarray, what: str) -> VarBin:
    """Values ``idx`` of Variable chunks, reading only their two offset words each (value i of
    chunk c is ``data[offs[c] + word[i] : offs[c] + word[i + 1]]``), bounds-checked per value."""
    coded = offsets23.variable_offsets23(m, what)   # 2.3: constant / range offsets
    if coded is not None:
        return offsets23.select(coded, cs, idx, what)
    ob, data, offs, sizes, counts = _variable_chunks(m, cs, what)
    if offs.size == 1:             # one chunk (a few neighbouring rows): its offset words as one view
        o, count = int(offs[0]), int(counts[0])
        if idx.size and (int(idx[0]) < 0 or int(idx[-1]) >= count):
            raise CorruptFileError(f"{what}: fewer values than selected rows")
        if o < 0 or o + (count + 1) * ob > data.size:
            raise CorruptFileError(f"{what}: variable offsets leave the chunk data")
        words = data[o: o + (count + 1) * ob].view(np.uint32 if ob == 4 else np.uint64)
        s, e = words[idx].astype(np.int64), words[idx + 1].astype(np.int64)
        if ((s < (count + 1) * ob) | (e < s) | (e > int(sizes[0]))).any():
            raise CorruptFileError(f"{what}: variable offsets are not increasing or leave the chunk")
        lens = e - s
        out = np.zeros(idx.size + 1, np.int64)
        np.cumsum(lens, out=out[1:])
        return VarBin(out, gather_bytes(data, o + s, lens, what))
    c, j = _chunk_of(cs, idx, what)
    at = offs[c] + j * ob
    s = read_uint(data, at, ob, what)
    e = read_uint(data, at + ob, ob, what)
    if ((s < (counts[c] + 1) * ob) | (e < s) | (e > sizes[c])).any():
        raise CorruptFileError(f"{what}: variable offsets are not increasing or leave the chunk")
    lens = e - s
    out = np.zeros(idx.size + 1, np.int64)
    np.cumsum(lens, out=out[1:])
    return VarBin(out, gather_bytes(data, offs[c] + s, lens, what))


def _need_bufs(cs: ChunkSet, n: int, what: str) -> None:
    if len(cs.bufs) < n:
        raise CorruptFileError(f"{what}: chunk has {len(cs.bufs)} value buffers, encoding needs {n}")


def _mb_flat(m: pb.Flat, cs: ChunkSet, what: str) -> Values:
    _need_bufs(cs, 1, what)
    bits = int(m.bits_per_value)
    data, offs, sizes = cs.bufs[0]
    counts = cs.counts
    if bits == 1:
        nbytes = (counts + 7) // 8
        if (sizes < nbytes).any():
            raise CorruptFileError(f"{what}: boolean chunk shorter than its values")
        raw = gather_bytes(data, offs, nbytes, what)
        if counts.size <= 1 or (counts[:-1] % 8 == 0).all():
            bits_arr = np.unpackbits(raw, count=int(counts.sum()), bitorder="little").view(np.bool_)
        else:
            allbits = np.unpackbits(raw, bitorder="little").view(np.bool_)
            seg, pos = segment_index(counts)
            base = np.cumsum(nbytes * 8) - nbytes * 8
            bits_arr = allbits[base[seg] + pos]
        return Fixed(bits_arr, 1, int(counts.sum()))
    if bits % 8:
        raise UnsupportedFeatureError(f"{what}: flat values of {bits} bits are not supported")
    nbytes = counts * (bits // 8)
    if (sizes < nbytes).any():
        raise CorruptFileError(f"{what}: flat chunk shorter than its values")
    return Fixed(gather_bytes(data, offs, nbytes, what), bits, int(counts.sum()))


def _inline_bp_chunks(m: pb.InlineBitpacking, cs: ChunkSet, what: str
                      ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """(T, data, chunk offsets, chunk sizes) of InlineBitpacking chunks (a T-bit width word and
    one packed block of at most 1024 values each)."""
    _need_bufs(cs, 1, what)
    t = int(m.uncompressed_bits_per_value)
    if t not in (8, 16, 32, 64):
        raise UnsupportedFeatureError(f"{what}: inline bitpacking of {t}-bit values")
    if (cs.counts > 1024).any():
        raise CorruptFileError(f"{what}: inline-bitpacked chunk with more than 1024 values")
    data, offs, sizes = cs.bufs[0]
    return t, data, offs, sizes


def _mb_inline_bp(m: pb.InlineBitpacking, cs: ChunkSet, what: str) -> Fixed:
    t, data, offs, sizes = _inline_bp_chunks(m, cs, what)
    w = read_uint(data, offs, t // 8, what)
    if (w > t).any() or (w < 0).any():
        raise CorruptFileError(f"{what}: bit width outside 0..{t}")
    need = t // 8 + w * 1024 // 8
    if (sizes < need).any():
        raise CorruptFileError(f"{what}: bitpacked chunk shorter than its width needs")
    total = int(cs.counts.sum())
    vals = _inline_bp_one_width(data, t, offs + t // 8, w, cs.counts, total, what)
    if vals is None:
        vals = fastlanes.unpack_mixed(data, t, offs + t // 8, w, cs.counts)
    return Fixed(vals, t, total)


def _inline_bp_one_width(data: np.ndarray, t: int, offs: np.ndarray, w: np.ndarray, counts: np.ndarray, total: int,
                         what: str) -> np.ndarray | None:
    """All chunks of one width and whole blocks but the last: unpack every chunk's block in
    place (the kernel reads the packed words straight from the chunk buffer)."""
    k = offs.size
    if k < 2 or (w != w[0]).any() or (counts[:-1] != 1024).any() or int(w[0]) == 0:
        return None
    trace.record("path:bitpack:one-width")
    return fastlanes.unpack_blocks_at(data, offs, int(w[0]), t).reshape(-1)[:total]


def _variable_chunks(m: pb.Variable, cs: ChunkSet, what: str
                    ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(offset word bytes, data, chunk offsets, chunk sizes, counts) of Variable chunks, checked
    to hold their ``counts + 1`` offset words."""
    _need_bufs(cs, 1, what)
    ob = flat_bits(m.offsets, what, (32, 64)) // 8
    data, offs, sizes = cs.bufs[0]
    counts = cs.counts
    if ((counts + 1) * ob > sizes).any():
        raise CorruptFileError(f"{what}: variable chunk shorter than its offsets")
    return ob, data, offs, sizes, counts


def _mb_variable(m: pb.Variable, cs: ChunkSet, what: str) -> VarBin:
    coded = offsets23.variable_offsets23(m, what)   # 2.3: constant / range offsets
    if coded is not None:
        return offsets23.decode(coded, cs, what)
    ob, data, offs, sizes, counts = _variable_chunks(m, cs, what)
    total = int(counts.sum())
    # chunk c holds counts[c] + 1 offsets (words) starting at byte offs[c]; value i of chunk c
    # starts at byte word[i] - first[c] of the chunk's bytes, i.e. at that + body[c] in the body
    cstart = np.cumsum(counts) - counts
    first = read_uint(data, offs, ob, what)
    last = read_uint(data, offs + counts * ob, ob, what)
    if (last < first).any() or (last > sizes).any():
        raise CorruptFileError(f"{what}: variable offsets are not increasing or leave the chunk")
    clens = last - first
    if ((counts == 0) & (clens != 0)).any():
        raise CorruptFileError(f"{what}: variable chunk without values holds bytes")
    body_start = np.cumsum(clens) - clens
    out = empty(total + 1, np.int64)
    adjust = first - body_start  # per chunk: word value -> position in the body
    words = _word_view(data, offs, ob)
    if words is None or not _offsets_by_chunk_count(words, offs // ob, counts, adjust, out):
        if words is not None:
            idx = np.repeat(offs // ob - cstart, counts)
            idx += np.arange(total, dtype=np.int64)
            out[:total] = words[idx]
            del idx
        else:
            seg = np.repeat(np.arange(counts.size), counts)
            out[:total] = read_uint(data, offs[seg] + (np.arange(total, dtype=np.int64) - cstart[seg]) * ob,
                                    ob, what)
            del seg
        out[:total] -= np.repeat(adjust, counts)
    out[total] = int(clens.sum())
    # every value inside its chunk's bytes <=> the rebased offsets never decrease
    if total and (out[1:] < out[:-1]).any():
        raise CorruptFileError(f"{what}: variable offsets are not increasing or leave the chunk")
    body = gather_bytes(data, offs + first, clens, what)
    if out[-1] != body.size:
        raise CorruptFileError(f"{what}: variable offsets disagree with their chunk's data size")
    return VarBin(out, body)


def _offsets_by_chunk_count(words: np.ndarray, wstart: np.ndarray, counts: np.ndarray, adjust: np.ndarray,
                            out: np.ndarray) -> bool:
    """Rebased start offsets without a per-value index when chunks hold few distinct value
    counts (mini-block counts are powers of two, so usually one or two): the offset words are
    read as rows of a (words, width) sliding-window view, gathered and rebased with one
    broadcast subtract. When every chunk but the last holds a multiple of some block width
    ``g`` >= :data:`_MIN_BLOCK` values (powers of two do), chunks are cut into blocks of ``g``
    values written in order as rows of ``out``; otherwise each count is one row width, written
    as rows of a (values, count) window over ``out``. Returns False (nothing written) when the
    chunks do not have that shape."""
    k = counts.size
    if k < 2 or int((wstart + counts).max()) > words.size:
        return False
    signed = words.view(np.int64) if words.dtype.itemsize == 8 else words  # u64 - i64 would be float
    step = words.strides[0]
    g = int(np.gcd.reduce(counts[:-1]))
    if g >= _MIN_BLOCK:
        nb = counts[:-1] // g                      # blocks per chunk (0 for an empty chunk)
        first_block = np.cumsum(nb) - nb
        src = np.repeat(wstart[:-1] - first_block * g, nb)
        src += np.arange(src.size, dtype=np.int64) * g
        rows = np.lib.stride_tricks.as_strided(signed, shape=(words.size - g + 1, g), strides=(step, step),
                                               writeable=False)
        head = src.size * g
        np.subtract(rows[src], np.repeat(adjust[:-1], nb)[:, None], out=out[:head].reshape(src.size, g))
        c, w0 = int(counts[-1]), int(wstart[-1])
        np.subtract(signed[w0: w0 + c], adjust[-1], out=out[head: head + c])
        return True
    sizes = np.unique(counts[counts > 0])   # chunks without values write nothing
    if sizes.size > 4:
        return False
    cstart = np.cumsum(counts) - counts
    total = int(counts.sum())
    for c in sizes.tolist():
        sel = np.flatnonzero(counts == c)
        rows = np.lib.stride_tricks.as_strided(signed, shape=(words.size - c + 1, c), strides=(step, step),
                                               writeable=False)
        if sel.size == k or (np.diff(sel) == 1).all():   # consecutive chunks: one block of ``out``
            a = int(cstart[sel[0]])
            np.subtract(rows[wstart[sel]], adjust[sel, None], out=out[a: a + sel.size * c].reshape(sel.size, c))
        else:
            dst = np.lib.stride_tricks.as_strided(out, shape=(total - c + 1, c), strides=(8, 8))
            dst[cstart[sel]] = rows[wstart[sel]] - adjust[sel, None]
    return True


_MIN_BLOCK = 16  # narrowest block of the in-order block path of :func:`_offsets_by_chunk_count`


def _word_view(data: np.ndarray, offs: np.ndarray, ob: int) -> np.ndarray | None:
    """``data`` as little-endian ``ob``-byte words when every offset is word aligned (else None)."""
    words = data[: data.size // ob * ob].view(UDT[ob * 8])
    if not words.flags.aligned or (offs.size and (offs % ob).any()):   # (``flags``: no ctypes object)
        return None
    return words


_FSST_GROUP_VALUES = 1 << 16  # most values per group of chunks FSST-decoded together
_FSST_MIN_GROUP = 1 << 13     # fewest values per group worth a task of its own


def _mb_fsst(m: pb.Fsst, cs: ChunkSet, what: str) -> Values:
    workers = _threads.parallel_workers()
    if encoding_kind(m.values) == "variable" and cs.counts.size > 1 and workers > 1:
        # (on a pool thread, one pass over the page beats groups and their join copy)
        total = cs.total
        groups = max(-(-total // _FSST_GROUP_VALUES), min(workers, total // _FSST_MIN_GROUP))
        if groups > 1:
            return _mb_fsst_grouped(m, cs, what, -(-total // groups))
    inner = decode_miniblock(m.values, cs, what)
    if not isinstance(inner, VarBin):
        raise CorruptFileError(f"{what}: FSST over non-variable values")
    offs, data = _kernels.fsst_decompress(m.symbol_table, inner.offsets, inner.data, int32_offsets=True)
    return VarBin(offs, data)


def _mb_fsst_grouped(m: pb.Fsst, cs: ChunkSet, what: str, group_values: int) -> VarBin:
    """FSST over Variable chunks, decoded in groups of whole chunks of about ``group_values``
    values, concurrently on the kernel pool: every temporary (compressed offsets, gathered
    compressed bytes, tokens) stays small and is reused by the allocator instead of faulting in
    fresh pages; only the output offsets and the joined bytes are column-sized."""
    _need_bufs(cs, 1, what)
    trace.record("mb:variable")
    st = fsst.parse_symbol_table(m.symbol_table)
    data, offs, sizes = cs.bufs[0]
    counts = cs.counts
    k, total = counts.size, cs.total
    ends = np.cumsum(counts)
    cuts = np.searchsorted(ends, np.arange(group_values, total, group_values)) + 1
    bounds = [0] + sorted({c for c in cuts.tolist() if 0 < c < k}) + [k]
    trace.record("path:fsst:grouped", len(bounds) - 1)

    def group(span: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        c0, c1 = span
        sub = ChunkSet(counts[c0:c1], [(data, offs[c0:c1], sizes[c0:c1])])
        inner = _mb_variable(m.values.variable, sub, what)
        return _kernels.fsst_decompress(st, inner.offsets, inner.data, int32_offsets=True)
    # groups run concurrently on the kernel pool (their numpy / Arrow work releases the GIL)
    results = _threads.map_parts(group, list(zip(bounds[:-1], bounds[1:])))
    nbytes = sum(d.size for _, d in results)
    out = empty(total + 1, np.int32 if nbytes < 2**31 else np.int64)
    out[0] = 0
    joined = empty(nbytes, np.uint8)   # (from Arrow's pool: no fresh pages to fault in)
    rows = np.cumsum([0] + [o.size - 1 for o, _ in results]).tolist()
    shifts = np.cumsum([0] + [d.size for _, d in results]).tolist()

    def place(i: int) -> None:   # a few per page, each one add and one copy, side by side
        o, d = results[i]
        np.add(o[1:], np.int64(shifts[i]), out=out[rows[i] + 1: rows[i + 1] + 1], casting="unsafe")
        joined[shifts[i]: shifts[i + 1]] = d
    _threads.map_parts(place, range(len(results)))
    return VarBin(out, joined)


def _mb_rle(m: pb.Rle, cs: ChunkSet, what: str) -> Values:
    _need_bufs(cs, 2, what)
    (venc, vbuf), (lenc, lbuf) = [(e, b) if encoding_kind(e) != "general"   # 2.3: zstd / lz4 runs
                                  else (e.general.values, _decompress_chunks(e.general, b, what))
                                  for e, b in ((m.values, cs.bufs[0]), (m.run_lengths, cs.bufs[1]))]
    # 2.3 also bit-packs either side (FastLanes, out of line); the flat side gives the run count
    vb = _rle_side_bits(venc, (8, 16, 32, 64), what) // 8
    lb = _rle_side_bits(lenc, (8, 16, 32), what) // 8   # 16 / 32-bit run lengths: 2.3
    vdata, voffs, vsizes = vbuf
    ldata, loffs, lsizes = lbuf
    if encoding_kind(lenc) == "flat":
        if lb > 1 and (lsizes % lb).any():
            raise CorruptFileError(f"{what}: RLE run lengths of {lb * 8} bits in a buffer of odd size")
        runs = lsizes // lb
    elif encoding_kind(venc) == "flat":
        runs = vsizes // vb
    else:
        raise UnsupportedFeatureError(f"{what}: RLE with bit-packed values and bit-packed run lengths")
    values = _rle_side(venc, vbuf, runs, vb, what)
    lengths = _rle_side(lenc, lbuf, runs, lb, what).astype(np.int64)
    return Fixed(rle.expand_chunks(values, lengths, runs, cs.counts, what), vb * 8, cs.total)


def _rle_side_bits(enc: pb.CompressiveEncoding, allowed: tuple[int, ...], what: str) -> int:
    """Bits of one RLE side's decoded values (flat, or out-of-line bit-packed)."""
    if encoding_kind(enc) == "out_of_line_bitpacking":
        bits = int(enc.out_of_line_bitpacking.uncompressed_bits_per_value)
        if bits not in allowed:
            raise UnsupportedFeatureError(f"{what}: bit-packed RLE side of {bits} bits (expected {allowed})")
        return bits
    return flat_bits(enc, what, allowed)


def _rle_side(enc: pb.CompressiveEncoding, buf: tuple[np.ndarray, np.ndarray, np.ndarray], runs: np.ndarray, width: int, what: str) -> np.ndarray:
    """The ``runs[i]`` values of every chunk of one RLE side, concatenated."""
    data, offs, sizes = buf
    if encoding_kind(enc) == "out_of_line_bitpacking":
        m = enc.out_of_line_bitpacking
        trace.record("path:rle:bitpacked")
        w = flat_bits(m.values, what, tuple(range(0, 65)))
        return fastlanes.unpack_out_of_line_batch(data, offs, sizes, runs, w, int(m.uncompressed_bits_per_value))
    if (sizes < runs * width).any():
        raise CorruptFileError(f"{what}: RLE values shorter than its run lengths")
    return gather_bytes(data, offs, runs * width, what).view(UDT[width * 8])


def _mb_bss(m: pb.ByteStreamSplit, cs: ChunkSet, what: str) -> Values:
    _need_bufs(cs, 1, what)
    bits = flat_bits(m.values, what, (16, 32, 64))
    w = bits // 8
    data, offs, sizes = cs.bufs[0]
    counts = cs.counts
    if (sizes < counts * w).any():
        raise CorruptFileError(f"{what}: byte-stream-split chunk too short")
    out = bss.decode_chunks(data, offs, counts, bits)
    return Fixed(out, bits, cs.total)


def _decompress_chunks(m: pb.General, buf: tuple[np.ndarray, np.ndarray, np.ndarray], what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One chunk buffer (data, offsets, sizes) decompressed with a ``General`` scheme."""
    scheme = int(m.compression.scheme)
    trace.record(f"general:{scheme}")
    data, offs, sizes = buf
    parts = [_kernels.decompress(scheme, data[o: o + s], what)
             for o, s in zip(offs.tolist(), sizes.tolist())]  # one codec call per chunk
    lens = np.array([p.size for p in parts], np.int64)
    padded = (lens + 7) // 8 * 8
    new = np.zeros(int(padded.sum()), np.uint8)
    starts = np.cumsum(padded) - padded
    for p, s in zip(parts, starts.tolist()):
        new[s: s + p.size] = p
    return new, starts, lens


def _mb_general(m: pb.General, cs: ChunkSet, what: str) -> Values:
    _need_bufs(cs, 1, what)
    sub = ChunkSet(cs.counts, [_decompress_chunks(m, cs.bufs[0], what)] + cs.bufs[1:])
    return decode_miniblock(m.values, sub, what)


def _mb_fsl(m: pb.FixedSizeList, cs: ChunkSet, what: str) -> Values:
    layers, cur = fsl_layers(m)
    inner_enc = cur.values
    trace.record("mb:fixed_size_list" + ("+validity" if any(v for _, v in layers) else ""))
    cum = np.cumprod([d for d, _ in layers]).astype(np.int64)
    if any(d <= 0 for d, _ in layers):
        raise CorruptFileError(f"{what}: fixed-size list of size 0")
    counts = cs.counts
    bi = 0
    validities: list[np.ndarray | None] = []
    for li, (d, has_v) in enumerate(layers):
        if not has_v:
            validities.append(None)
            continue
        _need_bufs(cs, bi + 1, what)
        data, offs, sizes = cs.bufs[bi]
        bi += 1
        nbits = counts * cum[li]
        nbytes = (nbits + 7) // 8
        if (sizes < nbytes).any():
            raise CorruptFileError(f"{what}: fixed-size-list validity shorter than its items")
        raw = gather_bytes(data, offs, nbytes, what)
        allbits = np.unpackbits(raw, bitorder="little").view(np.bool_)
        seg, pos = segment_index(nbits)
        base = np.cumsum(nbytes * 8) - nbytes * 8
        validities.append(allbits[base[seg] + pos])
    inner = decode_miniblock(inner_enc, ChunkSet(counts * cum[-1], cs.bufs[bi:]), what)
    return FslValues(inner, layers, validities)


def _mb_packed_struct(m: pb.PackedStruct, cs: ChunkSet, what: str) -> Values:
    bits = [int(b) for b in m.bits_per_value]
    if any(b % 8 for b in bits):
        raise UnsupportedFeatureError(f"{what}: packed struct with non-byte-aligned children {bits}")
    inner = decode_miniblock(m.values, cs, what)
    if not isinstance(inner, Fixed) or inner.bits != sum(bits):
        raise CorruptFileError(f"{what}: packed struct records of {getattr(inner, 'bits', '?')} bits, "
                               f"children sum to {sum(bits)}")
    return Packed(bits, inner)


#: the decoder of each ``compression`` case (called with that case's message)
_MB: dict[str, Callable[[Any, ChunkSet, str], Values]] = {
    "flat": _mb_flat, "inline_bitpacking": _mb_inline_bp, "variable": _mb_variable,
    "fsst": _mb_fsst, "rle": _mb_rle, "byte_stream_split": _mb_bss, "general": _mb_general,
    "fixed_size_list": _mb_fsl, "packed_struct": _mb_packed_struct,
}

