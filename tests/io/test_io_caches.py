"""The per-process caches of footers and whole immutable files (io/fs.py): sized entries, single flight."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from lance_duck._state import ByteLRU
from lance_duck.io.fs import _TailCache


def test_an_entry_serves_reads_of_the_same_size_or_of_unknown_size_only():
    cache = _TailCache(ByteLRU(1 << 20))
    cache.put(("s", "p"), 10, b"tail")
    assert cache.get(("s", "p"), 10) == (10, b"tail")
    assert cache.get(("s", "p"), None) == (10, b"tail")
    assert cache.get(("s", "p"), 11) is None          # the object was replaced by one of another size
    assert cache.get(("s", "q"), 10) is None


@pytest.mark.parametrize("outcome", ["bytes", "error"])
def test_readers_of_a_key_being_fetched_wait_for_that_fetch_and_share_its_outcome(outcome):
    cache = _TailCache(ByteLRU(1 << 20))
    key = ("s", "p")
    flight = cache.claim(key, 10)
    assert flight is not None and cache.claim(key, 10) is None     # one fetch at a time
    own_fetches = []

    def fetch():
        own_fetches.append(1)
        return 10, b"own"

    def read(_):
        try:
            return cache.fetch(key, 10, fetch)
        except OSError as exc:
            return str(exc)

    with ThreadPoolExecutor(4) as pool:
        results = [pool.submit(read, i) for i in range(4)]
        threading.Event().wait(0.2)
        assert not any(r.done() for r in results)      # all waiting for the fetch under way
        if outcome == "bytes":
            cache.settle(key, flight, (10, b"shared"))
        else:
            cache.settle(key, flight, None, OSError("p: 503 after 4 tries"))
        got = [r.result(10) for r in results]
    assert not own_fetches
    assert got == ([(10, b"shared")] * 4 if outcome == "bytes" else ["p: 503 after 4 tries"] * 4)
    # a failure is not remembered: the next reader fetches again
    assert cache.fetch(key, 10, fetch) == ((10, b"shared") if outcome == "bytes" else (10, b"own"))


def test_resize_evicts_the_least_recently_used_entries_beyond_the_new_bound():
    cache = _TailCache(ByteLRU(1 << 20))
    for name in "abcdefgh":
        cache.put(("s", name), 100, bytes(100))
    assert cache.get(("s", "a"), 100) is not None     # "a" is now the most recently used
    cache.resize(400)
    assert cache.nbytes == 400
    assert [n for n in "abcdefgh" if cache.get(("s", n), 100) is not None] == ["a", "f", "g", "h"]
    cache.resize(399)           # an entry above a quarter of the bound is not kept either
    assert cache.nbytes == 0


def test_resize_to_zero_keeps_nothing_and_later_puts_are_dropped():
    cache = _TailCache(ByteLRU(1 << 20))
    cache.put(("s", "p"), 10, b"tail")
    cache.resize(0)
    assert cache.nbytes == 0 and cache.get(("s", "p"), 10) is None
    cache.put(("s", "p"), 10, b"tail")
    assert cache.get(("s", "p"), 10) is None
    cache.resize(1 << 20)
    cache.put(("s", "p"), 10, b"tail")
    assert cache.get(("s", "p"), 10) == (10, b"tail")
