"""Scattered rows of a local file: the mini-block chunks holding them are decoded from one view of
the memory map (the unread gaps between them untouched), equal to pylance's take."""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.file.v2_1.layouts import miniblock


@pytest.fixture(scope="module")
def wide(tmp_path_factory) -> str:
    uri = str(tmp_path_factory.mktemp("scattered") / "t.lance")
    n = 200_000
    rng = np.random.default_rng(5)
    t = pa.table({"id": pa.array(np.arange(n), pa.int64()),
                  "x": pa.array(rng.integers(0, 1 << 40, n), pa.int64()),
                  "f": pa.array(rng.random(n), pa.float64()),
                  "s": pa.array([f"s{i % 977}-{i}" for i in range(n)]),
                  "m": pa.array(np.where(rng.random(n) < 0.2, None, rng.integers(0, 9, n)), pa.int32())})
    lance.write_dataset(t, uri, data_storage_version="2.1")
    return uri


@pytest.mark.parametrize("step", [997, 4099, 40_000])
def test_scattered_rows_decode_from_one_mapped_span_equal_to_pylance(wide, step, monkeypatch):
    used = []
    orig = miniblock.MiniBlockPage._one_span

    def spy(self, data, sel, runs):
        got = orig(self, data, sel, runs)
        used.append(got is not None)
        return got

    monkeypatch.setattr(miniblock.MiniBlockPage, "_one_span", spy)
    rows = list(range(3, 200_000, step))
    got = lance_duck.dataset(wide).take(rows)
    want = lance.dataset(wide).take(rows)
    assert got.equals(want)
    assert any(used)
