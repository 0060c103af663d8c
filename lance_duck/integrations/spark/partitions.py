"""Spark input partitions: large fragments split into row ranges, small ones grouped.

A partition is a tuple of ``(fragment id, first physical row, end physical row)`` pieces; it
holds no data and no manifest (the reader re-opens the pinned version in the worker).
Partitions follow the table's row order (fragment order, then physical order).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

from pyspark.sql.datasource import InputPartition

if TYPE_CHECKING:
    from ...table.fragment import FragmentInfo

# Without a target, a table is cut into about PARTITIONS_PER_CORE partitions per core the
# session has (so one big fragment keeps every core busy), each between these bounds in rows.
# Measured (bench/spark_queries.py, local[2]): every Spark task of a Python source costs about
# 0.1-0.2 s (task launch, worker hand-off, Arrow stream set-up) whatever it reads, so one
# partition per core beats two; larger partitions only cost memory per batch, not per task.
PARTITIONS_PER_CORE = 1
MIN_PARTITION_ROWS = 64 * 1024
MAX_PARTITION_ROWS = 4 * 1024 * 1024
# bytes per row assumed for a fragment whose data files do not record their size
_FALLBACK_ROW_BYTES = 64


@dataclass(frozen=True)
class LancePartition(InputPartition):
    """One Spark task: row ranges of fragments of the pinned version."""

    pieces: tuple[tuple[int, int, int], ...]   # (fragment_id, start, stop) physical rows

    @property
    def rows(self) -> int:
        return sum(stop - start for _, start, stop in self.pieces)


def default_partition_rows(total_rows: int, cores: int | None) -> int:
    """Rows per partition when the user gives no target: every core gets work, within bounds."""
    cores = max(1, cores or os.cpu_count() or 1)
    want = math.ceil(total_rows / (cores * PARTITIONS_PER_CORE)) if total_rows else MAX_PARTITION_ROWS
    return max(MIN_PARTITION_ROWS, min(MAX_PARTITION_ROWS, want))


def fragment_bytes(fragment: FragmentInfo) -> int:
    """On-disk bytes of a fragment's data files (estimated when a file's size is not recorded)."""
    total = 0
    for ref in fragment.files:
        total += ref.size if ref.size else fragment.physical_rows * _FALLBACK_ROW_BYTES
    return total


def plan_partitions(fragments: Sequence[FragmentInfo], *, target_rows: int | None = None, target_bytes: int | None = None,
                    cores: int | None = None) -> list[LancePartition]:
    """Cut fragments into partitions of about ``target_rows`` rows (or ``target_bytes`` on disk).

    A fragment larger than the target is split into equal row ranges; consecutive fragments
    smaller than it are grouped until the target is reached. Empty fragments are skipped.
    """
    frags = [f for f in fragments if f.physical_rows > 0 and f.count_rows() > 0]
    if not frags:
        return []
    size: Callable[[FragmentInfo], int]
    if target_bytes is not None:
        def size(f: FragmentInfo) -> int:
            return fragment_bytes(f)
        target = float(target_bytes)
    else:
        def size(f: FragmentInfo) -> int:
            return f.physical_rows
        target = float(target_rows or default_partition_rows(sum(f.physical_rows for f in frags), cores))
    parts: list[LancePartition] = []
    group: list[tuple[int, int, int]] = []
    group_size = 0.0
    for f in frags:
        n = f.physical_rows
        s = float(size(f))
        if s > target:
            if group:
                parts.append(LancePartition(tuple(group)))
                group, group_size = [], 0.0
            k = min(n, math.ceil(s / target))
            bounds = [round(i * n / k) for i in range(k + 1)]
            parts.extend(LancePartition(((f.id, a, b),)) for a, b in zip(bounds, bounds[1:]) if b > a)
            continue
        if group and group_size + s > target:
            parts.append(LancePartition(tuple(group)))
            group, group_size = [], 0.0
        group.append((f.id, 0, n))
        group_size += s
    if group:
        parts.append(LancePartition(tuple(group)))
    return parts
