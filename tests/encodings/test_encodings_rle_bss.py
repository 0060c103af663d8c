"""RLE and byte-stream-split kernels: known answers, properties, real pylance pages, corrupt input."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lance_duck.encodings import bss, general, rle
from lance_duck.errors import CorruptFileError


def ref_expand(values, lengths):
    out = []
    for v, n in zip(values, lengths):
        out += [v] * int(n)
    return out


def test_rle_known_answer_and_zero_length_runs():
    got = rle.expand(np.array([5, 6, 7], np.int32), np.array([2, 0, 3], np.uint8))
    assert got.tolist() == [5, 5, 7, 7, 7]
    assert rle.expand(np.array([5, 6]), np.array([2, 3]), 4).tolist() == [5, 5, 6, 6]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2 ** 16 - 1), st.integers(0, 255)), max_size=50), st.data())
def test_rle_range_matches_reference(runs, data):
    values = np.array([v for v, _ in runs], np.uint16)
    lengths = np.array([n for _, n in runs], np.uint8)
    ref = ref_expand(values, lengths)
    assert rle.expand(values, lengths).tolist() == ref
    a = data.draw(st.integers(0, len(ref)))
    b = data.draw(st.integers(a, len(ref)))
    assert rle.expand_range(values, lengths, a, b).tolist() == ref[a:b]


def test_rle_block_form_known_answer():
    vals = np.array([0, 1, 0], "<u2")
    block = (vals.nbytes).to_bytes(8, "little") + vals.tobytes() + bytes([3, 1, 2])
    assert rle.decode_block(block, 16, 6).tolist() == [0, 0, 0, 1, 0, 0]


def test_rle_corrupt_inputs_raise():
    with pytest.raises(CorruptFileError):
        rle.expand(np.array([1, 2]), np.array([1]))  # run count mismatch
    with pytest.raises(CorruptFileError):
        rle.expand(np.array([1]), np.array([3]), 5)  # runs cover too few values
    with pytest.raises(CorruptFileError):
        rle.decode_block((1 << 40).to_bytes(8, "little") + b"\0\0", 16, 1)  # length past the end
    with pytest.raises(CorruptFileError):
        rle.decode_block(b"\x03\0\0", 16, 1)  # short header
    with pytest.raises(CorruptFileError):
        rle.decode_block((4).to_bytes(8, "little") + b"\1\0\2\0" + b"\1", 16, 1)  # 2 runs, 1 length
    with pytest.raises(CorruptFileError):
        rle.expand_range(np.array([1]), np.array([3]), 2, 5)



@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 2 ** 16 - 1), st.integers(0, 255)), max_size=8), max_size=12),
       st.data())
def test_rle_chunks_expand_each_chunk_cut_to_its_count(chunks, data):
    """Mini-block chunks / level buffers: each chunk's runs expand, cut to that chunk's value count
    (chunks with no runs included)."""
    refs = [ref_expand([v for v, _ in c], [n for _, n in c]) for c in chunks]
    counts = [data.draw(st.integers(0, len(r))) for r in refs]
    values = np.array([v for c in chunks for v, _ in c], np.uint16)
    lengths = np.array([n for c in chunks for _, n in c], np.uint8)
    got = rle.expand_chunks(values, lengths, [len(c) for c in chunks], counts)
    assert got.tolist() == [v for r, k in zip(refs, counts) for v in r[:k]]


def test_rle_chunks_whose_runs_cover_too_few_values_raise():
    with pytest.raises(CorruptFileError, match="fewer values"):
        rle.expand_chunks(np.array([1, 2]), np.array([2, 1]), [1, 1], [2, 2])
    with pytest.raises(CorruptFileError):
        rle.expand_chunks(np.array([1, 2]), np.array([2, 1]), [1], [2])  # runs do not add up

@pytest.mark.parametrize("bits", [16, 32, 64])
def test_bss_roundtrip_and_chunks(bits):
    rng = np.random.default_rng(bits)
    x = rng.integers(0, 1 << (bits - 1), 1000, dtype=np.uint64).astype(f"u{bits // 8}")
    assert (bss.decode(bss.encode(x), 1000, bits) == x).all()
    counts = [512, 512, 100, 512, 0]
    parts, offs, pos = [], [], 0
    split = np.split(np.concatenate([x, x])[: sum(counts)], np.cumsum(counts)[:-1])
    for p in split:
        b = bss.encode(p) + b"\0" * 3  # unaligned chunk starts
        offs.append(pos)
        parts.append(b)
        pos += len(b)
    got = bss.decode_chunks(b"".join(parts), offs, counts, bits)
    np.testing.assert_array_equal(got, np.concatenate(split))


def test_bss_known_answer_and_short_buffer():
    # two u32 values 0x04030201, 0x08070605 -> streams [01 05][02 06][03 07][04 08]
    got = bss.decode(bytes([1, 5, 2, 6, 3, 7, 4, 8]), 2, 32)
    assert got.tolist() == [0x04030201, 0x08070605]
    with pytest.raises(CorruptFileError):
        bss.decode(b"\0" * 7, 2, 32)
    with pytest.raises(CorruptFileError):
        bss.decode_chunks(b"\0" * 8, [4], [2], 32)


# ------------------------------------------------------------------ real pylance 14.0.2 pages

@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
def test_miniblock_rle_page_matches_pylance(pylance_files, version):
    page = pylance_files.page(version, "runs")
    r = page.mini.value_compression.rle
    assert r.values.flat.bits_per_value == 8 and r.run_lengths.flat.bits_per_value == 8
    data = page.buffers[1]
    parts = []
    for c in page.chunks():
        (vo, vs), (lo, ls) = c.bufs
        lens = np.frombuffer(data[lo:lo + ls], np.uint8)
        vals = np.frombuffer(data[vo:vo + vs], np.uint8)[:lens.size]
        parts.append(rle.expand_chunks(vals, lens, [lens.size], [c.count]))
    np.testing.assert_array_equal(np.concatenate(parts), pylance_files.expected(version, "runs").to_numpy())


@pytest.mark.parametrize("version", ["2.2", "2.3"])
def test_rle_block_def_levels_2_2_and_2_3_match_pylance_validity(pylance_files, version):
    """Block-form RLE levels: ``[u64 value bytes][u16 levels][run lengths]``, u8 run lengths in
    2.2, u16 in 2.3."""
    page = pylance_files.page(version, "i64_null_few")
    dc = page.mini.def_compression
    assert dc.WhichOneof("compression") == "rle"
    bits = dc.rle.values.flat.bits_per_value
    assert dc.rle.run_lengths.flat.bits_per_value == {"2.2": 8, "2.3": 16}[version]
    data = page.buffers[1]

    def levels(buf: bytes, n: int) -> np.ndarray:
        if version == "2.2":
            return rle.decode_block(buf, bits, n)
        vbytes = int.from_bytes(buf[:8], "little")
        vals = np.frombuffer(buf, np.uint16, vbytes // 2, 8)
        return rle.expand(vals, np.frombuffer(buf, np.uint16, vals.size, 8 + vbytes), n)
    defs = np.concatenate([levels(data[c.defs[0]:c.defs[0] + c.defs[1]], c.count) for c in page.chunks()])
    exp = pylance_files.expected(version, "i64_null_few").is_valid().to_numpy(zero_copy_only=False)
    np.testing.assert_array_equal(defs == 0, exp)


@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
@pytest.mark.parametrize("column,scheme", [("f64_bss", "zstd"), ("i64_lz4", "lz4")])
def test_general_wrapped_bss_pages_match_pylance(pylance_files, version, column, scheme):
    page = pylance_files.page(version, column)
    g = page.mini.value_compression.general
    assert general.scheme_name(g.compression.scheme) == scheme
    assert g.values.WhichOneof("compression") == "byte_stream_split"
    data = page.buffers[1]
    parts = []
    for c in page.chunks():
        off, size = c.bufs[0]
        raw = general.decompress(data[off:off + size], g.compression.scheme)
        parts.append(bss.decode(raw, c.count, 64))
    exp = pylance_files.expected(version, column).to_numpy()
    np.testing.assert_array_equal(np.concatenate(parts).view(exp.dtype), exp)


def test_2_3_zstd_column_as_run_lengths_with_zstd_children_matches_pylance(pylance_files):
    """A ``compression: zstd`` float column at 2.3: per chunk, RLE whose values (flat 64-bit) and
    run lengths (flat 8-bit) are each zstd frames (2.1 / 2.2 wrap bit-packed values instead)."""
    page = pylance_files.page("2.3", "f64_zstd")
    r = page.mini.value_compression.rle
    vg, lg = r.values.general, r.run_lengths.general
    assert general.scheme_name(vg.compression.scheme) == general.scheme_name(lg.compression.scheme) == "zstd"
    assert vg.values.flat.bits_per_value == 64 and lg.values.flat.bits_per_value == 8
    data = page.buffers[1]
    parts = []
    for c in page.chunks():
        (vo, vs), (lo, ls) = c.bufs
        lens = np.frombuffer(general.decompress(data[lo:lo + ls], lg.compression.scheme), np.uint8)
        vals = np.frombuffer(general.decompress(data[vo:vo + vs], vg.compression.scheme), np.float64)
        parts.append(rle.expand_chunks(vals[:lens.size], lens, [lens.size], [c.count]))
    np.testing.assert_array_equal(np.concatenate(parts), pylance_files.expected("2.3", "f64_zstd").to_numpy())
