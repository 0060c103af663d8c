"""fastlanes.extract of a point lookup's few values (the Python-int path) equals the packed
input and the vectorised path, for every width, at unaligned offsets; damage is refused alike."""
from __future__ import annotations

import numpy as np
import pytest

from lance_duck.encodings import fastlanes as fl
from lance_duck.errors import CorruptFileError


@pytest.mark.parametrize("t", [8, 16, 32, 64])
def test_extract_of_few_values_equals_packed_input_and_vectorised_path(t):
    rng = np.random.default_rng(100 + t)
    dt = np.dtype(f"uint{t}")
    for w in range(0, t + 1):
        vals = (rng.integers(0, 2**63, 1024, dtype=np.uint64) & np.uint64((1 << w) - 1)).astype(dt)
        buf = np.concatenate([np.zeros(3, np.uint8), fl.pack(vals, w, t).view(np.uint8)])  # unaligned
        pos = rng.integers(0, 1024, 3 * fl.FEW_VALUES)
        offs, ws = np.full(pos.size, 3), np.full(pos.size, w)
        few = [fl.extract(buf, offs[i:i + 2], ws[i:i + 2], pos[i:i + 2], t) for i in range(0, pos.size, 2)]
        assert all(a.dtype == dt for a in few)
        np.testing.assert_array_equal(np.concatenate(few), vals[pos])
        np.testing.assert_array_equal(fl.extract(buf, offs, ws, pos, t), vals[pos])


def test_extract_of_few_values_refuses_what_the_vectorised_path_refuses():
    for args in [(np.zeros(100, np.uint8), [0], [7], [1023], 32),     # past the buffer
                 (np.zeros(10_000, np.uint8), [0], [33], [0], 32),    # width above T
                 (np.zeros(10_000, np.uint8), [0], [3], [1024], 32),  # position outside the block
                 (np.zeros(300, np.uint8), [0], [31], [1023], 32)]:   # the straddling word is missing
        buf, o, w, p, t = args
        for n in (1, fl.FEW_VALUES + 1):                              # the few-values and vectorised paths
            with pytest.raises(CorruptFileError):
                fl.extract(buf, np.array(o * n), np.array(w * n), np.array(p * n), t)
