"""Row-range scans: the live rows of physical row ranges of fragments, in order.

What a distributed engine's task reads (Spark's input partitions): a list of
``(fragment id, start, stop)`` ranges of *physical* rows of one pinned version. Deleted rows
are left out, the dataset's filter and ``filter`` are applied exactly, and a filter that the
table's scalar indices answer reads only the rows they select (as :class:`LanceScanner` does).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgumentError
from .execution import ScanContext, execute
from .planning import DEFAULT_TASK_ROWS, ScanTask, is_candidate, live_rows_in

if TYPE_CHECKING:
    from ..table.fragment import FragmentInfo
    from ..table.snapshot import Snapshot
    from .dataset import LanceDataset

#: ``(fragment id, first physical row, end physical row)``
RowRange = tuple[int, int, int]


def scan_row_ranges(dataset: "LanceDataset", ranges: Sequence[RowRange], *, columns: Any = None,
                    filter: Any = None,
                    batch_size: int | None = None, readahead: int = 2,
                    use_scalar_index: bool = True) -> Iterator[pa.RecordBatch]:
    """Batches of ``columns`` for the live rows of ``ranges`` that pass ``filter``, in range order.

    Args:
        dataset: a pinned version (its own filter, from :meth:`LanceDataset.filter`, applies too).
        ranges: ``(fragment_id, start, stop)`` physical rows, ``0 <= start <= stop <= physical_rows``.
        columns, filter: as in :meth:`LanceDataset.scanner` (filters use the table's scalar indices).
        batch_size: rows read per task and most rows per batch (default 256K).
        readahead: tasks decoded ahead of the consumer on the scan's thread pool.
        use_scalar_index: False reads every row of the ranges and filters them.

    Raises:
        InvalidArgumentError: a fragment that is not in this version, or a range outside it.

    Examples:
        >>> import lance_duck
        >>> ds = lance_duck.dataset(lance_duck.sample_path())
        >>> sum(b.num_rows for b in scan_row_ranges(ds, [(0, 0, 100), (3, 50, 103)], columns=["order_id"]))
        125
    """
    scanner = dataset.scanner(columns=columns, filter=filter, fragments=_fragment_ids(ranges),
                              batch_size=batch_size, use_scalar_index=use_scalar_index)
    infos = _checked(scanner._snapshot, ranges)
    selections = scanner._index_selections() or {}
    ctx = ScanContext(scanner._snapshot, scanner._projection, scanner._filter)
    task_rows = batch_size or DEFAULT_TASK_ROWS
    tasks = _tasks(infos, ranges, task_rows, selections)
    return execute(ctx, tasks, readahead=readahead, batch_rows=task_rows)


def count_row_ranges(dataset: "LanceDataset", ranges: Sequence[RowRange], *, filter: Any = None) -> int:
    """Exact number of rows :func:`scan_row_ranges` returns; from deletion files alone without a filter."""
    if filter is None and dataset._base_filter is None:
        infos = _checked(dataset._snapshot, ranges)
        return sum(live_rows_in(infos[fid], range(start, stop)) for fid, start, stop in ranges)
    return sum(b.num_rows for b in scan_row_ranges(dataset, ranges, columns=[], filter=filter))


def _fragment_ids(ranges: Sequence[RowRange]) -> list[int]:
    return list(dict.fromkeys(int(fid) for fid, _, _ in ranges))


def _checked(snapshot: Snapshot, ranges: Sequence[RowRange]) -> dict[int, FragmentInfo]:
    infos = {f.id: f for f in snapshot.fragments}
    for fid, start, stop in ranges:
        frag = infos.get(fid)
        if frag is None:
            raise InvalidArgumentError(f"fragment {fid} is not in version {snapshot.version} of {snapshot.uri}")
        if not 0 <= start <= stop <= frag.physical_rows:
            raise InvalidArgumentError(
                f"row range [{start}, {stop}) is outside fragment {fid} of {snapshot.uri} "
                f"({frag.physical_rows} physical rows)")
    return infos


def _tasks(infos: Mapping[int, FragmentInfo], ranges: Sequence[RowRange], task_rows: int,
           selections: Mapping[int, np.ndarray]) -> Iterator[ScanTask]:
    seq = 0
    for fid, start, stop in ranges:
        frag = infos[fid]
        sel = selections.get(fid)
        if sel is None:
            for a in range(start, stop, task_rows):
                yield ScanTask(seq, frag, range(a, min(a + task_rows, stop)))
                seq += 1
            continue
        lo, hi = np.searchsorted(sel, [start, stop])
        part = sel[lo:hi]          # the index's rows inside this range (none: nothing to read)
        for i in range(0, len(part), task_rows):
            chunk = part[i:i + task_rows]
            yield ScanTask(seq, frag, range(int(chunk[0]), int(chunk[-1]) + 1), 0, chunk,
                           is_candidate(selections, fid))
            seq += 1
