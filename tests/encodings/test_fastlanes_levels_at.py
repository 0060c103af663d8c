"""``fastlanes.out_of_line_at``: a few definition levels read where they lie, equal to the
whole-buffer decode at those positions (raw and packed tails, several buffers, every width)."""
from __future__ import annotations

import numpy as np
import pytest

from lance_duck.encodings import fastlanes as fl
from lance_duck.errors import CorruptFileError
from tests.encodings.test_encodings_fastlanes import _out_of_line_buffers


@pytest.mark.parametrize("w", [0, 1, 2, 3, 7, 16])
@pytest.mark.parametrize("raw", [False, True])
def test_levels_at_positions_equal_the_batch_decode(w, raw):
    rng = np.random.default_rng(w * 2 + raw)
    counts = [1500, 2048, 10, 1030, 0, 4096, 7]
    top = 1 << w if w < 16 else 1 << 16
    vals = [rng.integers(0, top, c).astype(np.uint16) for c in counts]
    _, data, offs, sizes = _out_of_line_buffers(vals, w, lambda i: raw)
    whole = fl.unpack_out_of_line_batch(data, offs, sizes, counts, w, 16)
    np.testing.assert_array_equal(whole, np.concatenate(vals))
    total = sum(counts)
    for pos in (np.arange(10), np.array([0, 1, 2, 4, 5, 1499, 1500, 3547, 3548]), np.array([total - 1]),
                np.sort(rng.choice(total, 40, replace=False)), np.arange(1024, 1536)):
        got = fl.out_of_line_at(data, offs, sizes, counts, w, 16, pos)
        assert got.dtype == whole.dtype
        np.testing.assert_array_equal(got, whole[pos])


def test_levels_at_one_buffer_and_no_positions():
    vals = (np.arange(3000) % 5).astype(np.uint16)
    _, data, offs, sizes = _out_of_line_buffers([vals], 3, lambda i: True)
    np.testing.assert_array_equal(fl.out_of_line_at(data, offs, sizes, [3000], 3, 16, [2999, 0, 1024]),
                                  vals[[2999, 0, 1024]])
    assert fl.out_of_line_at(data, offs, sizes, [3000], 3, 16, []).size == 0


def test_levels_at_refuses_what_the_batch_decode_refuses():
    vals = (np.arange(2048) % 8).astype(np.uint16)
    _, data, offs, sizes = _out_of_line_buffers([vals], 3, lambda i: False)
    with pytest.raises(CorruptFileError):
        fl.out_of_line_at(data[:100], offs, [100], [2048], 3, 16, [5])      # buffer too short
    with pytest.raises(CorruptFileError):
        fl.out_of_line_at(data, offs, sizes, [2048], 3, 16, [2048])         # past the levels
    with pytest.raises(CorruptFileError):
        fl.out_of_line_at(data, offs, sizes + 8, [2048], 3, 16, [0])        # buffer outside the data
    with pytest.raises(CorruptFileError):
        fl.out_of_line_at(data, offs, sizes, [2048], 17, 16, [0])           # width above T


def test_levels_at_match_pylance_validity(pylance_files):
    for version in ("2.1", "2.2", "2.3"):
        page = pylance_files.page(version, "i32_null")
        dc = page.mini.def_compression.out_of_line_bitpacking
        w = dc.values.flat.bits_per_value
        chunks = page.chunks()
        exp = pylance_files.expected(version, "i32_null").is_valid().to_numpy(zero_copy_only=False)
        pos = np.unique(np.r_[0:12, exp.size - 3: exp.size, exp.size // 2])
        got = fl.out_of_line_at(page.buffers[1], [c.defs[0] for c in chunks], [c.defs[1] for c in chunks],
                                [c.count for c in chunks], w, 16, pos)
        np.testing.assert_array_equal(got == 0, exp[pos])


@pytest.mark.parametrize("w", [0, 1, 3, 16])
@pytest.mark.parametrize("raw", [False, True])
def test_levels_at_of_one_buffer_within_one_block(w, raw):
    """One buffer (a few rows of one chunk): positions inside one packed block, in its raw or
    packed tail, a run with gaps, a few scattered ones, one."""
    rng = np.random.default_rng(10 + w + raw)
    top = 1 << w if w < 16 else 1 << 16
    for count in (10, 1024, 1500, 2048, 3000):
        vals = rng.integers(0, top, count).astype(np.uint16)
        _, data, offs, sizes = _out_of_line_buffers([vals], w, lambda i: raw)
        last = count - 1
        for pos in (np.arange(min(10, count)), np.array([0, 1, 2, 4, 5, 6, 7, 8, 9, 10]) % count,
                    np.array([3, 500, 900]) % count, np.array([last]), np.arange(max(count - 8, 0), count),
                    np.array([1024, 1025, 1027, 1028, 1030, 1031]) % count):
            pos = np.unique(pos)
            got = fl.out_of_line_at(data, offs, sizes, [count], w, 16, pos)
            np.testing.assert_array_equal(got, vals[pos])
    with pytest.raises(CorruptFileError):
        fl.out_of_line_at(data, offs, sizes, [count], w, 16, [count])
