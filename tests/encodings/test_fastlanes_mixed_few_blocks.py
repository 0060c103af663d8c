"""fastlanes.unpack_mixed of blocks whose widths mostly differ (an increasing column's first
chunks: a width or two per block) equals the packed input: widths with a few blocks are read per
value, the others unpacked, every block lands at its place; a short last block is cut."""
from __future__ import annotations

import numpy as np
import pytest

from lance_duck.encodings import fastlanes as fl


@pytest.mark.parametrize("t", [8, 16, 32, 64])
@pytest.mark.parametrize("layout", ["increasing", "one-odd", "all-few", "with-zero"])
def test_unpack_mixed_with_few_blocks_per_width_equals_packed_values(t, layout):
    rng = np.random.default_rng(t)
    many = fl.FEW_BLOCKS[t] + 3
    if layout == "increasing":        # 1, 2, 4 ... blocks per width, as an arange's chunks
        ws = [w for j, w in enumerate(range(max(1, t - 6), t + 1)) for _ in range(min(2 ** j, many))]
    elif layout == "one-odd":         # one block of another width among many of one width
        ws = [t - 1] * many + [t - 2] + [t - 1] * many
    elif layout == "all-few":         # every width has a few blocks only
        ws = [w for w in range(1, t + 1)][:12]
    else:                             # width-0 blocks (all zero) among the others
        ws = [0, 3, 0] + [t // 2] * many + [0]
    dt = np.dtype(f"uint{t}")
    vals = np.stack([(rng.integers(0, 2**63, 1024, dtype=np.uint64) & np.uint64((1 << w) - 1)).astype(dt)
                     for w in ws])
    parts = [fl.pack(v, w, t).view(np.uint8) for v, w in zip(vals, ws)]
    offs = np.cumsum([0] + [p.size for p in parts])[:-1] + 8        # after an 8-byte header
    buf = np.concatenate([np.zeros(8, np.uint8)] + parts + [np.zeros(8, np.uint8)])
    np.testing.assert_array_equal(fl.unpack_mixed(buf, t, offs, np.array(ws)), vals.reshape(-1))
    counts = np.full(len(ws), 1024)
    counts[-1] = 700
    np.testing.assert_array_equal(fl.unpack_mixed(buf, t, offs, np.array(ws), counts),
                                  vals.reshape(-1)[: (len(ws) - 1) * 1024 + 700])
