"""A dataset whose schema shows the scan's hidden columns (or only some columns), for engines that bind
names by schema.

pylance's scanner returns ``_rowid``, ``_rowaddr``, ``_row_created_at_version`` and
``_row_last_updated_at_version`` when asked for them by name, but a dataset's schema does not list them,
so DuckDB cannot bind ``select _rowid from t``. :func:`with_hidden_columns` gives a dataset of the same
version whose schema ends with the hidden columns asked for (uint64), so that a query naming them binds,
reads and filters on them; ``SELECT *`` over it includes them too. Scans may get a default batch size.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pads

from ..errors import InvalidArgumentError
from .dataset import LanceDataset
from .filters import VIRTUAL_COLUMNS, and_filters, bind_filter
from .interop import placeholder_native_state
from .params import Columns, Filter
from .scanner import LanceScanner

HIDDEN_COLUMNS = VIRTUAL_COLUMNS


def with_hidden_columns(ds: LanceDataset, hidden: Sequence[str] = (), *, batch_size: int | None = None,
                        columns: Sequence[str] | None = None) -> LanceDataset:
    """``ds`` (same version and filter) showing only ``columns`` (top-level names; default all) followed by
    ``hidden``; scans default to ``batch_size`` rows per batch when given.

    Raises:
        InvalidArgumentError: a name that is not one of :data:`HIDDEN_COLUMNS`, or a table column
            with that name (it would be ambiguous).
    """
    names = tuple(dict.fromkeys(hidden))
    unknown = [n for n in names if n not in HIDDEN_COLUMNS]
    if unknown:
        raise InvalidArgumentError(f"{', '.join(unknown)}: not a hidden column ({', '.join(HIDDEN_COLUMNS)})")
    clash = [n for n in names if n in ds.schema.names]
    if clash:
        raise InvalidArgumentError(f"{ds.uri} has a column named {clash[0]}: it cannot also show the hidden one")
    if columns is not None:
        missing = [c for c in columns if c not in ds.schema.names]
        if missing:
            raise InvalidArgumentError(f"{ds.uri}: no column {missing[0]!r} (columns: {', '.join(ds.schema.names)})")
    if not names and batch_size is None and columns is None:
        return ds
    return HiddenColumnsDataset(ds, names, batch_size, None if columns is None else tuple(dict.fromkeys(columns)))


class HiddenColumnsDataset(LanceDataset):
    """A :class:`LanceDataset` whose schema ends with some of the scan's hidden columns."""

    def __init__(self, base: LanceDataset, hidden: tuple[str, ...], batch_size: int | None,
                 columns: tuple[str, ...] | None = None) -> None:
        shown = list(base.schema) if columns is None else [base.schema.field(c) for c in columns]
        schema = pa.schema(shown + [pa.field(n, pa.uint64()) for n in hidden], metadata=base.schema.metadata)
        pads.FileSystemDataset.__init__(self, *placeholder_native_state(schema, base.uri))
        self._snapshot = base._snapshot
        self._storage_options = base._storage_options
        self._base_filter = base._base_filter
        self._filter_source = base._filter_source
        self._hidden = hidden
        self._batch_size = batch_size
        self._columns = columns
        self._schema = schema

    @property
    def schema(self) -> pa.Schema:
        """The table's schema followed by the hidden columns shown (uint64)."""
        return self._schema

    @property
    def hidden_columns(self) -> tuple[str, ...]:
        """The hidden columns this dataset shows."""
        return self._hidden

    def scanner(self, columns: Columns = None, filter: Filter = None, *args: Any, **kwargs: Any) -> LanceScanner:
        """As :meth:`LanceDataset.scanner`; ``columns=None`` reads the columns shown, hidden ones too."""
        columns, kwargs = self.scan_arguments(columns, kwargs)
        return super().scanner(columns, filter, *args, **kwargs)

    def scan_arguments(self, columns: Columns, kwargs: dict[str, Any]) -> tuple[Columns, dict[str, Any]]:
        """A scan's columns and options with this view's defaults (its columns, its batch size)."""
        if columns is None:
            columns = self._schema.names
        if self._batch_size is not None and kwargs.get("batch_size") is None:
            kwargs = {**kwargs, "batch_size": self._batch_size}
        return columns, kwargs

    def filter(self, expression: Filter) -> LanceDataset:
        """A new dataset applying ``expression`` too, showing the same hidden columns."""
        bound = and_filters(self._base_filter, bind_filter(expression, self._snapshot.arrow_schema))
        src = expression if self._filter_source is None else (self._filter_source, expression)
        base = LanceDataset(self._snapshot, storage_options=self._storage_options, base_filter=bound,
                            _filter_source=src)
        return HiddenColumnsDataset(base, self._hidden, self._batch_size, self._columns)
