"""fastlanes.extract_blocks (blocks given once, values by (block, position)) equals the packed
input and fastlanes.extract: every T and width 0..T, one width (table slices) and mixed widths,
word-aligned and unaligned blocks (the per-value fallback), values in the last words of the
buffer; blocks past the buffer's end, bad widths and positions are refused."""
from __future__ import annotations

import numpy as np
import pytest

from lance_duck.encodings import fastlanes as fl
from lance_duck.errors import CorruptFileError

from .test_fastlanes_extract_aligned import _blocks, _truncated_block


@pytest.mark.parametrize("t", [8, 16, 32, 64])
@pytest.mark.parametrize("lead", [0, 3])
def test_extract_blocks_equals_packed_values_for_every_single_width(t, lead):
    rng = np.random.default_rng(11 * t + lead)
    for w in range(t + 1):
        buf, offs, vals = _blocks(t, [w] * 3, rng, lead)
        blk = np.sort(rng.integers(0, 3, 700))
        pos = rng.integers(0, 1024, 700)
        blk[-40:], pos[-40:] = 2, np.arange(984, 1024)                  # the buffer's last words
        got = fl.extract_blocks(buf, offs, np.full(3, w), blk, pos, t)
        assert got.dtype == np.dtype(f"uint{t}")
        np.testing.assert_array_equal(got, vals[blk, pos], err_msg=f"T={t} W={w}")


@pytest.mark.parametrize("t", [8, 16, 32, 64])
@pytest.mark.parametrize("lead", [0, 3])
def test_extract_blocks_equals_extract_for_mixed_widths(t, lead):
    rng = np.random.default_rng(5 * t + lead)
    widths = list(range(t, -1, -1)) + [t - 1, 1, t, 0]                 # a width-0 block last
    buf, offs, vals = _blocks(t, widths, rng, lead)
    blk = rng.integers(0, len(widths), 6000)
    pos = rng.integers(0, 1024, 6000)
    blk[:64], pos[:64] = len(widths) - 2, np.arange(960, 1024)
    got = fl.extract_blocks(buf, offs, np.array(widths), blk, pos, t)
    np.testing.assert_array_equal(got, vals[blk, pos])
    np.testing.assert_array_equal(got, fl.extract(buf, offs[blk], np.array(widths)[blk], pos, t))


def test_extract_blocks_of_a_contiguous_run_over_two_blocks():
    rng = np.random.default_rng(2)
    buf, offs, vals = _blocks(64, [19, 19], rng, 0)
    idx = np.arange(400, 1400)
    got = fl.extract_blocks(buf, offs, np.array([19, 19]), idx >> 10, idx & 1023, 64)
    np.testing.assert_array_equal(got, vals.reshape(-1)[400:1400])


@pytest.mark.parametrize("t", [8, 64])
def test_extract_blocks_refuses_a_block_past_the_buffer_and_bad_inputs(t):
    w, buf, offs, cut, pos = _truncated_block(t)                     # cut: the block's last word is gone
    with pytest.raises(CorruptFileError):
        fl.extract_blocks(cut, offs, np.array([w]), np.zeros(1024, np.int64), pos, t)
    with pytest.raises(CorruptFileError):
        fl.extract_blocks(buf, offs, np.array([t + 1]), np.zeros(4, np.int64), pos[:4], t)
    with pytest.raises(CorruptFileError):
        fl.extract_blocks(buf, offs, np.array([w]), np.zeros(4, np.int64), np.array([0, 1, 2, 1024]), t)
    with pytest.raises(CorruptFileError):
        fl.extract_blocks(buf, offs, np.array([w]), np.array([0, 0, 0, 1]), pos[:4], t)


@pytest.mark.parametrize("t", [8, 16, 32, 64])
@pytest.mark.parametrize("lead", [0, 3])
def test_extract_run_equals_packed_values_for_every_width_and_run(t, lead):
    rng = np.random.default_rng(13 * t + lead)
    for w in range(t + 1):
        buf, offs, vals = _blocks(t, [w, w], rng, lead)
        for a, b in ((0, 1024), (0, 1), (1023, 1024), (100, 612), (500, 500)):
            got = fl.extract_run(buf, int(offs[1]), w, a, b, t)   # the buffer's last block
            np.testing.assert_array_equal(got, vals[1, a:b], err_msg=f"T={t} W={w} {a}:{b}")
        out = np.full(300, 7, np.dtype(f"uint{t}"))
        fl.extract_run(buf, int(offs[0]), w, 724, 1024, t, out)
        np.testing.assert_array_equal(out, vals[0, 724:])


def test_extract_run_refuses_a_block_past_the_buffer_and_bad_runs():
    rng = np.random.default_rng(4)
    buf, offs, _ = _blocks(32, [9], rng, 0)
    with pytest.raises(CorruptFileError):
        fl.extract_run(buf[:-4], 0, 9, 0, 10, 32)
    for a, b, w in ((0, 1025, 9), (5, 4, 9), (-1, 3, 9), (0, 3, 33)):
        with pytest.raises(CorruptFileError):
            fl.extract_run(buf, 0, w, a, b, 32)
