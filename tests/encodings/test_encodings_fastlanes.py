"""FastLanes unpacking: reference packer round trips, property tests, real pylance pages."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lance_duck.encodings import fastlanes as fl
from lance_duck.errors import CorruptFileError

ORDER = [0, 4, 2, 6, 1, 5, 3, 7]


def ref_pack_block(values, w: int, t: int) -> np.ndarray:
    """Slow, independent FastLanes packer for one 1024-value block (straight from the layout text)."""
    lanes = 1024 // t
    words = [0] * (w * lanes)
    for lane in range(lanes):
        for r in range(t):
            v = int(values[ORDER[r // 8] * 16 + (r % 8) * 128 + lane]) & ((1 << w) - 1)
            for b in range(w):
                if v >> b & 1:
                    p = r * w + b
                    words[(p // t) * lanes + lane] |= 1 << (p % t)
    return np.array(words, dtype=f"<u{t // 8}")


def rand_values(rng, n, w, t):
    if w == 0:
        return np.zeros(n, f"u{t // 8}")
    return (rng.integers(0, 1 << 62, n, dtype=np.uint64) * 4 + rng.integers(0, 4, n, dtype=np.uint64)
            ).astype(np.uint64) & np.uint64((1 << w) - 1) if w < 64 else rng.integers(
        0, 1 << 63, n, dtype=np.uint64) * 2 + 1


@pytest.mark.parametrize("t", [8, 16, 32, 64])
@pytest.mark.parametrize("wsel", ["zero", "one", "three", "tminus1", "t"])
def test_unpack_matches_reference_packer(t, wsel):
    w = {"zero": 0, "one": 1, "three": 3, "tminus1": t - 1, "t": t}[wsel]
    rng = np.random.default_rng(t * 100 + w)
    vals = rand_values(rng, 2048, w, t).astype(f"u{t // 8}")
    packed = np.concatenate([ref_pack_block(vals[:1024], w, t), ref_pack_block(vals[1024:], w, t)])
    got = fl.unpack(packed.tobytes(), w, t, 2000)
    assert got.dtype == np.dtype(f"u{t // 8}")
    np.testing.assert_array_equal(got, vals[:2000])
    np.testing.assert_array_equal(fl.pack(vals, w, t), packed)


def test_known_answer_first_values_t8_w1():
    # W=1, T=8: word k*128+l bit r holds the value at ORDER[r//8]*16 + (r%8)*128 + l = r*128 + l
    vals = np.zeros(1024, np.uint8)
    vals[5 * 128 + 3] = 1
    packed = np.zeros(128, np.uint8)
    packed[3] = 1 << 5
    np.testing.assert_array_equal(fl.unpack(packed, 1, 8, 1024), vals)


@settings(max_examples=60, deadline=None)
@given(t=st.sampled_from([8, 16, 32, 64]), data=st.data())
def test_pack_unpack_roundtrip_property(t, data):
    w = data.draw(st.integers(0, t))
    n = data.draw(st.integers(0, 3000))
    seed = data.draw(st.integers(0, 2 ** 32 - 1))
    vals = rand_values(np.random.default_rng(seed), n, w, t).astype(f"u{t // 8}")
    packed = fl.pack(vals, w, t)
    np.testing.assert_array_equal(fl.unpack(packed, w, t, n), vals)


@settings(max_examples=30, deadline=None)
@given(t=st.sampled_from([8, 16, 32, 64]), data=st.data())
def test_unpack_mixed_widths_property(t, data):
    widths = data.draw(st.lists(st.integers(0, t), min_size=1, max_size=6))
    seed = data.draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    blocks = [rand_values(rng, 1024, w, t).astype(f"u{t // 8}") for w in widths]
    counts = [1024] * (len(widths) - 1) + [data.draw(st.integers(0, 1024))]
    # each block preceded by its width word, as in an InlineBitpacking chunk
    parts, offs, pos = [], [], 0
    for w, b in zip(widths, blocks):
        raw = np.array([w], f"<u{t // 8}").tobytes() + fl.pack(b, w, t).tobytes()
        offs.append(pos + t // 8)
        parts.append(raw)
        pos += len(raw)
    got = fl.unpack_mixed(b"".join(parts), t, offs, widths, counts)
    np.testing.assert_array_equal(got, np.concatenate(blocks)[: sum(counts)])


def test_unpack_selected_blocks_only():
    vals = np.arange(4000, dtype=np.uint32) % 1000
    packed = fl.pack(vals, 10, 32)
    got = fl.unpack(packed, 10, 32, 4000, blocks=np.array([2, 0, 3]))
    expect = np.concatenate([vals[2048:3072], vals[:1024], vals[3072:]])
    np.testing.assert_array_equal(got, expect)


def _out_of_line_buffers(vals, w, raw_tail):
    """One OutOfLineBitpacking buffer per value array: whole packed blocks, then the tail as raw
    16-bit words when ``raw_tail(i)`` else as one more packed block."""
    bufs = []
    for i, v in enumerate(vals):
        full = v.size // 1024
        b = fl.pack(v[: full * 1024], w, 16).tobytes() if full else b""
        if v.size % 1024:
            b += v[full * 1024:].tobytes() if raw_tail(i) else fl.pack(v[full * 1024:], w, 16).tobytes()
        bufs.append(b)
    offs = np.cumsum([0] + [len(b) for b in bufs])
    return bufs, b"".join(bufs), offs[:-1], np.diff(offs)


def test_out_of_line_raw_and_packed_tails_in_one_batch():
    rng = np.random.default_rng(3)
    counts = [1500, 2048, 10, 1030, 0]
    vals = [rng.integers(0, 4, c).astype(np.uint16) for c in counts]
    bufs, data, offs, sizes = _out_of_line_buffers(vals, 2, lambda i: counts[i] != 1500)
    got = fl.unpack_out_of_line_batch(data, offs, sizes, counts, 2, 16)
    np.testing.assert_array_equal(got, np.concatenate(vals))
    np.testing.assert_array_equal(fl.unpack_out_of_line(bufs[3], 2, 16, 1030), vals[3])


@pytest.mark.parametrize("last", [0, 5, 1024, 1500, 2048])
@pytest.mark.parametrize("last_raw", [False, True])
def test_out_of_line_whole_block_buffers_unpack_in_place(last, last_raw):
    """Buffers of whole blocks (the usual def levels) are unpacked straight into the result;
    the last buffer may end in a raw or packed tail, or be empty."""
    rng = np.random.default_rng(last)
    counts = [1024, 2048, 0, 1024, last]
    vals = [rng.integers(0, 8, c).astype(np.uint16) for c in counts]
    _, data, offs, sizes = _out_of_line_buffers(vals, 3, lambda i: last_raw)
    got = fl.unpack_out_of_line_batch(data, offs, sizes, counts, 3, 16)
    np.testing.assert_array_equal(got, np.concatenate(vals))


def test_short_buffer_raises_corrupt():
    packed = fl.pack(np.arange(1024) % 8, 3, 16).tobytes()
    with pytest.raises(CorruptFileError):
        fl.unpack(packed[:-2], 3, 16, 1024)
    with pytest.raises(CorruptFileError):
        fl.unpack(packed, 3, 16, 2000)  # needs two blocks
    with pytest.raises(CorruptFileError):
        fl.unpack(packed, 17, 16, 10)
    with pytest.raises(CorruptFileError):
        fl.unpack_mixed(packed, 16, [8], [3])  # block runs past the end
    with pytest.raises(CorruptFileError):
        fl.unpack_out_of_line(packed[:100], 3, 16, 1024)
    with pytest.raises(CorruptFileError):
        fl.unpack(packed, 3, 16, 1 << 62)  # absurd count: refused before allocating


# ------------------------------------------------------------------ real pylance 14.0.2 pages

def _inline_bp_values(page, t):
    chunks = page.chunks()
    data = page.buffers[1]
    offs = np.array([c.bufs[0][0] for c in chunks])
    widths = np.array([int.from_bytes(data[o:o + t // 8], "little") for o in offs])
    for c, w in zip(chunks, widths):  # chunk buffer = width word + one whole block
        assert c.bufs[0][1] == t // 8 + 1024 * w // 8
    return fl.unpack_mixed(data, t, offs + t // 8, widths, [c.count for c in chunks])


@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
@pytest.mark.parametrize("column,t", [("u8_small", 8), ("u16_small", 16), ("f64", 64)])
def test_inline_bitpacking_pages_match_pylance(pylance_files, version, column, t):
    page = pylance_files.page(version, column)
    vc = page.mini.value_compression
    assert vc.WhichOneof("compression") == "inline_bitpacking"
    assert vc.inline_bitpacking.uncompressed_bits_per_value == t
    got = _inline_bp_values(page, t)
    exp = pylance_files.expected(version, column).to_numpy(zero_copy_only=False)
    np.testing.assert_array_equal(got.view(exp.dtype), exp)


def test_inline_bitpacking_2_1_int64_and_nullable_values(pylance_files):
    page = pylance_files.page("2.1", "small_i64")
    got = _inline_bp_values(page, 64).view(np.int64)
    np.testing.assert_array_equal(got, pylance_files.expected("2.1", "small_i64").to_numpy())
    page = pylance_files.page("2.1", "i32_null")
    got = _inline_bp_values(page, 32).view(np.int32)
    exp = pylance_files.expected("2.1", "i32_null")
    valid = exp.is_valid().to_numpy(zero_copy_only=False)
    np.testing.assert_array_equal(got[valid], exp.drop_null().to_numpy())


def test_out_of_line_def_levels_match_pylance_validity(pylance_files):
    for version in ("2.1", "2.2", "2.3"):
        page = pylance_files.page(version, "i32_null")
        dc = page.mini.def_compression.out_of_line_bitpacking
        assert dc.uncompressed_bits_per_value == 16
        w = dc.values.flat.bits_per_value
        chunks = page.chunks()
        defs = fl.unpack_out_of_line_batch(page.buffers[1], [c.defs[0] for c in chunks],
                                           [c.defs[1] for c in chunks], [c.count for c in chunks], w, 16)
        exp = pylance_files.expected(version, "i32_null").is_valid().to_numpy(zero_copy_only=False)
        np.testing.assert_array_equal(defs == 0, exp)


@pytest.mark.parametrize("version", ["2.2", "2.3"])
def test_block_form_inline_bitpacked_dictionary_2_2_and_2_3(pylance_files, version):
    """2.2 / 2.3 numeric dictionary: items are a sequence of [width word][block] InlineBP64 blocks."""
    page = pylance_files.page(version, "small_i64")
    mb = page.mini
    assert mb.dictionary.WhichOneof("compression") == "inline_bitpacking"
    d = page.buffers[2]
    n_items = mb.num_dictionary_items
    offs, widths, pos = [], [], 0
    while len(offs) * 1024 < n_items:
        w = int.from_bytes(d[pos:pos + 8], "little")
        offs.append(pos + 8)
        widths.append(w)
        pos += 8 + 1024 * w // 8
    counts = [1024] * (len(offs) - 1) + [n_items - 1024 * (len(offs) - 1)]
    items = fl.unpack_mixed(d, 64, offs, widths, counts).view(np.int64)
    indices = _inline_bp_values(page, 32)
    np.testing.assert_array_equal(items[indices], pylance_files.expected(version, "small_i64").to_numpy())


@settings(max_examples=40, deadline=None)
@given(t=st.sampled_from([8, 16, 32]), data=st.data())
def test_out_of_line_batch_property(t, data):
    w = data.draw(st.integers(0, t - 1))
    counts = data.draw(st.lists(st.integers(0, 2600), min_size=1, max_size=5))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    vals, bufs, sizes = [], [], []
    for c in counts:
        v = rand_values(rng, c, w, t).astype(f"u{t // 8}")
        full = c // 1024
        b = fl.pack(v[: full * 1024], w, t).tobytes() if full else b""
        if c % 1024:
            # equal raw and packed sizes mean "raw" (the writer's rule; the reader relies on it)
            raw_tail = data.draw(st.booleans()) or (c % 1024) * t == 1024 * w
            b += v[full * 1024:].tobytes() if raw_tail else fl.pack(v[full * 1024:], w, t).tobytes()
        vals.append(v)
        sizes.append(len(b))
        bufs.append(b + b"\0" * (-len(b) % 8))  # chunk buffers are padded to 8 bytes in files
    offs = np.cumsum([0] + [len(b) for b in bufs])
    got = fl.unpack_out_of_line_batch(b"".join(bufs), offs[:-1], sizes, counts, w, t)
    np.testing.assert_array_equal(got, np.concatenate(vals))


# ------------------------------------------------------------------ blocks read in place

def _chunked(rng, k, w, t, gaps):
    """k packed blocks laid out with the given byte gaps before each (like chunk headers and
    padding); returns (buffer, byte offsets of the blocks, expected values)."""
    vals = rand_values(rng, k * 1024, w, t).astype(f"u{t // 8}")
    parts, offs, pos = [], [], 0
    for i in range(k):
        parts.append(b"\xab" * gaps[i])
        pos += gaps[i]
        offs.append(pos)
        blk = fl.pack(vals[i * 1024: (i + 1) * 1024], w, t).tobytes()
        parts.append(blk)
        pos += len(blk)
    return np.frombuffer(b"".join(parts) + b"\xcd" * 3, np.uint8), np.array(offs), vals


@pytest.mark.parametrize("layout", ["even", "stretches", "irregular", "reversed"])
@pytest.mark.parametrize("t,w", [(64, 62), (64, 20), (64, 64), (32, 17), (16, 16), (8, 3)])
def test_blocks_read_in_place_equal_gathered_unpack(layout, t, w):
    rng = np.random.default_rng(t * 1000 + w)
    k = 700  # more than one batch at T=64 (512 blocks), odd number of blocks
    gaps = {"even": [8] * k,                                              # one stretch, aligned
            "stretches": [8] * 300 + [13] * 250 + [5] * 150,              # a few stretches, unaligned
            "irregular": rng.integers(0, 40, k).tolist(),                 # fancy-index fallback
            "reversed": [8] * k}[layout]
    buf, offs, vals = _chunked(rng, k, w, t, gaps)
    if layout == "reversed":  # negative spacing: blocks listed last to first
        offs, vals = offs[::-1].copy(), vals.reshape(k, 1024)[::-1].reshape(-1)
    index = fl._RunIndex(buf, offs, w, 1024 // t * t // 8)
    assert (index.segments is None) == (layout == "irregular")  # both gather paths are covered
    got = fl.unpack_blocks_at(buf, offs, w, t)
    assert got.shape == (k, 1024) and got.dtype == np.dtype(f"u{t // 8}")
    np.testing.assert_array_equal(got.reshape(-1), vals)
    # the same through per-block widths (unpack_mixed), with a short last block
    counts = [1024] * (k - 1) + [77]
    mixed = fl.unpack_mixed(buf, t, offs, np.full(k, w), counts)
    np.testing.assert_array_equal(mixed, vals[: (k - 1) * 1024 + 77])


def test_blocks_read_in_place_out_of_bounds_is_corrupt():
    buf, offs, _ = _chunked(np.random.default_rng(1), 3, 5, 32, [8, 8, 8])
    with pytest.raises(CorruptFileError, match="past the end"):
        fl.unpack_blocks_at(buf[:-10], offs, 5, 32)
    with pytest.raises(CorruptFileError, match="past the end"):
        fl.unpack_blocks_at(buf, offs - 9, 5, 32)
    assert fl.unpack_blocks_at(buf, np.array([], np.int64), 5, 32).shape == (0, 1024)
    np.testing.assert_array_equal(fl.unpack_blocks_at(buf, offs, 0, 32), np.zeros((3, 1024), np.uint32))


@settings(max_examples=30, deadline=None)
@given(t=st.sampled_from([8, 16, 32, 64]), data=st.data())
def test_unpack_mixed_with_short_blocks_anywhere_property(t, data):
    # chunks of list items / nullable values: any block may hold fewer than 1024 values
    n = data.draw(st.integers(1, 7))
    widths = data.draw(st.lists(st.integers(0, t), min_size=n, max_size=n))
    counts = data.draw(st.lists(st.sampled_from([0, 1, 500, 1023, 1024]), min_size=n, max_size=n))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    blocks = [rand_values(rng, 1024, w, t).astype(f"u{t // 8}") for w in widths]
    parts, offs, pos = [], [], 3  # 3: blocks not word aligned in the buffer
    for w, b in zip(widths, blocks):
        raw = np.array([w], f"<u{t // 8}").tobytes() + fl.pack(b, w, t).tobytes()
        offs.append(pos + t // 8)
        parts.append(raw)
        pos += len(raw)
    got = fl.unpack_mixed(b"\0" * 3 + b"".join(parts), t, offs, widths, counts)
    np.testing.assert_array_equal(got, np.concatenate([b[:c] for b, c in zip(blocks, counts)]))


@pytest.mark.parametrize("t", [8, 16, 32, 64])
def test_extract_single_values_equals_unpacking_every_width(t):
    """fastlanes.extract reads values straight from packed words: equal to the packed input for
    every width 0..T, at unaligned block offsets, blocks of different widths mixed."""
    from lance_duck.encodings.fastlanes import extract, pack
    rng = np.random.default_rng(t)
    dt = np.dtype(f"uint{t}")
    blocks, offsets, widths, expected = [], [], [], []
    pos_all, off_all, w_all = [], [], []
    cursor = 5                                            # unaligned start
    for w in range(0, t + 1):
        hi = (1 << w) - 1 if w else 0
        vals = (rng.integers(0, 2**63, 1024, dtype=np.uint64) & np.uint64(hi)).astype(dt)
        packed = pack(vals, w, t).view(np.uint8)
        blocks.append(packed)
        pos = rng.integers(0, 1024, 64)
        pos_all.append(pos)
        off_all.append(np.full(pos.size, cursor))
        w_all.append(np.full(pos.size, w))
        expected.append(vals[pos])
        cursor += packed.size
    buf = np.concatenate([np.zeros(5, np.uint8)] + blocks)
    got = extract(buf, np.concatenate(off_all), np.concatenate(w_all), np.concatenate(pos_all), t)
    assert got.dtype == dt
    assert np.array_equal(got, np.concatenate(expected))


def test_extract_refuses_values_past_the_buffer():
    from lance_duck.encodings.fastlanes import extract
    with pytest.raises(CorruptFileError):
        extract(np.zeros(100, np.uint8), np.array([0]), np.array([7]), np.array([1023]), 32)
    with pytest.raises(CorruptFileError):
        extract(np.zeros(10_000, np.uint8), np.array([0]), np.array([33]), np.array([0]), 32)


@settings(max_examples=25, deadline=None)
@given(t=st.sampled_from([8, 16, 32, 64]), data=st.data())
def test_unpack_mixed_runs_between_short_blocks_property(t, data):
    """Batches spanning pages (a short last chunk per page) are unpacked run by run in place,
    and batches with many short blocks through the per-row placement: both equal the blocks."""
    n = data.draw(st.integers(2, 60))
    widths = data.draw(st.lists(st.sampled_from([0, 1, t // 2, t - 1, t]), min_size=n, max_size=n))
    short = data.draw(st.lists(st.booleans(), min_size=n, max_size=n)) if data.draw(st.booleans()) \
        else [i % 9 == 8 for i in range(n)]
    counts = [data.draw(st.integers(0, 1023)) if s else 1024 for s in short]
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    blocks = [rand_values(rng, 1024, w, t).astype(f"u{t // 8}") for w in widths]
    parts, offs, pos = [], [], 1
    for w, b in zip(widths, blocks):
        raw = np.array([w], f"<u{t // 8}").tobytes() + fl.pack(b, w, t).tobytes()
        offs.append(pos + t // 8)
        parts.append(raw)
        pos += len(raw)
    got = fl.unpack_mixed(b"\0" + b"".join(parts), t, offs, widths, counts)
    np.testing.assert_array_equal(got, np.concatenate([b[:c] for b, c in zip(blocks, counts)]))


@pytest.mark.parametrize("short_every", [1, 2, 7, 1000])
@pytest.mark.parametrize("jumps", [False, True])
def test_place_rows_matches_row_by_row_copies(short_every, jumps):
    """Rows placed as contiguous runs (few short rows / jumps) or by index (many) land exactly
    where a row-by-row copy puts them, and nothing else of the result is written."""
    rng = np.random.default_rng(short_every + 10 * jumps)
    k = 300
    rows = rng.integers(0, 1 << 16, (k, fl.BLOCK)).astype(np.uint16)
    lens = np.full(k, fl.BLOCK, np.int64)
    lens[::short_every] = rng.integers(1, fl.BLOCK, lens[::short_every].size)
    gaps = rng.integers(0, 50, k) * (rng.random(k) < 0.2) if jumps else np.zeros(k, np.int64)
    dst = np.cumsum(lens + gaps) - lens
    want = np.zeros(int(dst[-1] + lens[-1]), np.uint16)
    for i in range(k):
        want[dst[i]: dst[i] + lens[i]] = rows[i, : lens[i]]
    got = np.zeros_like(want)
    fl._place_rows(got, rows, dst, lens)
    np.testing.assert_array_equal(got, want)
