"""Mini-block ``Variable`` chunks (``file/v2_1/compression/miniblock._mb_variable``): the row gathers (in
blocks of a common width, or by chunk count) and the general per-value path give the same
offsets and bytes, for 32- and 64-bit
offsets, aligned or not; bad offsets are CorruptFileError."""
from __future__ import annotations

import numpy as np
import pytest

from lance_duck._proto import encodings_v2_1_pb2 as e21
from lance_duck.errors import CorruptFileError
from lance_duck.file.v2_1.compression import miniblock as C


def _encoding(bits: int):
    enc = e21.CompressiveEncoding()
    enc.variable.offsets.flat.bits_per_value = bits
    return enc


def _chunks(strings_per_chunk, bits, lead=0, pad=8):
    """A chunk buffer: per chunk [offsets (count+1 words, from the chunk start)][bytes][padding]."""
    ob = bits // 8
    buf, offs, sizes = bytearray(b"\x77" * lead), [], []
    for strings in strings_per_chunk:
        head = (len(strings) + 1) * ob
        ends = np.cumsum([0] + [len(s) for s in strings]) + head
        raw = ends.astype(f"<u{ob}").tobytes() + b"".join(strings)
        offs.append(len(buf))
        sizes.append(len(raw))
        buf += raw + b"\0" * (-len(raw) % pad)
    return np.frombuffer(bytes(buf), np.uint8), np.array(offs), np.array(sizes)


def _decode(strings_per_chunk, bits, lead=0, pad=8):
    data, offs, sizes = _chunks(strings_per_chunk, bits, lead, pad)
    counts = np.array([len(s) for s in strings_per_chunk])
    cs = C.ChunkSet(counts, [(data, offs, sizes)])
    return C.decode_miniblock(_encoding(bits), cs, "test")


def _strings(rng, n):
    return [bytes(rng.integers(0, 256, rng.integers(0, 9)).astype(np.uint8)) for _ in range(n)]


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("shape", ["equal", "equal_short_last", "equal_empty_last", "two_sizes",
                                   "two_sizes_interleaved", "empty_inside", "small_equal",
                                   "small_interleaved", "unequal", "many_sizes"])
@pytest.mark.parametrize("lead", [0, 3])  # 3: offsets not word aligned (byte-wise path)
def test_variable_chunks_decode_exactly(bits, shape, lead):
    rng = np.random.default_rng(bits + lead)
    sizes = {"equal": [256] * 6, "equal_short_last": [256] * 5 + [17], "equal_empty_last": [64] * 4 + [0],
             "two_sizes": [512, 512, 256, 256, 256, 100], "two_sizes_interleaved": [256, 512, 256, 512, 512, 31],
             "empty_inside": [256, 0, 512, 64, 0, 9],  # blocks of 64, chunks without values skipped
             "small_equal": [8] * 6 + [3], "small_interleaved": [8, 4, 8, 4, 8, 2],  # per-count rows
             "unequal": [256, 100, 256, 3, 0, 77, 5], "many_sizes": [1, 2, 4, 8, 16, 32, 3]}[shape]
    chunks = [_strings(rng, n) for n in sizes]
    calls = []
    real = C._offsets_by_chunk_count

    def spy(*a):
        calls.append(real(*a))
        return calls[-1]
    C._offsets_by_chunk_count = spy
    try:
        got = _decode(chunks, bits, lead=lead, pad=bits // 8 if lead == 0 else 1)
    finally:
        C._offsets_by_chunk_count = real
    flat = [s for c in chunks for s in c]
    assert got.offsets.dtype == np.int64
    assert got.offsets.tolist() == np.cumsum([0] + [len(s) for s in flat]).tolist()
    assert got.data.tobytes() == b"".join(flat)
    # the row-gather path runs exactly for aligned chunks of at most four distinct non-zero counts
    assert any(calls) == (lead == 0 and shape not in ("unequal", "many_sizes"))


@pytest.mark.parametrize("bits", [32, 64])
def test_variable_chunks_with_decreasing_offsets_are_corrupt(bits):
    rng = np.random.default_rng(1)
    chunks = [_strings(rng, 8) for _ in range(3)]
    data, offs, sizes = _chunks(chunks, bits)
    data = data.copy()
    ob = bits // 8
    w = data[offs[1] + 3 * ob: offs[1] + 4 * ob].view(f"<u{ob}")
    w[0] = 1  # a value offset that goes back before the chunk's first byte
    cs = C.ChunkSet(np.array([8, 8, 8]), [(data, offs, sizes)])
    with pytest.raises(CorruptFileError):
        C.decode_miniblock(_encoding(bits), cs, "test")
