"""A dictionary column's row mask from the mask of its values (``scan.execution.gather_mask`` /
``count_codes``): the few-values comparisons give exactly the gather's mask, for any number of
passing or failing values, every index width, and refuse an index out of range as the gather does."""
from __future__ import annotations

import numpy as np
import pytest

from lance_duck.scan.execution import FEW_CODES, count_codes, gather_mask


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("passing", [0, 1, 2, FEW_CODES, FEW_CODES + 1, 30, 40 - FEW_CODES - 1,
                                     40 - FEW_CODES, 38, 39, 40, 41])
def test_value_mask_gives_the_gathers_rows(dtype, passing):
    rng = np.random.default_rng(passing)
    per_value = np.zeros(41, bool)          # 40 values and the nulls' index
    per_value[rng.choice(41, passing, replace=False)] = True
    idx = rng.integers(0, 41, 5000).astype(dtype)
    want = np.take(per_value, idx)
    for checked in (False, True):
        got = gather_mask(per_value, idx, checked)
        assert got.dtype == bool and np.array_equal(got, want)
    assert count_codes(per_value, idx) == int(np.count_nonzero(want))


def test_empty_indices_give_an_empty_mask():
    per_value = np.array([True, False, False])
    assert gather_mask(per_value, np.zeros(0, np.int32)).size == 0
    assert count_codes(per_value, np.zeros(0, np.int32)) == 0


@pytest.mark.parametrize("bad", [3, 200])
def test_an_index_out_of_range_is_refused_unless_checked(bad):
    per_value = np.array([True, False, False])
    with pytest.raises(IndexError):
        gather_mask(per_value, np.array([0, bad, 1], np.int64))
