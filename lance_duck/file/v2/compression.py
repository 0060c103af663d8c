"""Dispatch from ``CompressiveEncoding`` protobufs to decoding kernels.

Three roles (see the format notes, section 5):

* :func:`decode_miniblock` -- the value buffers of many mini-block chunks at once -> values;
* :func:`decode_block` / :func:`decode_block_batch` -- whole buffers (dictionaries, levels);
* :func:`decode_per_value` -- full-zip values (already unzipped) -> values.

Every decoder also reports the encoding names it used through :data:`SEEN` (tests assert that
each supported encoding occurred).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...encodings import _threads, bss, fastlanes, fsst
from ...encodings._buf import empty
from ...errors import CorruptFileError, UnsupportedFeatureError
from . import _kernels, offsets23
from .gather import gather_bytes, read_uint, segment_index
from .values import Fixed, Packed, VarBin, uint_view

SEEN: set[str] = set()


def _kind(enc) -> str:
    k = enc.WhichOneof("compression")
    if k is None:
        raise CorruptFileError("compressive encoding is empty")
    return k


@dataclass
class ChunkSet:
    """Value buffers of k mini-block chunks: ``bufs[b] = (data, offsets, sizes)``."""
    counts: np.ndarray                       # values per chunk
    bufs: list[tuple[np.ndarray, np.ndarray, np.ndarray]]

    @property
    def total(self) -> int:
        return int(self.counts.sum())


# == mini-block =================================================================================
def decode_miniblock(enc, cs: ChunkSet, what: str):
    kind = _kind(enc)
    SEEN.add(f"mb:{kind}")
    fn = _MB.get(kind)
    if fn is None:
        raise UnsupportedFeatureError(f"{what}: encoding {kind!r} is not supported in mini-block pages")
    return fn(getattr(enc, kind), cs, what)


def decode_miniblock_selected(enc, cs: ChunkSet, idx: np.ndarray, what: str):
    """Only values ``idx`` (sorted positions among the chunks' values) of a mini-block page, or
    None when the encoding gains nothing from knowing them (the caller then decodes all values).

    FSST over Variable: the compressed strings are selected first, so only those are
    decompressed (a sparse take touches most chunks of a page but few of their strings).
    """
    kind = _kind(enc)
    if kind == "variable":
        SEEN.add("mb:variable")
        return _variable_selected(enc.variable, cs, idx, what)
    if kind == "flat" and int(enc.flat.bits_per_value) % 8 == 0:
        SEEN.add("mb:flat")
        return _flat_selected(enc.flat, cs, idx, what)
    if kind == "inline_bitpacking":
        SEEN.add("mb:inline_bitpacking")
        return _inline_bp_selected(enc.inline_bitpacking, cs, idx, what)
    if kind != "fsst" or _kind(enc.fsst.values) != "variable":
        return None
    SEEN.add("mb:fsst")
    comp = _variable_selected(enc.fsst.values.variable, cs, idx, what)
    o, d = _kernels.fsst_decompress(enc.fsst.symbol_table, comp.offsets, comp.data)
    return VarBin(o, d)


def _chunk_of(cs: ChunkSet, idx: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    """(chunk, position inside it) of every selected value."""
    counts = cs.counts
    cstart = np.cumsum(counts) - counts
    if idx.size and (int(idx[0]) < 0 or int(idx[-1]) >= int(counts.sum())):
        raise CorruptFileError(f"{what}: fewer values than selected rows")
    c = np.searchsorted(cstart, idx, side="right") - 1
    return c, idx - cstart[c]


def _inline_bp_selected(m, cs: ChunkSet, idx: np.ndarray, what: str) -> Fixed:
    """Values ``idx`` of InlineBitpacking chunks (a width word + one packed 1024-value block
    each), extracted from the packed words one by one (no block is unpacked)."""
    t, data, offs, sizes = _inline_bp_chunks(m, cs, what)
    c, j = _chunk_of(cs, idx, what)
    w = read_uint(data, offs[c], t // 8, what)
    if ((w < 0) | (w > t)).any() or (sizes[c] < t // 8 + w * 1024 // 8).any():
        raise CorruptFileError(f"{what}: bit width outside 0..{t} or chunk shorter than its width needs")
    return Fixed(fastlanes.extract(data, offs[c] + t // 8, w, j, t), t, int(idx.size))


def _flat_selected(m, cs: ChunkSet, idx: np.ndarray, what: str) -> Fixed:
    """Values ``idx`` of flat chunks of whole-byte values, each read at its own position."""
    _need_bufs(cs, 1, what)
    width = int(m.bits_per_value) // 8
    data, offs, sizes = cs.bufs[0]
    if (sizes < cs.counts * width).any():
        raise CorruptFileError(f"{what}: flat chunk shorter than its values")
    c, j = _chunk_of(cs, idx, what)
    at = offs[c] + j * width
    if at.size and (int(at.min()) < 0 or int(at.max()) + width > data.size):
        raise CorruptFileError(f"{what}: a value lies outside its chunk data")
    rows = np.lib.stride_tricks.as_strided(data, shape=(max(data.size - width + 1, 0), width),
                                           strides=(data.strides[0], data.strides[0]), writeable=False)
    return Fixed(rows[at].reshape(-1), width * 8, int(idx.size))


def _variable_selected(m, cs: ChunkSet, idx: np.ndarray, what: str) -> VarBin:
    """Values ``idx`` of Variable chunks, reading only their two offset words each (value i of
    chunk c is ``data[offs[c] + word[i] : offs[c] + word[i + 1]]``), bounds-checked per value."""
    coded = offsets23.variable_offsets23(m)   # 2.3: constant / range offsets
    if coded is not None:
        return offsets23.select(coded, cs, idx, what)
    ob, data, offs, sizes, counts = _variable_chunks(m, cs, what)
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


def _mb_flat(m, cs: ChunkSet, what: str):
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


def _inline_bp_chunks(m, cs: ChunkSet, what: str):
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


def _mb_inline_bp(m, cs: ChunkSet, what: str):
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


def _inline_bp_one_width(data, t, offs, w, counts, total, what):
    """All chunks of one width and whole blocks but the last: unpack every chunk's block in
    place (the kernel reads the packed words straight from the chunk buffer)."""
    k = offs.size
    if k < 2 or (w != w[0]).any() or (counts[:-1] != 1024).any() or int(w[0]) == 0:
        return None
    return fastlanes.unpack_blocks_at(data, offs, int(w[0]), t).reshape(-1)[:total]


def _variable_chunks(m, cs: ChunkSet, what: str):
    """(offset word bytes, data, chunk offsets, chunk sizes, counts) of Variable chunks, checked
    to hold their ``counts + 1`` offset words."""
    _need_bufs(cs, 1, what)
    ob = _flat_bits(m.offsets, what, (32, 64)) // 8
    data, offs, sizes = cs.bufs[0]
    counts = cs.counts
    if ((counts + 1) * ob > sizes).any():
        raise CorruptFileError(f"{what}: variable chunk shorter than its offsets")
    return ob, data, offs, sizes, counts


def _mb_variable(m, cs: ChunkSet, what: str):
    coded = offsets23.variable_offsets23(m)   # 2.3: constant / range offsets
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
    if data.ctypes.data % ob or (offs.size and (offs % ob).any()):
        return None
    return data[: data.size // ob * ob].view(_UDT[ob * 8])


_FSST_GROUP_VALUES = 1 << 16  # most values per group of chunks FSST-decoded together
_FSST_MIN_GROUP = 1 << 13     # fewest values per group worth a task of its own


def _mb_fsst(m, cs: ChunkSet, what: str):
    workers = _threads.parallel_workers()
    if _kind(m.values) == "variable" and cs.counts.size > 1 and workers > 1:
        # (inline on a scan thread, one pass over the page beats groups and their join copy)
        total = cs.total
        groups = max(-(-total // _FSST_GROUP_VALUES), min(workers, total // _FSST_MIN_GROUP))
        if groups > 1:
            return _mb_fsst_grouped(m, cs, what, -(-total // groups))
    inner = decode_miniblock(m.values, cs, what)
    if not isinstance(inner, VarBin):
        raise CorruptFileError(f"{what}: FSST over non-variable values")
    offs, data = _kernels.fsst_decompress(m.symbol_table, inner.offsets, inner.data, int32_offsets=True)
    return VarBin(offs, data)


def _mb_fsst_grouped(m, cs: ChunkSet, what: str, group_values: int) -> VarBin:
    """FSST over Variable chunks, decoded in groups of whole chunks of about ``group_values``
    values, concurrently on the kernel pool: every temporary (compressed offsets, gathered
    compressed bytes, tokens) stays small and is reused by the allocator instead of faulting in
    fresh pages; only the output offsets and the joined bytes are column-sized."""
    _need_bufs(cs, 1, what)
    SEEN.add("mb:variable")
    st = fsst.parse_symbol_table(m.symbol_table)
    data, offs, sizes = cs.bufs[0]
    counts = cs.counts
    k, total = counts.size, cs.total
    ends = np.cumsum(counts)
    cuts = np.searchsorted(ends, np.arange(group_values, total, group_values)) + 1
    bounds = [0] + sorted({c for c in cuts.tolist() if 0 < c < k}) + [k]

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
    pos, shift = 0, 0
    for o, d in results:  # a few dozen groups per column, not per chunk
        n = o.size - 1
        np.add(o[1:], np.int64(shift), out=out[pos + 1: pos + n + 1], casting="unsafe")
        pos += n
        shift += d.size
    return VarBin(out, np.concatenate([d for _, d in results]))


def _mb_rle(m, cs: ChunkSet, what: str):
    _need_bufs(cs, 2, what)
    vb = _flat_bits(m.values, what, (8, 16, 32, 64)) // 8
    lb = _flat_bits(m.run_lengths, what, (8, 16, 32)) // 8   # 16 / 32-bit run lengths: 2.3
    vdata, voffs, vsizes = cs.bufs[0]
    ldata, loffs, lsizes = cs.bufs[1]
    if lb > 1 and (lsizes % lb).any():
        raise CorruptFileError(f"{what}: RLE run lengths of {lb * 8} bits in a buffer of odd size")
    runs = lsizes // lb
    if (vsizes < runs * vb).any():
        raise CorruptFileError(f"{what}: RLE values shorter than its run lengths")
    values = gather_bytes(vdata, voffs, runs * vb, what).view(_UDT[vb * 8])
    lengths = gather_bytes(ldata, loffs, runs * lb, what).view(_UDT[lb * 8]).astype(np.int64)
    return Fixed(_expand_runs(values, lengths, runs, cs.counts, what), vb * 8, cs.total)


def _expand_runs(values, lengths, runs, counts, what):
    sums = np.add.reduceat(lengths, np.cumsum(runs) - runs) if runs.size and lengths.size else np.zeros(0, np.int64)
    if runs.size and (runs == 0).any():
        sums = np.array([lengths[s: s + r].sum() for s, r in zip(np.cumsum(runs) - runs, runs)])
    if (sums < counts).any():
        raise CorruptFileError(f"{what}: RLE runs cover fewer values than the chunk holds")
    out = np.repeat(values, lengths)
    if (sums == counts).all():
        return out
    seg, pos = segment_index(sums)
    return out[pos < counts[seg]]


def _mb_bss(m, cs: ChunkSet, what: str):
    _need_bufs(cs, 1, what)
    bits = _flat_bits(m.values, what, (16, 32, 64))
    w = bits // 8
    data, offs, sizes = cs.bufs[0]
    counts = cs.counts
    if (sizes < counts * w).any():
        raise CorruptFileError(f"{what}: byte-stream-split chunk too short")
    out = bss.decode_chunks(data, offs, counts, bits)
    return Fixed(out, bits, cs.total)


def _mb_general(m, cs: ChunkSet, what: str):
    _need_bufs(cs, 1, what)
    scheme = int(m.compression.scheme)
    SEEN.add(f"general:{scheme}")
    data, offs, sizes = cs.bufs[0]
    parts = [_kernels.decompress(scheme, data[o: o + s], what)
             for o, s in zip(offs.tolist(), sizes.tolist())]  # one codec call per chunk
    lens = np.array([p.size for p in parts], np.int64)
    padded = (lens + 7) // 8 * 8
    new = np.zeros(int(padded.sum()), np.uint8)
    starts = np.cumsum(padded) - padded
    for p, s in zip(parts, starts.tolist()):
        new[s: s + p.size] = p
    sub = ChunkSet(cs.counts, [(new, starts, lens)] + cs.bufs[1:])
    return decode_miniblock(m.values, sub, what)


def _fsl_layers(m) -> tuple[list[tuple[int, bool]], object]:
    """The nested FixedSizeList layers ((items_per_value, has_validity), outermost first) and the
    innermost one (whose ``values`` is the item encoding)."""
    layers = []
    cur = m
    while True:
        layers.append((int(cur.items_per_value), bool(cur.has_validity)))
        if _kind(cur.values) != "fixed_size_list":
            return layers, cur
        cur = cur.values.fixed_size_list


def _mb_fsl(m, cs: ChunkSet, what: str):
    layers, cur = _fsl_layers(m)
    inner_enc = cur.values
    SEEN.add("mb:fixed_size_list" + ("+validity" if any(v for _, v in layers) else ""))
    cum = np.cumprod([d for d, _ in layers]).astype(np.int64)
    if any(d <= 0 for d, _ in layers):
        raise CorruptFileError(f"{what}: fixed-size list of size 0")
    counts = cs.counts
    bi = 0
    validities = []
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


@dataclass
class FslValues:
    """Flattened fixed-size-list items with per-layer item validity (outermost first)."""
    items: object
    layers: list[tuple[int, bool]]
    validities: list[np.ndarray | None]


def _mb_packed_struct(m, cs: ChunkSet, what: str):
    bits = [int(b) for b in m.bits_per_value]
    if any(b % 8 for b in bits):
        raise UnsupportedFeatureError(f"{what}: packed struct with non-byte-aligned children {bits}")
    inner = decode_miniblock(m.values, cs, what)
    if not isinstance(inner, Fixed) or inner.bits != sum(bits):
        raise CorruptFileError(f"{what}: packed struct records of {getattr(inner, 'bits', '?')} bits, "
                               f"children sum to {sum(bits)}")
    return Packed(bits, inner)


_UDT = {8: np.uint8, 16: np.dtype("<u2"), 32: np.dtype("<u4"), 64: np.dtype("<u8")}

_MB = {
    "flat": _mb_flat, "inline_bitpacking": _mb_inline_bp, "variable": _mb_variable,
    "fsst": _mb_fsst, "rle": _mb_rle, "byte_stream_split": _mb_bss, "general": _mb_general,
    "fixed_size_list": _mb_fsl, "packed_struct": _mb_packed_struct,
}


def _flat_bits(enc, what: str, allowed: tuple[int, ...]) -> int:
    if _kind(enc) != "flat":
        raise UnsupportedFeatureError(f"{what}: expected a flat inner encoding, got {_kind(enc)!r}")
    bits = int(enc.flat.bits_per_value)
    if bits not in allowed:
        raise UnsupportedFeatureError(f"{what}: flat inner encoding of {bits} bits (expected {allowed})")
    return bits


# == block ======================================================================================
def decode_block(enc, buf: np.ndarray, n: int, what: str):
    """Decode ``n`` values from one whole buffer."""
    kind = _kind(enc)
    SEEN.add(f"block:{kind}")
    m = getattr(enc, kind)
    buf = np.ascontiguousarray(buf).view(np.uint8).reshape(-1)
    if n < 0 or n > (1 << 40):
        raise CorruptFileError(f"{what}: implausible value count {n}")
    if kind == "flat":
        bits = int(m.bits_per_value)
        if bits == 1:
            if buf.size * 8 < n:
                raise CorruptFileError(f"{what}: bitmap too short")
            return Fixed(np.unpackbits(buf, count=n, bitorder="little").view(np.bool_), 1, n)
        if bits % 8 or buf.size < n * bits // 8:
            raise CorruptFileError(f"{what}: flat buffer of {buf.size} bytes for {n} x {bits} bits")
        return Fixed(buf[: n * bits // 8], bits, n)
    if kind == "variable":
        return _block_variable(buf, n, what)
    if kind == "inline_bitpacking":
        return _block_inline_bp(m, buf, n, what)
    if kind == "out_of_line_bitpacking":
        t = int(m.uncompressed_bits_per_value)
        w = _flat_bits(m.values, what, tuple(range(0, 65)))
        return Fixed(fastlanes.unpack_out_of_line(buf, w, t, n), t, n)
    if kind == "rle":
        return _block_rle(m, buf, n, what)
    if kind == "general":
        SEEN.add(f"general:{int(m.compression.scheme)}")
        return decode_block(m.values, _kernels.decompress(int(m.compression.scheme), buf, what), n, what)
    if kind == "constant" and m.HasField("value"):
        v = np.frombuffer(m.value, np.uint8)
        return Fixed(np.tile(v, n), v.size * 8, n)
    raise UnsupportedFeatureError(f"{what}: encoding {kind!r} is not supported for whole buffers")


def _block_variable(buf: np.ndarray, n: int, what: str) -> VarBin:
    if buf.size < 8:
        raise CorruptFileError(f"{what}: variable block header missing")
    bpo = int(buf[:4].view("<u4")[0])
    if bpo == 32:
        hdr, start = 8, int(buf[4:8].view("<u4")[0])
    elif bpo == 64:
        if buf.size < 16:
            raise CorruptFileError(f"{what}: variable block header missing")
        hdr, start = 16, int(buf[8:16].view("<u8")[0])
    else:
        raise CorruptFileError(f"{what}: variable block with {bpo}-bit offsets")
    ob = bpo // 8
    if start > buf.size or hdr + (n + 1) * ob > start:
        raise CorruptFileError(f"{what}: variable block offsets out of range")
    o = read_uint(buf, hdr + np.arange(n + 1) * ob, ob, what)
    if (np.diff(o) < 0).any() or o[-1] + start > buf.size:
        raise CorruptFileError(f"{what}: variable block offsets are corrupt")
    return VarBin(o - o[0], buf[start + o[0]: start + o[-1]])


def _block_inline_bp(m, buf: np.ndarray, n: int, what: str) -> Fixed:
    t = int(m.uncompressed_bits_per_value)
    if t not in (8, 16, 32, 64):
        raise UnsupportedFeatureError(f"{what}: inline bitpacking of {t}-bit values")
    nb = -(-n // 1024)
    offs, widths = [], []
    pos = 0
    for _ in range(nb):  # blocks are self-delimiting; dictionaries have only a few
        if pos + t // 8 > buf.size:
            raise CorruptFileError(f"{what}: bitpacked block header outside the buffer")
        w = int(read_uint(buf, np.array([pos]), t // 8, what)[0])
        if w > t:
            raise CorruptFileError(f"{what}: bit width {w} > {t}")
        offs.append(pos + t // 8)
        widths.append(w)
        pos += t // 8 + w * 128
    counts = np.full(nb, 1024, np.int64)
    if nb:
        counts[-1] = n - 1024 * (nb - 1)
    vals = fastlanes.unpack_mixed(buf, t, np.array(offs, np.int64), np.array(widths, np.int64), counts)
    return Fixed(vals, t, n)


def _block_rle(m, buf: np.ndarray, n: int, what: str) -> Fixed:
    vb = _flat_bits(m.values, what, (8, 16, 32, 64)) // 8
    if buf.size < 8:
        raise CorruptFileError(f"{what}: RLE block header missing")
    vlen = int(buf[:8].view("<u8")[0])
    if vlen % vb or 8 + vlen > buf.size:
        raise CorruptFileError(f"{what}: RLE block values length {vlen} is corrupt")
    runs = vlen // vb
    if buf.size < 8 + vlen + runs:
        raise CorruptFileError(f"{what}: RLE block run lengths missing")
    vals = np.ascontiguousarray(buf[8: 8 + vlen]).view(_UDT[vb * 8])
    lens = buf[8 + vlen: 8 + vlen + runs].astype(np.int64)
    return Fixed(_expand_runs(vals, lens, np.array([runs]), np.array([n]), what), vb * 8, n)


def decode_block_batch(enc, buf: np.ndarray, offs: np.ndarray, sizes: np.ndarray, counts: np.ndarray,
                       what: str) -> np.ndarray:
    """Decode one level buffer per chunk (u16 levels), all chunks at once; concatenated."""
    kind = _kind(enc)
    SEEN.add(f"levels:{kind}")
    m = getattr(enc, kind)
    if kind == "out_of_line_bitpacking":
        t = int(m.uncompressed_bits_per_value)
        w = _flat_bits(m.values, what, tuple(range(0, 65)))
        return fastlanes.unpack_out_of_line_batch(buf, offs, sizes, counts, w, t)
    if kind == "flat":
        bits = _flat_bits(enc, what, (8, 16, 32, 64))
        if (sizes < counts * bits // 8).any():
            raise CorruptFileError(f"{what}: level buffer too short")
        return gather_bytes(buf, offs, counts * bits // 8, what).view(_UDT[bits])
    if kind == "rle":
        vb = _flat_bits(m.values, what, (8, 16, 32, 64)) // 8
        vlen = read_uint(buf, offs, 8, what)
        runs = vlen // vb
        if (vlen % vb).any() or (8 + vlen + runs > sizes).any():
            raise CorruptFileError(f"{what}: RLE level buffer is corrupt")
        vals = gather_bytes(buf, offs + 8, vlen, what).view(_UDT[vb * 8])
        lens = gather_bytes(buf, offs + 8 + vlen, runs, what).astype(np.int64)
        return _expand_runs(vals, lens, runs, counts, what)
    parts = [uint_view(decode_block(enc, buf[o: o + s], c, what))
             for o, s, c in zip(offs.tolist(), sizes.tolist(), counts.tolist())]
    return np.concatenate(parts) if parts else np.zeros(0, np.uint16)


# == per value (full-zip) =======================================================================
def decode_per_value(enc, vals, n: int, what: str):
    """Decode full-zip values: ``vals`` is a VarBin (variable) or Fixed (fixed-width records)."""
    kind = _kind(enc)
    SEEN.add(f"fz:{kind}")
    m = getattr(enc, kind)
    if kind == "variable" and isinstance(vals, VarBin):
        return vals
    if kind == "flat" and isinstance(vals, Fixed):
        return vals
    if kind == "fsst" and isinstance(vals, VarBin):
        inner = decode_per_value(m.values, vals, n, what)
        return VarBin(*_kernels.fsst_decompress(m.symbol_table, inner.offsets, inner.data))
    if kind == "general" and isinstance(vals, VarBin):
        scheme = int(m.compression.scheme)
        SEEN.add(f"general:{scheme}")
        offs, data = _kernels.decompress_many(scheme, vals.offsets, vals.data, what)
        return decode_per_value(m.values, VarBin(offs, data), n, what)
    if kind == "fixed_size_list" and isinstance(vals, Fixed):
        return _fz_fsl(m, vals, what)
    if kind == "variable_packed_struct" and isinstance(vals, VarBin):
        return _fz_var_packed(m, vals, what)
    raise UnsupportedFeatureError(f"{what}: encoding {kind!r} is not supported for full-zip values")


def _fz_fsl(m, vals: Fixed, what: str):
    layers, cur = _fsl_layers(m)
    SEEN.add("fz:fixed_size_list" + ("+validity" if any(v for _, v in layers) else ""))
    item_bits = _flat_bits(cur.values, what, (8, 16, 32, 64, 128, 256))
    cum = np.cumprod([d for d, _ in layers]).astype(np.int64)
    n = vals.n
    rec = vals.bits // 8
    rows = vals.u8()[: n * rec].reshape(n, rec)
    pos = 0
    validities = []
    for li, (_, has_v) in enumerate(layers):
        if not has_v:
            validities.append(None)
            continue
        nb = (int(cum[li]) + 7) // 8
        bits = np.unpackbits(np.ascontiguousarray(rows[:, pos: pos + nb]), axis=1, count=int(cum[li]),
                             bitorder="little")
        validities.append(bits.reshape(-1).view(np.bool_))
        pos += nb
    data_bytes = int(cum[-1]) * item_bits // 8
    if pos + data_bytes != rec:
        raise CorruptFileError(f"{what}: full-zip fixed-size-list record of {rec} bytes, expected {pos + data_bytes}")
    items = Fixed(np.ascontiguousarray(rows[:, pos:]).reshape(-1), item_bits, n * int(cum[-1]))
    return FslValues(items, layers, validities)


def _fz_var_packed(m, vals: VarBin, what: str):
    present = np.diff(vals.offsets) > 0   # null rows carry no bytes
    if not present.all():
        idx = np.flatnonzero(present)
        sub = VarBin(np.concatenate(([0], np.cumsum(np.diff(vals.offsets)[idx]))),
                     gather_bytes(vals.data, vals.offsets[idx], np.diff(vals.offsets)[idx], what))
        part = _fz_var_packed(m, sub, what)
        return VarPackedValues([_scatter(c, idx, vals.n, what) for c in part.children])
    n = vals.n
    data = vals.data
    cur = vals.offsets[:-1].copy()
    end = vals.offsets[1:]
    children = []
    for fe in m.fields:
        lay = fe.WhichOneof("layout")
        if lay == "bits_per_value":
            w = int(fe.bits_per_value) // 8
            if (cur + w > end).any():
                raise CorruptFileError(f"{what}: packed struct row too short")
            raw = data[cur[:, None] + np.arange(w)].reshape(-1) if n else np.zeros(0, np.uint8)
            child = decode_per_value(fe.value, Fixed(raw, w * 8, n), n, what)
            cur = cur + w
        elif lay == "bits_per_length":
            lb = int(fe.bits_per_length) // 8
            if (cur + lb > end).any():
                raise CorruptFileError(f"{what}: packed struct row too short")
            ln = read_uint(data, cur, lb, what)
            cur = cur + lb
            if (cur + ln > end).any():
                raise CorruptFileError(f"{what}: packed struct value overruns its row")
            body = gather_bytes(data, cur, ln, what)
            child = decode_per_value(fe.value, VarBin(np.concatenate(([0], np.cumsum(ln))), body), n, what)
            cur = cur + ln
        else:
            raise CorruptFileError(f"{what}: packed struct field without a layout")
        children.append(child)
    return VarPackedValues(children)


def _scatter(v, idx: np.ndarray, n: int, what: str):
    """Values of rows ``idx`` placed into ``n`` rows (other rows zero / empty)."""
    if isinstance(v, VarBin):
        lens = np.zeros(n, np.int64)
        lens[idx] = np.diff(v.offsets)
        return VarBin(np.concatenate(([0], np.cumsum(lens))), v.data)
    if isinstance(v, Fixed) and v.bits % 8 == 0:
        w = v.bits // 8
        out = np.zeros((n, w), np.uint8)
        out[idx] = v.u8()[: idx.size * w].reshape(idx.size, w)
        return Fixed(out.reshape(-1), v.bits, n)
    raise UnsupportedFeatureError(f"{what}: null rows in a packed struct with {type(v).__name__} children")


@dataclass
class VarPackedValues:
    """Children of a variable packed struct (one decoded value set per field)."""
    children: list


def dictionary_kind(enc) -> str:
    return _kind(enc)


__all__ = ["ChunkSet", "decode_miniblock", "decode_block", "decode_block_batch", "decode_per_value",
           "FslValues", "VarPackedValues", "SEEN", "pa"]
