"""Lance scans run by DuckDB that remember the error they raised.

DuckDB turns an exception raised while it pulls batches into ``duckdb.InvalidInputException``
carrying a Python traceback as text.  The datasets :func:`lance_duck.sql` registers record
their errors here, so :class:`~lance_duck.integrations.duckdb.LanceRelation` can raise the
original one (the errors are kept in :mod:`.error_ring`, which the relation reads without
importing the scan layer).  (Kept apart from the module holding the default connection: a registered
object must not reach that connection through its class, or neither is ever freed.)
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

import pyarrow as pa

from ...scan.dataset import LanceDataset
from ...scan.duckdb_source import HAS_PROTOCOL, stream_schema
from ...scan.scanner import LanceScanner
from ...scan.views import HiddenColumnsDataset
from .error_ring import fresh, last_seq, record, recorded_since

def _recording(reader: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    try:
        yield from reader
    except Exception as e:
        record(e)
        raise


def _watched(make: Callable[[], pa.RecordBatchReader]) -> pa.RecordBatchReader:
    """The reader ``make()`` returns, recording an error raised while it is made or read."""
    try:
        reader = make()
    except Exception as e:
        record(e)
        raise
    return pa.RecordBatchReader.from_batches(reader.schema, _recording(reader))


class _WatchedScanner(LanceScanner):
    """A scan run by DuckDB: an error it raises is recorded for :class:`LanceRelation` -- while
    DuckDB pulls batches, and while the reader is made (the few rows an index selects are read
    then: a damaged deletion file, say, fails there)."""

    def to_reader(self) -> pa.RecordBatchReader:
        return _watched(super().to_reader)

    def _dictionary_reader(self) -> pa.RecordBatchReader:
        return _watched(super()._dictionary_reader)

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        return _recording(super().to_batches())

    def count_rows(self) -> int:
        try:
            return super().count_rows()
        except Exception as e:
            record(e)
            raise


class _WatchedDataset(LanceDataset):
    """The dataset lance_duck.sql registers: scans record their errors (see :class:`LanceRelation`)."""

    if not HAS_PROTOCOL:
        @property
        def schema(self) -> pa.Schema:
            """What DuckDB before 2.0 binds a pyarrow dataset with: the schema of the batches its
            scans return (blob columns as their descriptions), as :meth:`__arrow_c_schema__`."""
            return stream_schema(super().schema, self._snapshot.read_schema)

    def scanner(self, *args: Any, **kwargs: Any) -> LanceScanner:
        try:
            return _WatchedScanner(self, *args, **kwargs)
        except BaseException as e:
            record(e)
            raise


class _WatchedView(_WatchedDataset, HiddenColumnsDataset):
    """A watched dataset that shows hidden columns or some columns only (:mod:`lance_duck.scan.views`)."""

    def scanner(self, *args: Any, **kwargs: Any) -> LanceScanner:
        columns = kwargs.pop("columns", args[0] if args else None)
        columns, kwargs = self.scan_arguments(columns, kwargs)
        return super().scanner(columns, *args[1:], **kwargs)


def watched(ds: LanceDataset) -> _WatchedDataset:
    if isinstance(ds, _WatchedDataset):
        return ds
    cls = _WatchedView if isinstance(ds, HiddenColumnsDataset) else _WatchedDataset
    w = cls.__new__(cls)
    w.__dict__.update(ds.__dict__)
    return w

__all__ = ["fresh", "last_seq", "record", "recorded_since", "watched"]
