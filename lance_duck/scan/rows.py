"""Rows of a fragment at given physical offsets, with the row-lineage columns.

What the change readers (``delta()`` and the change feed) need from a scan: the rows they chose
from row-version metadata and deletion files, read at their offsets (only the chunks holding them
are decoded), in the version's read schema.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ..table.rowids import versions_at
from .execution import ScanContext
from .projection import resolve_projection

if TYPE_CHECKING:
    from ..table.fragment import FragmentInfo
    from ..table.snapshot import Snapshot


def live_offsets(fragment: FragmentInfo) -> np.ndarray:
    """Sorted int64 physical offsets of a fragment's rows that are not deleted."""
    if not fragment.num_deletions():
        return np.arange(fragment.physical_rows, dtype=np.int64)
    keep = np.ones(fragment.physical_rows, dtype=bool)
    keep[fragment.deleted_offsets()] = False
    return np.flatnonzero(keep).astype(np.int64, copy=False)


def row_versions(fragment: FragmentInfo) -> tuple[np.ndarray, np.ndarray]:
    """(created-at, last-updated-at) version per physical row; 1 where the fragment records none
    (pylance's value for tables without stable row ids)."""
    created = fragment.created_at_versions()
    updated = fragment.last_updated_at_versions()
    if created is not None and updated is not None:
        return created, updated
    ones = np.ones(fragment.physical_rows, dtype=np.uint64)
    return (ones if created is None else created), (ones if updated is None else updated)


def row_ids_at(fragment: FragmentInfo, offsets: np.ndarray) -> np.ndarray:
    """uint64 ``_rowid`` of the rows at sorted physical ``offsets`` (stable id, else row address)."""
    ids = fragment.row_ids_at(offsets)
    if ids is None:
        addresses: np.ndarray = (np.uint64(fragment.id) << np.uint64(32)) | np.asarray(offsets, dtype=np.uint64)
        return addresses
    return ids


def last_updated_at(fragment: FragmentInfo, offsets: np.ndarray) -> np.ndarray:
    """uint64 ``_row_last_updated_at_version`` of the rows at ``offsets`` (1 where none is recorded),
    read from the sequence's runs (not expanded per row)."""
    runs = fragment.last_updated_at_runs()
    if runs is None:
        return np.ones(len(offsets), dtype=np.uint64)
    return versions_at(runs, offsets)


def row_ids(fragment: FragmentInfo) -> np.ndarray:
    """uint64 ``_rowid`` per physical row: the stable row id, else the row address."""
    ids = fragment.row_ids()
    return fragment.row_addresses() if ids is None else ids


class RowReader:
    """Reads columns (names of ``snapshot``'s read schema; None = all) of one version's
    fragments at physical offsets."""

    def __init__(self, snapshot: Snapshot, columns: list[str] | None = None) -> None:
        self.snapshot = snapshot
        self.projection = resolve_projection(columns, snapshot.read_schema, snapshot.schema)
        self.schema = self.projection.schema
        self._ctx = ScanContext(snapshot, self.projection, None)

    def read(self, fragment: FragmentInfo, offsets: np.ndarray) -> pa.RecordBatch:
        """The rows at sorted unique ``offsets`` of ``fragment`` (a fragment of this version)."""
        offsets = np.asarray(offsets, dtype=np.int64)
        cols = self._ctx.read_columns(fragment, self.projection.sources, offsets)
        return self._ctx.assemble(cols, len(offsets))

    def close(self) -> None:
        self._ctx.close()
