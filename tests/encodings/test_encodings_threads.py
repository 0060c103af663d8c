"""The kernels' small thread pool and per-thread scratch: order, nesting, errors, concurrency."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from lance_duck.encodings import _threads
from lance_duck.encodings import fastlanes as fl


def test_map_parts_keeps_order_and_runs_nested_parts_inline():
    got = _threads.map_parts(lambda x: _threads.map_parts(lambda y: (x, y), [1, 2]), [10, 20, 30])
    assert got == [[(10, 1), (10, 2)], [(20, 1), (20, 2)], [(30, 1), (30, 2)]]


def test_map_parts_uses_the_pool_when_it_has_workers(monkeypatch):
    monkeypatch.setattr(_threads, "WORKERS", 2)
    names = _threads.map_parts(lambda _: threading.current_thread().name, range(4))
    assert all(n.startswith("lance_duck_kernel") for n in names)


def test_map_parts_propagates_errors():
    def boom(x):
        if x == 2:
            raise ValueError("part 2")
        return x
    with pytest.raises(ValueError, match="part 2"):
        _threads.map_parts(boom, [1, 2, 3])


def test_unpack_from_many_threads_at_once_is_exact():
    # each thread has its own scratch; widths differ so scratch shapes differ between calls
    rng = np.random.default_rng(9)
    cases = []
    for w in (3, 20, 33, 62, 64):
        raw = rng.integers(0, 1 << 62, 600 * 1024, dtype=np.uint64) * np.uint64(4) + np.uint64(3)
        vals = raw & np.uint64((1 << w) - 1)
        cases.append((w, vals, fl.pack(vals, w, 64).reshape(600, -1)))
    errors = []

    def work(i):
        try:
            for _ in range(3):
                w, vals, packed = cases[(i + _) % len(cases)]
                np.testing.assert_array_equal(fl.unpack_blocks(packed, w, 64).reshape(-1), vals)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
