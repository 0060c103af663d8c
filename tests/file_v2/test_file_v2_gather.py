"""Byte-level gathers of the 2.1/2.2 reader: integers and chunk headers at arbitrary offsets."""
import numpy as np
import pytest

from lance_duck.errors import CorruptFileError
from lance_duck.file.v2_1.gather import gather_bytes, read_header_words, read_uint


def _ref_uint(data: bytes, offs, nbytes: int) -> list[int]:
    return [int.from_bytes(data[o: o + nbytes], "little") for o in offs]


@pytest.mark.parametrize("nbytes", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("base", [0, 1, 3])          # the buffer itself starts unaligned
@pytest.mark.parametrize("step", [8, 5, 2])          # offsets aligned to the width, or not
def test_read_uint_matches_little_endian_bytes_at_any_alignment(nbytes, base, step):
    rng = np.random.default_rng(nbytes * 100 + base * 10 + step)
    raw = rng.integers(0, 256, 400, dtype=np.uint8)
    if nbytes == 8:
        raw &= 0x3F                                   # 8-byte values stay plausible (< 2**62)
    buf = raw[base:]
    offs = np.arange(0, buf.size - nbytes, step, dtype=np.int64)
    got = read_uint(buf, offs, nbytes)
    assert got.dtype == np.int64
    assert got.tolist() == _ref_uint(buf.tobytes(), offs.tolist(), nbytes)


def test_read_uint_refuses_fields_outside_the_buffer():
    buf = np.zeros(16, np.uint8)
    with pytest.raises(CorruptFileError):
        read_uint(buf, np.array([15]), 2)
    with pytest.raises(CorruptFileError):
        read_uint(buf, np.array([-1]), 4)


@pytest.mark.parametrize("base", [0, 1, 2])
@pytest.mark.parametrize("starts", [[0, 8, 24, 40], [1, 9, 30], [3], []])
@pytest.mark.parametrize("nwords", [1, 3, 5])
def test_read_header_words_reads_every_chunk_header_in_one_gather(base, starts, nwords):
    raw = np.random.default_rng(len(starts) * 7 + nwords + base).integers(0, 256, 80, dtype=np.uint8)
    buf = raw[base:]
    data = buf.tobytes()
    got = read_header_words(buf, np.array(starts, np.int64), nwords)
    assert len(got) == nwords and all(g.dtype == np.int64 for g in got)
    want = [[int.from_bytes(data[s + 2 * i: s + 2 * i + 2], "little") for s in starts] for i in range(nwords)]
    assert [g.tolist() for g in got] == want


def test_read_header_words_refuses_headers_outside_the_buffer():
    with pytest.raises(CorruptFileError):
        read_header_words(np.zeros(10, np.uint8), np.array([0, 6]), 3)


@pytest.mark.parametrize("seed", range(6))
def test_gather_of_increasing_dense_ranges_equals_slicing(seed):
    """Ranges between small gaps (full-zip values between their headers), empty and adjacent ones
    included, gather like one slice per range."""
    r = np.random.default_rng(seed)
    buf = r.integers(0, 256, 20_000).astype(np.uint8)
    k = 400
    lens = r.integers(0, 60, k)
    lens[r.random(k) < 0.1] = 0
    gaps = np.where(r.random(k) < 0.3, 0, r.integers(1, 6, k))
    offs = np.cumsum(gaps + np.concatenate([[0], lens[:-1]]))
    expected = np.concatenate([buf[o:o + n] for o, n in zip(offs.tolist(), lens.tolist())])
    assert np.array_equal(gather_bytes(buf, offs, lens), expected)
