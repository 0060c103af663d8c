"""The rest of pylance's read-only ``LanceDataset`` surface, and its writers refused by name.

:class:`PylanceReadMixin` gives :class:`~lance_duck.scan.dataset.LanceDataset` the read methods
pylance 14.0.2 has beyond scans (``get_version``, ``fragment_ids``, ``slice``, ``sample``,
``to_pandas``, ``stats``, ...), with pylance's arguments and results. Every pylance method that
writes (``insert``, ``delete``, ``create_index``, ...) exists too, and raises
:class:`~lance_duck.errors.UnsupportedFeatureError` when called: lance_duck is a reader.
"""
from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

import pyarrow as pa
from pyroaring import BitMap

from ..errors import InvalidArgumentError, UnsupportedFeatureError
from .params import int_arg

if TYPE_CHECKING:
    import pandas as pd

    from ..search.ivf_model import IvfModel
    from ..table.history import VersionInfo
    from ..table.transactions import Transaction

    from ..table.snapshot import Snapshot
    from .params import Columns, Filter, Indices, StorageOptions

#: pylance 14.0.2's ``LanceDataset`` methods that change a table (or its files, or pylance's own
#: sessions): present on lance_duck's datasets, refused when called.
DATASET_WRITERS: tuple[str, ...] = (
    "add_bases", "add_columns", "alter_columns", "cleanup_old_versions", "commit", "commit_batch",
    "commit_existing_index_segments", "create_branch", "create_index", "create_index_uncommitted",
    "create_scalar_index", "deep_clone", "delete", "delete_config_keys", "drop", "drop_columns",
    "drop_index", "explain_cleanup_old_versions", "from_pydantic_model", "initialize_mem_wal", "insert", "mem_wal_writer",
    "merge", "merge_existing_index_segments", "merge_index_metadata", "merge_insert",
    "migrate_manifest_paths_v2", "optimize", "remap_row_addrs", "replace_field_metadata",
    "replace_schema_metadata", "restore", "shallow_clone", "truncate_table", "update", "update_config",
    "update_field_metadata", "update_metadata", "update_schema_metadata",
)

#: pylance 14.0.2's ``LanceFragment`` methods that write: refused when called.
FRAGMENT_WRITERS: tuple[str, ...] = (
    "create", "create_from_file", "delete", "delete_rows", "merge", "merge_columns", "update_columns",
)


#: pylance 14.0.2 members tied to its Rust engine (sessions, I/O counters, DataFusion SQL): present,
#: refused when used, each with what to use instead.
DATASET_ENGINE_ONLY: dict[str, str] = {
    "session": "pylance's session holds its engine's caches; lance_duck's are process-wide (lance_duck.trace for "
               "what a read did)",
    "new_file_session": "pylance's file sessions write files",
    "io_stats_snapshot": "pylance counts its engine's requests; lance_duck.trace records what a read fetched",
    "io_stats_incremental": "pylance counts its engine's requests; lance_duck.trace records what a read fetched",
    "sql": "pylance's sql() is its DataFusion builder; run SQL with lance_duck.sql(...) or DuckDB",
    "storage_options_accessor": "pylance refreshes credentials through providers; lance_duck uses the "
                                "storage_options given",
}

#: pylance 14.0.2's ``LanceFragment`` members tied to its engine.
FRAGMENT_ENGINE_ONLY: dict[str, str] = {
    "open_session": "pylance's fragment sessions keep its engine's readers open; lance_duck keeps readers per "
                    "version itself",
}


def refuse_engine_only(owner: str, name: str, why: str) -> Callable[..., NoReturn]:
    """A member named ``name`` that refuses to run: it belongs to pylance's engine (``why`` says more)."""

    def refused(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
        raise UnsupportedFeatureError(f"{owner}.{name} is not offered by lance_duck: {why}")

    refused.__name__ = name
    refused.__qualname__ = f"{owner}.{name}"
    refused.__doc__ = f"Refused (UnsupportedFeatureError): {why}."
    return refused


def refuse_writer(owner: str, name: str) -> Callable[..., NoReturn]:
    """A method named ``name`` that refuses to run: lance_duck reads tables and never writes them."""

    def refused(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
        raise UnsupportedFeatureError(
            f"{owner}.{name}() writes to the table; lance_duck is a reader and never changes a table "
            f"(use pylance to {name.replace('_', ' ')})")

    refused.__name__ = name
    refused.__qualname__ = f"{owner}.{name}"
    refused.__doc__ = f"Refused: ``{name}`` writes, and lance_duck is a reader (raises UnsupportedFeatureError)."
    return refused


@dataclass(frozen=True)
class DatasetBasePath:
    """A base path the manifest registers (pylance's ``lance.DatasetBasePath`` fields)."""

    id: int
    name: str | None
    path: str
    is_dataset_root: bool


@dataclass(frozen=True)
class DataFile:
    """One data file of a fragment (pylance's ``DataFile`` fields; ``path`` relative to ``data/``)."""

    path: str
    fields: list[int]
    column_indices: list[int]
    file_major_version: int
    file_minor_version: int
    file_size_bytes: int | None


@dataclass(frozen=True)
class DeletionFile:
    """A fragment's deletion file (pylance's ``DeletionFile`` fields): ``file_type`` ``"array"`` or ``"bitmap"``."""

    file_type: str
    num_deleted_rows: int
    read_version: int
    id: int
    base_id: int | None


@dataclass(frozen=True)
class FragmentMetadata:
    """A fragment as the manifest describes it (pylance's ``FragmentMetadata`` fields)."""

    id: int
    files: list[DataFile]
    physical_rows: int
    deletion_file: DeletionFile | None


def fragment_metadata(pb: Any) -> FragmentMetadata:
    """:class:`FragmentMetadata` of a manifest ``DataFragment`` message."""
    files = [DataFile(f.path, list(f.fields), list(f.column_indices), f.file_major_version,
                      f.file_minor_version, f.file_size_bytes or None) for f in pb.files]
    deletion = None
    if pb.HasField("deletion_file"):
        d = pb.deletion_file
        deletion = DeletionFile("bitmap" if d.file_type == 1 else "array", d.num_deleted_rows, d.read_version, d.id,
                                d.base_id if d.HasField("base_id") else None)
    return FragmentMetadata(pb.id, files, pb.physical_rows, deletion)


class LanceStats:
    """Statistics about a dataset, like pylance's ``ds.stats``."""

    def __init__(self, dataset: PylanceReadMixin) -> None:
        self._ds = dataset

    def dataset_stats(self, max_rows_per_group: int = 1024) -> dict[str, int]:
        """``{"num_deleted_rows", "num_fragments", "num_small_files"}`` as pylance counts them.

        Args:
            max_rows_per_group: a fragment with fewer physical rows than this is a small file.
        """
        frags = self._ds._snapshot.fragments
        return {
            "num_deleted_rows": sum(f.num_deletions() for f in frags),
            "num_fragments": len(frags),
            "num_small_files": sum(1 for f in frags if f.physical_rows < max_rows_per_group),
        }

    def index_stats(self, index_name: str) -> dict[str, Any]:
        """The statistics of index ``index_name``: :meth:`LanceDataset.index_statistics`.

        Args:
            index_name: the index name (``describe_indices()``).
        """
        from ..search.vector_stats import vector_index_statistics
        return vector_index_statistics(self._ds._snapshot, index_name)


class PylanceReadMixin:
    """pylance's read-only dataset methods beyond scans (mixed into ``LanceDataset``)."""

    _snapshot: Snapshot
    _storage_options: StorageOptions

    if TYPE_CHECKING:   # provided by LanceDataset
        def count_rows(self, filter: Filter = None, **kwargs: Any) -> int: ...
        def take(self, indices: Indices, columns: Columns = None) -> pa.Table: ...
        def to_table(self, columns: Columns = None, filter: Filter = None, **kwargs: Any) -> pa.Table: ...
        def describe_indices(self) -> list[Any]: ...

    # -- the version ------------------------------------------------------------------------------
    def checkout_latest(self) -> None:
        """Move this dataset to the latest version of its branch, in place, as pylance does.

        The one method that changes a dataset object (pylance's ``checkout_latest`` mutates too, and
        code written for pylance relies on it); ``checkout_version`` returns a new dataset.

        Examples:
            >>> import lance_duck
            >>> ds = lance_duck.dataset(lance_duck.sample_path(), version=2)
            >>> ds.checkout_latest(); ds.version
            6
        """
        latest = self._snapshot.latest_version()
        if latest != self._snapshot.version:
            self._snapshot = self._snapshot.checkout(latest)

    def get_version(self) -> VersionInfo:
        """This version as one entry of :meth:`versions` (``version``, ``timestamp``, ``metadata``).

        Examples:
            >>> import lance_duck
            >>> lance_duck.dataset(lance_duck.sample_path(), version=1).get_version()["version"]
            1
        """
        for info in self._snapshot.versions():
            if info["version"] == self._snapshot.version:
                return info
        from ..table.history import manifest_summary
        from ..table.versions import pylance_local_timestamp
        return {"version": self._snapshot.version,
                "timestamp": pylance_local_timestamp(self._snapshot.timestamp_ns),
                "metadata": manifest_summary(self._snapshot.manifest)}

    def version_refs(self) -> list[dict[str, int]]:
        """``[{"version": n}, ...]`` for every version of this branch, oldest first."""
        from ..table.versions import list_versions
        return [{"version": e.version} for e in list_versions(self._snapshot.io, self._snapshot.dataset_dir)]

    def read_transaction(self, version: int) -> Transaction | None:
        """The transaction that made ``version`` (pylance's ``read_transaction``), or ``None`` when that
        version records none.

        Args:
            version: a version number of this dataset's branch.

        Raises:
            VersionNotFoundError: no such version (or it was cleaned up).
        """
        from ..table.transactions import read_transaction, to_transaction
        txn = read_transaction(self._snapshot.checkout(int_arg(version, "version", "read_transaction")))
        return None if txn is None else to_transaction(txn)

    def get_transactions(self, recent_transactions: int = 10) -> list[Transaction | None]:
        """The transactions of this version and the ones before it, newest first, at most
        ``recent_transactions`` (pylance's ``get_transactions``; ``None`` for a version recording none).

        Args:
            recent_transactions: how many versions, counting back from this one.

        Examples:
            >>> import lance_duck
            >>> ds = lance_duck.dataset(lance_duck.sample_path())
            >>> [type(t.operation).__name__ for t in ds.get_transactions(2)]
            ['Merge', 'Update']
        """
        recent_transactions = int_arg(recent_transactions, "recent_transactions", "get_transactions")
        if recent_transactions < 0:
            raise InvalidArgumentError(f"get_transactions: recent_transactions must be >= 0, got {recent_transactions}")
        first = max(1, self._snapshot.version - recent_transactions + 1)
        return [self.read_transaction(v) for v in range(self._snapshot.version, first - 1, -1)]

    # -- manifest facts ---------------------------------------------------------------------------
    @property
    def has_stable_row_ids(self) -> bool:
        """Whether the table keeps stable row ids (``_rowid`` survives compaction and updates)."""
        return self._snapshot.has_stable_row_ids

    @property
    def has_index(self) -> bool:
        """Whether this version has any index."""
        return len(self.describe_indices()) > 0

    @property
    def max_field_id(self) -> int:
        """The largest field id the schema or any data file of this version uses (-1: none), as pylance."""
        m = self._snapshot.manifest
        ids = [f.id for f in m.fields]
        ids += [i for frag in m.fragments for df in frag.files for i in df.fields]
        return max(ids, default=-1)

    @property
    def metadata(self) -> dict[str, str]:
        """The table metadata (pylance's ``update_metadata`` writes it)."""
        return dict(self._snapshot.manifest.table_metadata)

    @property
    def schema_metadata(self) -> dict[str, str]:
        """The schema's metadata, decoded as UTF-8 as pylance does."""
        return {k: v.decode("utf-8", "replace") for k, v in self._snapshot.manifest.schema_metadata.items()}

    def config(self) -> dict[str, str]:
        """The table's configuration (pylance's ``update_config`` writes it)."""
        return dict(self._snapshot.manifest.config)

    def fragment_ids(self) -> BitMap:
        """The ids of this version's fragments, as a roaring bitmap (pylance returns its own Bitmap)."""
        return BitMap(f.id for f in self._snapshot.fragments)

    def base_paths(self) -> dict[int, DatasetBasePath]:
        """The base paths the manifest registers, by id (``{}`` when there are none)."""
        return {bp.id: DatasetBasePath(bp.id, bp.name if bp.HasField("name") else None, bp.path,
                                       bool(bp.is_dataset_root))
                for bp in self._snapshot.manifest.base_paths}

    @property
    def initial_storage_options(self) -> dict[str, str] | None:
        """The ``storage_options`` the dataset was opened with (``None`` when none)."""
        return dict(self._storage_options) if self._storage_options else None

    def latest_storage_options(self) -> dict[str, str] | None:
        """The storage options in use; lance_duck never refreshes them, so the initial ones."""
        return self.initial_storage_options

    @property
    def stats(self) -> LanceStats:
        """Statistics about the dataset: ``ds.stats.dataset_stats()``."""
        return LanceStats(self)

    def validate(self) -> None:
        """Check that every data file of this version is there and agrees with the manifest.

        Raises:
            FileNotFoundError: a data or deletion file is missing.
            CorruptFileError: a file disagrees with the manifest (rows, fields, types).
        """
        for frag in self._snapshot.fragments:
            for ref in frag.files:
                self._snapshot.open_data_file(ref)
            frag.deleted_offsets()

    # -- files ------------------------------------------------------------------------------------
    def all_files(self) -> pa.RecordBatchReader:
        """Every file stored under the table root, recursively, as pylance's ``all_files()``.

        Files of other base paths are not listed (as pylance).

        Returns:
            A reader of ``base_uri`` (dictionary of strings: :attr:`uri`), ``path`` (relative to the
            root), ``size_bytes`` and ``last_modified`` (``timestamp[us, UTC]``) rows, in listing order.

        Examples:
            >>> import lance_duck
            >>> files = lance_duck.dataset(lance_duck.sample_path()).all_files().read_all()
            >>> files.column_names
            ['base_uri', 'path', 'size_bytes', 'last_modified']
        """
        from .table_files import all_files
        return all_files(self._snapshot, self._snapshot.uri)

    def tracked_files(self, *, min_version: int | None = None,
                      progress: Callable[[int, int | None], Any] | None = None) -> pa.RecordBatchReader:
        """The files every version's manifest refers to, as pylance's ``tracked_files()``.

        Args:
            min_version: only versions at least this one (``None``: every version of the branch).
            progress: called after each manifest with ``(manifests_processed, manifests_total)``.

        Returns:
            A reader of ``version`` (int64), ``base_uri`` (dictionary of strings), ``path`` (relative
            to ``base_uri``) and ``type`` (dictionary of strings: ``manifest``, ``transaction file``,
            ``data file``, ``deletion file``, ``index file``) rows; newest version first (pylance
            documents its order as non-deterministic).

        Raises:
            InvalidArgumentError: ``min_version`` is not an integer, or ``progress`` is not callable.

        Examples:
            >>> import lance_duck
            >>> ds = lance_duck.dataset(lance_duck.sample_path())
            >>> ds.tracked_files(min_version=6).read_all().column("type").to_pylist()[0]
            'manifest'
        """
        from .table_files import tracked_files
        if progress is not None and not callable(progress):
            raise InvalidArgumentError(f"tracked_files: progress must be callable, not {progress!r}")
        return tracked_files(self._snapshot, self._snapshot.uri, min_version, progress)

    def get_ivf_model(self, index_name: str) -> IvfModel:
        """The IVF model of a vector index, as pylance's ``get_ivf_model``: ``centroids``
        (``pa.FixedSizeListArray``), ``distance_type`` and ``num_partitions``.

        Args:
            index_name: the vector index's name (``describe_indices()``).

        Raises:
            InvalidArgumentError: no index of that name, or not a vector index (a ``ValueError``, as pylance's).
            UnsupportedFeatureError: a vector index lance_duck cannot read (named).

        Examples:
            >>> import lance_duck
            >>> ds = lance_duck.dataset(lance_duck.sample_path())
            >>> try:
            ...     ds.get_ivf_model("no_such_index")
            ... except ValueError as e:
            ...     print(type(e).__name__)
            InvalidArgumentError
        """
        from ..search.ivf_model import get_ivf_model
        return get_ivf_model(self._snapshot, index_name)

    def centroids(self, *, index_name: str | None = None, column: str | None = None) -> pa.FixedSizeListArray:
        """The IVF centroids of a vector index, as pylance's ``centroids``: one row per partition.

        Args:
            index_name: the vector index's name.
            column: without ``index_name``, the first IVF index on this column.

        Raises:
            InvalidArgumentError: neither argument, no such index, no IVF index on ``column``, or not a
                vector index (``ValueError``s; pylance raises ``KeyError`` for the column case).

        Examples:
            >>> import lance_duck
            >>> try:
            ...     lance_duck.dataset(lance_duck.sample_path()).centroids()
            ... except ValueError as e:
            ...     print(e)
            Must provide 'index_name' or 'column'.
        """
        from ..search.ivf_model import default_ivf_index, get_ivf_model
        if index_name is None:
            if column is None:
                raise InvalidArgumentError("Must provide 'index_name' or 'column'.")
            if not isinstance(column, str):
                raise InvalidArgumentError(f"centroids: column must be a column name (str), not {column!r}")
            index_name = default_ivf_index(self._snapshot, column)
        return get_ivf_model(self._snapshot, index_name).centroids

    def prewarm_index(self, name: str, *, with_position: bool = False,
                      index_segments: Iterable[str | uuid.UUID] | None = None) -> None:
        """Read an index's files into lance_duck's process-wide index cache, as pylance's
        ``prewarm_index``: later searches with it read no index bytes while it stays cached
        (``lance_duck.configure(index_cache_bytes=...)`` bounds the cache).

        Args:
            name: the index name (``describe_indices()``); BTREE, BITMAP, LABEL_LIST, ZONEMAP,
                BLOOMFILTER, NGRAM, INVERTED and IVF vector indices.
            with_position: an INVERTED index's positions too (phrase queries), when it keeps them.
            index_segments: only these segment UUIDs of the index (``None``: every segment).

        Raises:
            InvalidArgumentError: no index of that name (a ``ValueError``; pylance raises ``RuntimeError``
                "Lance index not found"), or a UUID that is not one of its segments.
            UnsupportedFeatureError: an index type lance_duck does not prewarm (MemWAL, ...), named.

        Examples:
            >>> import lance_duck
            >>> try:
            ...     lance_duck.dataset(lance_duck.sample_path()).prewarm_index("no_such_index")
            ... except ValueError as e:
            ...     print(type(e).__name__)
            InvalidArgumentError
        """
        from ..index.prewarm import prewarm_index
        prewarm_index(self._snapshot, name, index_segments, with_position)

    def mem_wal_index_details(self) -> dict[str, Any] | None:
        """``None`` when the table has no MemWAL index, as pylance's ``mem_wal_index_details()``.

        Raises:
            UnsupportedFeatureError: the table has a MemWAL index (lance_duck does not read its details).

        Examples:
            >>> import lance_duck
            >>> lance_duck.dataset(lance_duck.sample_path()).mem_wal_index_details() is None
            True
        """
        from ..index import index_segments
        for seg in index_segments(self._snapshot):
            if seg.index_type == "MemWal" or seg.name == "__lance_mem_wal":
                raise UnsupportedFeatureError(
                    f"mem_wal_index_details: {self._snapshot.uri} has a MemWAL index ({seg.name!r}); "
                    "lance_duck does not read MemWAL index details (use pylance)")
        return None

    # -- reads ------------------------------------------------------------------------------------
    def slice(self, start: int, end: int, columns: Columns = None) -> pa.Table:
        """Rows ``start`` (inclusive) to ``end`` (exclusive) by position, deleted rows left out.

        Raises:
            InvalidArgumentError: ``start`` negative or ``end`` before ``start``.

        Examples:
            >>> import lance_duck
            >>> lance_duck.dataset(lance_duck.sample_path()).slice(0, 2, columns=["order_id"]).num_rows
            2
        """
        start, end = int_arg(start, "start", "slice"), int_arg(end, "end", "slice")
        if start < 0:
            raise InvalidArgumentError(f"slice: start must be non-negative, got {start}")
        if end < start:
            raise InvalidArgumentError(f"slice: end ({end}) must be >= start ({start})")
        return self.to_table(columns=columns, offset=start, limit=end - start)

    def sample(self, num_rows: int, columns: Columns = None, randomize_order: bool = True,
               **kwargs: Any) -> pa.Table:
        """``num_rows`` rows drawn at random without replacement (pylance's ``sample``).

        Args:
            num_rows: how many rows; at most the dataset's row count.
            columns: as in :meth:`to_table`.
            randomize_order: ``False`` returns the drawn rows in table order.

        Raises:
            InvalidArgumentError: more rows asked for than the dataset has, or a negative count.
        """
        if kwargs:
            raise InvalidArgumentError(f"sample: unknown argument(s) {', '.join(sorted(kwargs))}")
        num_rows = int_arg(num_rows, "num_rows", "sample")
        total = self.count_rows()
        if num_rows < 0 or num_rows > total:
            raise InvalidArgumentError(f"sample: num_rows {num_rows} is not within 0..{total} (the row count)")
        indices = random.sample(range(total), num_rows)
        if not randomize_order:
            indices.sort()
        return self.take(indices, columns=columns)

    def to_pandas(self, columns: Columns = None, filter: Filter = None, **kwargs: Any) -> pd.DataFrame:
        """The rows as a pandas DataFrame (needs ``pip install 'lance-duck[pandas]'``).

        Takes :meth:`to_table`'s arguments.
        """
        return table_to_pandas(self.to_table(columns=columns, filter=filter, **kwargs))


def table_to_pandas(table: pa.Table, **kwargs: Any) -> pd.DataFrame:
    """``table.to_pandas(**kwargs)``, with a clear error naming the extra when pandas is missing."""
    try:
        import pandas  # noqa: F401
    except ImportError:
        raise UnsupportedFeatureError(
            "to_pandas needs pandas, which is not installed: pip install 'lance-duck[pandas]'") from None
    return table.to_pandas(**kwargs)


def install_refusals(cls: type, owner: str, writers: tuple[str, ...], engine_only: dict[str, str]) -> None:
    """Give ``cls`` a refusing method for every pylance writer and engine-only member it does not define."""
    for name in writers:
        if name not in cls.__dict__:
            setattr(cls, name, refuse_writer(owner, name))
    for name, why in engine_only.items():
        if name not in cls.__dict__:
            setattr(cls, name, refuse_engine_only(owner, name, why))
