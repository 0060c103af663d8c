"""The Spark reader: planning on the driver (version pinned, columns, filter, partitions) and
reading row ranges of fragments in the Python workers.

Everything a task needs travels in the pickled reader (options, pinned version, column names,
the filter's text) and its partition (fragment row ranges): no data, no manifest.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.datasource import Filter
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from ...errors import InvalidArgumentError, LanceDuckError
from ... import _state
from ...predicate import CompiledFilter
from ...scan.dataset import LanceDataset, fragment_infos
from ...scan.scanner import LanceScanner
from ...scan.ranges import count_row_ranges, scan_row_ranges
from .filters import NotPushable, spark_filters
from .options import MAX_BATCH_BYTES, ReadOptions
from .partitions import plan_partitions
from .types import conform, spark_arrow_schema

if TYPE_CHECKING:
    from pyspark.sql.datasource import Filter
    from pyspark.sql.types import StructType

    from ...scan.dataset import LanceDataset
    from ...scan.scanner import LanceScanner

# Rows decoded per read task, whatever the batch size: each task has a fixed cost per column,
# and Spark's batches are slices of the decoded ones (zero-copy).
MIN_DECODE_ROWS = 1024 * 1024
#: the datasets workers opened last (``lance_duck.configure(spark_dataset_cache_entries=...)``)
_cache: _state.ByteLRU[tuple[Any, ...], LanceDataset] = _state.cache("spark_datasets")


def open_dataset(opts: ReadOptions, version: int | None = None, branch: str | None = None,
                 sql_filter: str | None = None) -> LanceDataset:
    """The table at the options' version (planning) or at a pinned version (workers; cached).

    Workers are re-used across tasks and queries: a pinned version is opened (manifest read) and
    its ``filter`` option parsed once per process, not once per partition.
    """
    from ...scan.dataset import dataset

    if version is None:
        return dataset(opts.path, version=opts.version, asof=opts.asof, branch=opts.branch,
                       storage_options=opts.storage())
    key = (opts.path, branch, version, tuple(sorted(opts.storage_options.items())), sql_filter)
    ds: LanceDataset | None = _cache.get(key)
    if ds is not None:
        return ds
    if sql_filter is None:
        ds = dataset(opts.path, version=version, branch=branch, storage_options=opts.storage())
    else:
        ds = open_dataset(opts, version, branch).filter(sql_filter)
    _cache.put(key, ds)
    return ds


def table_schema(opts: ReadOptions) -> pa.Schema:
    """The Arrow schema of the columns the options select, as the table holds them (with
    ``nearest``: as the search returns them, ``_distance`` and a batch's ``query_index`` too)."""
    ds = open_dataset(opts)
    if opts.nearest is not None:
        return search_scanner(ds, opts).projected_schema
    if opts.columns is None:
        return ds.scanner().projected_schema        # blob columns as their descriptions, as read
    return ds.scanner(columns=list(opts.columns)).projected_schema


def search_scanner(ds: LanceDataset, opts: ReadOptions) -> LanceScanner:
    """The ``nearest`` scan the options describe (checked now: bad keys fail planning)."""
    return ds.scanner(columns=None if opts.columns is None else list(opts.columns), filter=opts.filter,
                      nearest=opts.nearest_spec(), prefilter=opts.prefilter, fast_search=opts.fast_search)


@dataclass(frozen=True)
class SearchPartition(InputPartition):
    """The one partition of a ``nearest`` read: the search's rows (found on the driver), as Arrow IPC."""

    ipc: bytes


class LanceReader(DataSourceReader):
    """Reads the columns of the Spark schema at a version pinned when the read is planned."""

    def __init__(self, opts: ReadOptions, schema: StructType, cores: int | None = None) -> None:
        self.opts = opts
        self.cores = cores
        ds = open_dataset(opts)
        self.version = ds.version
        self.branch = ds.branch
        self.columns = list(schema.fieldNames())
        self.target = to_arrow_schema(schema, timezone="UTC", prefers_large_types=False)
        self.arrow_schema = ds.schema
        if opts.nearest is not None:
            _check_search_schema(ds, self.columns, self.target, opts)
        else:
            _check_schema(ds, self.columns, self.target, opts)
        if opts.filter is not None:
            ds.filter(opts.filter)   # parse and bind now: a bad filter fails planning, naming it
        self.filters: list[Any] = []
        self.limit: int | None = None     # a pushed LIMIT (LimitLanceReader): rows each partition returns at most

    def pruneColumns(self, schema: StructType) -> StructType:  # noqa: N802 (the name Sail calls; Spark 4.3 never calls it)
        """Read only the columns of ``schema`` (a subset of the planned one, any order); returns it.

        Raises:
            InvalidArgumentError: a column the planned schema does not have, or another type.
        """
        wanted = list(schema.fieldNames())
        unknown = [c for c in wanted if c not in self.columns]
        if unknown:
            raise InvalidArgumentError(f"pruneColumns: {', '.join(unknown)} not among the columns read "
                                       f"({', '.join(self.columns)}) from {self.opts.path}")
        target = to_arrow_schema(schema, timezone="UTC", prefers_large_types=False)
        for name in wanted:
            if not target.field(name).type.equals(self.target.field(name).type):
                raise InvalidArgumentError(f"pruneColumns: column {name} is {self.target.field(name).type} here, "
                                           f"not {target.field(name).type}")
        self.columns, self.target = wanted, target
        return schema

    def partitions(self) -> Sequence[InputPartition]:
        ds = open_dataset(self.opts, self.version, self.branch)
        if self.opts.nearest is not None:
            # the global top-k of the pinned version, searched here on the driver: one partition
            table = search_scanner(ds, self.opts).to_table().select(self.columns)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, table.schema) as w:
                w.write_table(table)
            return [SearchPartition(sink.getvalue().to_pybytes())]
        return plan_partitions(fragment_infos(ds), target_rows=self.opts.partition_rows,
                               target_bytes=self.opts.partition_bytes, cores=self.cores)

    def _pushed(self) -> CompiledFilter | None:
        return spark_filters(self.filters, self.arrow_schema)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, SearchPartition):
            for batch in pa.ipc.open_stream(partition.ipc):
                yield from _bounded(conform(batch, self.target), self.opts.batch_size)
            return
        pieces = getattr(partition, "pieces", ())   # Spark sends InputPartition(None) for an empty table
        try:
            ds = open_dataset(self.opts, self.version, self.branch, self.opts.filter)
            if not self.columns:
                # no column asked for (a user ``.schema`` with none): only row counts cross to Spark
                n = count_row_ranges(ds, pieces, filter=self._pushed())
                n = n if self.limit is None else min(n, self.limit)
                for start in range(0, n, self.opts.batch_size):
                    yield _rows_only(min(self.opts.batch_size, n - start))
                return
            decode_rows = max(self.opts.batch_size, MIN_DECODE_ROWS)
            left = self.limit
            for batch in scan_row_ranges(ds, pieces, columns=self.columns, filter=self._pushed(),
                                         batch_size=decode_rows):
                if left is not None:
                    batch = batch.slice(0, left)
                    left -= batch.num_rows
                yield from _bounded(conform(batch, self.target), self.opts.batch_size)
                if left == 0:
                    return
        except LanceDuckError as exc:
            # Spark shows the worker's traceback; the last line names the type and message
            raise type(exc)(f"{type(exc).__name__}: {exc} (table {self.opts.path}, version {self.version})") \
                from None


class LimitLanceReader(LanceReader):
    """LanceReader that takes Spark's pushed LIMIT (Spark 5, ``spark.sql.python.limitPushdown.enabled``):
    each partition stops after that many rows; Spark still applies the limit itself (a hint)."""

    def pushLimit(self, limit: int) -> bool:  # noqa: N802 (Spark's name)
        if limit < 0:
            return False
        self.limit = int(limit)
        return True


class PushdownLanceReader(LanceReader):
    """LanceReader that also accepts Spark's pushed filters (applied exactly while reading)."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:  # noqa: N802 (Spark's name)
        if self.opts.nearest is not None:   # Spark's own filters apply to the k rows found (post-filter)
            yield from filters
            return
        empty = pa.RecordBatch.from_pylist([], schema=self.arrow_schema)
        for f in filters:
            try:
                compiled = spark_filters([f], self.arrow_schema)
                if compiled is not None:
                    compiled.mask(empty)                                  # type-checks it
            except (NotPushable, LanceDuckError, pa.ArrowException, TypeError, ValueError):
                yield f
                continue
            self.filters.append(f)


def _bounded(batch: pa.RecordBatch, max_rows: int | None = None) -> Iterator[pa.RecordBatch]:
    """``batch`` in slices of at most ``max_rows`` rows and about MAX_BATCH_BYTES."""
    parts = -(-batch.nbytes // MAX_BATCH_BYTES)
    if max_rows is not None:
        parts = max(parts, -(-batch.num_rows // max_rows))
    if parts <= 1:
        yield batch
        return
    step = -(-batch.num_rows // parts)
    for start in range(0, batch.num_rows, step):
        yield batch.slice(start, step)


def _rows_only(n: int) -> pa.RecordBatch:
    """A batch of ``n`` rows and no column."""
    return pa.RecordBatch.from_struct_array(pa.StructArray.from_arrays([pa.nulls(n)], ["_"])).drop_columns(["_"])


def _check_schema(ds: LanceDataset, columns: list[str], target: pa.Schema, opts: ReadOptions) -> None:
    """Every column of Spark's schema exists and has the type the table's column maps to.

    With a user ``.schema(...)``, a missing column or another type is refused here, at planning.
    """
    names = ds.schema.names
    missing = [c for c in columns if c not in names and "." not in c]
    if missing:
        raise InvalidArgumentError(
            f"lance_duck: column(s) {', '.join(map(repr, missing))} not in {opts.path} (columns: {', '.join(names)})")
    held = spark_arrow_schema(ds.scanner(columns=columns).projected_schema)
    for want, have in zip(target, held):
        if not _same_type(want.type, have.type):
            raise InvalidArgumentError(
                f"lance_duck: column {want.name!r} is read as {have.type} (Spark type from the table), "
                f"but the schema given to Spark says {want.type}")


def _check_search_schema(ds: LanceDataset, columns: list[str], target: pa.Schema, opts: ReadOptions) -> None:
    """Spark's columns are among the search's and have its types."""
    held = spark_arrow_schema(search_scanner(ds, opts).projected_schema)
    missing = [c for c in columns if c not in held.names]
    if missing:
        raise InvalidArgumentError(f"lance_duck: column(s) {', '.join(map(repr, missing))} not in the search's rows "
                                   f"(columns: {', '.join(held.names)})")
    for want in target:
        have = held.field(want.name)
        if not _same_type(want.type, have.type):
            raise InvalidArgumentError(
                f"lance_duck: column {want.name!r} is read as {have.type}, but the schema given to Spark says {want.type}")


def _same_type(a: pa.DataType, b: pa.DataType) -> bool:
    """Equal up to field names of list items / map entries and nullability."""
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        return a.num_fields == b.num_fields and all(
            x.name == y.name and _same_type(x.type, y.type) for x, y in zip(a, b))
    if pa.types.is_list(a) and pa.types.is_list(b):
        return _same_type(a.value_type, b.value_type)
    if pa.types.is_map(a) and pa.types.is_map(b):
        return _same_type(a.key_type, b.key_type) and _same_type(a.item_type, b.item_type)
    return bool(a.equals(b))


class PushdownLimitLanceReader(PushdownLanceReader, LimitLanceReader):
    """Both pushdowns: Spark's filters and its LIMIT hint."""


def reader_class(push_filters: bool, push_limit: bool) -> type[LanceReader]:
    """The reader for what the session lets a Python source accept (Spark refuses a reader that defines a
    pushdown method whose setting is off, so only the enabled ones are defined)."""
    return {(False, False): LanceReader, (True, False): PushdownLanceReader,
            (False, True): LimitLanceReader, (True, True): PushdownLimitLanceReader}[(push_filters, push_limit)]
