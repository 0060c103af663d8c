"""The change feed: every row change of every commit in (from, to], Delta's change-data-feed shape.

Per commit ``v`` the manifests of ``v - 1`` and ``v`` are compared fragment by fragment; a fragment
whose manifest entry is byte-identical in both holds the same live rows with the same values and
is never looked at again. Of the others only metadata is read first (row ids, row-version
sequences, deletion files); data is decoded only for the rows that changed, at their offsets.

* With stable row ids (both versions): a row id live only before is a ``delete`` (its last values),
  only after an ``insert``; live in both with a different ``_row_last_updated_at_version`` an
  update (``update_preimage`` from ``v - 1``, ``update_postimage`` from ``v``). Rows moved by
  compaction keep their id and version: no change.
* Without: the key is the row address; a fragment whose data files changed (add_columns, ...)
  shows each live row as ``delete`` + ``insert``; updates are deletes + inserts.
* The commit's transaction says what it did: compaction, index builds, reserved ids and
  metadata-only commits (``NO_ROW_CHANGES``) produce no rows and read nothing more; an overwrite
  deletes every row and inserts every row.

Rows of a commit are ordered by ``_rowid``, then delete, pre-image, post-image, insert.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Sequence

import numpy as np
import pyarrow as pa

from .. import trace
from ..errors import InvalidArgumentError, UnsupportedFeatureError
from ..predicate import compile_filter
from ..scan.rows import RowReader, last_updated_at, live_offsets, row_ids_at
from ..table.snapshot import Snapshot
from ..table.transactions import NO_ROW_CHANGES, operation_kind, read_transaction

if TYPE_CHECKING:
    import pyarrow.compute as pc

    from .._proto import table_pb2
    from ..table.fragment import FragmentInfo

CHANGE_TYPES = ("delete", "update_preimage", "update_postimage", "insert")
DELETE, PRE, POST, INSERT = range(4)
META_FIELDS = (pa.field("_change_type", pa.string()), pa.field("_commit_version", pa.int64()),
               pa.field("_commit_timestamp", pa.timestamp("us", tz="UTC")), pa.field("_rowid", pa.uint64()))
META_NAMES = tuple(f.name for f in META_FIELDS)
BATCH_ROWS = 65536


@dataclass
class CommitChanges:
    """The changed rows of one commit, sorted: what, which row, and where to read its values."""
    version: int
    timestamp_us: int
    kind: str | None                     # the transaction's operation (None: not recorded)
    prev: Snapshot | None                # version - 1 (None: the commit is the first)
    cur: Snapshot
    code: np.ndarray                     # int8: DELETE, PRE, POST, INSERT
    rowid: np.ndarray                    # uint64
    side: np.ndarray                     # int8: 0 = read from prev, 1 = from cur
    fragment: np.ndarray                 # int64 fragment id (of that side's version)
    offset: np.ndarray                   # int64 physical offset in it

    def __len__(self) -> int:
        return len(self.code)


def _empty() -> tuple[np.ndarray, ...]:
    return (np.empty(0, np.int8), np.empty(0, np.uint64), np.empty(0, np.int8), np.empty(0, np.int64),
            np.empty(0, np.int64))


class _Rows:
    """Rows of one side of a commit, gathered per fragment: row id, last-updated version, where."""

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, frag: FragmentInfo, offsets: np.ndarray) -> None:
        if not len(offsets):
            return
        self.parts.append((row_ids_at(frag, offsets), last_updated_at(frag, offsets),
                           np.full(len(offsets), frag.id, np.int64), offsets.astype(np.int64)))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if not self.parts:
            return np.empty(0, np.uint64), np.empty(0, np.uint64), np.empty(0, np.int64), np.empty(0, np.int64)
        return tuple(np.concatenate([p[i] for p in self.parts]) for i in range(4))  # type: ignore[return-value]


def _without_deletions(pb: table_pb2.DataFragment) -> table_pb2.DataFragment:
    c = type(pb)()
    c.CopyFrom(pb)
    c.ClearField("deletion_file")
    return c


def diff_commit(prev: Snapshot | None, cur: Snapshot) -> CommitChanges:
    """The changes ``cur``'s commit made to ``prev`` (None: the commit made the first version).

    Only what differs is looked at: a fragment whose manifest entry is unchanged, nothing; one whose
    deletion file alone changed, the offsets its deletions gained or lost (both deletion files);
    a vanished or new fragment, its live rows; a fragment whose data files or row versions changed
    (add_columns, ...), its rows live in both versions too. Rows lost and gained are then matched by
    stable row id: a row moved by a rewrite or an update keeps its id.
    """
    txn = read_transaction(cur)
    kind = operation_kind(txn)
    ts_us = cur.timestamp_ns // 1000
    trace.record("changes:commit", (cur.version, kind))
    if kind in NO_ROW_CHANGES:
        return CommitChanges(cur.version, ts_us, kind, prev, cur, *_empty())
    old = {} if prev is None else {f.id: f for f in prev.fragments}
    new = {g.id: g for g in cur.fragments}
    stable = prev is not None and prev.has_stable_row_ids and cur.has_stable_row_ids
    everything = kind in ("overwrite", "clone") or prev is None
    lost, gained = _Rows(), _Rows()                      # from prev / from cur
    both_p, both_c = _Rows(), _Rows()                    # same fragment and offset, contents may differ
    for f in old.values():
        g = None if everything else new.get(f.id)
        if g is not None and g.pb == f.pb:
            continue
        trace.record("changes:fragment", (cur.version, 0, f.id))
        if g is None or g.physical_rows != f.physical_rows:
            lost.add(f, live_offsets(f))
            continue
        dp, dc = f.deleted_offsets(), g.deleted_offsets()
        lost.add(f, np.setdiff1d(dc, dp, assume_unique=True))
        gained.add(g, np.setdiff1d(dp, dc, assume_unique=True))
        if _without_deletions(f.pb) != _without_deletions(g.pb):
            live = np.setdiff1d(np.arange(f.physical_rows, dtype=np.int64), np.union1d(dp, dc), assume_unique=True)
            both_p.add(f, live)
            both_c.add(g, live)
    for h in new.values():
        e = None if everything else old.get(h.id)
        if e is not None and (e.pb == h.pb or e.physical_rows == h.physical_rows):
            continue                                     # unchanged, or handled with its prev entry
        trace.record("changes:fragment", (cur.version, 1, h.id))
        gained.add(h, live_offsets(h))
    ids_p, upd_p, fid_p, off_p = lost.arrays()
    ids_c, upd_c, fid_c, off_c = gained.arrays()
    parts: list[tuple[np.ndarray, ...]] = []        # (code, rowid, side, fragment, offset) arrays

    def add(code: int, side: int, ids: np.ndarray, fid: np.ndarray, off: np.ndarray,
            idx: np.ndarray | None = None) -> None:
        if idx is not None:
            ids, fid, off = ids[idx], fid[idx], off[idx]
        if len(ids):
            parts.append((np.full(len(ids), code, np.int8), ids.astype(np.uint64),
                          np.full(len(ids), side, np.int8), fid, off))

    if stable and not everything:
        _, ip, ic = np.intersect1d(ids_p, ids_c, assume_unique=True, return_indices=True)
        moved = upd_p[ip] != upd_c[ic]                   # same id, new version: an update (else a rewrite)
        add(PRE, 0, ids_p, fid_p, off_p, ip[moved])
        add(POST, 1, ids_c, fid_c, off_c, ic[moved])
        add(DELETE, 0, ids_p, fid_p, off_p, np.setdiff1d(np.arange(len(ids_p)), ip, assume_unique=True))
        add(INSERT, 1, ids_c, fid_c, off_c, np.setdiff1d(np.arange(len(ids_c)), ic, assume_unique=True))
    else:
        add(DELETE, 0, ids_p, fid_p, off_p)
        add(INSERT, 1, ids_c, fid_c, off_c)
    bp_ids, bp_upd, bp_fid, bp_off = both_p.arrays()
    bc_ids, bc_upd, bc_fid, bc_off = both_c.arrays()
    if len(bp_ids):
        if stable:
            changed = bp_upd != bc_upd
            add(PRE, 0, bp_ids, bp_fid, bp_off, changed)
            add(POST, 1, bc_ids, bc_fid, bc_off, changed)
        else:
            add(DELETE, 0, bp_ids, bp_fid, bp_off)
            add(INSERT, 1, bc_ids, bc_fid, bc_off)
    if not parts:
        return CommitChanges(cur.version, ts_us, kind, prev, cur, *_empty())
    cols = [np.concatenate([p[i] for p in parts]) for i in range(5)]
    order = np.lexsort((cols[0], cols[1]))
    return CommitChanges(cur.version, ts_us, kind, prev, cur, *(c[order] for c in cols))


class ChangeFeed:
    """The plan of a change feed over (from, to]: output schema, filter, the snapshots of the range.

    Commits are diffed lazily, one at a time (:meth:`commit`), so a consumer that stops early
    reads no further.
    """

    def __init__(self, to: Snapshot, start: int, end: int, columns: Sequence[str] | None = None,
                 filter: str | pc.Expression | None = None) -> None:
        self.to = to
        self.start, self.end = start, end
        data_schema = to.read_schema
        if columns is not None:
            if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
                raise InvalidArgumentError(f"columns must be a list of column names, got {columns!r}")
            unknown = [c for c in columns if c not in data_schema.names]
            if unknown:
                raise InvalidArgumentError(f"columns {unknown} are not columns of version {to.version} "
                                           f"(columns: {data_schema.names})")
            data_names = list(dict.fromkeys(columns))
        else:
            data_names = list(data_schema.names)
        clash = [n for n in data_schema.names if n in META_NAMES]
        if clash:
            raise UnsupportedFeatureError(f"the table has columns named {clash}, which the change feed adds itself")
        full = pa.schema([*data_schema, *META_FIELDS])
        self.filter = compile_filter(filter, full) if filter is not None else None
        need = set(data_names) | (set(self.filter.columns) if self.filter is not None else set())
        self.read_names = [n for n in data_schema.names if n in need]
        self._meta_filter = self.filter is not None and set(self.filter.columns) <= set(META_NAMES)
        self.read_schema = pa.schema([*(data_schema.field(n) for n in self.read_names), *META_FIELDS])
        self.schema = pa.schema([*(data_schema.field(n) for n in data_names), *META_FIELDS])
        self._ids = {f.name: f.id for f in to.schema.fields}
        self._snaps: dict[int, Snapshot] = {end: to}
        self._last: CommitChanges | None = None

    @property
    def versions(self) -> range:
        """The commits of the range."""
        return range(self.start + 1, self.end + 1)

    def snapshot(self, version: int) -> Snapshot | None:
        if version == 0:
            return None
        s = self._snaps.get(version)
        if s is None:
            s = self._snaps[version] = self.to.checkout(version)
        return s

    def commit(self, version: int) -> CommitChanges:
        """The changed rows of one commit of the range (metadata only is read; the last one kept)."""
        last = self._last
        if last is not None and last.version == version:
            return last
        c = diff_commit(self.snapshot(version - 1), self.snapshot(version))  # type: ignore[arg-type]
        self._last = c
        return c

    def batches(self, pieces: Sequence[tuple[int, int, int]] | None = None) -> Iterator[pa.RecordBatch]:
        """The output batches of every commit, or of ``pieces`` ((version, first row, end row) of a
        commit's sorted changes, as :func:`plan_pieces` cuts them)."""
        if pieces is None:
            for v in self.versions:
                c = self.commit(v)
                for lo in range(0, len(c), BATCH_ROWS):
                    yield from self._emit(c, lo, min(len(c), lo + BATCH_ROWS))
            return
        for v, lo, hi in pieces:
            c = self.commit(v)
            for a in range(lo, min(hi, len(c)), BATCH_ROWS):
                yield from self._emit(c, a, min(hi, len(c), a + BATCH_ROWS))

    def _emit(self, c: CommitChanges, lo: int, hi: int) -> Iterator[pa.RecordBatch]:
        sel = np.arange(lo, hi, dtype=np.int64)
        if not len(sel):
            return
        if self._meta_filter:
            # a filter over the _-columns alone: applied before any value is read
            meta = self._meta(c, sel)
            kept = self.filter.apply(pa.RecordBatch.from_arrays(   # type: ignore[union-attr]
                [*meta, pa.array(sel)], names=[*META_NAMES, "__pos"]))
            sel = kept.column(len(META_NAMES)).to_numpy()
            if not len(sel):
                return
        cols: list[pa.Array] = []
        if self.read_names:
            side, frag, off = c.side[sel], c.fragment[sel], c.offset[sel]
            pos = np.empty(len(sel), np.int64)
            tables: list[pa.Table] = []
            done = 0
            key = side.astype(np.int64) << 40 | frag
            for k in np.unique(key):
                idx = np.flatnonzero(key == k)
                snap = c.prev if int(k >> 40) == 0 else c.cur
                assert snap is not None
                fragment = snap.fragment(int(k & ((1 << 40) - 1)))
                uniq, inv = np.unique(off[idx], return_inverse=True)
                trace.record("changes:read", (c.version, snap.version, fragment.id, len(uniq)))
                tables.append(self._read(snap, fragment, uniq))
                pos[idx] = done + inv
                done += len(uniq)
            data = pa.concat_tables(tables).take(pa.array(pos))
            cols = [data.column(i).combine_chunks() for i in range(data.num_columns)]
        batch = pa.RecordBatch.from_arrays([*cols, *self._meta(c, sel)], schema=self.read_schema)
        if self.filter is not None and not self._meta_filter:
            batch = self.filter.apply(batch)
            if not batch.num_rows:
                return
        if self.read_schema != self.schema:
            batch = pa.RecordBatch.from_arrays([batch.column(f.name) for f in self.schema], schema=self.schema)
        yield batch

    @staticmethod
    def _meta(c: CommitChanges, sel: np.ndarray) -> list[pa.Array]:
        n = len(sel)
        return [pa.array(np.asarray(CHANGE_TYPES, dtype=object)[c.code[sel]], pa.string()),
                pa.array(np.full(n, c.version, np.int64)),
                pa.array(np.full(n, c.timestamp_us, np.int64)).cast(META_FIELDS[2].type),
                pa.array(c.rowid[sel], pa.uint64())]

    def _read(self, snap: Snapshot, fragment: FragmentInfo, offsets: np.ndarray) -> pa.Table:
        """The output data columns of rows of one version's fragment (columns that version lacks: null)."""
        own = {f.id: f.name for f in snap.schema.fields}
        names = {n: own.get(self._ids[n]) for n in self.read_names}
        present = [m for m in names.values() if m is not None]
        reader = snap.derived(f"changes:reader:{','.join(present)}", lambda: RowReader(snap, present))
        batch = reader.read(fragment, offsets) if present else None
        arrays = []
        for n in self.read_names:
            want = self.read_schema.field(n).type
            m = names[n]
            if m is None:
                arrays.append(pa.nulls(len(offsets), want))
                continue
            a = batch.column(m)  # type: ignore[union-attr]
            arrays.append(a if a.type == want else a.cast(want))
        return pa.Table.from_arrays(arrays, schema=pa.schema([self.read_schema.field(n) for n in self.read_names]))


def plan_pieces(feed: ChangeFeed, rows_per_piece: int) -> list[tuple[int, int, int]]:
    """The range's changes cut into pieces of at most ``rows_per_piece`` rows of one commit
    (commits without changes give none); what the Spark source makes its partitions of."""
    out = []
    for v in feed.versions:
        n = len(feed.commit(v))
        out += [(v, lo, min(n, lo + rows_per_piece)) for lo in range(0, n, rows_per_piece)]
    return out
