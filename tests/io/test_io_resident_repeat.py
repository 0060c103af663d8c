"""Memory-mapped pages served again are not released: a repeated query over the same pages
(a benchmark loop, a dashboard) makes no ``madvise`` call and faults nothing in again, while
the resident total stays bounded by ``MAPPED_RESIDENT_BYTES``."""
from __future__ import annotations

import mmap

from lance_duck.io import fs as iofs

PAGE = mmap.PAGESIZE


class _Map:
    """Stands in for an ``mmap.mmap``: records the spans it is asked to release."""

    def __init__(self):
        self.released: list[tuple[int, int]] = []

    def madvise(self, advice: int, start: int, length: int) -> None:
        assert advice == mmap.MADV_DONTNEED
        self.released.append((start // PAGE, length // PAGE))


def test_a_span_served_again_counts_once_and_is_released_last(monkeypatch):
    monkeypatch.setattr(iofs, "MAPPED_RESIDENT_BYTES", 2 * PAGE)
    pages, m = iofs._ResidentPages(), _Map()
    a, b, c = (0, PAGE), (4 * PAGE, PAGE), (8 * PAGE, PAGE)
    pages.served(m, [a])
    pages.served(m, [b])
    for _ in range(5):                    # the same two pages again and again: nothing released
        pages.served(m, [a])
        pages.served(m, [b])
    assert m.released == [] and pages._total == 2 * PAGE
    pages.served(m, [b])
    pages.served(m, [a])                  # a is now the most recent
    pages.served(m, [c])                  # over the budget: the least recently served goes
    assert m.released == [(4, 1)] and pages._total == 2 * PAGE


def test_spans_of_another_map_are_counted_apart(monkeypatch):
    monkeypatch.setattr(iofs, "MAPPED_RESIDENT_BYTES", PAGE)
    pages, m1, m2 = iofs._ResidentPages(), _Map(), _Map()
    pages.served(m1, [(0, PAGE)])
    pages.served(m2, [(0, PAGE)])         # same offsets, other file: m1's page goes
    assert m1.released == [(0, 1)] and m2.released == []
