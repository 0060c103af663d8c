"""Request planning of io/prefetch.py: which spans a set of page ranges becomes."""
from __future__ import annotations

from concurrent.futures import Future

from lance_duck.io.prefetch import Prefetcher, split


def test_ranges_closer_than_the_gap_share_a_request_and_overlaps_count_once():
    assert split([(0, 10), (5, 10), (20, 5), (100, 50)], gap=10, max_bytes=1000) == [(0, 25, 20, 0.0),
                                                                                      (100, 150, 50, 0.0)]


def test_a_span_longer_than_the_request_limit_is_cut_into_equal_parts_counting_only_planned_bytes():
    # [0, 100) and [110, 130) merge (gap 10): 130 bytes, 120 planned, cut in 3 parts of <= 50
    parts = split([(0, 100), (110, 20)], gap=10, max_bytes=50)
    assert [(a, b) for a, b, _, _ in parts] == [(0, 44), (44, 88), (88, 130)]
    assert [need for _, _, need, _ in parts] == [44, 44, 32]
    assert sum(need for _, _, need, _ in parts) == 120


def test_far_apart_ranges_stay_separate_requests():
    assert split([(0, 5), (1000, 5)], gap=10, max_bytes=1 << 20) == [(0, 5, 5, 0.0), (1000, 1005, 5, 0.0)]


def test_a_request_ranks_by_how_far_into_its_page_its_first_planned_byte_lies():
    # two adjacent pages of 100 bytes (two columns), cut into requests of 50
    parts = split([(0, 100), (100, 100)], gap=0, max_bytes=50)
    assert [(a, b, rank) for a, b, _, rank in parts] == [(0, 50, 0.0), (50, 100, 0.5), (100, 150, 0.0),
                                                         (150, 200, 0.5)]


class _FakeIO:
    """Answers every request at once with zero bytes, recording (start, end) in issue order."""

    is_local = False
    coalesce_gap = 0
    max_request_bytes = 50

    def __init__(self):
        self.issued: list[tuple[int, int]] = []

    def submit(self, path, start, end, exact=False):
        self.issued.append((start, end))
        f: Future = Future()
        f.set_result(bytes(end - start))
        return f


def test_the_first_rows_of_every_column_are_fetched_first_and_partial_reads_widen_the_window():
    io = _FakeIO()
    pf = Prefetcher(io, max_bytes=100)       # a window of 100 bytes: two requests of 50
    pf.plan("f", 1000, [(0, 100), (100, 100)])
    assert io.issued == [(0, 50), (100, 150)]    # the first half of both pages, not the whole first page
    pf.take("f", [(0, 25), (100, 25)])           # half of what is out was read: one more request goes
    assert io.issued[2:] == [(50, 100)]
    pf.take("f", [(25, 25), (125, 25)])
    assert io.issued[3:] == [(150, 200)]
