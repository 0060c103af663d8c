"""``nearest=`` on a scan: the scan-side :class:`lance_duck.search.vector.VectorSource` (vectors
read through the scan's own tasks, read-ahead and memory budget; deletions; prefilters through
the filter machinery and scalar indices) and the result rows (columns, ``_distance``,
``query_index``, ``_rowid`` / ``_rowaddr``, post-filter, offset / limit) in pylance's order.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ..search.nearest import NearestQuery
from ..search.vector import Keep, VectorPlan, search
from .execution import ScanContext, execute, selected_offsets
from .filters import ROW_ADDR, ROW_ID
from .planning import ScanTask
from .projection import Projection, resolve_projection

if TYPE_CHECKING:
    from .scanner import LanceScanner

DISTANCE = "_distance"
QUERY_INDEX = "query_index"
#: rows per flat-search task never fall below this (tiny vectors)
MIN_FLAT_ROWS = 4096
#: flat-search tasks decoded ahead of the one being searched (one per core of a small machine: more
#: decoders only hold more memory, as the copies they make run at memory speed)
FLAT_READAHEAD = 2
_LOW32 = np.uint64(0xFFFFFFFF)


class KeepMask:
    """A :data:`lance_duck.search.vector.Keep` mask with ``key``: what its answer depends on besides
    the row ids asked (None when a prefilter's allow-list is in it), so an index segment may keep
    the masks of its partitions in the index cache."""

    __slots__ = ("fn", "key")

    def __init__(self, fn: Keep, key: tuple[Any, ...] | None) -> None:
        self.fn, self.key = fn, key

    def __call__(self, row_ids: np.ndarray) -> np.ndarray:
        return self.fn(row_ids)


class ScanVectorSource:
    """Vectors and row masks of one scan's fragments (see ``search.vector.VectorSource``)."""

    def __init__(self, scanner: LanceScanner, query: NearestQuery) -> None:
        self.scanner = scanner
        self.snapshot = scanner._snapshot
        self.query = query
        self.fragments = {f.id: f for f in scanner._fragments}
        self._fragment_ids = [f.id for f in scanner._fragments]
        self._stable = self.snapshot.has_stable_row_ids
        self._id_map: tuple[np.ndarray, np.ndarray] | None = None
        self._allowed: np.ndarray | None = None
        self._live: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def fragment_ids(self) -> list[int]:
        """The scan's fragments, in order."""
        return self._fragment_ids

    # -- reading vectors ---------------------------------------------------------------------
    def _sub_scan(self, columns: list[str], fragment_ids: Sequence[int]) -> Iterator[pa.RecordBatch]:
        """Batches of ``columns`` of the rows searched (the search filter applied) of ``fragment_ids``."""
        sc = self.scanner
        sub = sc._copy(fragments=[self.fragments[f] for f in fragment_ids], limit=None, offset=None)
        sub._nearest = None
        sub._projection = resolve_projection(columns, self.snapshot.read_schema, self.snapshot.schema)
        sub._filter = sc._search_filter
        # a task's vectors stay within a sixteenth of the read-ahead budget, and FLAT_READAHEAD tasks
        # are decoded ahead: a decoded task briefly exists twice (the page's values, then without the
        # deleted rows), so what is in flight stays well within the budget
        sub._first_rows = None
        sub.stats = sc.stats              # what the search's reads held is the nearest scan's
        if self.query.column in columns:
            row_bytes = max(1, self.query.dim * self.query.value_type.itemsize)
            rows = max(MIN_FLAT_ROWS, sc._budget // (16 * row_bytes))
            sub._task_rows = sub._batch_rows = min(rows, sc._task_rows)
            if sub._readahead is None:
                sub._readahead = FLAT_READAHEAD
        return sub._batches()

    def flat(self, fragment_ids: Sequence[int]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Blocks of (row ids, vectors) of the live rows of ``fragment_ids``."""
        col = self.query.column
        for b in self._sub_scan([col, ROW_ID], fragment_ids):
            ids = b.column(1).to_numpy().astype(np.uint64, copy=False)
            yield _valid(ids, b.column(0), self.query)

    def vectors(self, row_ids: np.ndarray) -> np.ndarray:
        """Stored vectors of live ``row_ids`` (in that order): each fragment's rows read at their
        offsets (no work over the fragment's other rows; live rows need no deletion mask)."""
        addrs, _ = self.addresses(row_ids)
        uniq, back = np.unique(addrs, return_inverse=True)
        frag = (uniq >> np.uint64(32)).astype(np.int64)
        offs = (uniq & _LOW32).astype(np.int64)
        col = self.query.column
        ctx = ScanContext(self.snapshot, _plain([col], self.snapshot), None)
        parts = []
        try:
            for fid in np.unique(frag).tolist():
                got = ctx.read_columns(self.fragments[fid], [col], offs[frag == fid])[col]
                parts.append(_to_numpy(got, self.query))
        finally:
            ctx.close()
        if not parts:
            return np.empty((0, self.query.dim), dtype=self.query.value_type)
        return np.concatenate(parts)[back.ravel()]

    # -- masks -----------------------------------------------------------------------------
    def addresses(self, row_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row addresses, whether each row id is a live row of the scanned fragments)."""
        row_ids = np.asarray(row_ids, dtype=np.uint64)
        if self._stable:
            ids, addrs = self._stable_map()
            pos = np.searchsorted(ids, row_ids)
            pos_c = np.minimum(pos, max(len(ids) - 1, 0))
            ok = (pos < len(ids)) & (ids[pos_c] == row_ids) if len(ids) else np.zeros(len(row_ids), bool)
            return np.where(ok, addrs[pos_c] if len(ids) else 0, 0).astype(np.uint64), ok
        fids, starts, phys, deleted = self._live_rows()
        frag = (row_ids >> np.uint64(32)).astype(np.int64)
        off = (row_ids & _LOW32).astype(np.int64)
        pos = np.minimum(np.searchsorted(fids, frag), len(fids) - 1)
        ok = (fids[pos] == frag) & (off < phys[pos])
        if len(deleted):
            at = starts[pos] + off
            i = np.minimum(np.searchsorted(deleted, at), len(deleted) - 1)
            ok &= deleted[i] != at
        return row_ids, ok

    def _live_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(sorted scanned fragment ids, their first row in a concatenation of their physical rows,
        physical rows, the sorted positions of the deleted rows in that concatenation)."""
        if self._live is None:
            infos = sorted(self.fragments.values(), key=lambda f: f.id)
            fids = np.array([f.id for f in infos] or [-1], dtype=np.int64)
            phys = np.array([f.physical_rows for f in infos] or [0], dtype=np.int64)
            starts = np.concatenate([[0], np.cumsum(phys)[:-1]]).astype(np.int64)
            # deleted_offsets are sorted and below physical_rows: the concatenation is sorted
            parts = [start + f.deleted_offsets() for f, start in zip(infos, starts.tolist()) if f.num_deletions()]
            deleted = np.concatenate(parts).astype(np.int64, copy=False) if parts else np.empty(0, np.int64)
            self._live = (fids, starts, phys, deleted)
        return self._live

    def _stable_map(self) -> tuple[np.ndarray, np.ndarray]:
        if self._id_map is None:
            ids, addrs = [], []
            for f in self.fragments.values():
                live = np.ones(f.physical_rows, dtype=bool)
                if f.num_deletions():
                    live[f.deleted_offsets()] = False
                rid = f.row_ids()
                phys = np.flatnonzero(live).astype(np.uint64)
                ids.append(np.asarray(rid, dtype=np.uint64)[live] if rid is not None else phys | np.uint64(f.id << 32))
                addrs.append(phys | np.uint64(f.id << 32))
            all_ids = np.concatenate(ids) if ids else np.empty(0, np.uint64)
            all_addrs = np.concatenate(addrs) if addrs else np.empty(0, np.uint64)
            order = np.argsort(all_ids, kind="stable")
            self._id_map = (all_ids[order], all_addrs[order])
        return self._id_map

    def keep(self, covered: frozenset[int]) -> Keep:
        """Mask of row ids a segment covering ``covered`` may return: live, still in a covered
        fragment that is scanned, and in the prefilter's allow-list."""
        filtered = self.scanner._search_filter is not None
        allowed = self._allow_list() if filtered else None
        fids = self._live_rows()[0]
        in_cover = np.isin(fids, np.array(sorted(covered), dtype=np.int64))

        def keep(row_ids: np.ndarray) -> np.ndarray:
            addrs, ok = self.addresses(row_ids)
            frag = (addrs >> np.uint64(32)).astype(np.int64)
            ok &= in_cover[np.minimum(np.searchsorted(fids, frag), len(fids) - 1)]
            if allowed is not None:
                pos = np.minimum(np.searchsorted(allowed, row_ids), max(len(allowed) - 1, 0))
                ok &= (allowed[pos] == row_ids) if len(allowed) else False
            return ok
        # without a prefilter the mask depends only on the table's state: the scanned fragments,
        # their deletion files (and row ids, per version), and the segment's fragments
        key = None if filtered else (
            self.snapshot.dataset_dir, self.snapshot.version if self._stable else None,
            tuple((f.id, f.physical_rows, f.deletion.path if f.deletion else None)
                  for f in self.fragments.values()),
            tuple(sorted(covered)))
        return KeepMask(keep, key)

    def _allow_list(self) -> np.ndarray:
        """Sorted row ids of the rows passing the search filter (scalar indices used)."""
        if self._allowed is None:
            parts = [b.column(0).to_numpy().astype(np.uint64, copy=False)
                     for b in self._sub_scan([ROW_ID], self.fragment_ids)]
            self._allowed = np.sort(np.concatenate(parts)) if parts else np.empty(0, np.uint64)
        return self._allowed


def _valid(ids: np.ndarray, col: pa.Array, query: NearestQuery) -> tuple[np.ndarray, np.ndarray]:
    """(ids, vectors) of the rows whose vector is not null."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if col.null_count:
        valid = col.is_valid().to_numpy(zero_copy_only=False)
        ids, col = ids[valid], col.filter(pa.array(valid))
    return ids, _to_numpy(col, query)


def _to_numpy(col: pa.Array, query: NearestQuery) -> np.ndarray:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if isinstance(col, pa.ExtensionArray):
        col = col.storage
    values: np.ndarray = col.flatten().to_numpy(zero_copy_only=False)
    return values.reshape(-1, query.dim)


def _plain(columns: list[str], snapshot: Any) -> Projection:
    return resolve_projection(columns, snapshot.read_schema, snapshot.schema)


def fetch_rows(snapshot: Any, fragments: dict[int, Any], addresses: np.ndarray, projection: Projection,
               flt: Any) -> pa.Table:
    """The rows at ``addresses`` (any order; live rows) that pass ``flt``, in address order;
    ``projection`` must hold ``_rowaddr`` to place them."""
    if flt is None and projection.is_plain and set(projection.sources) <= {ROW_ADDR, ROW_ID}:
        return _row_columns(snapshot, fragments, addresses, projection)    # no data file to read
    addrs = np.unique(np.asarray(addresses, dtype=np.uint64))
    frag = (addrs >> np.uint64(32)).astype(np.int64)
    tasks = []
    for seq, fid in enumerate(np.unique(frag)):
        info = fragments[int(fid)]
        offs = (addrs[frag == fid] & _LOW32).astype(np.int64)
        tasks.append(ScanTask(seq, info, range(0, info.physical_rows), selection=offs))
    ctx = ScanContext(snapshot, projection, flt)
    if flt is not None:
        batches = list(execute(ctx, iter(tasks), readahead=0))
        return pa.Table.from_batches(batches, schema=projection.schema)
    # no filter: each fragment's live offsets read as they are (a task over the fragment's whole
    # range would build and scan masks of all its rows to pick a few)
    batches = []
    try:
        for t in tasks:
            offs = selected_offsets(t.fragment, t)
            if len(offs):
                batches.append(ctx.assemble(ctx.read_columns(t.fragment, ctx.late_columns, offs), len(offs)))
    finally:
        ctx.close()
    return pa.Table.from_batches(batches, schema=projection.schema)


def result_rows(scanner: LanceScanner, fragments: dict[int, Any],
                addrs: np.ndarray) -> tuple[list[pa.ChunkedArray], list[pa.Field], np.ndarray]:
    """A search's result rows: the scan's output columns and fields for the rows at ``addrs``, in
    that order, that are live and pass its post-filter; and which of ``addrs`` they are (a mask)."""
    out_proj = scanner._projection
    fetch_proj = out_proj if ROW_ADDR in out_proj.sources else scanner._fetch_projection()
    rows = fetch_rows(scanner._snapshot, fragments, addrs, fetch_proj, scanner._post_filter) if len(addrs) else \
        fetch_proj.schema.empty_table()
    got = rows.column(ROW_ADDR).to_numpy() if rows.num_rows else np.empty(0, np.uint64)
    pos = np.searchsorted(got, addrs)
    present = (pos < len(got)) & (got[np.minimum(pos, max(len(got) - 1, 0))] == addrs) if len(got) else \
        np.zeros(len(addrs), dtype=bool)
    rows = rows.take(pa.array(pos[present].astype(np.int64)))
    return [rows.column(o.name) for o in out_proj.outputs], [o.field for o in out_proj.outputs], present


def _row_columns(snapshot: Any, fragments: dict[int, Any], addrs: np.ndarray, projection: Projection) -> pa.Table:
    """``_rowaddr`` / ``_rowid`` of the live rows at ``addrs``, in address order (as ``fetch_rows``
    gives them), without reading the data files."""
    addrs = np.unique(np.asarray(addrs, dtype=np.uint64))
    frag = (addrs >> np.uint64(32)).astype(np.int64)
    offs = (addrs & _LOW32).astype(np.int64)
    keep = np.ones(len(addrs), dtype=bool)
    ids = addrs.copy()
    for fid in np.unique(frag):
        info = fragments[int(fid)]
        m = frag == fid
        keep[m] = offs[m] < info.physical_rows          # the rows a scan of the fragment gives
        if info.num_deletions():
            keep[m] &= ~np.isin(offs[m], info.deleted_offsets())
        row_ids = info.row_ids() if snapshot.has_stable_row_ids else None
        if row_ids is not None and ROW_ID in projection.sources:
            ids[m & keep] = np.asarray(row_ids, dtype=np.uint64)[offs[m & keep]]
    cols = {ROW_ADDR: addrs[keep], ROW_ID: ids[keep]}
    return pa.table({o.name: pa.array(cols[o.source], pa.uint64()) for o in projection.outputs},
                    schema=projection.schema)


def run_nearest(scanner: LanceScanner, query: NearestQuery, *, fast_search: bool) -> tuple[VectorPlan, pa.Table]:
    """The result table of a ``nearest`` scan (before offset / limit), and the search's plan."""
    source = ScanVectorSource(scanner, query)
    plan, results = search(query, source, fast_search=fast_search)
    ids = np.concatenate([r[0] for r in results]).astype(np.uint64)
    dist = np.concatenate([r[1] for r in results]).astype(np.float32)
    qidx = np.repeat(np.arange(len(results), dtype=np.int32), [len(r[0]) for r in results])
    addrs, _ = source.addresses(ids)
    cols, fields, present = result_rows(scanner, source.fragments, addrs)
    at = scanner._distance_at
    if at is not None:
        cols.insert(at, pa.chunked_array([pa.array(dist[present], pa.float32())]))
        fields.insert(at, pa.field(DISTANCE, pa.float32()))
    if query.batch:
        cols.insert(0, pa.chunked_array([pa.array(qidx[present], pa.int32())]))
        fields.insert(0, pa.field(QUERY_INDEX, pa.int32(), nullable=False))
    schema = pa.schema(fields, metadata=scanner._projection.schema.metadata)
    return plan, pa.Table.from_arrays(cols, schema=schema)


def nearest_schema(projection: Projection, distance_at: int | None, batch: bool) -> pa.Schema:
    """The schema of a ``nearest`` scan's rows (``_distance`` at ``distance_at``, None: left out)."""
    fields = [o.field for o in projection.outputs]
    if distance_at is not None:
        fields.insert(distance_at, pa.field(DISTANCE, pa.float32()))
    if batch:
        fields.insert(0, pa.field(QUERY_INDEX, pa.int32(), nullable=False))
    return pa.schema(fields, metadata=projection.schema.metadata)
