"""The FastLanes kernel's scratch memory is shared across threads, not kept per thread.

DuckDB pulls batches on its own (foreign) threads, whose Python thread state -- and so any
``threading.local`` -- is dropped after every call: a per-thread scratch was rebuilt (and its
pages faulted in) for every batch. Spare scratch buffers now go back to a shared list.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from lance_duck.encodings import fastlanes as fl


def _packed(values: np.ndarray, w: int, t: int) -> np.ndarray:
    return fl.pack(values, w, t)


def test_a_new_thread_reuses_the_scratch_a_finished_thread_gave_back():
    rng = np.random.default_rng(1)
    vals = rng.integers(0, 1 << 20, 64 * 1024, dtype=np.uint64)
    packed = _packed(vals, 20, 64)
    fl.unpack(packed, 20, 64, vals.size)              # leaves a spare buffer behind
    spare_ids = {id(b) for b in fl._spare().buffers}
    assert spare_ids
    seen: list[bool] = []

    def decode() -> None:
        taken = fl._take_scratch(1)
        seen.append(id(taken) in spare_ids)
        fl._give_scratch(taken)
        np.testing.assert_array_equal(fl.unpack(packed, 20, 64, vals.size), vals)

    th = threading.Thread(target=decode)
    th.start()
    th.join()
    assert seen == [True]


def test_concurrent_unpacks_on_many_threads_each_get_their_own_scratch():
    rng = np.random.default_rng(2)
    cases = []
    for w, t in [(63, 64), (20, 64), (13, 32), (7, 16), (3, 8)]:
        vals = rng.integers(0, 1 << w, 300 * 1024, dtype=np.uint64).astype(f"u{t // 8}")
        cases.append((vals, _packed(vals, w, t), w, t))

    def check(i: int) -> None:
        vals, packed, w, t = cases[i % len(cases)]
        np.testing.assert_array_equal(fl.unpack(packed, w, t, vals.size), vals)

    with ThreadPoolExecutor(6) as ex:
        list(ex.map(check, range(60)))
    assert len(fl._spare().buffers) <= fl._MAX_SPARE
