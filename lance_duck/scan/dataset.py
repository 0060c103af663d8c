"""LanceDataset: one pinned version of a Lance table (a ``pyarrow.dataset.Dataset`` subclass).

DuckDB accepts it because it *is* a ``pyarrow.dataset.Dataset``; DuckDB 1.x reads ``schema`` and
calls ``type(ds).scanner(ds, columns=..., filter=...)`` then ``to_reader()`` (that class-level
``scanner`` reads the filter in DuckDB's meaning: :mod:`.duckdb_v1`); DuckDB 2 reads it as its own
source (:mod:`.duckdb_source`). Every inherited
method is overridden; the base's native state is a placeholder that refuses to be scanned
(``interop``), so pyarrow's own C++ scans raise a clear error instead of crashing, and the
dataset exports itself as an Arrow C stream (``pa.table(ds)``, ``write_dataset(ds, ...)``).
Nothing mutates in place: ``checkout_version`` and ``filter`` return new datasets. A dataset
pickles as (uri, version, branch, storage options, filter), never as data.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from ..errors import InvalidArgumentError, UnsupportedFeatureError
from .blobs import BlobReadMixin
from .duckdb_source import DuckDBSource
from .duckdb_v1 import install as install_duckdb_v1_scanner
from .compat import (DATASET_ENGINE_ONLY, DATASET_WRITERS, FRAGMENT_ENGINE_ONLY, FRAGMENT_WRITERS,
                     PylanceReadMixin, install_refusals)
from .fragment import LanceFragment
from .interop import ScansItself, export_stream, placeholder_native_state, refuse_native_scan
from .params import AsOf, Columns, Filter, Indices, StorageOptions, Version, VersionInfo

# The scan machinery (scanner, filters -- with the SQL parser --, take, delta) is imported by the
# methods that read: opening a dataset (an object store's first open of a process) loads none of it.
if TYPE_CHECKING:
    from ..index import IndexDescription
    from ..predicate.compiled import CompiledFilter
    from ..schema import LanceSchema
    from ..table.fragment import FragmentInfo
    from ..table.snapshot import Snapshot
    from .delta import DatasetDelta
    from .scanner import LanceScanner


def dataset(uri: str, version: Version = None, asof: AsOf = None, *, branch: str | None = None,
            storage_options: StorageOptions = None) -> LanceDataset:
    """:func:`lance_duck.dataset`, which documents it, opened in the calling thread: the table's
    snapshot, then the dataset made from it (the integrations call this one; ``lance_duck.dataset``
    too once this module is loaded)."""
    from ..table.snapshot import open_snapshot
    snap = open_snapshot(uri, version, asof, branch=branch, storage_options=storage_options)
    return LanceDataset(snap, storage_options=storage_options)


class Tags:
    """``ds.tags``: read-only view of the table's tags."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def list(self) -> dict[str, dict[str, Any]]:
        """``{tag: {'version', 'branch', 'created_at', ...}}`` like pylance's ``ds.tags.list()``."""
        return self._snapshot.list_tags()

    def get_version(self, tag: str) -> int:
        """The version ``tag`` points at; ``TagNotFoundError`` if there is no such tag."""
        from ..errors import TagNotFoundError
        tags = self.list()
        if tag not in tags:
            raise TagNotFoundError(f"tag {tag!r} not found in {self._snapshot.uri}")
        return int(tags[tag]["version"])


class Branches:
    """``ds.branches``: read-only view of the table's branches."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def list(self) -> dict[str, dict[str, Any]]:
        """``{branch: {...}}`` like pylance's ``ds.branches.list()``."""
        return self._snapshot.list_branches()


class LanceDataset(PylanceReadMixin, BlobReadMixin, ScansItself, DuckDBSource, pads.FileSystemDataset):
    """One pinned version of a Lance table; open it with :func:`lance_duck.dataset`.

    A ``pyarrow.dataset.Dataset`` subclass, so DuckDB (``duckdb.sql("select ... from ds")``) and
    pyarrow consumers take it as is, with projection and filter pushdown. The read methods have
    pylance's names and results: ``to_table``, ``to_batches``, ``scanner``, ``head``, ``take``,
    ``count_rows``, ``get_fragments``; so do ``version``, ``latest_version``, ``versions()``,
    ``tags``, ``branches`` and ``checkout_version``. Nothing mutates in place: ``checkout_version``
    and ``filter`` return new datasets.

    Reads take ``columns`` (names, nested ``"s.a"`` allowed, or ``{alias: SQL expression}``) and
    ``filter`` (a SQL string in pylance's dialect, or a ``pyarrow.compute.Expression``). Rows come in
    pylance's order: fragment by fragment, deleted rows left out.

    Examples:
        >>> import lance_duck
        >>> ds = lance_duck.dataset(lance_duck.sample_path())
        >>> ds.latest_version, [v["version"] for v in ds.versions()]
        (6, [1, 2, 3, 4, 5, 6])
        >>> ds.checkout_version("initial_load").count_rows()
        2000
        >>> ds.head(2, columns=["order_id", "status"]).to_pylist()
        [{'order_id': 0, 'status': 'delivered'}, {'order_id': 1, 'status': 'returned'}]
    """

    def __init__(self, snapshot: Snapshot, *, storage_options: StorageOptions = None,
                 base_filter: CompiledFilter | None = None, _filter_source: Any = None) -> None:
        # The native FileSystemDataset is a placeholder that pyarrow cannot scan (see interop).
        pads.FileSystemDataset.__init__(self, *placeholder_native_state(snapshot.arrow_schema, snapshot.uri))
        self._snapshot = snapshot
        self._storage_options = storage_options
        self._base_filter = base_filter
        self._filter_source = _filter_source

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        install_duckdb_v1_scanner(cls)    # DuckDB 1.x's class-level scanner call (.duckdb_v1)

    # -- identity ----------------------------------------------------------------------------
    @property
    def uri(self) -> str:
        """The table's location, as given to :func:`dataset`."""
        return self._snapshot.uri

    @property
    def version(self) -> int:
        """The version this dataset is pinned at."""
        return self._snapshot.version

    @property
    def latest_version(self) -> int:
        """The latest version of this dataset's branch (read now; the dataset stays pinned)."""
        return self._snapshot.latest_version()

    @property
    def data_storage_version(self) -> str:
        """The data file format of the table (``"2.0"``, ``"2.1"``, ``"2.2"``, ``"legacy"``, ...)."""
        return self._snapshot.data_storage_version

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of this version, equal to pylance's ``ds.schema`` (metadata included)."""
        return self._snapshot.arrow_schema

    @property
    def lance_schema(self) -> LanceSchema:
        """The Lance field tree of this version (field ids, encodings, dictionaries)."""
        return self._snapshot.schema

    @property
    def branch(self) -> str | None:
        """The branch this dataset reads; ``None`` for the main branch."""
        return self._snapshot.branch

    @property
    def partition_expression(self) -> pc.Expression:
        """Always true: a Lance table has no partitions (pyarrow's ``Dataset`` attribute)."""
        return pc.scalar(True)

    @property
    def tags(self) -> Tags:
        """The table's tags: ``ds.tags.list()``, ``ds.tags.get_version(name)``."""
        return Tags(self._snapshot)

    @property
    def branches(self) -> Branches:
        """The table's branches: ``ds.branches.list()``."""
        return Branches(self._snapshot)

    def versions(self) -> list[VersionInfo]:
        """Every version of this branch, oldest first, like pylance's ``ds.versions()``.

        Returns:
            :class:`~lance_duck.scan.params.VersionInfo` dicts (a ``TypedDict``, as pylance's
            ``lance.dataset.Version``): ``{'version': int, 'timestamp': datetime, 'metadata':
            dict[str, str]}``; ``timestamp`` is pylance's naive local time.

        Examples:
            >>> import lance_duck
            >>> v = lance_duck.dataset(lance_duck.sample_path()).versions()[0]
            >>> v["version"], v["metadata"]["total_rows"]
            (1, '2000')
        """
        return self._snapshot.versions()

    def checkout_version(self, version: Version | tuple[str | None, Version]) -> LanceDataset:
        """A new dataset at another version (this one is unchanged).

        Args:
            version: a version number, a tag name, or ``(branch, number | None)`` (``None``: the
                branch's latest version).

        Returns:
            A new :class:`LanceDataset` pinned at that version.

        Raises:
            VersionNotFoundError, TagNotFoundError, BranchNotFoundError: no such version, tag or branch.
            InvalidArgumentError: a tuple that is not ``(branch, version)``.

        Examples:
            >>> import lance_duck
            >>> ds = lance_duck.dataset(lance_duck.sample_path())
            >>> ds.checkout_version("initial_load").version, ds.version
            (1, 6)
        """
        if isinstance(version, tuple):
            if len(version) != 2:
                raise InvalidArgumentError(f"expected (branch, version), got {version!r}")
            branch, v = version
            snap = self._snapshot.checkout(v, branch=branch)
        else:
            snap = self._snapshot.checkout(version)
        return LanceDataset(snap, storage_options=self._storage_options)

    def delta(self, compared_against: int | None = None, *, begin_version: int | None = None,
              end_version: int | None = None) -> DatasetDelta:
        """What changed between two versions, like pylance's ``delta()``.

        Args:
            compared_against: compare this dataset's version with that one (the older of the two
                is the exclusive start); it wins over a range given with it, as in pylance.
            begin_version: start of an explicit range (exclusive); with ``end_version``.
            end_version: end of an explicit range (inclusive); with ``begin_version``.

        Returns:
            A :class:`DatasetDelta`: ``list_transactions()``, ``get_inserted_rows()``,
            ``get_updated_rows()`` (both scan *this* version, as pylance does) and
            ``get_deleted_row_ids()`` (stable row ids required).

        Raises:
            InvalidArgumentError: neither form given, only one end of a range, a negative version.

        Examples:
            >>> import lance_duck
            >>> ds = lance_duck.dataset(lance_duck.sample_path())
            >>> [type(t.operation).__name__ for t in ds.delta(compared_against=4).list_transactions()]
            ['Update', 'Merge']
        """
        from .delta import build_delta
        return build_delta(self._snapshot, compared_against, begin_version, end_version)

    # -- indices ----------------------------------------------------------------------------------
    def describe_indices(self) -> list[IndexDescription]:
        """The table's indices at this version, like pylance's ``describe_indices()`` (name, type,
        fields, rows indexed, segments); ``[]`` when there is none."""
        from ..index import describe_indices
        return describe_indices(self._snapshot)

    def index_statistics(self, index_name: str) -> dict[str, Any]:
        """pylance's ``index_statistics(name)`` (``stats.index_stats``): coverage of this version
        (indexed / unindexed fragments and live rows, per segment) and each segment's statistics --
        a vector index's partitions, centroids, loss and sub-index parameters; BTREE ``min`` /
        ``max`` / ``num_pages``; BITMAP / LABEL_LIST ``num_bitmaps``; ZONEMAP ``num_zones`` /
        ``rows_per_zone``; BLOOMFILTER ``num_blocks`` / ``number_of_items`` / ``probability``; NGRAM
        ``num_ngrams``; INVERTED ``params`` / ``num_tokens`` / ``num_docs``.

        Args:
            index_name: the index name (``describe_indices()``).

        Raises:
            InvalidArgumentError: no such index. UnsupportedFeatureError: an index type lance_duck
                gives no statistics of, or a vector index it cannot read (named).

        Example::

            lance_duck.dataset("t.lance").index_statistics("vec_idx")["num_unindexed_rows"]
        """
        from ..search.vector_stats import vector_index_statistics
        return vector_index_statistics(self._snapshot, index_name)

    def list_indices(self) -> list[dict[str, Any]]:
        """One dict per index segment, like pylance's (deprecated) ``list_indices()``."""
        from ..index import list_indices
        return list_indices(self._snapshot)

    # -- scans ------------------------------------------------------------------------------------
    def scanner(self, columns: Columns = None, filter: Filter = None, limit: int | None = None,
                offset: int | None = None, batch_size: int | None = None, with_row_id: bool = False,
                with_row_address: bool = False, fragments: Sequence[LanceFragment | int] | None = None,
                **kwargs: Any) -> LanceScanner:
        """A :class:`LanceScanner` over this version (nothing is read until it is consumed).

        Args:
            columns: column names (nested ``"s.a"``), or ``{alias: SQL expression}``; default all.
            filter: a SQL string (pylance's dialect) or a ``pyarrow.compute.Expression`` (pylance's
                meaning: floats in Lance's order, -NaN < -inf < ... < +inf < NaN; DuckDB 1.x's call,
                ``LanceDataset.scanner(ds, ...)`` looked up on the class, reads it in DuckDB's,
                every NaN above every number).
            limit: rows to return, after the filter.
            offset: rows to skip, after the filter.
            batch_size: rows per output batch (and per read task).
            with_row_id: add a ``_rowid`` column.
            with_row_address: add a ``_rowaddr`` column.
            fragments: scan only these fragments (:class:`LanceFragment` objects or ids).
            **kwargs: the keyword arguments below; other pylance / pyarrow options that do not
                change results (``use_threads``, ``scan_in_order``, ...) are accepted and ignored.

        Keyword Args:
            batch_readahead (int): read tasks decoded at once. Without it, a scan whose every column
                (projected or filtered) is fixed-width (numbers, booleans, temporal, decimals)
                decodes one task at a time, any other scan up to four (``scan/readahead.py``).
            readahead_bytes (int): the read-ahead memory budget (64 MiB default).
            use_scalar_index (bool): use the table's exact scalar indices for the filter (default True).

        Returns:
            A :class:`LanceScanner`.

        Raises:
            InvalidArgumentError: an unknown column, a filter that does not parse or bind (named),
                a negative ``limit`` / ``offset`` / ``batch_size``, a fragment not in this version.
            UnsupportedFeatureError: an option that would change results and is not supported.

        Examples:
            >>> import lance_duck
            >>> ds = lance_duck.dataset(lance_duck.sample_path())
            >>> ds.scanner(columns=["order_id"], filter="amount > 490", limit=3).to_table().column(0).to_pylist()
            [50, 74, 100]
        """
        from .scanner import LanceScanner
        return LanceScanner(self, columns=columns, filter=filter, limit=limit, offset=offset,
                            batch_size=batch_size, with_row_id=with_row_id,
                            with_row_address=with_row_address, fragments=fragments, **kwargs)

    def to_table(self, columns: Columns = None, filter: Filter = None, **kwargs: Any) -> pa.Table:
        """Read the rows into one ``pa.Table`` (arguments and errors as :meth:`scanner`).

        Examples:
            >>> import lance_duck
            >>> ds = lance_duck.dataset(lance_duck.sample_path())
            >>> ds.to_table(columns=["order_id", "amount"], filter="order_id < 2").to_pylist()
            [{'order_id': 0, 'amount': Decimal('316.08')}, {'order_id': 1, 'amount': Decimal('59.39')}]
        """
        return self.scanner(columns=columns, filter=filter, **kwargs).to_table()

    def to_batches(self, columns: Columns = None, filter: Filter = None, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        """Stream the rows as ``pa.RecordBatch``es, read lazily (arguments and errors as :meth:`scanner`).

        Examples:
            >>> import lance_duck
            >>> ds = lance_duck.dataset(lance_duck.sample_path())
            >>> [b.num_rows for b in ds.to_batches(columns=["order_id"], batch_size=1000)]
            [438, 909, 452, 103]
        """
        return self.scanner(columns=columns, filter=filter, **kwargs).to_batches()

    def head(self, num_rows: int, columns: Columns = None, filter: Filter = None, **kwargs: Any) -> pa.Table:
        """The first ``num_rows`` rows (after the filter), reading no further than needed.

        Arguments and errors as :meth:`scanner`; the class example shows it.
        """
        return self.scanner(columns=columns, filter=filter, **kwargs).head(num_rows)

    def count_rows(self, filter: Filter = None, **kwargs: Any) -> int:
        """The number of rows (after deletions and the filter); exact.

        Args:
            filter: as for :meth:`scanner`. Without one, the count comes from manifests and deletion
                files alone; with one, from exact scalar indices when they answer it, else a scan of
                the filter's columns.

        Returns:
            The row count.

        Raises:
            InvalidArgumentError: a filter that does not parse or bind.

        Examples:
            >>> import lance_duck
            >>> ds = lance_duck.dataset(lance_duck.sample_path())
            >>> ds.count_rows(), ds.count_rows("amount > 490")
            (1902, 51)
        """
        if filter is None and self._base_filter is None and not kwargs:
            return self._snapshot.count_rows()
        return self.scanner(filter=filter, **kwargs).count_rows()

    def take(self, indices: Indices, columns: Columns = None) -> pa.Table:
        """Rows at logical positions (after deletions), in the order given.

        pylance's signature: ``indices`` and ``columns`` only (pyarrow's ``filter=``, ``batch_size=``...
        are a ``TypeError``, as in pylance); filter with :meth:`filter` or :meth:`scanner` instead.

        Args:
            indices: positions among the live rows (0 .. ``count_rows() - 1``), repeats allowed.
            columns: as for :meth:`scanner` (nested names give pruned structs, as in pylance).

        Returns:
            A ``pa.Table`` with one row per index.

        Raises:
            InvalidArgumentError: an index out of range or not an integer; take on a filtered dataset.

        Examples:
            >>> import lance_duck
            >>> ds = lance_duck.dataset(lance_duck.sample_path())
            >>> ds.take([0, 5, 1], columns=["order_id"]).to_pylist()
            [{'order_id': 0}, {'order_id': 7}, {'order_id': 1}]
        """
        from .take import take_rows
        return take_rows(self._snapshot, self._snapshot.fragments, indices, columns, self._base_filter)

    # -- fragments --------------------------------------------------------------------------------
    def get_fragments(self, filter: Filter = None) -> list[LanceFragment]:
        """Every fragment of this version, in manifest order.

        Returns:
            A list of :class:`LanceFragment` (the class example shows them).

        Raises:
            InvalidArgumentError: ``filter`` is given (pylance refuses it too; a Lance table has no
                partition expressions to select fragments by): filter the scan instead.
        """
        if filter is not None:
            raise InvalidArgumentError(
                f"get_fragments(filter={filter!r}) is not supported (as in pylance): fragments of {self.uri} "
                "are not selected by filter; pass the filter to scanner()/to_table(), or fragments=[...]")
        return [LanceFragment(self, f) for f in self._snapshot.fragments]

    def get_fragment(self, fragment_id: int) -> LanceFragment | None:
        """The fragment with id ``fragment_id``, or ``None`` when this version has none (as in pylance).

        Examples:
            >>> import lance_duck
            >>> lance_duck.dataset(lance_duck.sample_path()).get_fragment(3)
            LanceFragment(id=3, physical_rows=103)
        """
        for f in self._snapshot.fragments:
            if f.id == fragment_id:
                return LanceFragment(self, f)
        return None

    # -- pyarrow.dataset.Dataset methods with no native state behind them -------------------------
    def filter(self, expression: Filter) -> LanceDataset:
        """A new dataset whose scans, counts and exports all apply ``expression`` too.

        Args:
            expression: a SQL string or a ``pyarrow.compute.Expression``, as for :meth:`scanner`.

        Returns:
            A new :class:`LanceDataset` (this one is unchanged); filters of repeated calls combine with AND.

        Raises:
            InvalidArgumentError: a filter that does not parse or bind.

        Examples:
            >>> import lance_duck
            >>> lance_duck.dataset(lance_duck.sample_path()).filter("amount > 490").count_rows()
            51
        """
        from .filters import and_filters, bind_filter
        bound = and_filters(self._base_filter, bind_filter(expression, self.schema))
        src = expression if self._filter_source is None else (self._filter_source, expression)
        return LanceDataset(self._snapshot, storage_options=self._storage_options,
                            base_filter=bound, _filter_source=src)

    def _materialized(self) -> pads.Dataset:
        return pads.dataset(self.to_table())

    def sort_by(self, sorting: str | list[tuple[str, str]], **kwargs: Any) -> pads.Dataset:
        """Sorted copy (materialises the scan, like any full sort)."""
        table = self._materialized()
        return _pyarrow_call("sort_by", lambda: table.sort_by(sorting, **kwargs))

    def join(self, right_dataset: Any, keys: str | list[str], right_keys: str | list[str] | None = None,
             join_type: str = "left outer", left_suffix: str | None = None, right_suffix: str | None = None,
             coalesce_keys: bool = True, use_threads: bool = True) -> pads.Dataset:
        """pyarrow's ``Dataset.join``, over the materialised scan (and ``right_dataset``'s)."""
        right = right_dataset._materialized() if isinstance(right_dataset, LanceDataset) else right_dataset
        left = self._materialized()
        return _pyarrow_call("join", lambda: left.join(right, keys, right_keys, join_type, left_suffix, right_suffix,
                                                       coalesce_keys, use_threads))

    def join_asof(self, right_dataset: Any, on: str, by: str | list[str], tolerance: int,
                  right_on: str | None = None, right_by: str | list[str] | None = None) -> pads.Dataset:
        """pyarrow's ``Dataset.join_asof``, over the materialised scan (and ``right_dataset``'s)."""
        right = right_dataset._materialized() if isinstance(right_dataset, LanceDataset) else right_dataset
        left = self._materialized()
        return _pyarrow_call("join_asof", lambda: left.join_asof(right, on, by, tolerance, right_on, right_by))

    def replace_schema(self, schema: pa.Schema) -> None:
        """Refused (``UnsupportedFeatureError``): the schema is the table's; cast the scan instead."""
        raise UnsupportedFeatureError(
            f"a Lance dataset's schema is the table's ({self.uri}); replace_schema is not supported (it is "
            "also how pyarrow.dataset.dataset([...]) builds a UnionDataset): cast the scan instead, "
            "ds.to_table(...).cast(schema), or union materialised data: pyarrow.dataset.dataset(ds.to_table())")

    def _get_fragments(self, filter: Filter = None) -> Iterator[LanceFragment]:
        return iter(self.get_fragments(filter))

    def _scanner_options(self, options: Any) -> None:
        # pyarrow calls this on its way to its own native scan (Scanner.from_dataset, acero scan node)
        raise refuse_native_scan(self.uri)

    # -- pyarrow.dataset.FileSystemDataset attributes -----------------------------------------------
    @property
    def files(self) -> list[str]:
        """Paths of every data file of this version, fragment by fragment."""
        return [f.path for frag in self._snapshot.fragments for f in frag.files]

    @property
    def partitioning(self) -> None:
        """``None``: a Lance table has no partitioning."""
        return None

    @property
    def format(self) -> None:
        """Raises ``AttributeError``: Lance data files have no pyarrow file format."""
        raise AttributeError("a Lance dataset has no pyarrow file format: its data files are Lance files "
                             "that only lance_duck (ds.scanner(...)) reads")

    @property
    def filesystem(self) -> None:
        """Raises ``AttributeError``: the dataset reads through fsspec, not a pyarrow filesystem."""
        raise AttributeError("a Lance dataset has no pyarrow filesystem: it reads through fsspec "
                             "(storage_options)")

    # -- Arrow PyCapsule stream protocol ------------------------------------------------------------
    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The full scan (base filter applied) as an Arrow C stream: ``pa.table(ds)``,
        ``pa.RecordBatchReader.from_stream(ds)``, ``pyarrow.dataset.write_dataset(ds, ...)``."""
        return export_stream(self.scanner().to_reader(), requested_schema)

    # -- pickling ----------------------------------------------------------------------------------
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (_restore, (self.uri, self.version, self.branch, self._storage_options, self._filter_source))

    def __repr__(self) -> str:
        b = f", branch={self.branch!r}" if self.branch else ""
        return f"LanceDataset(uri={self.uri!r}, version={self.version}{b})"


install_refusals(LanceDataset, "LanceDataset", DATASET_WRITERS, DATASET_ENGINE_ONLY)
install_duckdb_v1_scanner(LanceDataset)
install_refusals(LanceFragment, "LanceFragment", FRAGMENT_WRITERS, FRAGMENT_ENGINE_ONLY)


def _pyarrow_call(what: str, call: Any) -> Any:
    """Run a pyarrow Dataset method on the materialised scan; its refusals of the caller's arguments
    (TypeError, KeyError, ArrowInvalid, ...) become InvalidArgumentError naming the method."""
    try:
        return call()
    except (TypeError, ValueError, KeyError, IndexError, OverflowError, pa.ArrowException) as e:
        raise InvalidArgumentError(f"{what}: {e}") from e


def _restore(uri: str, version: int, branch: str | None, storage_options: StorageOptions,
             filter_source: Any) -> LanceDataset:
    ds = dataset(uri, version, branch=branch, storage_options=storage_options)
    for f in _flatten(filter_source):
        ds = ds.filter(f)
    return ds


def _flatten(src: Any) -> list[Any]:
    if src is None:
        return []
    if isinstance(src, tuple):
        return _flatten(src[0]) + [src[1]]
    return [src]


# -- what the integrations need of a dataset's pinned version (nothing outside scan/ reads ``_snapshot``) --
def same_manifest(a: LanceDataset, b: LanceDataset) -> bool:
    """Whether ``a`` and ``b`` were opened from the same manifest bytes (the same version, unchanged)."""
    return bool(a._snapshot.manifest_file.raw == b._snapshot.manifest_file.raw)


def fragment_infos(ds: LanceDataset) -> list[FragmentInfo]:
    """The fragments of ``ds``'s version as the manifest lists them (ids, data files, row counts)."""
    return ds._snapshot.fragments


def data_file_bytes(ds: LanceDataset) -> int | None:
    """The bytes of ``ds``'s data files as the manifest records them; None when a file's size is not recorded."""
    sizes = [f.size for fi in ds._snapshot.fragments for f in fi.files]
    return sum(s for s in sizes if s) if all(sizes) else None
