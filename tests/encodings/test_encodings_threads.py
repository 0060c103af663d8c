"""The kernels' small thread pool and per-thread scratch: order, nesting, errors, concurrency."""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from lance_duck import _state
from lance_duck.encodings import _threads
from lance_duck.encodings import fastlanes as fl
from lance_duck.trace import decode_trace


def test_map_parts_keeps_order_of_nested_parts():
    got = _threads.map_parts(lambda x: _threads.map_parts(lambda y: (x, y), [1, 2]), [10, 20, 30])
    assert got == [[(10, 1), (10, 2)], [(20, 1), (20, 2)], [(30, 1), (30, 2)]]


def _finishes(fn, seconds: float = 20.0):
    """fn() on a plain thread: its result or exception, or a failure if it has not returned in
    time (a deadlock)."""
    box: list = []

    def run():
        try:
            box.append((fn(), None))
        except Exception as e:
            box.append((None, e))
    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(seconds)
    assert box, "map_parts did not return (deadlock?)"
    result, error = box[0]
    if error is not None:
        raise error
    return result


def test_nested_parts_on_a_kernel_thread_are_shared_with_the_idle_worker(monkeypatch):
    # the short outer part frees its worker at once, which then helps with the long part's pieces
    monkeypatch.setitem(_state._settings, "kernel_threads", 2)

    def inner(i):
        time.sleep(0.02)               # releases the GIL, as the Arrow / numpy kernels do
        return i, threading.current_thread().name

    def outer(k):
        return _threads.map_parts(inner, range(10)) if k == 0 else []
    with decode_trace() as trace:
        got = _finishes(lambda: _threads.map_parts(outer, [0, 1]))
    assert [i for i, _ in got[0]] == list(range(10)) and got[1] == []
    names = {n for _, n in got[0]}
    assert len(names) == 2 and all(n.startswith("lance_duck_kernel") for n in names)
    assert trace.values("path:shared-parts") == [10]


def test_nested_parts_finish_when_every_worker_is_busy_with_its_own(monkeypatch):
    # both workers split their parts again, three levels deep: nobody waits on a part not started
    monkeypatch.setitem(_state._settings, "kernel_threads", 2)

    def level(depth):
        def part(i):
            time.sleep(0.002)
            return i if depth == 0 else sum(level(depth - 1)(j) for j in range(2)) + i
        return lambda i: sum(_threads.map_parts(part, range(3))) + i
    got = _finishes(lambda: _threads.map_parts(level(2), range(4)))
    assert got == _threads_free(level, 2)


def _threads_free(level, depth):
    """The same computation with one worker (everything inline)."""
    saved = _state._settings["kernel_threads"]
    _state._settings["kernel_threads"] = 1
    try:
        return [level(depth)(i) for i in range(4)]
    finally:
        _state._settings["kernel_threads"] = saved


def test_errors_of_shared_parts_propagate_in_part_order(monkeypatch):
    monkeypatch.setitem(_state._settings, "kernel_threads", 2)

    def part(i):
        time.sleep(0.01 * (5 - i))      # part 3 fails before part 1 does
        if i in (1, 3):
            raise ValueError(f"part {i}")
        return i

    def outer(k):
        return _threads.map_parts(part, range(5)) if k == 0 else None
    with pytest.raises(ValueError, match="part 1"):
        _finishes(lambda: _threads.map_parts(outer, [0, 1]))


def test_only_kernels_split_anyway_count_the_idle_workers_of_the_kernel_pool(monkeypatch):
    # a split that costs a join copy is not made on a kernel thread (its partner is usually busy
    # with a page of its own); kernels that are cut into pieces anyway still cut them for two
    monkeypatch.setitem(_state._settings, "kernel_threads", 2)
    assert _threads.parallel_workers() == 2 and _threads.parallel_workers(shared=True) == 2
    got = _threads.map_parts(lambda _: (_threads.parallel_workers(), _threads.parallel_workers(shared=True)),
                             range(2))
    assert got == [(1, 2), (1, 2)]


def test_parts_run_inline_on_threads_of_other_parallel_pools(monkeypatch):
    monkeypatch.setitem(_state._settings, "kernel_threads", 2)
    with ThreadPoolExecutor(1, initializer=_threads.mark_parallel_worker) as ex:
        me, names = ex.submit(lambda: (threading.current_thread().name,
                                       _threads.map_parts(lambda _: threading.current_thread().name,
                                                          range(4)))).result()
        assert set(names) == {me} and ex.submit(_threads.parallel_workers, True).result() == 1


def test_map_parts_uses_the_pool_when_it_has_workers(monkeypatch):
    monkeypatch.setitem(_state._settings, "kernel_threads", 2)
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
