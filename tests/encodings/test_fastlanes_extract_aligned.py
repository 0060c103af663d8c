"""fastlanes.extract's vectorised path equals the packed input for word-aligned blocks (typed
word gathers) and unaligned ones, with mixed widths per value, values in the last words of the
buffer, and width-0 blocks at the buffer's end; a value past the end is refused."""
from __future__ import annotations

import numpy as np
import pytest

from lance_duck.encodings import fastlanes as fl
from lance_duck.errors import CorruptFileError


def _blocks(t: int, widths: list[int], rng, lead: int):
    """Blocks of the given widths packed back to back after ``lead`` bytes: (buf, offsets, values)."""
    dt = np.dtype(f"uint{t}")
    parts, offs, vals, at = [np.zeros(lead, np.uint8)], [], [], lead
    for w in widths:
        v = (rng.integers(0, 2**63, 1024, dtype=np.uint64) & np.uint64((1 << w) - 1)).astype(dt)
        packed = fl.pack(v, w, t).view(np.uint8)
        parts.append(packed)
        offs.append(at)
        vals.append(v)
        at += packed.size
    return np.concatenate(parts), np.array(offs, np.int64), np.stack(vals)


def _truncated_block(t: int):
    """One block of width t - 1 and the same bytes without the block's last word:
    (w, buf, offsets, cut, every position)."""
    w = t - 1
    buf, offs, _ = _blocks(t, [w], np.random.default_rng(3), 0)
    return w, buf, offs, buf[: buf.size - t // 8], np.arange(1024)

@pytest.mark.parametrize("t", [8, 16, 32, 64])
@pytest.mark.parametrize("lead", [0, 3])      # word-aligned blocks, and unaligned ones
def test_vectorised_extract_equals_packed_values_for_mixed_widths(t, lead):
    rng = np.random.default_rng(7 * t + lead)
    widths = [w for w in range(t, -1, -1)] + [t - 1, 1, t, 0]      # a width-0 block last
    buf, offs, vals = _blocks(t, widths, rng, lead)
    blk = rng.integers(0, len(widths), 5000)
    pos = rng.integers(0, 1024, 5000)
    blk[:64], pos[:64] = len(widths) - 2, np.arange(960, 1024)       # the last words of the buffer
    got = fl.extract(buf, offs[blk], np.array(widths)[blk], pos, t)
    assert got.dtype == np.dtype(f"uint{t}")
    np.testing.assert_array_equal(got, vals[blk, pos])


@pytest.mark.parametrize("t", [8, 64])
def test_vectorised_extract_refuses_a_straddling_value_past_the_buffer(t):
    w, buf, offs, cut, pos = _truncated_block(t)
    with pytest.raises(CorruptFileError):
        fl.extract(cut, np.zeros(1024, np.int64), np.full(1024, w), pos, t)
