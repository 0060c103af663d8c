"""pylance's ``LanceDataset.delta()``: what changed between two versions, as pylance 14.0.2 reports it.

``get_inserted_rows`` / ``get_updated_rows`` scan the *opened* version (as pylance does) for rows
whose ``_row_created_at_version`` / ``_row_last_updated_at_version`` fall in (begin, end]: the
versions come from the fragments' row-version metadata, and only the chosen rows are decoded.
``get_deleted_row_ids`` compares the fragments and deletion files of the two versions (stable row
ids required at both); ``list_transactions`` reads the transactions of versions begin+1 .. end.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterator

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgumentError, VersionNotFoundError
from ..table.rowids import in_sorted, sorted_unique
from ..table.snapshot import kept, kept_checkout
from ..table.transactions import Transaction, read_transaction, to_transaction
from .filters import ROW_CREATED, ROW_UPDATED
from .interop import engine_reader
from .rows import RowReader, live_offsets, row_ids, row_versions

if TYPE_CHECKING:
    from ..table.fragment import FragmentInfo
    from ..table.snapshot import Snapshot

#: chooses rows from their (created-at, last-updated-at) versions: a boolean mask
Chooser = Callable[[np.ndarray, np.ndarray], np.ndarray]

ROW_ID_FIELD = pa.field("_rowid", pa.uint64())


def build_delta(snapshot: Snapshot, compared_against: int | None = None, begin_version: int | None = None,
                end_version: int | None = None) -> "DatasetDelta":
    """pylance's argument rules: ``compared_against`` alone (ordered against the opened version;
    it wins over a range given with it, as in pylance's Python layer), or both range ends."""
    if compared_against is not None:
        current = snapshot.version
        a = _version(compared_against, "compared_against")
        begin, end = (a, current) if current > a else (current, a)
    elif begin_version is not None and end_version is not None:
        begin, end = _version(begin_version, "begin_version"), _version(end_version, "end_version")
    elif begin_version is not None or end_version is not None:
        raise InvalidArgumentError("Must specify both begin_version and end_version")
    else:
        raise InvalidArgumentError("Must specify either compared_against or both begin_version and end_version")
    return DatasetDelta(kept(snapshot), begin, end)


def _version(v: object, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
        raise InvalidArgumentError(f"{what} must be a version number (a non-negative int), got {v!r}")
    return int(v)


class DatasetDelta:
    """The changes between ``begin_version`` (exclusive) and ``end_version`` (inclusive), like
    pylance's ``DatasetDelta``; made by :meth:`LanceDataset.delta`.

    Example:
        >>> import lance_duck
        >>> ds = lance_duck.dataset(lance_duck.sample_path())
        >>> d = ds.delta(compared_against=5)
        >>> (d.begin_version, d.end_version)
        (5, 6)
    """

    def __init__(self, snapshot: Snapshot, begin_version: int, end_version: int) -> None:
        self._snapshot = snapshot
        self.begin_version = begin_version
        self.end_version = end_version

    def __repr__(self) -> str:
        return f"DatasetDelta({self._snapshot.uri!r}, begin_version={self.begin_version}, end_version={self.end_version})"

    def _checkout(self, version: int) -> Snapshot:
        try:
            return kept_checkout(self._snapshot, version)
        except VersionNotFoundError:
            raise VersionNotFoundError(f"Can not find version {version} of {self._snapshot.uri}, "
                                       "please check if it has been cleaned up") from None

    def list_transactions(self) -> list[Transaction]:
        """The transactions of versions ``begin_version + 1`` .. ``end_version`` (versions that
        record none are left out), oldest first.

        Raises:
            VersionNotFoundError: a version of the range does not exist (or was cleaned up).
        """
        out = []
        for v in range(self.begin_version + 1, self.end_version + 1):
            txn = read_transaction(self._checkout(v))
            if txn is not None:
                out.append(to_transaction(txn))
        return out

    def get_inserted_rows(self) -> pa.RecordBatchReader:
        """Rows of the opened version created in (begin, end]: every column, then ``_rowid``,
        ``_row_created_at_version``, ``_row_last_updated_at_version``, in scan order."""
        b, e = self.begin_version, self.end_version
        return self._rows(lambda created, updated: (created > b) & (created <= e), "created")

    def get_updated_rows(self) -> pa.RecordBatchReader:
        """Rows of the opened version created at or before ``begin_version`` and last updated
        in (begin, end] (columns as :meth:`get_inserted_rows`)."""
        b, e = self.begin_version, self.end_version
        return self._rows(lambda created, updated: (created <= b) & (updated > b) & (updated <= e), "updated")

    def _may_hold(self, frag: FragmentInfo, kind: str) -> bool:
        """Whether some row of ``frag`` has its ``kind`` version in (begin, end] (from the runs alone)."""
        runs = frag.created_at_runs() if kind == "created" else frag.last_updated_at_runs()
        versions = np.ones(1, np.uint64) if runs is None else runs[1]
        return bool(np.any((versions > self.begin_version) & (versions <= self.end_version)))

    def _rows(self, choose: Chooser, kind: str) -> pa.RecordBatchReader:
        snap = self._snapshot
        reader = snap.derived("delta:reader", lambda: RowReader(snap))   # kept with the (kept) version
        schema = pa.schema([*reader.schema, ROW_ID_FIELD, pa.field(ROW_CREATED, pa.uint64()),
                            pa.field(ROW_UPDATED, pa.uint64())], metadata=reader.schema.metadata)

        def batches() -> Iterator[pa.RecordBatch]:
            for frag in snap.fragments:
                if not self._may_hold(frag, kind):
                    continue                     # decided from the version runs: no row decoded
                created, updated = row_versions(frag)
                offs = live_offsets(frag)
                offs = offs[choose(created[offs], updated[offs])]
                if not len(offs):
                    continue
                data = reader.read(frag, offs)
                extra = [pa.array(row_ids(frag)[offs]), pa.array(created[offs]), pa.array(updated[offs])]
                yield pa.RecordBatch.from_arrays([*data.columns, *extra], schema=schema)
        return engine_reader(schema, batches())

    def get_deleted_row_ids(self) -> pa.RecordBatchReader:
        """The stable row ids live at ``begin_version`` and not at ``end_version`` (one ``_rowid``
        column, ascending; pylance's order is unspecified).

        Raises:
            InvalidArgumentError: begin newer than end, or a version without stable row ids.
            VersionNotFoundError: an end of the range does not exist.
        """
        b, e = self.begin_version, self.end_version
        schema = pa.schema([ROW_ID_FIELD])
        if b > e:
            raise InvalidArgumentError(f"begin version {b} is newer than end version {e}")
        if b == 0:
            return pa.RecordBatchReader.from_batches(schema, [])
        begin, end = self._checkout(b), self._checkout(e)
        for s in (begin, end):
            if not s.has_stable_row_ids:
                raise InvalidArgumentError(f"deleted row ids require stable row ids, version {s.version} "
                                           "does not use them")
        ids = deleted_row_ids(begin, end)
        # (the ids wrap numpy memory: held past the stream's end, as every reader an engine pulls)
        return engine_reader(schema, [pa.record_batch([pa.array(ids)], schema=schema)])


def deleted_row_ids(begin: Snapshot, end: Snapshot) -> np.ndarray:
    """Sorted uint64 stable row ids live at ``begin`` and nowhere at ``end``. Only fragments whose
    deletion file changed (the offsets their deletions gained or lost), that vanished or that
    appeared (their live rows) are read, and only those rows' ids are looked up."""
    old = {f.id: f for f in begin.fragments}
    new = {f.id: f for f in end.fragments}
    lost: list[np.ndarray] = []
    revived: list[np.ndarray] = []
    for fid, f in old.items():
        g = new.get(fid)
        if g is None or g.physical_rows != f.physical_rows:
            lost.append(_stable_ids(f, live_offsets(f)))
        elif f.pb.deletion_file != g.pb.deletion_file:
            dp, dc = f.deleted_offsets(), g.deleted_offsets()
            lost.append(_stable_ids(f, np.setdiff1d(dc, dp, assume_unique=True)))
            revived.append(_stable_ids(g, np.setdiff1d(dp, dc, assume_unique=True)))
    for fid, g in new.items():
        before = old.get(fid)
        if before is None or g.physical_rows != before.physical_rows:
            revived.append(_stable_ids(g, live_offsets(g)))
    gone = sorted_unique(np.concatenate(lost)) if lost else np.empty(0, np.uint64)
    if revived and len(gone):
        gone = gone[~in_sorted(gone, np.sort(np.concatenate(revived)))]
    return gone.astype(np.uint64)


def _stable_ids(fragment: FragmentInfo, offsets: np.ndarray) -> np.ndarray:
    ids = fragment.row_ids_at(offsets)
    assert ids is not None, "deleted_row_ids: the callers check both versions have stable row ids"
    return ids
