"""A dataset as its own DuckDB Arrow source: row count, exact filters in DuckDB's meaning, the stream.

DuckDB 2 reads a Python object through its Arrow *source* protocol (``duckdb._sources``, private):
``adapt(obj)`` picks a source for the object -- ``PyArrowDatasetSource`` for a
``pyarrow.dataset.Dataset`` -- unless the object already *is* a ``Source``, which it then uses as it
is. :class:`DuckDBSource` is a base of :class:`~lance_duck.scan.dataset.LanceDataset` and derives
from DuckDB's ``ArrowScanSource`` when the running DuckDB has one (with DuckDB 1.x it does not, and
DuckDB scans the dataset as any pyarrow dataset). Opening a dataset does not import DuckDB (~50 ms):
when this module loads before ``duckdb``, :class:`DuckDBSource` starts from a placeholder base and a
one-shot import hook (a ``sys.meta_path`` finder for the top-level ``duckdb`` only) rebases it on
``ArrowScanSource`` once DuckDB has loaded, so datasets opened earlier are sources too. So ``duckdb.sql("select ... from ds")`` and ``con.register("t", ds)`` reach the methods
below, and the dataset stays a ``pyarrow.dataset.Dataset`` for everyone else.

* ``rows()``: live rows from the manifest (no file read), DuckDB's cardinality for join order; a
  fifth of them for a dataset with a filter of its own. DuckDB does not answer ``count(*)`` from it:
  it still asks for the first column.
* ``accepts(predicate)``: every predicate DuckDB's own pyarrow-dataset source pushes (its
  ``to_arrow`` translation, scanned here as that pyarrow Expression), and also the ones it refuses
  because a NaN could satisfy them (``x > 1.5``, ``x >= c``, ``x != c``, ``NOT`` over a float
  column): pyarrow's statistics pruning leaves NaN out, so it cannot take them. Those are
  translated here into lance_duck's filter model (:mod:`lance_duck.predicate.bound`), whose
  floats follow DuckDB's total order -- NaN equals NaN and sorts above every number, ``-0.0 = 0.0``
  -- and whose pruning (zone maps' NaN counts, fragment statistics) keeps every row that may match:
  ``AND`` / ``OR`` / ``NOT``, ``col op literal`` (``= != < <= > >=``), ``IN`` (literals, no NULL,
  no NaN), ``IS [NOT] NULL``, on boolean, integer, float, string, binary, date, naive
  timestamp, zoned timestamp (microseconds) and decimal columns (struct fields too), with a literal
  that is exactly a value of the column's type. Anything else is refused and DuckDB filters it.
* ``stream(columns, filters)``: ``scanner(columns=..., filter=...)`` with the accepted predicates
  ANDed, as an Arrow C stream read through ``LanceScanner._dictionary_reader``: string columns
  stored with page dictionaries reach DuckDB as Arrow dictionaries (a group by on one: 4x less CPU
  in DuckDB); ``to_reader`` / ``to_table`` keep the declared schema.
"""
from __future__ import annotations

import contextlib
import importlib.abc
import sys
import types
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError

if TYPE_CHECKING:
    from ..predicate import CompiledFilter
    from ..table.snapshot import Snapshot

#: The share of rows a dataset with a filter of its own is estimated to keep (DuckDB's default
#: selectivity of a filter it cannot estimate).
FILTERED_SHARE = 0.2


def _protocol() -> tuple[Any, Any, Any]:
    """DuckDB's (ArrowScanSource, to_arrow, nan_may_satisfy), or Nones without the protocol.
    Imports duckdb: called once DuckDB is running (by DuckDB's calls, or the import hook below);
    a few microseconds then (the modules are in ``sys.modules``)."""
    try:
        import duckdb._sources as sources
        from duckdb._sources.arrow import ArrowScanSource
        from duckdb._sources.to_arrow import nan_may_satisfy, to_arrow
    except ImportError:
        return None, None, None
    if not (callable(getattr(sources, "adapt", None)) and callable(getattr(ArrowScanSource, "stream", None))
            and callable(getattr(ArrowScanSource, "accepts", None))):
        return None, None, None
    return ArrowScanSource, to_arrow, nan_may_satisfy


def has_protocol() -> bool:
    """Whether the running DuckDB reads datasets through its Arrow-source protocol (DuckDB >= 2.0);
    imports duckdb."""
    return _protocol()[0] is not None


if TYPE_CHECKING:
    #: Whether the running DuckDB reads datasets through its Arrow-source protocol (DuckDB >= 2.0):
    #: :func:`has_protocol`, resolved when first read (it imports duckdb).
    HAS_PROTOCOL: bool


def __getattr__(name: str) -> Any:
    # HAS_PROTOCOL is resolved when first asked for (it imports duckdb), not when this module loads
    if name == "HAS_PROTOCOL":
        return has_protocol()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _SourceBase:
    """The base :class:`DuckDBSource` starts from; replaced by DuckDB's ``ArrowScanSource`` as soon
    as DuckDB is imported (:func:`_rebase`). Python refuses to reassign the bases of a class whose
    only base is ``object``: this class is what gets replaced."""


def _rebase() -> None:
    """Derive :class:`DuckDBSource` (and so every dataset, made before or after) from DuckDB's
    ``ArrowScanSource`` when the running DuckDB has the protocol; with DuckDB 1.x, nothing."""
    base = _protocol()[0]
    if base is not None and DuckDBSource.__bases__ != (base,):
        DuckDBSource.__bases__ = (base,)


class _DuckDBImportHook(importlib.abc.MetaPathFinder):
    """Rebases :class:`DuckDBSource` once the top-level ``duckdb`` module has finished loading, so
    opening a dataset does not import DuckDB (~50 ms); removes itself at DuckDB's import."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "duckdb":
            return None
        _uninstall_hook()
        spec = None
        for finder in list(sys.meta_path):      # the other finders, in the import's order
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        if spec is None:                        # no DuckDB installed (yet): keep watching
            sys.meta_path.insert(0, self)
            return None
        loader: Any = getattr(spec, "loader", None)
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        def exec_then_rebase(module: types.ModuleType) -> None:
            try:
                exec_module(module)
            finally:
                with contextlib.suppress(AttributeError):
                    del loader.exec_module      # back to the class's method
            _rebase()

        try:
            loader.exec_module = exec_then_rebase
        except AttributeError:      # a loader that takes no attribute: DuckDB reads datasets as
            pass                    # pyarrow datasets (same rows, no manifest row count)
        return spec


_HOOK = _DuckDBImportHook()


def _uninstall_hook() -> None:
    with contextlib.suppress(ValueError):
        sys.meta_path.remove(_HOOK)


def stream_schema(declared: pa.Schema, read: pa.Schema) -> pa.Schema:
    """``declared`` (a dataset's schema) as its scans' batches have it: a column that scans read as
    another type -- a blob column, read as its description -- takes that type from ``read`` (the
    table's read schema); columns ``read`` does not hold (hidden ones) stay as declared."""
    names = set(read.names)
    fields = [read.field(f.name) if f.name in names and not read.field(f.name).type.equals(f.type) else f
              for f in declared]
    return pa.schema(fields, metadata=declared.metadata)


class DuckDBSource(_SourceBase):
    """DuckDB's Arrow-source protocol on a dataset (its methods are called by DuckDB 2, nothing else).

    Examples:
        >>> import duckdb, lance_duck
        >>> ds = lance_duck.dataset(lance_duck.sample_path())
        >>> duckdb.sql("select count(*) from ds where amount > 490").fetchall()
        [(51,)]
    """

    one_shot = False
    #: A dataset is one pinned version: its schema never changes.
    schema_is_stable = True
    pull_under_gil = False
    #: Every stream is read to its end (:func:`read_to_the_end`): after the first small task, tasks
    #: are full-size at once (no ramp kept for an engine that may stop early).
    _reads_whole = False

    _snapshot: Snapshot
    _base_filter: CompiledFilter | None

    if TYPE_CHECKING:   # the dataset class (a pyarrow Dataset) has these
        schema: pa.Schema

        def scanner(self, columns: Any = None, filter: Any = None, *args: Any, **kwargs: Any) -> Any: ...

    @property
    def obj(self) -> DuckDBSource:
        """The object DuckDB reads: the dataset itself."""
        return self

    def rows(self) -> int | None:
        """Live rows from the manifest (deletion counts as recorded, no file read); a fifth of them
        for a dataset with a filter of its own. DuckDB's cardinality estimate for the scan."""
        n = 0
        for f in self._snapshot.fragments:
            n += f.physical_rows - (f.deletion.num_deleted_rows if f.deletion is not None else 0)
        return int(n * FILTERED_SHARE) if self._base_filter is not None else n

    def __arrow_c_schema__(self) -> object:
        """The schema streams have, as an Arrow PyCapsule (DuckDB binds with it without opening a
        scan): the dataset's, with blob columns as the descriptions scans return for them."""
        return stream_schema(self.schema, self._snapshot.read_schema).__arrow_c_schema__()

    def accepts(self, predicate: Any) -> bool:
        """Whether every stream can apply ``predicate`` exactly as DuckDB would (see the module)."""
        from .duckdb_predicates import NotPushable, pushed
        try:
            _, to_arrow, nan_may_satisfy = _protocol()
            pushed(predicate, self.schema, to_arrow, nan_may_satisfy)
        except NotPushable:
            return False
        return True

    def stream(self, columns: Sequence[int] | None, filters: Sequence[Any]) -> tuple[object, bool]:
        """An Arrow C stream of ``columns`` (schema positions; None: all) of the rows passing every
        predicate in ``filters`` (each one accepted), and True when it holds exactly ``columns``."""
        names = self.schema.names
        if columns is not None and (not isinstance(columns, Sequence) or not all(
                isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(names) for i in columns)):
            raise InvalidArgumentError(f"columns must be positions in the schema of {len(names)} columns, "
                                       f"got {columns!r:.80}")
        if not isinstance(filters, Sequence) or isinstance(filters, (str, bytes)):
            raise InvalidArgumentError(f"filters must be a sequence of DuckDB predicates, got {filters!r:.80}")
        chosen = None if columns is None else [names[i] for i in columns]
        scanner = self.scanner(columns=chosen, filter=self._duckdb_filter(filters))
        if self._reads_whole:
            scanner._reads_whole = True
        # string columns stored with page dictionaries reach DuckDB as Arrow dictionaries, which it
        # groups, compares and hashes once per distinct value (it binds the declared VARCHAR)
        reader = scanner._dictionary_reader() if hasattr(scanner, "_dictionary_reader") else scanner.to_reader()
        return reader.__arrow_c_stream__(), chosen is not None

    def _duckdb_filter(self, filters: Sequence[Any]) -> pc.Expression | CompiledFilter | None:
        """The AND of DuckDB's accepted predicates (None for none), see :mod:`.duckdb_predicates`."""
        from .duckdb_predicates import duckdb_filter
        _, to_arrow, nan_may_satisfy = _protocol()
        return duckdb_filter(filters, self.schema, to_arrow, nan_may_satisfy)


if "duckdb" in sys.modules:
    _rebase()
else:
    sys.meta_path.insert(0, _HOOK)

_D = TypeVar("_D", bound=DuckDBSource)


def read_to_the_end(ds: _D) -> _D:
    """A copy of ``ds`` (same version, filter and class) for a query that reads every stream to its
    end (an aggregate without LIMIT, see ``lance_duck.sql``): its streams' tasks grow from the
    first small one (512 rows, where the read-ahead learns a row's bytes) straight to full size,
    without the ramp (8K, 32K, 128K rows) kept for an engine that stops early -- each task costs
    a fixed ~0.3-0.9 ms per column; a scan of fixed-width columns only starts with full-size tasks
    (a row's bytes are known from the types), and a scan of strings takes longer tasks
    (``planning.WHOLE_READ_TASK_ROWS``). Results are the same; only the task sizes change.

    Args:
        ds: the dataset (a :class:`~lance_duck.scan.dataset.LanceDataset`), left unchanged.

    Returns:
        A dataset of the same class, version and filter, registered in its place.

    Examples:
        >>> import lance_duck
        >>> from lance_duck.scan.duckdb_source import read_to_the_end
        >>> ds = read_to_the_end(lance_duck.dataset(lance_duck.sample_path()))
        >>> ds.count_rows()
        1902
    """
    copy = type(ds).__new__(type(ds))
    copy.__dict__.update(ds.__dict__)
    copy._reads_whole = True
    return copy


__all__ = ["FILTERED_SHARE", "HAS_PROTOCOL", "DuckDBSource", "has_protocol", "read_to_the_end"]
