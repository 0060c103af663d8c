"""LanceDataset: one pinned version of a Lance table (a ``pyarrow.dataset.Dataset`` subclass).

DuckDB accepts it because it *is* a ``pyarrow.dataset.Dataset``; it reads ``schema`` and
calls ``type(ds).scanner(ds, columns=..., filter=...)`` then ``to_reader()``. The base
class's C++ state is never initialised, so every inherited method is overridden. Nothing
mutates in place: ``checkout_version`` and ``filter`` return new datasets. A dataset
pickles as (uri, version, branch, storage options, filter), never as data.
"""
from __future__ import annotations

from typing import Any, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from ..errors import InvalidArgumentError, UnsupportedFeatureError
from .filters import BoundFilter, and_filters, bind_filter
from .fragment import LanceFragment
from .scanner import LanceScanner


def dataset(uri, version: int | str | None = None, asof=None, *, branch: str | None = None,
            storage_options: dict | None = None) -> "LanceDataset":
    """Open a Lance table at a version (number or tag), a time (``asof``) or a branch."""
    from ..table.snapshot import open_snapshot
    snap = open_snapshot(uri, version, asof, branch=branch, storage_options=storage_options)
    return LanceDataset(snap, storage_options=storage_options)


class Tags:
    """``ds.tags``: read-only view of the table's tags."""

    def __init__(self, snapshot):
        self._snapshot = snapshot

    def list(self) -> dict[str, dict]:
        return self._snapshot.list_tags()

    def get_version(self, tag: str) -> int:
        from ..errors import TagNotFoundError
        tags = self.list()
        if tag not in tags:
            raise TagNotFoundError(f"tag {tag!r} not found in {self._snapshot.uri}")
        return int(tags[tag]["version"])


class Branches:
    """``ds.branches``: read-only view of the table's branches."""

    def __init__(self, snapshot):
        self._snapshot = snapshot

    def list(self) -> dict[str, dict]:
        return self._snapshot.list_branches()


class LanceDataset(pads.Dataset):
    def __init__(self, snapshot, *, storage_options: dict | None = None,
                 base_filter: BoundFilter | None = None, _filter_source=None):
        # pyarrow.dataset.Dataset.__init__ is deliberately not called (no public constructor).
        self._snapshot = snapshot
        self._storage_options = storage_options
        self._base_filter = base_filter
        self._filter_source = _filter_source

    # -- identity ----------------------------------------------------------------------------
    @property
    def uri(self) -> str:
        return self._snapshot.uri

    @property
    def version(self) -> int:
        return self._snapshot.version

    @property
    def latest_version(self) -> int:
        return self._snapshot.latest_version()

    @property
    def data_storage_version(self) -> str:
        return self._snapshot.data_storage_version

    @property
    def schema(self) -> pa.Schema:
        return self._snapshot.arrow_schema

    @property
    def lance_schema(self):
        return self._snapshot.schema

    @property
    def branch(self) -> str | None:
        return self._snapshot.branch

    @property
    def partition_expression(self) -> pc.Expression:
        return pc.scalar(True)

    @property
    def tags(self) -> Tags:
        return Tags(self._snapshot)

    @property
    def branches(self) -> Branches:
        return Branches(self._snapshot)

    def versions(self) -> list[dict]:
        return self._snapshot.versions()

    def checkout_version(self, version) -> "LanceDataset":
        """A new dataset at ``version``: a number, a tag name or ``(branch, number | None)``."""
        if isinstance(version, tuple):
            if len(version) != 2:
                raise InvalidArgumentError(f"expected (branch, version), got {version!r}")
            branch, v = version
            snap = self._snapshot.checkout(v, branch=branch)
        else:
            snap = self._snapshot.checkout(version)
        return LanceDataset(snap, storage_options=self._storage_options)

    # -- indices ----------------------------------------------------------------------------------
    def describe_indices(self) -> list:
        """The table's indices at this version, like pylance's ``describe_indices()``."""
        from ..index import describe_indices
        return describe_indices(self._snapshot)

    def list_indices(self) -> list[dict]:
        """One dict per index segment, like pylance's (deprecated) ``list_indices()``."""
        from ..index import list_indices
        return list_indices(self._snapshot)

    # -- scans ------------------------------------------------------------------------------------
    def scanner(self, columns=None, filter=None, limit: int | None = None, offset: int | None = None,
                batch_size: int | None = None, with_row_id: bool = False, with_row_address: bool = False,
                fragments=None, **kwargs: Any) -> LanceScanner:
        return LanceScanner(self, columns=columns, filter=filter, limit=limit, offset=offset,
                            batch_size=batch_size, with_row_id=with_row_id,
                            with_row_address=with_row_address, fragments=fragments, **kwargs)

    def to_table(self, columns=None, filter=None, **kwargs: Any) -> pa.Table:
        return self.scanner(columns=columns, filter=filter, **kwargs).to_table()

    def to_batches(self, columns=None, filter=None, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        return self.scanner(columns=columns, filter=filter, **kwargs).to_batches()

    def head(self, num_rows: int, columns=None, filter=None, **kwargs: Any) -> pa.Table:
        return self.scanner(columns=columns, filter=filter, **kwargs).head(num_rows)

    def count_rows(self, filter=None, **kwargs: Any) -> int:
        """Exact; from manifests and deletion files alone when there is no filter."""
        if filter is None and self._base_filter is None and not kwargs:
            return self._snapshot.count_rows()
        return self.scanner(filter=filter, **kwargs).count_rows()

    def take(self, indices, columns=None, **kwargs: Any) -> pa.Table:
        """Rows at logical positions (after deletions), in the order given."""
        from .take import take_rows
        return take_rows(self._snapshot, self._snapshot.fragments, indices, columns, self._base_filter)

    # -- fragments --------------------------------------------------------------------------------
    def get_fragments(self, filter=None) -> list[LanceFragment]:
        return [LanceFragment(self, f) for f in self._snapshot.fragments]

    def get_fragment(self, fragment_id: int) -> LanceFragment | None:
        for f in self._snapshot.fragments:
            if f.id == fragment_id:
                return LanceFragment(self, f)
        return None

    # -- pyarrow.dataset.Dataset methods with no native state behind them -------------------------
    def filter(self, expression) -> "LanceDataset":
        """A new dataset whose scans all apply ``expression`` too."""
        bound = and_filters(self._base_filter, bind_filter(expression, self.schema))
        src = expression if self._filter_source is None else (self._filter_source, expression)
        return LanceDataset(self._snapshot, storage_options=self._storage_options,
                            base_filter=bound, _filter_source=src)

    def _materialized(self) -> pads.Dataset:
        return pads.dataset(self.to_table())

    def sort_by(self, sorting, **kwargs: Any):
        """Sorted copy (materialises the scan, like any full sort)."""
        return self._materialized().sort_by(sorting, **kwargs)

    def join(self, right_dataset, keys, right_keys=None, join_type="left outer", left_suffix=None,
             right_suffix=None, coalesce_keys=True, use_threads=True):
        right = right_dataset._materialized() if isinstance(right_dataset, LanceDataset) else right_dataset
        return self._materialized().join(right, keys, right_keys, join_type, left_suffix, right_suffix,
                                         coalesce_keys, use_threads)

    def join_asof(self, right_dataset, on, by, tolerance, right_on=None, right_by=None):
        right = right_dataset._materialized() if isinstance(right_dataset, LanceDataset) else right_dataset
        return self._materialized().join_asof(right, on, by, tolerance, right_on, right_by)

    def replace_schema(self, schema):
        raise UnsupportedFeatureError("a Lance dataset's schema is the table's; replace_schema is not supported")

    def _get_fragments(self, filter=None):
        return iter(self.get_fragments())

    def _scanner_options(self, options):
        return options

    # -- pickling ----------------------------------------------------------------------------------
    def __reduce__(self):
        return (_restore, (self.uri, self.version, self.branch, self._storage_options, self._filter_source))

    def __repr__(self) -> str:
        b = f", branch={self.branch!r}" if self.branch else ""
        return f"LanceDataset(uri={self.uri!r}, version={self.version}{b})"


def _restore(uri, version, branch, storage_options, filter_source) -> LanceDataset:
    ds = dataset(uri, version, branch=branch, storage_options=storage_options)
    for f in _flatten(filter_source):
        ds = ds.filter(f)
    return ds


def _flatten(src):
    if src is None:
        return []
    if isinstance(src, tuple):
        return _flatten(src[0]) + [src[1]]
    return [src]
