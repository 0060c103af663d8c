"""How many tasks a scan decodes at once, and how its tasks grow, chosen from the columns it reads.

A scan whose every column (projected or filtered) is fixed-width keeps two tasks in flight and
goes from its first task straight to full-size ones of ``LARGE_TASK_ROWS`` (``FIXED_WIDTH_TASK_ROWS``,
then ``DEFAULT_TASK_ROWS``, when the tasks in flight would not fit the read-ahead budget); any other scan
keeps up to four in flight and ramps 2K, 8K, 32K, 128K, full (``DEFAULT_TASK_ROWS``). The choice is
a ``scan:readahead`` trace event ``(tasks in flight, ramp growth)`` and a ``scan:task-rows`` event;
results equal pylance's under every setting.
"""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.scan.planning import (DEFAULT_TASK_ROWS, FIRST_BATCH_ROWS, FIRST_TASK_ROWS, FIXED_WIDTH_RAMP_GROWTH, FIXED_WIDTH_TASK_ROWS,
                                      LARGE_TASK_ROWS, RAMP_GROWTH)
from lance_duck.scan.readahead import DEFAULT_MAX_INFLIGHT, FIXED_WIDTH_MAX_INFLIGHT, fixed_width
from lance_duck.trace import decode_trace

from .conftest import assert_tables_equal

FRAGMENT_ROWS = 150_000
NARROW = (FIXED_WIDTH_MAX_INFLIGHT, FIXED_WIDTH_RAMP_GROWTH)
WIDE = (DEFAULT_MAX_INFLIGHT, RAMP_GROWTH)


def wide_table(n: int) -> pa.Table:
    rng = np.random.default_rng(12)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "amount": pa.array(np.arange(n) * (250.0 / n) + rng.random(n)),
        "ts": pa.array(np.datetime64("2024-01-01") + np.arange(n).astype("timedelta64[s]")),
        "flag": pa.array(np.arange(n) % 3 == 0),
        "small": pa.array((np.arange(n) % 300).astype(np.uint16)),
        "note": pa.array(np.arange(n) % 97).cast(pa.string()),
        "tags": pa.array([[int(k)] if k % 5 else None for k in range(n)], pa.list_(pa.int32())),
    })


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def table(request, tmp_path_factory) -> str:
    """Two 150k-row fragments; the second has deletions."""
    p = str(tmp_path_factory.mktemp(f"readahead_{request.param}") / "t.lance")
    lance.write_dataset(wide_table(2 * FRAGMENT_ROWS), p, max_rows_per_file=FRAGMENT_ROWS,
                        data_storage_version=request.param)
    lance.dataset(p).delete(f"id >= {FRAGMENT_ROWS} and id % 1000 = 7")
    return p


def _choice(ds, **kwargs) -> tuple[list, pa.Table, object]:
    with decode_trace() as t:
        sc = ds.scanner(**kwargs)
        got = sc.to_table()
    _choice.task_rows = t.values("scan:task-rows")
    return t.values("scan:readahead"), got, sc.stats


@pytest.mark.parametrize("columns, flt", [
    (["id", "amount"], None),
    (["id"], "amount > 200"),
    (["ts", "flag", "small"], "id % 7 = 1"),
    ([], "amount < 10"),
])
def test_fixed_width_scans_decode_two_longer_tasks_at_a_time(table, columns, flt):
    ds = lance_duck.dataset(table)
    choice, got, stats = _choice(ds, columns=columns, filter=flt)
    assert choice == [NARROW] and FIXED_WIDTH_MAX_INFLIGHT == 2
    assert _choice.task_rows == [LARGE_TASK_ROWS] and LARGE_TASK_ROWS > FIXED_WIDTH_TASK_ROWS > DEFAULT_TASK_ROWS
    assert stats.max_inflight <= FIXED_WIDTH_MAX_INFLIGHT and stats.results > 2
    assert_tables_equal(got, lance.dataset(table).to_table(columns=columns, filter=flt))


@pytest.mark.parametrize("columns, flt", [
    (["id", "note"], None),
    (["id", "amount"], "note = '5'"),                  # a string filter column counts too
    (["id", "tags"], None),
    (None, "flag"),
])
def test_scans_reading_other_columns_keep_several_tasks_in_flight(table, columns, flt):
    ds = lance_duck.dataset(table)
    choice, got, stats = _choice(ds, columns=columns, filter=flt)
    assert choice == [WIDE] and _choice.task_rows == [DEFAULT_TASK_ROWS]
    assert stats.max_inflight >= 2
    assert_tables_equal(got, lance.dataset(table).to_table(columns=columns, filter=flt))


def test_row_ids_and_addresses_are_fixed_width(table):
    ds = lance_duck.dataset(table)
    with decode_trace() as t:
        got = ds.to_table(columns=["id"], with_row_id=True, with_row_address=True)
    assert t.values("scan:readahead") == [NARROW]
    assert_tables_equal(got, lance.dataset(table).to_table(columns=["id"], with_row_id=True,
                                                           with_row_address=True))


def test_an_explicit_batch_readahead_is_kept(table):
    ds = lance_duck.dataset(table)
    choice, _, stats = _choice(ds, columns=["id", "amount"], batch_readahead=3)
    assert choice == [(3, FIXED_WIDTH_RAMP_GROWTH)] and stats.max_inflight >= 2
    choice, _, stats = _choice(ds, columns=["id", "amount"], batch_readahead=1)
    assert choice == [(1, FIXED_WIDTH_RAMP_GROWTH)] and stats.max_inflight == 1
    choice, _, stats = _choice(ds, columns=["id", "note"], batch_readahead=0)
    assert choice == [(0, RAMP_GROWTH)] and stats.max_inflight == 0


def test_fixed_width_tasks_stay_default_size_when_longer_ones_would_not_fit_the_budget(table):
    ds = lance_duck.dataset(table)
    columns = ["id", "amount", "ts"]               # 24 bytes a row: 3 x 512K rows = 36 MiB
    choice, got, stats = _choice(ds, columns=columns, readahead_bytes=32 << 20)
    assert choice == [NARROW] and _choice.task_rows == [DEFAULT_TASK_ROWS]
    assert stats.peak_bytes <= 32 << 20
    assert_tables_equal(got, lance.dataset(table).to_table(columns=columns))
    _choice(ds, columns=columns, readahead_bytes=40 << 20)
    assert _choice.task_rows == [FIXED_WIDTH_TASK_ROWS]
    _choice(ds, columns=columns, readahead_bytes=80 << 20)   # 3 x 1M rows = 72 MiB
    assert _choice.task_rows == [LARGE_TASK_ROWS]


def test_an_explicit_batch_size_sizes_fixed_width_tasks(table):
    ds = lance_duck.dataset(table)
    choice, got, _ = _choice(ds, columns=["id", "amount"], batch_size=50_000)
    assert choice == [NARROW] and _choice.task_rows == [50_000]
    assert_tables_equal(got, lance.dataset(table).to_table(columns=["id", "amount"]))


def test_fixed_width_tasks_grow_from_the_first_straight_to_full_size(table):
    ds = lance_duck.dataset(table)
    first = [b.num_rows for b in ds.scanner(columns=["id", "amount"]).to_batches()][:3]
    # fragment 0 (no deletions): 512 rows, then the rest of it (one task, cut into 128K-row batches)
    assert first == [FIRST_TASK_ROWS, 128 * 1024, FRAGMENT_ROWS - FIRST_TASK_ROWS - 128 * 1024]
    ramp = [b.num_rows for b in ds.scanner(columns=["id", "note"]).to_batches()][:4]
    # a short first task, then the ramp from FIRST_BATCH_ROWS: 8K, 32K, ...
    assert ramp == [FIRST_TASK_ROWS, 4 * FIRST_BATCH_ROWS, 16 * FIRST_BATCH_ROWS,
                    FRAGMENT_ROWS - FIRST_TASK_ROWS - 20 * FIRST_BATCH_ROWS]


@pytest.mark.parametrize("readahead", [None, 0, 1, 2, 4])
@pytest.mark.parametrize("columns", [["id", "amount", "ts"], ["id", "note", "flag"]])
@pytest.mark.parametrize("args", [
    {},
    {"filter": "amount > 100 and flag"},
    {"limit": 20_000, "offset": 140_000},
    {"filter": "id % 3 = 0", "limit": 1000, "offset": 5},
    {"batch_size": 50_000},
])
def test_results_equal_pylance_with_every_readahead(table, readahead, columns, args):
    got = lance_duck.dataset(table).to_table(columns=columns, batch_readahead=readahead, **args)
    assert_tables_equal(got, lance.dataset(table).to_table(columns=columns, **args))


def test_a_fixed_width_scan_streams_within_its_budget(table):
    budget = 1 << 20                               # the scan decodes to ~7 MiB
    sc = lance_duck.dataset(table).scanner(columns=["id", "amount", "ts"], readahead_bytes=budget,
                                           batch_size=16_384)
    ids = np.concatenate([b.column("id").to_numpy() for b in sc.to_batches()])
    assert np.array_equal(ids, lance.dataset(table).to_table(columns=["id"]).column("id").to_numpy())
    assert sc.stats.max_inflight <= FIXED_WIDTH_MAX_INFLIGHT and sc.stats.peak_bytes <= budget


def test_fixed_width_types():
    for t in (pa.int8(), pa.uint64(), pa.float16(), pa.float64(), pa.bool_(), pa.date32(), pa.time64("ns"),
              pa.timestamp("us", tz="UTC"), pa.duration("ms"), pa.decimal128(10, 2), None):
        assert fixed_width(t), t
    for t in (pa.string(), pa.large_binary(), pa.list_(pa.int32()), pa.struct([("a", pa.int32())]),
              pa.list_(pa.float32(), 8), pa.dictionary(pa.int32(), pa.string())):
        assert not fixed_width(t), t


def _pulled_items(n: int, pulled: list[int]):
    for i in range(n):
        pulled.append(i)
        yield i


@pytest.mark.parametrize("max_inflight", [1, 2, 4])
def test_one_item_is_computed_ahead_while_the_consumer_holds_a_result_but_the_first(max_inflight):
    """From the second result on, the next item runs while the consumer holds one; nothing runs while
    it holds the first (an engine that stops there, DuckDB's LIMIT, decodes nothing more)."""
    import threading

    from lance_duck.scan.readahead import ordered_map
    pulled: list[int] = []
    started = {i: threading.Event() for i in range(6)}

    def fn(i: int) -> int:
        started[i].set()
        return i * 10

    stream = ordered_map(fn, _pulled_items(6, pulled), size_of=lambda _: 8, max_inflight=max_inflight)
    for k in range(6):
        assert next(stream) == k * 10
        if k == 0:                      # nothing was submitted: the second item cannot have started
            assert not started[1].wait(0.2) and pulled == [0]
        elif k < 5:                     # the next item runs before the consumer asks for it
            assert started[k + 1].wait(30)
    assert list(stream) == [] and pulled == list(range(6))


@pytest.mark.parametrize("max_inflight", [1, 2, 4])
def test_the_first_item_runs_on_the_consumers_thread_and_the_rest_on_the_pool(max_inflight):
    """The first item, awaited alone with nothing learnt, is computed where the consumer asks for
    it (no hop to a pool thread); later ones on the pool. With a row's bytes known up front
    (``known_per_weight``) items are planned together from the start, so the first goes to the pool too."""
    import threading

    from lance_duck.scan.readahead import ReadaheadStats, ordered_map

    def fn(i: int) -> tuple[int, int]:
        return i, threading.get_ident()

    me = threading.get_ident()
    stats = ReadaheadStats()
    out = list(ordered_map(fn, iter(range(5)), size_of=lambda _: 8, max_inflight=max_inflight, stats=stats))
    assert [i for i, _ in out] == list(range(5)) and stats.results == 5 and stats.max_inflight >= 1
    assert out[0][1] == me and all(t != me for _, t in out[1:])
    planned = list(ordered_map(fn, iter(range(3)), size_of=lambda _: 8, max_inflight=max_inflight,
                               known_per_weight=8.0))
    assert all(t != me for _, t in planned)


@pytest.mark.parametrize("max_inflight", [1, 2])
def test_a_second_stream_sharing_the_stats_starts_like_the_first(max_inflight):
    """A scanner streamed twice hands both streams its one stats object: the second stream's
    first item is again computed on the consumer's thread, and nothing is read ahead of it."""
    import threading

    from lance_duck.scan.readahead import ReadaheadStats, ordered_map

    pulled: list[int] = []

    def fn(i: int) -> tuple[int, int]:
        return i, threading.get_ident()

    me = threading.get_ident()
    stats = ReadaheadStats()
    assert len(list(ordered_map(fn, iter(range(3)), size_of=lambda _: 8, max_inflight=max_inflight,
                                stats=stats))) == 3
    second = ordered_map(fn, _pulled_items(4, pulled), size_of=lambda _: 8, max_inflight=max_inflight,
                         stats=stats)
    assert next(second) == (0, me) and pulled == [0]
    assert [i for i, _ in second] == [1, 2, 3] and stats.results == 7


def test_nothing_runs_ahead_of_a_held_result_beyond_the_budget():
    from lance_duck.scan.readahead import ReadaheadStats, ordered_map
    pulled: list[int] = []
    stats = ReadaheadStats()
    stream = ordered_map(lambda i: i, _pulled_items(4, pulled), size_of=lambda _: 100, budget_bytes=150,
                         max_inflight=1, stats=stats)
    assert next(stream) == 0
    assert stats.peak_bytes == 100                 # 100 held + 100 estimated > 150: item 1 not submitted
    assert list(stream) == [1, 2, 3] and stats.peak_bytes == 100 and pulled == [0, 1, 2, 3]


def test_results_of_no_bytes_still_open_the_readahead():
    """A count's results are batches without columns (0 bytes): once the first came back, the
    next items run side by side as for any other scan, not one at a time."""
    from lance_duck.scan.readahead import ReadaheadStats, ordered_map
    stats = ReadaheadStats()
    out = list(ordered_map(lambda i: i, iter(range(6)), size_of=lambda _: 0, max_inflight=2, stats=stats))
    assert out == list(range(6)) and stats.max_inflight == 2



def test_a_decoder_that_finished_takes_the_next_item_between_parts_of_a_held_result():
    """With results handed over in parts, an item whose decode finished while the consumer works
    through a result's parts no longer holds a decoder back: the next items start before the
    consumer asks for the next result (at most ``max_inflight`` running, in order)."""
    import threading

    from lance_duck.scan.readahead import ordered_map
    started = {i: threading.Event() for i in range(6)}
    release = {i: threading.Event() for i in range(6)}

    def fn(i: int) -> int:
        started[i].set()
        if i >= 3:
            assert release[i].wait(30)
        return i

    stream = ordered_map(fn, iter(range(6)), size_of=lambda _: 8, max_inflight=2,
                         split=lambda r: [(r, 0), (r, 1), (r, 2)])
    assert next(stream) == (0, 0)
    assert list(next(stream) for _ in range(2)) == [(0, 1), (0, 2)]
    assert next(stream) == (1, 0)            # items 1 and 2 were submitted; 2 finishes at once
    assert started[2].wait(30)
    assert next(stream) == (1, 1)            # between parts: 2 is done, so 3 and 4 start (and block)
    assert started[3].wait(30) and started[4].wait(30)
    assert next(stream) == (1, 2)
    assert not started[5].wait(0.2)          # two running: 5 waits
    for i in (3, 4, 5):
        release[i].set()
    rest = list(stream)
    assert [r for r, _ in rest] == [2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5]


def test_parts_of_every_result_come_in_order_with_and_without_readahead():
    from lance_duck.scan.readahead import ordered_map
    for inflight in (0, 1, 2, 4):
        out = list(ordered_map(lambda i: i, iter(range(7)), size_of=lambda _: 8, max_inflight=inflight,
                               split=lambda r: [] if r == 3 else [r, -r]))
        assert out == [x for r in range(7) if r != 3 for x in (r, -r)], inflight
