"""The FastLanes kernel's row plan (:func:`fastlanes._pieces`): every width of every word size.

Rows of a block are unpacked in a few pieces -- arithmetic progressions of rows whose first
bits lie in evenly spaced words, shifts per row broadcast -- instead of one numpy pass per bit
shift class (up to T of them). These tests pin that every width decodes exactly (against the
independent bit-by-bit packer, and against ``fl.pack`` inputs read in place from chunk-like
buffers), that the plan covers each row once with the words and shifts of the layout, and that
widths near T need only a couple of pieces.
"""
from __future__ import annotations

import numpy as np
import pytest

from lance_duck.encodings import fastlanes as fl
from lance_duck.errors import CorruptFileError

from .test_encodings_fastlanes import rand_values, ref_pack_block

WIDTHS = [(t, w) for t in (8, 16, 32, 64) for w in range(t + 1)]


def _extremes(rng, w: int, t: int) -> np.ndarray:
    """1024 values of width W: random, with all-ones and zero values (mask and shift errors
    show in the top and bottom bits)."""
    vals = rand_values(rng, 1024, w, t).astype(f"u{t // 8}")
    vals[::7] = (1 << w) - 1
    vals[3::11] = 0
    return vals


@pytest.mark.parametrize("t,w", WIDTHS)
def test_every_width_unpacks_like_the_reference_packer(t, w):
    rng = np.random.default_rng(t * 131 + w)
    vals = np.concatenate([_extremes(rng, w, t), _extremes(rng, w, t)])
    packed = np.concatenate([ref_pack_block(vals[:1024], w, t), ref_pack_block(vals[1024:], w, t)])
    np.testing.assert_array_equal(fl.unpack(packed.tobytes(), w, t, 2048), vals)


def _chunks(packed: np.ndarray, k: int, gaps: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The k packed blocks of ``packed`` laid out like mini-block chunks: ``gaps[i]`` bytes
    (a chunk header, a width word) before block i."""
    per = packed.nbytes // k
    raw = packed.view(np.uint8)
    parts, offs, pos = [], [], 0
    for i in range(k):
        parts.append(b"\xa5" * gaps[i])
        pos += gaps[i]
        offs.append(pos)
        parts.append(raw[i * per: (i + 1) * per].tobytes())
        pos += per
    return np.frombuffer(b"".join(parts), np.uint8), np.array(offs, np.int64)


@pytest.mark.parametrize("layout", ["even", "irregular"])
@pytest.mark.parametrize("t", [8, 16, 32, 64])
def test_every_width_reads_in_place_from_chunk_buffers(t, layout):
    rng = np.random.default_rng(t)
    k = 5
    for w in range(t + 1):
        vals = np.concatenate([_extremes(rng, w, t) for _ in range(k)])
        gaps = [16] * k if layout == "even" else rng.integers(0, 30, k).tolist()
        buf, offs = _chunks(fl.pack(vals, w, t), k, gaps) if w else (np.zeros(8, np.uint8), np.zeros(k, np.int64))
        got = fl.unpack_blocks_at(buf, offs, w, t)
        np.testing.assert_array_equal(got.reshape(-1), vals, err_msg=f"T={t} W={w}")
        # per-block widths: the same blocks with a short last one
        mixed = fl.unpack_mixed(buf, t, offs, np.full(k, w), [1024] * (k - 1) + [333])
        np.testing.assert_array_equal(mixed, vals[: (k - 1) * 1024 + 333], err_msg=f"T={t} W={w}")


@pytest.mark.parametrize("t,w", [(t, w) for t, w in WIDTHS if 0 < w < t])
def test_plan_covers_every_row_once_with_the_layouts_words_and_shifts(t, w):
    seen = []
    for r0, dr, cnt, k0, dk, kind, sh, back, rows_at, words_at, next_at in fl._pieces(w, t):
        rows = [r0 + i * dr for i in range(cnt)]
        seen += rows
        assert list(range(t))[rows_at] == rows
        assert [(r * w) // t for r in rows] == [k0 + i * dk for i in range(cnt)]
        # the word views (a zero word W after the last; dk 0: one word, broadcast)
        words = list(range(w + 1))
        assert words[words_at] == sorted(set(k0 + i * dk for i in range(cnt)))
        assert words[next_at] == sorted(set(k0 + 1 + i * dk for i in range(cnt)))
        assert sh.reshape(-1).tolist() == [(r * w) % t for r in rows]
        assert (sh.astype(np.int64) + back.astype(np.int64) == t).all()
        straddles = [(r * w) % t + w > t for r in rows]
        assert (kind == fl._STRADDLE) == any(straddles)
    assert sorted(seen) == list(range(t))


@pytest.mark.parametrize("t", [8, 16, 32, 64])
def test_widths_near_t_unpack_in_a_couple_of_pieces(t):
    # W = T-1 (e.g. positive float64 words packed as 63 bits): row r >= 1 starts in word r-1,
    # so the rows form one progression (plus row 0): 2 pieces, not one per shift class (T)
    assert len(fl._pieces(t - 1, t)) <= 2
    # every width: a bounded number of numpy calls per batch, far below 4 per row
    calls = max(sum(fl._OPS[p[5]] for p in fl._pieces(w, t)) for w in range(1, t))
    assert calls <= 36 < 4 * t or t < 16


@pytest.mark.parametrize("t", [8, 64])
def test_damaged_widths_and_short_buffers_are_refused(t):
    vals = (np.arange(2048) % 127).astype(f"u{t // 8}")
    buf, offs = _chunks(fl.pack(vals, t - 1, t), 2, [8, 8])
    with pytest.raises(CorruptFileError, match="outside 0"):
        fl.unpack_mixed(buf, t, offs, [t - 1, t + 1])
    with pytest.raises(CorruptFileError, match="outside 0"):
        fl.unpack_blocks_at(buf, offs, t + 1, t)
    with pytest.raises(CorruptFileError, match="past the end"):
        fl.unpack_blocks_at(buf[:-1], offs, t - 1, t)
    with pytest.raises(CorruptFileError, match="past the end"):
        fl.unpack_mixed(buf[:-1], t, offs, [t - 1, t - 1])


@pytest.mark.parametrize("order", ["runs", "interleaved"])
@pytest.mark.parametrize("t", [16, 64])
def test_mixed_widths_in_runs_and_interleaved_equal_their_inputs(t, order):
    # an increasing column's chunks: widths in runs (each run unpacked in place); a noisy one:
    # widths interleaved (gathered, unpacked, scattered back); a rare width read per value
    rng = np.random.default_rng(t + len(order))
    widths = [t - 5] * 12 + [t - 4] * 30 + [3] + [t - 1] * 20
    if order == "interleaved":
        widths = rng.permutation(widths).tolist()
    blocks = [_extremes(rng, w, t) for w in widths]
    parts, offs, pos = [], [], 0
    for w, b in zip(widths, blocks):
        parts.append(b"\x11" * 8)
        pos += 8
        offs.append(pos)
        packed = fl.pack(b, w, t).tobytes()
        parts.append(packed)
        pos += len(packed)
    buf = np.frombuffer(b"".join(parts), np.uint8)
    got = fl.unpack_mixed(buf, t, np.array(offs), np.array(widths), [1024] * (len(widths) - 1) + [5])
    np.testing.assert_array_equal(got, np.concatenate(blocks)[: (len(widths) - 1) * 1024 + 5])
