"""SharedPages: a page read in parts by several tasks is loaded once, in whatever order, and dropped
once all its rows were read; the pages kept stay under the bound."""
from __future__ import annotations

import threading

from lance_duck.file.v2_0.shared import SharedPages


def _loader(calls: list):
    def load(keys):
        calls.append(list(keys))
        return {k: [b"x" * 100] for k in keys}
    return load


def test_a_page_read_in_parts_out_of_order_is_loaded_once_and_dropped_after_its_last_rows():
    pages: SharedPages[int] = SharedPages(limit=10_000)
    calls: list = []
    for rows in (300, 100, 200):          # the task reading the page's last rows ran second
        assert pages.get([(7, rows, 600)], _loader(calls))[7] == [b"x" * 100]
    assert calls == [[7]]
    assert pages.nbytes == 0


def test_pages_kept_stay_under_the_bound_and_evicted_ones_are_loaded_again():
    pages: SharedPages[int] = SharedPages(limit=250)
    calls: list = []
    for key in range(3):
        pages.get([(key, 1, 10)], _loader(calls))
    assert pages.nbytes <= 250
    pages.get([(0, 1, 10)], _loader(calls))
    assert calls == [[0], [1], [2], [0]]


def test_threads_reading_one_page_at_once_load_it_once():
    pages: SharedPages[int] = SharedPages(limit=10_000)
    calls: list = []
    started = threading.Event()

    def slow(keys):
        started.set()
        threading.Event().wait(0.2)
        return _loader(calls)(keys)

    out: list = []
    first = threading.Thread(target=lambda: out.append(pages.get([(1, 10, 40)], slow)))
    first.start()
    started.wait()
    rest = [threading.Thread(target=lambda: out.append(pages.get([(1, 10, 40)], slow))) for _ in range(3)]
    for t in rest:
        t.start()
    for t in [first, *rest]:
        t.join()
    assert len(calls) == 1 and len(out) == 4
    assert all(o[1] == [b"x" * 100] for o in out)
    assert pages.nbytes == 0
