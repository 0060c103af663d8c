"""LanceScanner: one planned scan of a dataset (a ``pyarrow.dataset.Scanner`` subclass).

pylance's names and results: ``to_table``, ``to_batches``, ``to_reader``, ``count_rows``,
``head``, ``take``, ``projected_schema``, ``dataset_schema``. The base class's C++ state is
never initialised, so every inherited method is overridden here.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads

from .. import trace
from ..errors import InvalidArgumentError, UnsupportedFeatureError
from ..search.nearest import NearestQuery, parse_nearest
from ..search.vector import plan_search
from .execution import ScanContext, execute
from .filters import and_filters, bind_filter
from .interop import ScansItself, engine_reader, export_stream
from .params import Columns, Filter, int_arg
from .planning import (COUNT_MAX_INFLIGHT, DEFAULT_BATCH_ROWS, DEFAULT_TASK_ROWS, FIRST_BATCH_ROWS, FIRST_TASK_ROWS,
                       FIXED_WIDTH_RAMP_GROWTH, LARGE_TASK_ROWS, RAMP_GROWTH, WHOLE_READ_GROWTH, WHOLE_READ_TASK_ROWS,
                       fixed_row_bytes, fixed_width_task_rows, plan_tasks)
from .fragment import LanceFragment
from .fts import SCORE, fts_schema, run_fts
from .nearest import DISTANCE, ScanVectorSource, nearest_schema, run_nearest
from .projection import Projection, resolve_projection
from .readahead import DEFAULT_BUDGET_BYTES, ReadaheadStats, fixed_width, max_inflight_for

if TYPE_CHECKING:
    from ..table.fragment import FragmentInfo
    from ..table.snapshot import Snapshot
    from .dataset import LanceDataset

# pylance / pyarrow scan options that do not change results here.
_IGNORED_OPTIONS = frozenset({
    "scan_in_order", "prefilter", "late_materialization", "fragment_readahead", "use_threads",
    "batch_size_bytes", "io_buffer_size", "use_stats", "fast_search",
    "fragment_scan_options", "cache_metadata", "memory_pool", "strict_batch_size", "blob_handling",
    "scan_stats_callback", "disable_scoring_autoprojection",
})


class TaggedRecordBatch(NamedTuple):
    """A batch of :meth:`LanceScanner.scan_batches` and the fragment it came from."""

    record_batch: pa.RecordBatch
    fragment: LanceFragment | None


class LanceScanner(pads.Scanner):
    """A scan of one pinned dataset version: columns, filter, limit/offset, fragments.

    Made by :meth:`LanceDataset.scanner` (see there for the arguments); a ``pyarrow.dataset.Scanner``,
    so ``to_reader()`` streams ``pa.RecordBatch``es lazily (a ``LIMIT`` in DuckDB stops reading) and
    ``to_table()``, ``to_batches()``, ``head(n)``, ``count_rows()`` behave as in pyarrow and pylance.

    Examples:
        >>> import lance_duck
        >>> sc = lance_duck.dataset(lance_duck.sample_path()).scanner(
        ...     columns=["order_id", "shipping.city"], filter="order_id < 2")
        >>> sc.to_table().to_pylist()
        [{'order_id': 0, 'shipping.city': 'Berlin'}, {'order_id': 1, 'shipping.city': 'Berlin'}]
    """

    def __init__(self, dataset: LanceDataset, columns: Columns = None, filter: Filter = None,
                 limit: int | None = None, offset: int | None = None, batch_size: int | None = None,
                 with_row_id: bool = False, with_row_address: bool = False,
                 fragments: Sequence[LanceFragment | int] | None = None, batch_readahead: int | None = None,
                 readahead_bytes: int | None = None, use_scalar_index: bool | None = None,
                 **options: Any) -> None:
        # pyarrow.dataset.Scanner.__init__ is deliberately not called (no public constructor).
        nearest = options.pop("nearest", None)
        full_text_query = options.pop("full_text_query", None)
        unknown = set(options) - _IGNORED_OPTIONS
        if unknown:
            raise UnsupportedFeatureError(f"scanner option(s) not supported: {', '.join(sorted(unknown))}")
        for name, v in (("limit", limit), ("offset", offset), ("batch_size", batch_size)):
            if v is not None and (not isinstance(v, int) or v < 0 or (name == "batch_size" and v == 0)):
                raise InvalidArgumentError(f"{name} must be a non-negative integer, got {v!r}")
        self._dataset = dataset
        snap = dataset._snapshot
        self._snapshot = snap
        self._nearest: NearestQuery | None = None
        self._nearest_result: tuple[Any, pa.Table] | None = None
        if nearest is not None:
            # checked against the schema before anything is read
            self._nearest = parse_nearest(nearest, snap.arrow_schema)
            if isinstance(columns, (list, tuple)):   # pylance: a flag moves its column to the end
                flagged = {"_rowid"} if with_row_id else set()
                flagged |= {"_rowaddr"} if with_row_address else set()
                columns = [c for c in columns if c not in flagged]
            columns, self._distance_at = _without_distance(columns, snap.arrow_schema,
                                                           bool(options.get("disable_scoring_autoprojection")))
            self._prefilter = bool(options.get("prefilter") or False)
            self._fast_search = bool(options.get("fast_search") or False)
            self._row_flags = (with_row_id, with_row_address)
            self._columns_spec = columns
        self._fts: Any = None
        self._fts_result: tuple[int | None, pa.Table] | None = None
        if full_text_query is not None:
            if nearest is not None:
                raise InvalidArgumentError("full_text_query and nearest cannot be combined in one scan "
                                           "(use lance_duck.hybrid_search)")
            self._fts = full_text_query
            columns, self._score_at = _without_column(SCORE, columns, snap.arrow_schema,
                                                      bool(options.get("disable_scoring_autoprojection")))
            self._prefilter = bool(options.get("prefilter") or False)
            self._row_flags = (with_row_id, with_row_address)
            self._columns_spec = columns
        self._projection = _projection(snap, columns, with_row_id, with_row_address)
        self._filter = and_filters(dataset._base_filter, bind_filter(filter, snap.arrow_schema))
        if self._nearest is not None or self._fts is not None:
            # a filtered dataset's own filter always comes first: its other rows do not exist
            user = bind_filter(filter, snap.arrow_schema)
            self._search_filter = self._filter if self._prefilter else dataset._base_filter
            self._post_filter = None if self._prefilter else user
        self._limit = limit
        self._offset = offset or 0
        self._batch_rows = batch_size or DEFAULT_BATCH_ROWS
        self._task_rows = batch_size or DEFAULT_TASK_ROWS
        self._first_rows: int | None = None if batch_size else FIRST_TASK_ROWS
        self._readahead = batch_readahead   # None: chosen from the columns read (readahead.max_inflight_for)
        self._budget = readahead_bytes or DEFAULT_BUDGET_BYTES
        if fragments is None:
            self._fragments = list(snap.fragments)
        else:
            if isinstance(fragments, (str, bytes)) or not hasattr(fragments, "__iter__"):
                raise InvalidArgumentError(f"fragments must be a list of fragments or fragment ids, not {fragments!r}")
            self._fragments = [_fragment_info(f, snap) for f in fragments]
        self._use_scalar_index = use_scalar_index is None or bool(use_scalar_index)
        self._counts_all = False     # made by count_rows without a batch size: every row is read
        self._reads_whole = False    # every batch will be read (duckdb_source.read_to_the_end): no ramp
        self.stats = ReadaheadStats()

    # -- schema --------------------------------------------------------------------------------
    @property
    def projected_schema(self) -> pa.Schema:
        """The schema of the rows this scan returns (the columns asked for, in order; with
        ``nearest``, ``_distance`` and a batch search's leading ``query_index`` too)."""
        if self._nearest is not None:
            return nearest_schema(self._projection, self._distance_at, self._nearest.batch)
        if self._fts is not None:
            return fts_schema(self._projection, self._score_at)
        return self._projection.schema

    @property
    def dataset_schema(self) -> pa.Schema:
        """The schema of the whole dataset version."""
        return self._snapshot.arrow_schema

    # -- execution -------------------------------------------------------------------------------
    def _batches(self, limit: int | None = None) -> Iterator[pa.RecordBatch]:
        return self._stream(limit)[0]

    def _stream(self, limit: int | None = None, dictionaries: frozenset[str] = frozenset(),
                grown: Callable[[], int] | None = None) -> tuple[Iterator[pa.RecordBatch], bool]:
        """(the batches, whether they are a few index-selected rows read in the caller's thread);
        ``dictionaries``: output columns that may come back as DictionaryArrays (see
        :meth:`_dictionary_reader`); ``grown``: the task rows, asked at each task (else fixed)."""
        limit = self._limit if limit is None else (limit if self._limit is None else min(limit, self._limit))
        if self._nearest is not None:
            table = self._nearest_table().slice(self._offset)
            table = table if limit is None else table.slice(0, limit)
            return iter(table.to_batches(max_chunksize=self._batch_rows)), True
        if self._fts is not None:
            table = self._fts_table(limit)
            return iter(table.to_batches(max_chunksize=self._batch_rows)), True
        ctx = ScanContext(self._snapshot, self._projection, self._filter, dictionaries)
        # how many tasks decode at once and how fast tasks grow: from the types of the columns read
        inflight, narrow = max_inflight_for(ctx.read_types())
        readahead = inflight if self._readahead is None else self._readahead
        growth = WHOLE_READ_GROWTH if self._reads_whole else FIXED_WIDTH_RAMP_GROWTH if narrow else RAMP_GROWTH
        task_rows: int | Callable[[], int] = self._full_task_rows() if grown is None else grown
        counting = not self._projection.outputs
        first_rows = self._first_rows
        row_bytes: float | None = None
        if (first_rows is not None or self._counts_all) and (narrow or counting):
            # sized by default (no batch_size): longer tasks, as long as the tasks in flight fit the budget
            task_rows = LARGE_TASK_ROWS if counting else \
                fixed_width_task_rows(self._projection.schema.types, self._budget, readahead)
            if counting and not narrow and self._readahead is None:
                readahead = min(readahead, COUNT_MAX_INFLIGHT)
            if self._counts_all:
                first_rows = None            # count_rows reads every row: no ramp for an early stop
                row_bytes = 0.0              # and its batches hold no column: every task planned at once
            elif self._reads_whole and narrow and grown is None:
                # every row is read and a row's bytes are known from the types: no first small task
                # (it would only teach the read-ahead those bytes), two full tasks from the start
                first_rows = None
                row_bytes = fixed_row_bytes(self._projection.schema.types)
        # the ramp after a short first task goes on as from FIRST_BATCH_ROWS (planning.FIRST_TASK_ROWS)
        ramp_from = FIRST_BATCH_ROWS if first_rows is not None else 0
        trace.record("scan:readahead", (readahead, growth))
        trace.record("scan:task-rows", task_rows)
        few = False
        selections = self._index_selections() if self._filter is not None else None
        if limit is None:   # object stores: footers, then whole columns' pages, fetched ahead
            ctx.prefetch(self._fragments, pages=selections is None)
        if self._filter is None:
            # without a filter, planning applies the offset exactly (from live-row counts)
            tasks = plan_tasks(self._fragments, task_rows, skip_rows=self._offset, max_rows=limit,
                               first_rows=first_rows, growth=growth, ramp_from=ramp_from)
            offset = 0
        else:
            tasks = plan_tasks(self._fragments, task_rows, first_rows=first_rows,
                               selections=selections, growth=growth, ramp_from=ramp_from)
            offset = self._offset
            few = _few_rows(selections, self._fragments)
            if few:
                readahead = 0                # a few indexed rows: read them here, no thread hand-off
        return execute(ctx, tasks, offset=offset, limit=limit, readahead=readahead,
                       budget_bytes=self._budget, stats=self.stats, batch_rows=self._batch_rows,
                       row_bytes=row_bytes), few

    def _full_task_rows(self) -> int:
        """Rows of a full-size task: the batch size when one was asked for; else longer for a scan
        read to its end (:data:`~lance_duck.scan.planning.WHOLE_READ_TASK_ROWS`: a task's fixed
        cost per column paid half as often; the read-ahead's byte budget still bounds what is held)."""
        if self._reads_whole and self._first_rows is not None:
            return max(self._task_rows, WHOLE_READ_TASK_ROWS)
        return self._task_rows

    # -- nearest ---------------------------------------------------------------------------------
    def _nearest_table(self) -> pa.Table:
        """A ``nearest`` scan's rows before offset / limit (searched once per scanner)."""
        if self._nearest_result is None:
            assert self._nearest is not None
            self._nearest_result = run_nearest(self, self._nearest, fast_search=self._fast_search)
        return self._nearest_result[1]

    def _fts_table(self, limit: int | None) -> pa.Table:
        """A ``full_text_query`` scan's rows after offset / limit (searched once per scanner and limit)."""
        if self._fts_result is None or self._fts_result[0] != limit:
            self._fts_result = (limit, run_fts(self, self._fts, prefilter=self._prefilter, limit=limit,
                                               offset=self._offset))
        return self._fts_result[1]

    def _fetch_projection(self) -> Projection:
        """The output columns plus ``_rowaddr`` (to place a search's rows)."""
        return resolve_projection(self._columns_spec, self._snapshot.read_schema, self._snapshot.schema,
                                  self._row_flags[0], True)

    def _index_selections(self) -> dict[int, np.ndarray] | None:
        """Rows the table's exact scalar indices select for the filter's conjuncts (or None)."""
        if not self._use_scalar_index or self._filter is None or not self._filter.conjuncts:
            return None
        from ..index.search import plan_index_selections
        return plan_index_selections(self._snapshot, self._filter.conjuncts, self._fragments) or None

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The rows as ``pa.RecordBatch``es, read lazily with bounded read-ahead.

        Raises:
            CorruptFileError, UnsupportedFeatureError: a data file that cannot be read (named), while
                iterating. The same holds for every reading method below.

        Examples:
            >>> import lance_duck
            >>> ds = lance_duck.dataset(lance_duck.sample_path())
            >>> sizes = [b.num_rows for b in ds.scanner(columns=["order_id"], batch_size=500).to_batches()]
            >>> sum(sizes), max(sizes) <= 500
            (1902, True)
        """
        return self._batches()

    def to_reader(self) -> pa.RecordBatchReader:
        """The rows as a ``pa.RecordBatchReader`` (what DuckDB pulls), read lazily -- except a
        few rows chosen by the table's indices (at most ``INLINE_SELECTED_ROWS`` in all), which
        are read by this call (the consumer's thread then pulls finished batches).

        Examples:
            >>> import lance_duck
            >>> sc = lance_duck.dataset(lance_duck.sample_path()).scanner(
            ...     columns=["order_id"], filter="amount > 490", limit=5)
            >>> sc.to_reader().read_all().num_rows
            5
        """
        batches, few = self._stream()
        # a few indexed rows (at most INLINE_SELECTED_ROWS) are read now: the consumer (DuckDB's
        # thread) then pulls finished batches, not a generator running the scan under its GIL hold
        return engine_reader(self.projected_schema, list(batches) if few else batches)

    def _dictionary_reader(self) -> pa.RecordBatchReader:
        """:meth:`to_reader` for an engine that reads Arrow dictionaries (DuckDB hashes, compares
        and groups a dictionary vector once per distinct value): a string output column whose
        first batch comes back as a page dictionary is a ``dictionary<int32, string>`` column of
        the stream, its values those :meth:`to_reader` gives. Later batches of that column read
        as plain strings are wrapped as dictionaries of themselves (indices ``0..n-1``); a column
        whose first batch is plain stays plain (later dictionaries are decoded). The schema of
        :meth:`to_reader`, ``to_table`` etc. is unchanged: only this reader differs."""
        candidates = frozenset(o.source for o in self._projection.outputs
                               if not o.path and o.expression is None and o.source == o.name
                               and (pa.types.is_string(o.field.type) or pa.types.is_large_string(o.field.type)))
        if self._nearest is not None or self._fts is not None or not candidates:
            return self.to_reader()
        rows = [self._full_task_rows()]
        batches, few = self._stream(dictionaries=candidates, grown=lambda: rows[0])
        it = iter(list(batches) if few else batches)
        first = next(it, None)
        declared = self.projected_schema
        if first is None:
            return pa.RecordBatchReader.from_batches(declared, [])
        fields = []
        kept = set()
        for f, a in zip(declared, first.columns):
            if f.name in candidates and pa.types.is_dictionary(a.type):
                f = f.with_type(pa.dictionary(pa.int32(), f.type))
                kept.add(f.name)
            fields.append(f)
        types = {f.name: f.type for f in self._snapshot.read_schema}
        read = dict.fromkeys((*(self._filter.columns if self._filter is not None else ()), *self._projection.sources))
        if self._first_rows is not None and all(fixed_width(types.get(n)) or n in kept for n in read):
            # every column read but fixed-width ones came back as a dictionary: the rest of the
            # scan in large tasks, as a fixed-width scan (see LARGE_TASK_ROWS)
            rows[0] = LARGE_TASK_ROWS
        schema = pa.schema(fields, metadata=declared.metadata)
        return engine_reader(schema, _as_schema(first, it, schema))

    def to_table(self) -> pa.Table:
        """All the rows as one ``pa.Table``.

        Examples:
            >>> import lance_duck
            >>> sc = lance_duck.dataset(lance_duck.sample_path()).scanner(
            ...     columns=["order_id"], filter="amount > 490", limit=5)
            >>> sc.to_table().column("order_id").to_pylist()
            [50, 74, 100, 120, 131]
        """
        return pa.Table.from_batches(list(self._batches()), schema=self.projected_schema)

    def head(self, num_rows: int) -> pa.Table:
        """The first ``num_rows`` rows of this scan, reading no further than needed.

        Examples:
            >>> import lance_duck
            >>> sc = lance_duck.dataset(lance_duck.sample_path()).scanner(
            ...     columns=["order_id"], filter="amount > 490", limit=5)
            >>> sc.head(2).column("order_id").to_pylist()
            [50, 74]
        """
        num_rows = int_arg(num_rows, "num_rows", "head")
        if num_rows < 0:
            raise InvalidArgumentError(f"head: num_rows must be >= 0, got {num_rows}")
        return pa.Table.from_batches(list(self._batches(limit=num_rows)), schema=self.projected_schema)

    def take(self, indices: Any) -> pa.Table:
        """Rows at positions of this scan's result (as ``pa.Table.take`` on :meth:`to_table`).

        Examples:
            >>> import lance_duck
            >>> sc = lance_duck.dataset(lance_duck.sample_path()).scanner(
            ...     columns=["order_id"], filter="amount > 490", limit=5)
            >>> sc.take([0, 2]).to_pylist()
            [{'order_id': 50}, {'order_id': 100}]
        """
        table = self.to_table()
        try:
            return table.take(indices)
        except (TypeError, ValueError, IndexError, pa.ArrowException) as e:
            raise InvalidArgumentError(f"take: indices must be integer positions among the scan's "
                                       f"{table.num_rows} rows ({e})") from e

    def scan_batches(self) -> Iterator[TaggedRecordBatch]:
        """The rows as :class:`TaggedRecordBatch` (``record_batch``, ``fragment``), fragment by fragment.

        Examples:
            >>> import lance_duck
            >>> sc = lance_duck.dataset(lance_duck.sample_path()).scanner(
            ...     columns=["order_id"], filter="amount > 490")
            >>> [(t.fragment.fragment_id, t.record_batch.num_rows) for t in sc.scan_batches()]
            [(0, 10), (1, 23), (2, 16), (3, 2)]
        """
        if self._nearest is not None or self._fts is not None:    # search results span fragments
            for b in self._batches():
                yield TaggedRecordBatch(b, None)
            return
        public = {f.id: self._dataset.get_fragment(f.id) for f in self._fragments}
        # one scan per fragment keeps the fragment of every batch known
        skip, remaining = self._offset, self._limit
        for fid, frag in public.items():
            if remaining is not None and remaining <= 0:
                return
            sub = self._copy(fragments=[frag], limit=None, offset=None)
            for b in sub._batches():
                if skip:
                    if b.num_rows <= skip:
                        skip -= b.num_rows
                        continue
                    b, skip = b.slice(skip), 0
                if remaining is not None:
                    b = b.slice(0, remaining)
                    remaining -= b.num_rows
                yield TaggedRecordBatch(b, frag)
                if remaining is not None and remaining <= 0:
                    return

    def _copy(self, **changes: Any) -> LanceScanner:
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.stats = ReadaheadStats()
        if "fragments" in changes:
            new._fragments = [_fragment_info(f, self._snapshot) for f in changes["fragments"]]
        if "limit" in changes:
            new._limit = changes["limit"]
        if "offset" in changes:
            new._offset = changes["offset"] or 0
        return new

    def count_rows(self) -> int:
        """The number of rows this scan returns (filter, offset and limit applied); exact.

        From metadata alone when there is no filter, from exact scalar indices when they answer
        the filter, else by reading only the filter's columns.

        Examples:
            >>> import lance_duck
            >>> sc = lance_duck.dataset(lance_duck.sample_path()).scanner(
            ...     columns=["order_id"], filter="amount > 490", limit=5)
            >>> sc.count_rows()
            5
        """
        if self._nearest is not None:
            total = int(self._nearest_table().num_rows)
        elif self._fts is not None:
            return int(self._fts_table(self._limit).num_rows)
        elif self._filter is None:
            total = sum(f.count_rows() for f in self._fragments)
        else:
            got = self._count_from_indices() if self._use_scalar_index else None
            total = self._count_by_scanning(None) if got is None else \
                got[0] + (self._count_by_scanning(got[1]) if got[1] else 0)
        total = max(0, total - self._offset)
        return total if self._limit is None else min(total, self._limit)

    def _count_from_indices(self) -> tuple[int, list[Any]] | None:
        """(rows of the fragments exact indices answer the whole filter for -- ANDs and ORs of
        indexed columns' predicates -- with no data read, the other fragments), or None."""
        from ..index.search import count_answered
        tree = None if self._filter is None else self._filter.tree()
        return None if tree is None else count_answered(self._snapshot, tree, self._fragments)

    def _count_by_scanning(self, fragments: list[Any] | None) -> int:
        """Rows passing the filter in ``fragments`` (None: all of the scan's), reading only the
        filter's columns."""
        changes: dict[str, Any] = {"limit": None, "offset": None}
        if fragments is not None:
            changes["fragments"] = fragments
        counter = self._copy(**changes)
        counter._projection = resolve_projection([], self._snapshot.read_schema, self._snapshot.schema)
        counter._counts_all = self._first_rows is not None
        return sum(b.num_rows for b in counter._batches())

    # pyarrow's constructors work on pyarrow datasets only; route ours to our scanner.
    @staticmethod
    def from_dataset(dataset: Any, **kwargs: Any) -> pads.Scanner:
        """``dataset.scanner(**kwargs)`` for a :class:`LanceDataset`, else pyarrow's own."""
        if isinstance(dataset, ScansItself):
            return dataset.scanner(**kwargs)
        return pads.Scanner.from_dataset(dataset, **kwargs)

    @staticmethod
    def from_fragment(fragment: Any, **kwargs: Any) -> pads.Scanner:
        """``fragment.scanner(**kwargs)`` for a :class:`LanceFragment`, else pyarrow's own."""
        if isinstance(fragment, LanceFragment):
            return fragment.scanner(**kwargs)
        return pads.Scanner.from_fragment(fragment, **kwargs)

    def to_pandas(self, **kwargs: Any) -> Any:
        """The scan's rows as a pandas DataFrame (needs ``pip install 'lance-duck[pandas]'``).

        Keyword arguments go to ``pyarrow.Table.to_pandas``."""
        from .compat import table_to_pandas
        return table_to_pandas(self.to_table(), **kwargs)

    def explain_plan(self, verbose: bool = False) -> str:
        """What this scan will do, as text (pylance's method; lance_duck's own plan, not DataFusion's).

        Names the version, the columns read, the filter, limit and offset, the fragments, and the
        scalar indices that select rows for the filter (``ScalarIndexQuery`` lines); with
        ``verbose`` also the fragment ids.

        Examples:
            >>> import lance_duck
            >>> ds = lance_duck.dataset(lance_duck.sample_path())
            >>> print(ds.scanner(columns=["order_id"], limit=3).explain_plan().splitlines()[0])
            LanceScan: uri=...sample.lance, version=6, projection=[order_id], num_fragments=4, limit=3, offset=0, filter=--
        """
        return "\n".join(self._plan_lines(verbose))

    def analyze_plan(self) -> str:
        """:meth:`explain_plan` after running the scan, with what it produced (rows, batches, seconds)."""
        import time
        start = time.perf_counter()
        rows = batches = 0
        for batch in self.to_batches():
            rows += batch.num_rows
            batches += 1
        elapsed = time.perf_counter() - start
        lines = self._plan_lines(True)
        lines[0] += f", metrics=[output_rows={rows}, output_batches={batches}, elapsed={elapsed:.6f}s]"
        return "\n".join(lines)

    def _plan_lines(self, verbose: bool) -> list[str]:
        flt = "--" if self._filter is None or self._filter.expression is None else str(self._filter.expression)
        lines = [f"LanceScan: uri={self._dataset.uri}, version={self._snapshot.version}, "
                 f"projection=[{', '.join(self.projected_schema.names)}], num_fragments={len(self._fragments)}, "
                 f"limit={self._limit}, offset={self._offset}, filter={flt}"]
        if verbose:
            lines.append(f"  fragments=[{', '.join(str(f.id) for f in self._fragments)}]")
        if self._nearest is not None:
            plan, _ = plan_search(self._nearest, ScanVectorSource(self, self._nearest), self._fast_search)
            where = "" if self._filter is None else f", {'prefilter' if self._prefilter else 'postfilter'}"
            lines.append(f"  VectorSearch: nearest k={self._nearest.k} on {self._nearest.column!r}: "
                         f"{plan.describe()}{where}")
        if self._fts is not None:
            where = "" if self._filter is None else f", {'prefilter' if self._prefilter else 'postfilter'}"
            lines.append(f"  FullTextSearch: {self._fts!r} (INVERTED index, unindexed fragments flat){where}")
        if self._use_scalar_index and self._filter is not None and self._filter.conjuncts:
            from ..index import describe_indices
            columns = set(self._filter.columns)
            for d in describe_indices(self._snapshot):
                if any(n.split(".")[0] in columns for n in d.field_names):
                    lines.append(f"  ScalarIndexQuery: {d.name}({d.index_type}) on [{', '.join(d.field_names)}]")
        return lines

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """This scan as an Arrow C stream (``pa.table(scanner)``, ``write_dataset(scanner, ...)``)."""
        return export_stream(self.to_reader(), requested_schema)

    def __reduce__(self) -> Any:
        raise TypeError("a LanceScanner cannot be pickled; pickle the dataset and scan again")

    def __repr__(self) -> str:
        return (f"LanceScanner(uri={self._dataset.uri!r}, version={self._snapshot.version}, "
                f"columns={self.projected_schema.names}, filter={self._filter.expression if self._filter else None})")


def _as_schema(first: pa.RecordBatch, rest: Iterator[pa.RecordBatch],
               schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The batches of :meth:`LanceScanner._dictionary_reader`, each column as ``schema`` says:
    a dictionary column's plain batch wrapped (indices ``0..n-1``, the nulls on the indices), a
    plain column's dictionary batch decoded."""
    from .execution import one_byte_dictionary, plain
    b: pa.RecordBatch | None = first
    while b is not None:
        if b.schema.equals(schema):
            yield b
        else:
            cols = []
            for a, f in zip(b.columns, schema):
                if a.type != f.type:
                    if pa.types.is_dictionary(f.type):
                        a = a.cast(f.type) if pa.types.is_dictionary(a.type) else _self_dictionary(one_byte_dictionary(a))
                    else:
                        a = plain(a, f.type)
                cols.append(a)
            yield pa.RecordBatch.from_arrays(cols, schema=schema)
        b = next(rest, None)


def _self_dictionary(a: pa.Array) -> pa.DictionaryArray:
    """``a`` as a dictionary array of itself: indices ``0..n-1`` (null where ``a`` is)."""
    if pa.types.is_dictionary(a.type):
        return a
    if a.offset:
        a = pa.concat_arrays([a])          # (a copy starting at offset 0: the validity bitmap is reused)
    validity = a.buffers()[0] if a.null_count else None
    idx = pa.Array.from_buffers(pa.int32(), len(a), [validity, pa.py_buffer(np.arange(len(a), dtype=np.int32))],
                                null_count=a.null_count)
    return pa.DictionaryArray.from_arrays(idx, a)


#: Index selections of at most this many rows in all are read without the read-ahead pool.
INLINE_SELECTED_ROWS = 4096


def _few_rows(selections: dict[int, np.ndarray] | None, fragments: list[Any]) -> bool:
    """Every fragment's rows come from an index selection, and few in all."""
    if not selections or any(f.id not in selections for f in fragments):
        return False
    return sum(len(v) for v in selections.values()) <= INLINE_SELECTED_ROWS


#: projections kept per snapshot (by column names); beyond this the table is cleared
PROJECTIONS_KEPT = 64


def _projection(snap: Snapshot, columns: Columns, with_row_id: bool, with_row_address: bool) -> Projection:
    """:func:`resolve_projection`, kept per snapshot for ``None`` or a list of names (an engine
    asks for the same columns on every query); other specs are resolved each time."""
    if columns is not None and not (isinstance(columns, (list, tuple)) and all(isinstance(c, str) for c in columns)):
        return resolve_projection(columns, snap.read_schema, snap.schema, with_row_id, with_row_address)
    key = (None if columns is None else tuple(columns), bool(with_row_id), bool(with_row_address))
    memo: dict[tuple[Any, ...], Projection] = snap.derived("_scan_projections", dict)
    got = memo.get(key)
    if got is None:
        got = resolve_projection(columns, snap.read_schema, snap.schema, with_row_id, with_row_address)
        if len(memo) >= PROJECTIONS_KEPT:
            memo.clear()
        memo[key] = got
    return got


def _without_distance(columns: Columns, schema: pa.Schema, explicit_only: bool) -> tuple[Columns, int | None]:
    return _without_column(DISTANCE, columns, schema, explicit_only)


def _without_column(name: str, columns: Columns, schema: pa.Schema,
                    explicit_only: bool) -> tuple[Columns, int | None]:
    """(``columns`` without ``_distance``, where ``_distance`` goes among the outputs): where it was
    named, else after the columns asked for (before ``_rowid`` / ``_rowaddr`` added by flags);
    None (left out) with ``disable_scoring_autoprojection`` when it was not named."""
    if isinstance(columns, (list, tuple)) and name in columns:
        names = list(columns)
        return [c for c in names if c != name], names.index(name)
    if explicit_only and columns is not None:
        return columns, None
    if columns is None:
        return None, len(schema)
    return columns, len(columns)


def _fragment_info(f: Any, snap: Snapshot) -> FragmentInfo:
    if isinstance(f, LanceFragment):
        return f._info
    if isinstance(f, int):
        for info in snap.fragments:
            if info.id == f:
                return info
        raise InvalidArgumentError(f"fragment {f} is not in version {snap.version}")
    if hasattr(f, "physical_rows") and hasattr(f, "files"):
        return cast("FragmentInfo", f)
    raise InvalidArgumentError(f"fragments must be LanceFragment objects or ids, got {type(f).__name__}")
