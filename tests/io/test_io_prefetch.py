"""Request planning of io/prefetch.py: which spans a set of page ranges becomes."""
from __future__ import annotations

from lance_duck.io.prefetch import split


def test_ranges_closer_than_the_gap_share_a_request_and_overlaps_count_once():
    assert split([(0, 10), (5, 10), (20, 5), (100, 50)], gap=10, max_bytes=1000) == [(0, 25, 20), (100, 150, 50)]


def test_a_span_longer_than_the_request_limit_is_cut_into_equal_parts_counting_only_planned_bytes():
    # [0, 100) and [110, 130) merge (gap 10): 130 bytes, 120 planned, cut in 3 parts of <= 50
    parts = split([(0, 100), (110, 20)], gap=10, max_bytes=50)
    assert [(a, b) for a, b, _ in parts] == [(0, 44), (44, 88), (88, 130)]
    assert [need for _, _, need in parts] == [44, 44, 32]
    assert sum(need for *_, need in parts) == 120


def test_far_apart_ranges_stay_separate_requests():
    assert split([(0, 5), (1000, 5)], gap=10, max_bytes=1 << 20) == [(0, 5, 5), (1000, 1005, 5)]
