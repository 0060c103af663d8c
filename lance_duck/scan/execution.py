"""Scan execution: a task (fragment + physical row range) -> one record batch.

Per task: remove deleted rows, read the filter columns, evaluate the filter exactly, then
read the other columns only for the surviving rows (late materialisation), and assemble
exactly the requested columns with the schema's types. Tasks run through an ordered,
bounded read-ahead; ``limit``/``offset`` are applied on the ordered stream, which stops
pulling (and planning) as soon as it has enough.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import trace
from ..encodings._buf import whole
from ..encodings.bitmap import bool_array
from ..errors import CorruptFileError
from .filters import ROW_ADDR, ROW_CREATED, ROW_ID, ROW_UPDATED, CompiledFilter, evaluate
from .planning import ScanTask
from .projection import Projection, extract
from .readahead import ReadaheadStats, ordered_map

if TYPE_CHECKING:
    from ..file.base import DataFileReader, DataFileRef
    from ..predicate.pruning import Conjunct
    from ..schema import LanceField
    from ..table.fragment import FragmentInfo
    from ..table.snapshot import Snapshot

Selection = "range | np.ndarray"
READER_CACHE_SIZE = 32
# A selection keeping fewer than 1 row in this many is read as row offsets (chunks gathered).
SPARSE_FACTOR = 8
# Plain numbers without nulls of at most this many rows are filtered with a numpy boolean index
# (Arrow's filter has a fixed cost of ~20-30 us a call); longer ones with Arrow's filter over a
# packed mask (~1.8x faster than numpy's at 131k-250k rows).
NUMPY_FILTER_ROWS = 32_768
# Rows per block when judging whether the rows passing a filter touch most of a column's pages.
LATE_BLOCK = 1024
# A count compares a page's indices with each passing (or each failing) value when at most this many
# do: a comparison and count of 1M int32 indices takes ~0.1 ms, a gather of the per-value mask ~1.1.
FEW_CODES = 8


class ScanContext:
    """Everything a task needs besides its fragment: shared by the worker threads."""

    def __init__(self, snapshot: Snapshot, projection: Projection, flt: CompiledFilter | None,
                 dictionaries: frozenset[str] = frozenset()) -> None:
        self.snapshot = snapshot
        self.io = snapshot.io
        self.projection = projection
        self.filter = flt
        self.schema = projection.schema
        # output columns whose page dictionaries stay DictionaryArrays in the batches (an engine
        # consuming dictionaries; see LanceScanner._dictionary_reader): batches then carry their
        # own schema
        self.dictionaries = dictionaries
        self._fields, self._types = _name_maps(snapshot)
        self._readers, self._lock = _reader_cache(snapshot)
        self._bounds: dict[tuple[Any, ...], Any] = {}
        self._open_lock = threading.Lock()
        self._whole: dict[str, list[LanceField]] = {}     # path -> fields the scan reads whole (prefetched)
        self._fragments: list[FragmentInfo] = []
        self._late_decided = False
        self._planned: set[str] = set()
        self._failed: dict[str, OSError] = {}   # path -> why opening it failed (not tried again)
        self._closed = False
        filter_cols = tuple(flt.columns) if flt is not None else ()
        self.filter_columns = filter_cols
        self.late_columns = tuple(c for c in projection.sources if c not in filter_cols)

    def read_types(self) -> list[pa.DataType | None]:
        """The read types of every column the scan reads (None for ``_rowid`` / ``_rowaddr``)."""
        return [self._types.get(c) for c in dict.fromkeys((*self.filter_columns, *self.projection.sources))]

    # -- readers -------------------------------------------------------------------------
    def prefetch(self, fragments: Iterable[FragmentInfo], pages: bool = True) -> None:
        """Object stores: start fetching the footers of every file this scan will open (one round
        trip); with ``pages``, also every page of the columns it reads whole (the filter's columns,
        or all when there is no filter), planned per file as its footer lands (io/prefetch.py)."""
        if self.io.is_local:
            return
        from ..file.base import TAIL_BYTES
        names = dict.fromkeys((*self.filter_columns, *self.projection.sources))
        wanted = [self._fields[n] for n in names if n in self._fields]
        whole = set(self.filter_columns if self.filter is not None else self.projection.sources)
        files: dict[str, DataFileRef] = {}
        self._fragments = list(fragments) if pages else []
        for frag in fragments:
            for field in wanted:
                ref = _file_for(frag, field)
                if ref is not None and ref.path not in self._readers:
                    files.setdefault(ref.path, ref)
                    if pages and field.name in whole:
                        self._whole.setdefault(ref.path, []).append(field)
        self.io.prefetch_tails([(p, r.size) for p, r in files.items()], TAIL_BYTES)
        if self._whole:
            refs = [files[p] for p in self._whole]
            threading.Thread(target=self._open_all, args=(refs,), daemon=True, name="lance-duck-plan").start()

    def _open_all(self, refs: list[DataFileRef]) -> None:
        """Open each file in scan order (planning its pages, see :meth:`reader`) until the scan ends."""
        for ref in refs:
            if self._closed:
                return
            try:
                self.reader(ref)
            except Exception:  # noqa: BLE001 - the scan's own read of this file reports it
                return

    def _late_decision(self, kept: np.ndarray, n: int) -> None:
        """The first filtered task decides whether the columns read after the filter are prefetched
        whole too: when the rows passing it touch most blocks of ``LATE_BLOCK`` rows, every page of
        those columns will be read anyway."""
        if self._late_decided or not self._whole or not self.late_columns:
            return
        self._late_decided = True
        blocks = -(-n // LATE_BLOCK)
        if len(kept) == 0 or np.unique(kept // LATE_BLOCK).size * 2 < blocks:
            return
        late = [self._fields[c] for c in self.late_columns if c in self._fields]
        opened: list[tuple[DataFileRef, LanceField]] = []
        with self._open_lock:
            for frag in self._fragments:
                for field in late:
                    ref = _file_for(frag, field)
                    if ref is None:
                        continue
                    self._whole.setdefault(ref.path, [])
                    if field not in self._whole[ref.path]:
                        self._whole[ref.path].append(field)
                        if ref.path in self._planned:
                            opened.append((ref, field))
        for ref, field in opened:
            self.reader(ref).prefetch_fields([field])

    def close(self) -> None:
        """The scan ended: pages fetched ahead and not read are dropped."""
        self._closed = True
        with self._open_lock:
            planned = list(self._planned)
        self.io.prefetcher.forget(planned)

    def reader(self, ref: DataFileRef) -> DataFileReader:
        r = self._cached_reader(ref.path)
        if r is not None:
            return r
        with self._open_lock:       # one opening per file: its pages are planned before any read
            r = self._cached_reader(ref.path)
            if r is not None:
                return r
            failed = self._failed.get(ref.path)
            if failed is not None:  # its requests were retried already: the scan fails as it did
                raise failed
            try:
                r = self.snapshot.open_data_file(ref)  # checked against the manifest
            except OSError as exc:
                self._failed[ref.path] = exc
                raise
            if ref.path in self._whole and ref.path not in self._planned and not self._closed:
                self._planned.add(ref.path)
                r.prefetch_fields(self._whole[ref.path])
            with self._lock:
                self._readers[ref.path] = r
                while len(self._readers) > READER_CACHE_SIZE:
                    self._readers.popitem(last=False)
        return r

    def _cached_reader(self, path: str) -> DataFileReader | None:
        with self._lock:
            r = self._readers.get(path)
            if r is not None:
                self._readers.move_to_end(path)
            return r

    # -- columns -------------------------------------------------------------------------
    def read_columns(self, fragment: FragmentInfo, names: Sequence[str], rows: range | np.ndarray,
                     mask: np.ndarray | None = None, keep_dictionary: bool = False,
                     dead: np.ndarray | None = None, chunked: bool = False) -> dict[str, pa.Array]:
        """Top-level columns (incl. _rowid/_rowaddr) for the rows of ``rows`` where ``mask``.

        ``dead``: the positions where ``mask`` is false, when known (a task's deleted rows): a
        reader then leaves them out while decoding, no filter pass after it. ``dead`` without a
        ``mask`` (a range): the mask is made from it only where a reader cannot take the positions.

        Dense selections are read as the contiguous range and then filtered (ranges are the
        readers' cheapest selection); sparse ones hand the readers the row offsets so that
        only the chunks holding them are fetched. ``keep_dictionary``: string, number and temporal
        columns stored with page dictionaries may come back as DictionaryArrays (see :func:`plain`).
        ``chunked``: a column read whole may come back as a ChunkedArray of its pages
        (``read_fields``' ``chunked``; :meth:`assemble` then makes a table).
        """
        if not names:
            return {}
        if mask is None and dead is not None and not (
                isinstance(rows, range) and len(rows) >= MIN_RANGE_ROWS
                and (len(rows) - dead.size) * SPARSE_FACTOR >= len(rows)
                and not any(n in (ROW_ADDR, ROW_ID, ROW_CREATED, ROW_UPDATED) for n in names)):
            mask = _mask_without(len(rows), dead)
        offsets = None
        if not isinstance(rows, range):      # explicit sorted offsets (take, an index's rows)
            offs = np.asarray(rows, dtype=np.int64)
            if len(offs) == 0:
                rows, mask = range(0, 0), None
            else:
                first = int(offs[0])
                rows = range(first, int(offs[-1]) + 1)
                offsets = offs
                # dense: the range is read, then filtered -- unless the range is short enough to be
                # read as row offsets anyway (then the offsets themselves are read, nothing filtered)
                if len(offs) * SPARSE_FACTOR >= len(rows) and len(rows) >= MIN_RANGE_ROWS:
                    mask = np.zeros(len(rows), dtype=bool)
                    mask[offs - first] = True
        count = len(offsets) if offsets is not None else int(np.count_nonzero(mask)) if mask is not None else \
            len(rows) - (0 if dead is None else int(dead.size))
        # row offsets without a mask (a short range) are read as offsets; otherwise sparse when few rows pass
        sparse = (offsets is not None and mask is None) or (
            (offsets is not None or mask is not None) and count * SPARSE_FACTOR < len(rows))
        out: dict[str, pa.Array] = {}
        by_read: dict[tuple[str, str], tuple[DataFileRef, range | np.ndarray, list[LanceField]]] = {}
        for name in names:
            if name in (ROW_ADDR, ROW_ID):
                if offsets is None:
                    offsets = _offsets(rows) if mask is None else np.flatnonzero(mask) + rows.start
                if name == ROW_ID and self.snapshot.has_stable_row_ids and fragment.row_ids() is not None:
                    out[name] = pa.array(np.asarray(fragment.row_ids(), dtype=np.uint64)[offsets])
                else:
                    out[name] = pa.array(offsets.astype(np.uint64) | np.uint64(fragment.id << 32))
                continue
            if name in (ROW_CREATED, ROW_UPDATED):
                if offsets is None:
                    offsets = _offsets(rows) if mask is None else np.flatnonzero(mask) + rows.start
                out[name] = pa.array(row_versions(fragment, name)[offsets])
                continue
            field = self._fields[name]
            ref = _file_for(fragment, field)
            if ref is None:
                out[name] = pa.nulls(count, self._types[name])
                continue
            if sparse:
                if offsets is None:
                    assert mask is not None       # sparse: offsets or a mask
                    offsets = np.flatnonzero(mask) + rows.start
                sel = _compact(offsets)
                key = (ref.path, "sel")
            else:
                sel = rows if len(rows) >= MIN_RANGE_ROWS else _offsets(rows)
                key = (ref.path, "range")
            by_read.setdefault(key, (ref, sel, []))[2].append(field)
        keep = None
        for ref, sel, fields in by_read.values():
            # dictionaries are kept through the deletion filter (it then moves indices, not strings);
            # a range's mask goes to the reader, which leaves the rows out while decoding pages
            down = dead if not sparse and (mask is not None or dead is not None) and isinstance(sel, range) else None
            # chunks (a reader's pages, not joined) where no filter pass follows
            parts = chunked and not sparse and (down is not None or mask is None)
            arrays = self.reader(ref).read_fields(fields, sel, keep_dictionary=True, dead=down, chunked=parts)
            for f, a in zip(fields, arrays):
                if not parts or pa.types.is_dictionary(a.type):
                    a = whole(a)
                if not sparse and down is None:
                    if mask is not None and count != len(rows):
                        if len(a) <= NUMPY_FILTER_ROWS and _plain_numbers(a):
                            vals = a.to_numpy(zero_copy_only=True)[mask]
                            a = pa.Array.from_buffers(a.type, vals.size, [None, pa.py_buffer(vals)])
                        else:
                            if keep is None:
                                keep = mask_array(mask)
                            a = a.filter(keep)
                want = self._types[f.name]
                if not keep_dictionary and f.name not in self.dictionaries:
                    a = plain(a, want)
                if a.type != want and not _kept_dictionary(a, want):
                    a = a.cast(want)
                out[f.name] = a
        return out

    # -- one task ----------------------------------------------------------------------------
    def run(self, task: ScanTask) -> pa.RecordBatch | pa.Table | None:
        frag = task.fragment
        rows = task.rows
        if self.filter is not None and task.selection is not None and _one_pass(task):
            return self._run_selected(task)
        if self.filter is not None and not self.projection.outputs and task.selection is None and not task.skip:
            counted = self._count_by_parts(task)
            if counted is not None:             # a count of one column's filter, page by page
                return _empty_batch(counted) if counted else None
        read: dict[str, pa.Array] | None = None     # the filter's columns over the whole task
        if self.filter is not None and task.selection is None and not task.skip:
            deleted = deleted_in(frag, rows)
            if deleted is not None:
                done = self._run_filtered_with_deletions(task, deleted)
                if not isinstance(done, dict):
                    return done
                read = done
        dead = deleted_in(frag, rows)
        if dead is not None and self.filter is None and task.selection is None and not task.skip:
            # only deletions: their positions go down (read_columns makes a mask only if it must)
            n = len(rows) - int(dead.size)
            if n == 0:
                return None
            return self.assemble(self.read_columns(frag, self.late_columns, rows, None, dead=dead, chunked=True), n)
        mask = None if dead is None else _mask_without(len(rows), dead)
        if task.selection is not None or task.skip:
            dead = None                      # (the mask is no longer the deletions')
        if task.selection is not None:
            chosen = np.zeros(len(rows), dtype=bool)
            chosen[np.asarray(task.selection, dtype=np.int64) - rows.start] = True
            mask = chosen if mask is None else mask & chosen
        if task.skip:
            if mask is None:
                mask = np.ones(len(rows), dtype=bool)
            mask[np.flatnonzero(mask)[:task.skip]] = False
        n = len(rows) if mask is None else int(np.count_nonzero(mask))
        if n == 0:
            return None
        cols: dict[str, pa.Array] = {}
        if self.filter is not None and mask is not None and task.selection is None and not task.skip:
            # (the filter's columns could not be evaluated whole: only the live rows are)
            if read is None:
                read = self.read_columns(frag, self.filter_columns, rows, None, keep_dictionary=True)
            live = mask_array(mask)
            fcols = {k: v.filter(live) for k, v in read.items()}
            keep = self.filter_mask(fcols, n)
        elif self.filter is not None:
            fcols = self.read_columns(frag, self.filter_columns, rows, mask, keep_dictionary=True)
            keep = self.filter_mask(fcols, n)
        if self.filter is not None:
            if not self.projection.outputs:      # a count: how many rows pass is all it needs
                passing = int(np.count_nonzero(keep))
                return _empty_batch(passing) if passing else None
            if not keep.all():
                if not keep.any():
                    return None
                if mask is None:                 # (keep is a fresh array: no positions made)
                    mask = keep
                else:
                    chosen = mask.copy()
                    chosen[mask] = keep
                    mask = chosen
                if not self._late_decided:
                    self._late_decision(np.flatnonzero(mask), len(rows))
                dead = None
                n = int(np.count_nonzero(keep))
                kept = mask_array(keep)
                fcols = {k: v.filter(kept) for k, v in fcols.items() if k in self.projection.sources}
            cols.update((k, self._plain(k, v)) for k, v in fcols.items() if k in self.projection.sources)
        cols.update(self.read_columns(frag, self.late_columns, rows, mask, dead=dead, chunked=True))
        return self.assemble(cols, n)

    def _run_filtered_with_deletions(self, task: ScanTask, deleted: np.ndarray
                                     ) -> pa.RecordBatch | dict[str, pa.Array] | None:
        """A filtered task whose only other selection is deleted rows (``deleted``: their offsets in
        the task): the filter's columns are read and evaluated whole when nothing can fail on a
        deleted row's value, and the deleted rows cleared from that mask (no deletion filter, no
        mask of live rows; a count subtracts the deleted rows that pass). The batch (or None), or the
        filter's columns as read when the filter must see live rows only."""
        frag, rows = task.fragment, task.rows
        if deleted.size == len(rows):
            return None
        fcols = self.read_columns(frag, self.filter_columns, rows, None, keep_dictionary=True)
        whole = self.safe_mask(fcols, len(rows))
        if whole is None:
            return fcols
        if not self.projection.outputs:          # a count: how many live rows pass
            passing = int(np.count_nonzero(whole)) - int(np.count_nonzero(whole[deleted]))
            return _empty_batch(passing) if passing else None
        whole[deleted] = False
        if not whole.any():
            return None
        self._late_decision(np.flatnonzero(whole), len(rows))
        n = int(np.count_nonzero(whole))
        kept = mask_array(whole)
        cols = {k: self._plain(k, v.filter(kept)) for k, v in fcols.items() if k in self.projection.sources}
        cols.update(self.read_columns(frag, self.late_columns, rows, whole))
        return self.assemble(cols, n)

    def _count_by_parts(self, task: ScanTask) -> int | None:
        """The live rows of a counting task passing a filter on one stored column, read as the
        reader's parts (:meth:`~lance_duck.file.base.DataFileReader.read_field_parts`: page by page
        for pages with dictionaries): a dictionary part's filter is evaluated once per distinct value
        and its indices counted, with no
        dictionaries unified and no indices joined across pages; other parts as a task's filter
        columns are (:meth:`_count_part`). None when the filter reads another number of columns."""
        flt = self.filter
        if flt is None or len(self.filter_columns) != 1:
            return None
        name = self.filter_columns[0]
        field = self._fields.get(name)
        if field is None:
            return None                        # (_rowid, _rowaddr...: the general path)
        frag, rows = task.fragment, task.rows
        ref = _file_for(frag, field)
        if ref is None:
            return None
        deleted = deleted_in(frag, rows)
        if deleted is not None and deleted.size == len(rows):
            return 0
        want = self._types[name]
        total = 0
        at = 0
        parts = self.reader(ref).read_field_parts(field, rows)
        trace.record("path:count-parts", len(parts))
        for part in parts:
            if isinstance(part, pa.ChunkedArray):
                part = part.combine_chunks()
            n = len(part)
            if part.type != want and not _kept_dictionary(part, want):
                part = part.cast(want)
            dead = None
            if deleted is not None:
                lo, hi = np.searchsorted(deleted, [at, at + n]).tolist()
                dead = deleted[lo:hi] - at if hi > lo else None
            total += self._count_part(name, part, dead)
            at += n
        return total

    def _count_part(self, name: str, part: pa.Array, dead: np.ndarray | None) -> int:
        """Rows of ``part`` (values of the filter's one column) passing the filter, but those at the
        positions ``dead``: a dictionary's indices counted against the values that pass; else the
        filter's mask evaluated whole when nothing can fail on a dead row's value (see
        :meth:`safe_mask`), or on the live rows only."""
        n = len(part)
        if _kept_dictionary(part, self._types.get(name)) and len(part.dictionary) < n:
            indices = part.indices
            per_value = self._values_mask(name, part.dictionary, indices.null_count > 0)
            if per_value is not None:
                if indices.null_count:
                    indices = indices.fill_null(len(part.dictionary))
                codes = indices.to_numpy(zero_copy_only=False)
                passing = count_codes(per_value, codes)
                return passing if dead is None else passing - int(np.count_nonzero(per_value[codes[dead]]))
        whole = self.safe_mask({name: part}, n)
        if whole is not None:
            return int(np.count_nonzero(whole)) - (0 if dead is None else int(np.count_nonzero(whole[dead])))
        if dead is not None:
            part = part.filter(mask_array(_mask_without(n, dead)))
        return int(np.count_nonzero(self.filter_mask({name: part}, len(part))))

    def _values_mask(self, name: str, dictionary: pa.Array, null: bool) -> np.ndarray | None:
        """The filter's mask over the values of ``dictionary`` -- with ``null``, and a null after
        them (one more entry: the nulls' index) --, or None when the filter fails on one of them."""
        values = pa.concat_arrays([dictionary, pa.nulls(1, dictionary.type)]) if null else dictionary
        flt = self.filter
        assert flt is not None
        if flt.conjuncts_complete and flt.residual is None:
            # exactly its conjuncts: compute kernels (~10 us for a few values, the expression ~100)
            from ..index.scalar import Unsupported, conjuncts_mask
            try:
                return np.asarray(conjuncts_mask(flt.conjuncts, {name: values}, len(values)), dtype=bool)
            except (Unsupported, pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                pass
        try:
            return np.asarray(flt.mask(pa.RecordBatch.from_arrays([values], names=[name])), dtype=bool)
        except Exception:  # noqa: BLE001 - a value fails: the rows are evaluated instead
            return None

    def _run_selected(self, task: ScanTask) -> pa.RecordBatch | None:
        """A task whose rows an exact index chose (or a few candidates): every column read in
        one pass at the selected offsets (no row mask over the task's range), the complete
        filter re-applied to them (:meth:`selected_mask`)."""
        frag = task.fragment
        offsets = selected_offsets(frag, task)
        n = offsets.size
        if n == 0:
            return None
        trace.record("path:selected-offsets", n)
        names = tuple(dict.fromkeys(self.filter_columns + self.late_columns))
        # dictionaries kept: the filter is evaluated per dictionary value, strings are
        # materialised only for the projected columns' surviving rows
        allc = self.read_columns(frag, names, offsets, keep_dictionary=True)
        keep = self.selected_mask({k: allc[k] for k in self.filter_columns}, n)
        flt = self.filter
        if task.proof is not None and not keep.all() and flt is not None and flt.conjuncts_complete \
                and flt.residual is None:
            raise CorruptFileError(f"{task.proof}: index file is damaged (it selects {n - int(keep.sum())} "
                                   f"row(s) of fragment {frag.id} that fail the filter)")
        if not keep.any():
            return None
        sources = self.projection.sources
        allc = {k: v for k, v in allc.items() if k in sources}
        if not keep.all():
            kept = mask_array(keep)
            allc = {k: v.filter(kept) for k, v in allc.items()}
            n = int(np.count_nonzero(keep))
        return self.assemble({k: self._plain(k, v) for k, v in allc.items()}, n)

    def safe_mask(self, fcols: dict[str, pa.Array], n: int) -> np.ndarray | None:
        """The filter's mask over ``fcols`` from evaluations that cannot fail on any row's value
        (a deleted row's included): a lone dictionary column's filter once per distinct value,
        kernels of conjuncts that are exactly the filter (several dictionary columns one by one);
        None when neither applies or a kernel refuses (the caller then evaluates live rows only)."""
        flt = self.filter
        assert flt is not None                  # only called with a filter
        if len(fcols) == 1:
            name, arr = next(iter(fcols.items()))
            if _kept_dictionary(arr, self._types.get(name)) and len(arr.dictionary) < len(arr):
                values = pa.concat_arrays([arr.dictionary, pa.nulls(1, arr.dictionary.type)])
                try:
                    per_value = flt.mask(pa.RecordBatch.from_arrays([values], names=[name]))
                except Exception:  # noqa: BLE001 - a value fails: the live rows are evaluated instead
                    return None
                indices = arr.indices
                if indices.null_count:
                    indices = indices.fill_null(len(arr.dictionary))
                return gather_mask(np.asarray(per_value, dtype=bool), indices.to_numpy(zero_copy_only=False), True)
        per_column = self._per_column_mask(fcols, n)
        if per_column is not None:
            return per_column
        if not flt.conjuncts_complete or flt.residual is not None:
            return None
        from ..index.scalar import Unsupported, conjuncts_mask
        try:
            return conjuncts_mask(flt.conjuncts, {k: plain(v, self._types.get(k)) for k, v in fcols.items()}, n)
        except (Unsupported, pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None

    def selected_mask(self, fcols: dict[str, pa.Array], n: int) -> np.ndarray:
        """The filter's mask over rows an index selected: a filter that is exactly its conjuncts
        is evaluated with compute kernels (few rows: the expression engine's fixed cost dominates)."""
        flt = self.filter
        assert flt is not None                  # only called with a filter
        if flt.conjuncts_complete and flt.residual is None:
            from ..index.scalar import Unsupported, conjuncts_mask
            try:
                if len(fcols) == 1:
                    name, arr = next(iter(fcols.items()))
                    if _kept_dictionary(arr, self._types.get(name)):
                        # once per distinct value (and null, if a row is null), gathered by the indices
                        return _per_value_mask(arr, lambda v: conjuncts_mask(flt.conjuncts, {name: v}, len(v)))
                return conjuncts_mask(flt.conjuncts, {k: plain(v, self._types.get(k)) for k, v in fcols.items()}, n)
            except Unsupported:
                pass
        return self.filter_mask(fcols, n)

    def filter_mask(self, fcols: dict[str, pa.Array], n: int) -> np.ndarray:
        """The filter's boolean mask over the rows of ``fcols``.

        A filter on one column that came back as a dictionary is evaluated once per distinct
        value (plus null) and the result gathered by the indices: exact for any row-wise
        predicate, and it never materialises the strings. A page dictionary may hold values no
        selected row has (deleted rows, other tasks' rows); if the filter fails on one of those
        (e.g. a cast), the rows are evaluated one by one instead, as they would be anyway.
        """
        flt = self.filter
        assert flt is not None                  # only called with a filter
        if len(fcols) == 1:
            name, arr = next(iter(fcols.items()))
        if (len(fcols) == 1 and _kept_dictionary(arr, self._types.get(name))
                and len(arr.dictionary) < len(arr)):     # (not for a few rows of a big dictionary)
            dictionary = arr.dictionary
            values = pa.concat_arrays([dictionary, pa.nulls(1, dictionary.type)])
            try:
                per_value = flt.mask(pa.RecordBatch.from_arrays([values], names=[name]))
            except Exception:  # noqa: BLE001 - the row-wise evaluation below raises what is real
                per_value = None
            if per_value is not None:
                indices = arr.indices
                if indices.null_count:
                    indices = indices.fill_null(len(dictionary))
                return gather_mask(np.asarray(per_value, dtype=bool), indices.to_numpy(zero_copy_only=False), True)
        per_column = self._per_column_mask(fcols, n)
        if per_column is None:
            per_column = self._dictionary_prefilter(fcols, n)
        if per_column is not None:
            return per_column
        cols = {k: plain(v, self._types.get(k)) for k, v in fcols.items()}
        if flt.conjuncts_complete and flt.residual is None:
            # exactly its conjuncts: compute kernels (integers compared in numpy), no expression
            # engine; refused ops (float >, NaN order...) and kernel errors take the expression
            from ..index.scalar import Unsupported, conjuncts_mask
            try:
                return conjuncts_mask(flt.conjuncts, cols, n)
            except (Unsupported, pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                pass
        batch = pa.RecordBatch.from_arrays(list(cols.values()), names=list(cols)) if cols else _empty_batch(n)
        return flt.mask(batch)

    def _per_column_mask(self, fcols: dict[str, pa.Array], n: int) -> np.ndarray | None:
        """A filter over several columns, one or more of them back as dictionaries, that is exactly
        the AND of its per-column conjuncts: each column's conjuncts with compute kernels (as for
        an index's rows, :meth:`selected_mask`), a dictionary column's once per distinct value and
        gathered by its indices (its strings are never materialised for the filter). None when
        that does not apply or a kernel refuses a value: the expression then runs on the rows."""
        flt = self.filter
        assert flt is not None
        if len(fcols) < 2 or not flt.conjuncts_complete or flt.residual is not None:
            return None
        dictionaries = {k for k, v in fcols.items()
                        if _kept_dictionary(v, self._types.get(k)) and len(v.dictionary) < len(v)}
        if not dictionaries:
            return None
        by_column: dict[str, list[Conjunct]] = {}
        for c in flt.conjuncts:
            path = tuple(c.path)
            if len(path) != 1 or path[0] not in fcols:
                return None
            by_column.setdefault(path[0], []).append(c)
        from ..index.scalar import Unsupported, conjuncts_mask
        keep = np.ones(n, dtype=bool)
        try:
            for name, conjuncts in by_column.items():
                arr = fcols[name]
                if name in dictionaries:
                    keep &= _per_value_mask(arr, _conjuncts_on(conjuncts, name))
                else:
                    keep &= conjuncts_mask(conjuncts, {name: plain(arr, self._types.get(name))}, n)
        except (Unsupported, pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None
        trace.record("path:filter-per-column", tuple(sorted(dictionaries)))
        return keep

    def _dictionary_prefilter(self, fcols: dict[str, pa.Array], n: int) -> np.ndarray | None:
        """A filter over several columns that is not exactly its per-column conjuncts but implies
        some on columns back as dictionaries (``mode IN (...) AND (qty BETWEEN 1 AND 11 OR ...)``):
        those conjuncts are evaluated once per distinct value, and the whole filter only on the
        rows passing them (a row failing a conjunct the filter implies fails the filter). None
        when that does not apply, a kernel refuses a value, or the conjuncts keep most rows."""
        flt = self.filter
        assert flt is not None
        if len(fcols) < 2 or not flt.conjuncts:
            return None
        dictionaries = {k for k, v in fcols.items()
                        if _kept_dictionary(v, self._types.get(k)) and len(v.dictionary) < len(v)}
        by_column: dict[str, list[Conjunct]] = {}
        for c in flt.conjuncts:
            path = tuple(c.path)
            if len(path) == 1 and path[0] in dictionaries:
                by_column.setdefault(path[0], []).append(c)
        if not by_column:
            return None
        from ..index.scalar import Unsupported
        pre = np.ones(n, dtype=bool)
        try:
            for name, conjuncts in by_column.items():
                pre &= _per_value_mask(fcols[name], _conjuncts_on(conjuncts, name))
        except (Unsupported, pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None
        idx = np.flatnonzero(pre)
        if idx.size * 2 > n:
            return None                  # most rows pass: the filter on every row is as cheap
        keep = np.zeros(n, dtype=bool)
        if idx.size:
            kept = mask_array(pre)
            cols = {k: plain(v.filter(kept), self._types.get(k)) for k, v in fcols.items()}
            keep[idx] = flt.mask(pa.RecordBatch.from_arrays(list(cols.values()), names=list(cols)))
        trace.record("path:filter-dictionary-prefilter", tuple(sorted(by_column)))
        return keep

    def _plain(self, name: str, a: pa.Array) -> pa.Array:
        """An output column's array as declared, or a kept dictionary for a dictionary output."""
        return a if name in self.dictionaries else plain(a, self._types.get(name))

    def assemble(self, cols: dict[str, pa.Array], n: int) -> pa.RecordBatch | pa.Table:
        """The task's output from its columns: a batch, or a table when a column came in chunks
        (``read_columns``' ``chunked``; the stream yields its batches, see :func:`_pieces`)."""
        if any(isinstance(a, pa.ChunkedArray) for a in cols.values()):
            # (expressions, nested fields and one-byte dictionaries take arrays)
            arrays_only = any(o.expression is not None or o.path for o in self.projection.outputs)
            cols = {k: whole(a) if arrays_only or k in self.dictionaries else a for k, a in cols.items()}
        arrays = []
        for o in self.projection.outputs:
            if o.expression is not None:
                src = [s for s in self.projection.sources if s in cols]
                b = pa.RecordBatch.from_arrays([cols[s] for s in src], names=src) if src else _empty_batch(n)
                a = evaluate(b, o.expression)
            else:
                a = extract(cols[o.source], o.path)
                if not o.path and o.source in self.dictionaries and pa.types.is_string(a.type):
                    a = one_byte_dictionary(a)
            arrays.append(a)
        if not arrays:
            return _empty_batch(n)
        schema = self.schema
        if self.dictionaries and any(a.type != f.type for a, f in zip(arrays, self.schema)):
            schema = pa.schema([f.with_type(a.type) for a, f in zip(arrays, self.schema)], metadata=self.schema.metadata)
        if any(isinstance(a, pa.ChunkedArray) for a in arrays):
            return pa.Table.from_arrays(arrays, schema=schema)
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


#: The dictionary of :func:`one_byte_dictionary`: every one-byte UTF-8 string (ASCII), index = byte.
ASCII_STRINGS = pa.array([chr(i) for i in range(128)], pa.string())


def one_byte_dictionary(a: pa.Array) -> pa.Array:
    """A string array whose every value is one character (flags, codes: TPC-H's ``l_returnflag``)
    as ``dictionary<int32, string>`` over :data:`ASCII_STRINGS`, its indices the bytes; any other
    array (a longer value, a null, a multi-byte character) as it is. A one-byte UTF-8 string is
    ASCII, so the bytes are the indices: two passes, no hashing. DuckDB groups and compares a
    dictionary once per distinct value (a group by on such a column: ~5x less of its CPU)."""
    n = len(a)
    if n < 2 or a.null_count or not pa.types.is_string(a.type):
        return a
    offs = np.frombuffer(a.buffers()[1], dtype=np.int32, count=n + 1, offset=a.offset * 4)
    if int(offs[-1]) - int(offs[0]) != n or not (np.diff(offs) == 1).all():
        return a
    data = np.frombuffer(a.buffers()[2], dtype=np.uint8, count=n, offset=int(offs[0]))
    if int(data.max()) >= len(ASCII_STRINGS):
        return a
    return pa.DictionaryArray.from_arrays(pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(data.astype(np.int32))]),
                                          ASCII_STRINGS)


#: A task of at most this many candidate rows (an "at most" index's selection) still reads every
#: column in one pass: a second pass costs more than reading a few rows that fail the filter.
CANDIDATE_ONE_PASS_ROWS = 64


def _plain_numbers(a: pa.Array) -> bool:
    """``a`` holds integers or floats without nulls (its values are one numpy array)."""
    t = a.type
    return not a.null_count and (pa.types.is_integer(t) or pa.types.is_floating(t))


def _per_value_mask(arr: pa.DictionaryArray, mask_of: Callable[[pa.Array], Any]) -> np.ndarray:
    """``mask_of`` (values -> boolean mask) evaluated once per dictionary value, gathered by the
    indices; a null row takes the mask of a null value (appended only when a row is null)."""
    values, indices = arr.dictionary, arr.indices
    if indices.null_count:
        values = pa.concat_arrays([values, pa.nulls(1, values.type)])
        indices = indices.fill_null(len(values) - 1)
    return gather_mask(np.asarray(mask_of(values), dtype=bool), indices.to_numpy(zero_copy_only=False), True)


def _conjuncts_on(conjuncts: list[Conjunct], name: str) -> Callable[[pa.Array], np.ndarray]:
    """values -> the mask of ``conjuncts`` on column ``name`` holding them (for :func:`_per_value_mask`)."""
    from ..index.scalar import conjuncts_mask
    return lambda v: conjuncts_mask(conjuncts, {name: v}, len(v))


def count_codes(per_value: np.ndarray, codes: np.ndarray) -> int:
    """``count_nonzero(per_value[codes])``: the rows whose dictionary value passes, from the mask of
    each value and the rows' indices (every one below ``per_value.size``, checked by the reader).
    No value passing (a page whose dictionary lacks ``cat = 'x'``'s value): no mask; most passing:
    the rows less those failing (numpy's ``==`` is cheaper than ``!=``)."""
    passing = int(np.count_nonzero(per_value))
    if passing == 0:
        return 0
    if passing * 2 > per_value.size:
        return int(codes.size) - count_codes(~per_value, codes)
    return int(np.count_nonzero(gather_mask(per_value, codes, checked=True)))


def gather_mask(per_value: np.ndarray, idx: np.ndarray, checked: bool = False) -> np.ndarray:
    """``per_value[idx]``: the mask of each row from the mask of each dictionary value. When at most
    :data:`FEW_CODES` values pass (``cat = 'x'``, ``cat IN (...)``) or fail (``cat <> 'x'``), one
    comparison of the indices per such value (a gather costs several times more); an index out of
    range raises IndexError either way -- unless ``checked``: the indices are a kept dictionary's
    (every reader checks them against its dictionary) and the nulls' index, one past them, so two
    passes over them are saved."""
    passing = np.flatnonzero(per_value)
    few_pass = passing.size * 2 <= per_value.size
    few = passing if few_pass else np.flatnonzero(~per_value)
    if idx.size and few.size <= FEW_CODES and (checked or (idx.min() >= 0 and idx.max() < per_value.size)):
        if few.size == 0:
            return np.full(idx.size, not few_pass)
        # (Python ints: compared as idx's own dtype; a numpy int64 would widen int32 indices first)
        codes = few.tolist()
        if few_pass:
            mask: np.ndarray = idx == codes[0]
            for c in codes[1:]:
                mask |= idx == c
        else:
            mask = idx != codes[0]
            for c in codes[1:]:
                mask &= idx != c
        return mask
    return np.take(per_value, idx)


def _one_pass(task: ScanTask) -> bool:
    """Read every column of an index-selected task at once (not the filter's columns first)."""
    return not task.candidates or len(task.selection) <= CANDIDATE_ONE_PASS_ROWS


def _kept_dictionary(a: pa.Array, want: pa.DataType | None) -> bool:
    """``a`` is a dictionary the reader kept for a column declared with plain ``want``."""
    return (want is not None and pa.types.is_dictionary(a.type) and not pa.types.is_dictionary(want)
            and a.type.value_type == want)


def plain(a: pa.Array, want: pa.DataType | None) -> pa.Array:
    """A kept dictionary decoded to the column's declared type (other arrays as they are).

    The readers checked every index against its dictionary, so the take skips Arrow's
    bounds-check pass."""
    if not _kept_dictionary(a, want):
        return a
    if len(a) == 1:                      # (a point lookup's row: a zero-copy slice, no kernel call)
        i = a.indices[0].as_py()
        return pa.nulls(1, want) if i is None else a.dictionary.slice(i, 1)
    return pc.take(a.dictionary, a.indices, boundscheck=False)


def _name_maps(snapshot: Snapshot) -> tuple[dict[str, LanceField], dict[str, pa.DataType]]:
    """({name: top-level field}, {name: read type}) of a snapshot (made once, kept on it)."""
    return snapshot.derived("_scan_name_maps", lambda: ({f.name: f for f in snapshot.schema.fields},
                                                        {f.name: f.type for f in snapshot.read_schema}))


def _reader_cache(snapshot: Snapshot) -> tuple[OrderedDict[str, DataFileReader], threading.Lock]:
    """The open-reader LRU of a scan and its lock. Local files: shared by every scan of the
    snapshot (a pinned version's data files are immutable; a point lookup then maps no file
    again); object stores: one per scan (readers there keep the scan's fetched pages)."""
    if not snapshot.io.is_local:
        return OrderedDict(), threading.Lock()
    return snapshot.derived("_scan_readers", lambda: (OrderedDict(), threading.Lock()))


def _file_for(fragment: FragmentInfo, field: LanceField) -> DataFileRef | None:
    """The file holding a top-level field; 2.1+ files list only the leaves of nested fields."""
    for f in field.walk():
        ref = fragment.file_for_field(f.id)
        if ref is not None:
            return ref
    return None


def deleted_in(fragment: FragmentInfo, rows: range) -> np.ndarray | None:
    """The offsets (from ``rows.start``) of the deleted rows in ``rows``, sorted; None when none is."""
    if not fragment.num_deletions():
        return None
    d = fragment.deleted_offsets()
    lo, hi = np.searchsorted(d, [rows.start, rows.stop])
    if lo == hi:
        return None
    rel: np.ndarray = d[lo:hi] - rows.start
    return rel


def live_mask(fragment: FragmentInfo, rows: range) -> np.ndarray | None:
    """Which rows of ``rows`` are not deleted (None when all are)."""
    deleted = deleted_in(fragment, rows)
    return None if deleted is None else _mask_without(len(rows), deleted)


def _mask_without(n: int, dead: np.ndarray) -> np.ndarray:
    keep = np.ones(n, dtype=bool)
    keep[dead] = False
    return keep


def selected_offsets(fragment: FragmentInfo, task: ScanTask) -> np.ndarray:
    """The sorted offsets of an index-selected task's rows that are live (not deleted), minus
    the first ``task.skip`` of them: computed on the selection, not on a mask of its range."""
    sel = np.asarray(task.selection, dtype=np.int64)
    if sel.size and fragment.num_deletions():
        span = range(int(sel[0]), int(sel[-1]) + 1)
        if sel.size * 64 < len(span):     # a few rows (a take): a search per row, no mask of the span
            d = fragment.deleted_offsets()
            if len(d):
                sel = sel[d[np.minimum(np.searchsorted(d, sel), len(d) - 1)] != sel]
        else:
            live = live_mask(fragment, span)
            if live is not None:    # (a gather from the mask of the selection's span: cheaper than a search per row)
                sel = sel[live[sel - span.start]]
    return sel[task.skip:] if task.skip else sel


def mask_array(mask: np.ndarray) -> pa.Array:
    """A numpy bool mask as an Arrow boolean array for ``filter``: packed with ``np.packbits``
    (``pa.array`` converts a bool array value by value: ~25x slower, ~0.3 ms per 256k-row task)."""
    mask = np.asarray(mask, dtype=np.bool_)
    return bool_array(mask, mask.size)


def _offsets(sel: range | np.ndarray) -> np.ndarray:
    if isinstance(sel, range):
        return np.arange(sel.start, sel.stop, dtype=np.int64)
    return sel


#: Shorter contiguous selections stay row offsets: readers then decode only those values
#: (a range decodes whole chunks; a point lookup needs one value of a 1024-value chunk).
MIN_RANGE_ROWS = 256


def _compact(offsets: np.ndarray) -> range | np.ndarray:
    """A long contiguous selection becomes a range (readers decode ranges fastest)."""
    offsets = offsets.astype(np.int64, copy=False)
    if len(offsets) >= MIN_RANGE_ROWS and int(offsets[-1]) - int(offsets[0]) + 1 == len(offsets):
        return range(int(offsets[0]), int(offsets[-1]) + 1)
    return offsets


def _empty_batch(n: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_struct_array(pa.StructArray.from_arrays([pa.nulls(n)], ["_"])).drop_columns(["_"])


#: a batch whose buffers total at most this is sized by that total, an upper bound of its
#: ``nbytes`` (which walks every array for the exact sliced size: ~30 us, a point lookup's re-check)
SMALL_BATCH_BYTES = 64 * 1024


def batch_bytes(b: pa.RecordBatch | pa.Table | None) -> int:
    if b is None:
        return 0
    total: int = b.get_total_buffer_size()
    return total if total <= SMALL_BATCH_BYTES else int(b.nbytes)


def execute(ctx: ScanContext, tasks: Iterator[ScanTask], *, offset: int = 0, limit: int | None = None,
            readahead: int = 4, budget_bytes: int | None = None,
            stats: ReadaheadStats | None = None, batch_rows: int | None = None,
            row_bytes: float | None = None) -> Iterator[pa.RecordBatch]:
    """The ordered batch stream of a scan, with ``offset``/``limit`` applied; ``row_bytes``: a
    batch row's bytes when known up front (the read-ahead then plans past the first task at once).

    Batches longer than ``batch_rows`` (tasks spanning whole pages) are yielded as slices.
    """
    kw = {} if budget_bytes is None else {"budget_bytes": budget_bytes}
    skip = offset or 0
    remaining = limit
    if remaining is not None and remaining <= 0:
        return
    stream = ordered_map(ctx.run, tasks, size_of=batch_bytes, weight_of=lambda t: t.weight,
                         max_inflight=readahead, stats=stats, split=lambda b: _pieces(b, batch_rows),
                         known_per_weight=row_bytes, **kw)
    try:
        for b in stream:
            if skip:
                if b.num_rows <= skip:
                    skip -= b.num_rows
                    continue
                b = b.slice(skip)
                skip = 0
            if remaining is not None:
                if b.num_rows >= remaining:
                    yield b.slice(0, remaining)
                    return
                remaining -= b.num_rows
            yield b
    finally:
        stream.close()
        ctx.close()


def _pieces(b: pa.RecordBatch | pa.Table | None, batch_rows: int | None) -> Iterator[pa.RecordBatch]:
    """A task's output as the stream yields it: nothing for no rows, slices of at most ``batch_rows``
    (a table's batches cut where any column's chunks end, zero-copy)."""
    if b is None or b.num_rows == 0:
        return
    if isinstance(b, pa.Table):
        yield from b.to_batches(max_chunksize=batch_rows)
        return
    if batch_rows is None or b.num_rows <= batch_rows:
        yield b
        return
    for start in range(0, b.num_rows, batch_rows):
        yield b.slice(start, batch_rows)


def row_versions(fragment: FragmentInfo, name: str) -> np.ndarray:
    """uint64 ``_row_created_at_version`` or ``_row_last_updated_at_version`` per physical row; 1 where
    the fragment records none (pylance's value for rows without row-version metadata)."""
    got = fragment.created_at_versions() if name == ROW_CREATED else fragment.last_updated_at_versions()
    return np.ones(fragment.physical_rows, dtype=np.uint64) if got is None else np.asarray(got, dtype=np.uint64)
