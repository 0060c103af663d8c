"""Scan planning: the version is pinned, fragments chosen, each split into row-range tasks.

A task is one fragment and one contiguous range of its *physical* rows. Execution turns a
task into at most one record batch (deletions, filter, late materialisation), so a batch
never crosses a fragment. Planning is lazy: tasks are produced as the stream asks for them,
and a scan with ``limit``/``offset`` but no filter skips fragments and ranges from
metadata (live-row counts) alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping

import numpy as np

if TYPE_CHECKING:
    from ..table.fragment import FragmentInfo


DEFAULT_BATCH_ROWS = 128 * 1024
# Without an explicit batch size, tasks grow to this many rows (fewer, larger kernel calls;
# execution re-slices their batches to DEFAULT_BATCH_ROWS).
DEFAULT_TASK_ROWS = 256 * 1024
# Tasks of a scan that reads fixed-width columns only (decoded one task at a time, see
# scan/readahead.py) or outputs nothing (a count: only the filter's columns are read, and what a
# task holds is its mask) grow to this many rows when no batch size is asked for: a task's fixed
# cost (page setup, a few hundred numpy calls per column) is then paid a quarter as often
# (measured on the 4M-row bench table: one int64 column 13.3 -> 11.6 ms of CPU, a count of a
# string equality 31 -> 20 ms); batches are still re-sliced to DEFAULT_BATCH_ROWS.
LARGE_TASK_ROWS = 1024 * 1024
# A count reading other than fixed-width columns keeps at most this many large tasks in flight
# (its batches are empty, so the byte budget does not bound what the decoders hold).
COUNT_MAX_INFLIGHT = 2
# The first ranges of a scan start small and grow by RAMP_GROWTH up to the batch size, so that
# an engine that stops early (DuckDB's LIMIT) decodes little. Every task has a fixed cost (~0.3 ms
# per column: page setup, per-batch kernel calls), so the ramp is short: 2K, 8K, 32K, 128K, full
# (measured on the 8-column bench table: 3.7 ms of CPU for 4K rows, 4.5 ms for 8K), and the task read
# ahead while the engine consumes the first is then 8K rows, not 32K.
FIRST_BATCH_ROWS = 2 * 1024
# ...but the very first task of a scan is shorter still, and the ramp then goes on from
# FIRST_BATCH_ROWS (512, 8K, 32K, ...): DuckDB's `LIMIT 10` over a dataset waits for that first task,
# whose cost is per column and per row (measured on the 8-column bench table, numpy kernels: 1.03 ms
# for 512 rows, 1.17 ms for 1K, 1.58 ms for 2K; 0.94 ms for 128). The read-ahead learns a row's bytes
# from it as well from 512 rows as from 2K. A first fragment of at most 2K rows is still one task (a
# small table's batches stay one per fragment, as pylance's are).
FIRST_TASK_ROWS = 512
RAMP_GROWTH = 4
# Scans reading only fixed-width columns go from the first task straight to full ones: their
# fixed cost per task (~0.9 ms a column: page setup, a FastLanes pass of a few hundred numpy
# calls whatever the row count) is what decoding ~100k rows costs, so 32K and 128K steps cost
# more than they save (measured: 8K, 32K, 128K, rest of the fragment = 12 ms of CPU for a
# 250k-row fragment of two columns; 8K + rest = 7 ms; one task 5.6 ms).
FIXED_WIDTH_RAMP_GROWTH = 128   # the first task, then full tasks
# A scan whose every batch will be read (an aggregate without LIMIT through lance_duck.sql,
# scan/duckdb_source.read_to_the_end) goes from the first task (512 rows: the read-ahead learns a
# row's bytes from it) straight to full tasks: the ramp's 8K / 32K / 128K (or 256K) steps would
# each cost a task's fixed cost per column for an early stop that cannot come (measured through
# lance_duck.sql on the 4M-row bench table: group by cat, avg(f) 56.5 -> 52.6 ms of CPU).
WHOLE_READ_GROWTH = 1 << 30
# Full tasks of such a scan reading other than fixed-width columns (strings: they are DEFAULT_TASK_ROWS
# otherwise, so that four fit the read-ahead budget) are this long: the per-task fixed cost is paid
# half as often, and the byte budget lets fewer tasks be in flight (measured on the 4M-row bench
# table's full aggregate through lance_duck.sql, CPU per query, medians: 256K 375 ms, 512K 337 ms,
# 1M 332 ms but with less overlap of decoders and consumer: 486 / 439 / 464 ms wall at load 3.6).
WHOLE_READ_TASK_ROWS = 512 * 1024
# Full tasks of such scans are twice as long: a fixed-width decode's Python glue and numpy call
# count are per task and per page, not per row, so longer tasks hold the GIL for a smaller share
# of their time and two decoders overlap better (two in flight, readahead.FIXED_WIDTH_MAX_INFLIGHT).
# Measured through lance_duck.sql (4M-row bench table's six fixed-width columns; TPC-H q6), CPU
# 3-8 % lower than with 256K-row tasks; 1M-row tasks cost more again (larger scratch, page faults).
FIXED_WIDTH_TASK_ROWS = 512 * 1024


def fixed_width_task_rows(output_types: Iterable[Any], budget_bytes: int, inflight: int) -> int:
    """Full-task rows of a fixed-width scan: the first of :data:`LARGE_TASK_ROWS` and
    :data:`FIXED_WIDTH_TASK_ROWS` at which ``inflight`` tasks and the one its consumer holds fit the
    read-ahead budget at the widest output rows (bit widths of ``output_types``; 8 bytes for a type
    without one), else :data:`DEFAULT_TASK_ROWS` (a wide scan then still decodes ahead of its
    consumer)."""
    row_bytes = fixed_row_bytes(output_types)
    for rows in (LARGE_TASK_ROWS, FIXED_WIDTH_TASK_ROWS):
        if (inflight + 1) * rows * row_bytes <= budget_bytes:
            return rows
    return DEFAULT_TASK_ROWS


def fixed_row_bytes(output_types: Iterable[Any]) -> float:
    """Bytes of one output row of fixed-width ``output_types`` (their bit widths; 8 bytes for a
    type without one)."""
    row_bytes = 0.0
    for t in output_types:
        try:
            row_bytes += t.bit_width / 8
        except (AttributeError, ValueError):
            row_bytes += 8
    return row_bytes


@dataclass(frozen=True)
class ScanTask:
    seq: int                 # position in the scan order
    fragment: Any            # table.snapshot.FragmentInfo
    rows: range              # physical rows of the fragment
    skip: int = 0            # live rows at the start of ``rows`` that the offset drops
    selection: Any = None    # sorted int64 physical offsets inside ``rows`` (an index's rows), or None
    candidates: bool = False  # the selection is an "at most" answer (bloom, zone map, ngram): filter first
    proof: str | None = None  # exact indices answered the whole filter here: their files (a row failing it = damage)

    @property
    def weight(self) -> int:
        """Rows the task may read (for the read-ahead budget)."""
        return len(self.rows) if self.selection is None else len(self.selection)


def live_rows_in(fragment: FragmentInfo, rows: range) -> int:
    """Rows of ``rows`` that are not deleted."""
    if not fragment.num_deletions():
        return len(rows)
    d = fragment.deleted_offsets()
    lo, hi = np.searchsorted(d, [rows.start, rows.stop])
    return len(rows) - int(hi - lo)


def is_candidate(selections: Mapping[int, np.ndarray], fragment_id: int) -> bool:
    """The selection of ``fragment_id`` holds candidates only (``selections.candidates``, index.search)."""
    return fragment_id in getattr(selections, "candidates", ())


def plan_tasks(fragments: Iterable[FragmentInfo], batch_rows: int | Callable[[], int], *, skip_rows: int = 0,
               max_rows: int | None = None, first_rows: int | None = None,
               selections: Mapping[int, np.ndarray] | None = None,
               growth: int = RAMP_GROWTH, ramp_from: int = 0) -> Iterator[ScanTask]:
    """Row-range tasks in scan order.

    ``skip_rows`` / ``max_rows`` (only when the scan has no filter) let planning drop
    whole fragments or ranges that lie before the offset or after the limit.
    ``selections`` (fragment id -> sorted offsets, from scalar indices; filtered scans only):
    those fragments read only the selected rows, in tasks of at most ``batch_rows`` rows; the
    fragments in its ``candidates`` attribute (if any) are marked so (see ``ScanTask.candidates``).
    ``first_rows``: the first task's rows (all of the first fragment's rows when they are at most
    ``ramp_from``); each later one is ``growth`` times the previous (or ``growth`` times
    ``ramp_from``, the larger), up to ``batch_rows`` (a callable: asked at each task, so a scan may
    raise it once under way).
    """
    if callable(batch_rows):
        cap = batch_rows
    else:
        fixed = int(batch_rows)

        def cap() -> int:
            return fixed

    def grown(step: int) -> int:
        """The task after one of ``step`` rows."""
        return min(max(step, ramp_from) * growth, cap())

    seq = 0
    skip = skip_rows
    budget = max_rows
    step = min(first_rows or cap(), cap())
    for frag in fragments:
        if budget is not None and budget <= 0:
            return
        if selections and frag.id in selections:
            sel = selections[frag.id]
            cand = is_candidate(selections, frag.id)
            proof = getattr(selections, "exact", {}).get(frag.id)
            if len(sel) <= max(step, ramp_from) * growth:
                step = max(step, min(len(sel), cap()))   # one task: a split re-reads every chunk
            i = 0
            while i < len(sel):          # parts follow the growing step: consecutive, never overlapping
                part = sel[i:i + step]
                i += len(part)
                yield ScanTask(seq, frag, range(int(part[0]), int(part[-1]) + 1), 0, part, cand, proof)
                seq += 1
                step = grown(step)
            continue
        if skip or budget is not None:
            live = frag.count_rows()
            if skip >= live:
                skip -= live
                continue
        n = frag.physical_rows
        start = 0
        while start < n:
            if budget is not None and budget <= 0:
                return
            end = start + step
            if seq == 0 and n - start <= min(ramp_from, cap()):
                end = n            # a fragment the ramp's start covers: one first task, no short one
            rows = range(start, min(end, n))
            start = rows.stop
            if skip or budget is not None:
                live = live_rows_in(frag, rows)
                if skip >= live:
                    skip -= live
                    step = grown(step)
                    continue
                if budget is not None:
                    budget -= live - skip
            yield ScanTask(seq, frag, rows, skip)
            # (the next step is asked for once this task is taken: a callable cap may have grown meanwhile)
            step = grown(step)
            skip = 0
            seq += 1
