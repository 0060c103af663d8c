"""Bitmaps, Arrow array builders and sequential bit streams."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from lance_duck.encodings import bitmap, bitpack
from lance_duck.errors import CorruptFileError


def ref_pack_sequential(values, w: int) -> bytes:
    """Independent slow packer: value i at bits [i*w, (i+1)*w), LSB first."""
    acc = 0
    for i, v in enumerate(values):
        acc |= (int(v) & ((1 << w) - 1)) << (i * w)
    return acc.to_bytes((len(values) * w + 7) // 8, "little")


def test_unpack_bits_known_answer_and_offsets():
    assert bitmap.unpack_bits(b"\x05", 3).tolist() == [True, False, True]
    assert bitmap.unpack_bits(b"\x05\xff", 6, offset=6).tolist() == [False, False, True, True, True, True]
    assert bitmap.unpack_bits(memoryview(b""), 0).size == 0
    with pytest.raises(CorruptFileError):
        bitmap.unpack_bits(b"\x01", 9)
    with pytest.raises(CorruptFileError):
        bitmap.unpack_bits(b"\x01", 2, offset=7)


def test_pack_validity_roundtrip_and_arrow_builders():
    mask = np.array([1, 0, 1, 1, 0, 1, 1, 1, 1, 0], bool)
    buf = bitmap.pack_validity(mask)
    assert bitmap.unpack_bits(buf, 10).tolist() == mask.tolist()
    arr = bitmap.primitive_array(pa.int32(), np.arange(10, dtype=np.int32), mask)
    assert arr.to_pylist() == [i if m else None for i, m in enumerate(mask)]
    assert arr.null_count == 3
    assert bitmap.primitive_array(pa.float64(), np.arange(3, dtype=np.float64).view(np.uint64)).to_pylist() == [0, 1, 2]
    assert bitmap.validity_buffer(np.ones(4, bool)) == (None, 0)
    b = bitmap.bool_array(np.packbits(mask, bitorder="little"), 10, validity=~mask)
    assert b.to_pylist() == [None if m else False for m in mask]
    dec = bitmap.primitive_array(pa.decimal128(10, 2), np.zeros((2, 16), np.uint8))
    assert dec.to_pylist()[0] == 0
    with pytest.raises(CorruptFileError):
        bitmap.primitive_array(pa.int32(), np.arange(3, dtype=np.int16))


def test_bitmap_buffer_realigns_odd_offsets():
    data = np.packbits(np.array([0, 1, 1, 0, 1, 0, 0, 1, 1, 1], bool), bitorder="little")
    buf = bitmap.bitmap_buffer(data, 7, offset=3)
    assert bitmap.unpack_bits(buf, 7).tolist() == [False, True, False, False, True, True, True]


@pytest.mark.parametrize("w", [1, 3, 7, 8, 12, 16, 31, 33, 57, 63, 64])
def test_sequential_matches_reference_packer(w):
    rng = np.random.default_rng(w)
    vals = rng.integers(0, 1 << 63, 777, dtype=np.uint64) & np.uint64((1 << w) - 1)
    packed = ref_pack_sequential(vals, w)
    assert bitpack.pack_sequential(vals, w) == packed
    np.testing.assert_array_equal(bitpack.unpack_sequential(packed, w, 777, 64), vals)


@settings(max_examples=80, deadline=None)
@given(t=st.sampled_from([8, 16, 32, 64]), data=st.data())
def test_sequential_property_all_widths(t, data):
    w = data.draw(st.integers(0, t))
    vals = data.draw(st.lists(st.integers(0, (1 << w) - 1 if w else 0), max_size=200))
    packed = ref_pack_sequential(vals, w)
    got = bitpack.unpack_sequential(packed, w, len(vals), t)
    assert got.dtype == np.dtype(f"u{t // 8}")
    assert got.tolist() == vals
    signed = bitpack.unpack_sequential(packed, w, len(vals), t, signed=True)
    ref = [v - (1 << w) if w and v >> (w - 1) else v for v in vals]
    assert signed.dtype == np.dtype(f"i{t // 8}") and signed.tolist() == ref


def test_sequential_signed_known_answer_and_short_buffer():
    packed = ref_pack_sequential([1, 2, 3, 4, 5, 6, 7, 0], 3)
    assert bitpack.unpack_sequential(packed, 3, 8, 8, signed=True).tolist() == [1, 2, 3, -4, -3, -2, -1, 0]
    with pytest.raises(CorruptFileError):
        bitpack.unpack_sequential(packed[:2], 3, 8, 8)
    with pytest.raises(CorruptFileError):
        bitpack.unpack_sequential(packed, 9, 2, 8)


# ------------------------------------------------------------------ real pylance 14.0.2 pages

@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
def test_flat1_boolean_chunks_match_pylance(pylance_files, version):
    page = pylance_files.page(version, "flag")
    assert page.mini.value_compression.flat.bits_per_value == 1
    data = page.buffers[1]
    bits, seq = [], []
    for c in page.chunks():
        off, size = c.bufs[0]
        bits.append(bitmap.unpack_bits(data[off:off + size], c.count))
        seq.append(bitpack.unpack_sequential(data[off:off + size], 1, c.count, 8))
    exp = pylance_files.expected(version, "flag").to_numpy(zero_copy_only=False)
    np.testing.assert_array_equal(np.concatenate(bits), exp)
    np.testing.assert_array_equal(np.concatenate(seq).astype(bool), exp)


def test_2_0_nullable_bool_bitmaps_match_pylance(pylance_files):
    page = pylance_files.page("2.0", "b_null")
    some = page.layout.nullable.some_nulls
    n = page.length
    valid = bitmap.unpack_bits(page.buffers[some.validity.flat.buffer.buffer_index], n)
    arr = bitmap.bool_array(page.buffers[some.values.flat.buffer.buffer_index], n, validity=valid)
    exp = pylance_files.expected("2.0", "b_null")[:n]
    assert arr.equals(exp)
