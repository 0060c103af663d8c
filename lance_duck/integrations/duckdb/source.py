"""Registering a dataset so that DuckDB's planner knows its size.

DuckDB estimates a join order from each scan's cardinality. A ``pyarrow.dataset.Dataset`` tells DuckDB
none, so every Lance scan is planned as one row and multi-table joins are ordered blindly (TPC-H q5
joined the 6M-row ``lineitem`` first and pushed 1.2M rows through the next join; q9 did worse).
DuckDB 2 reads Python objects through its Arrow *source* protocol (``duckdb._sources``: ``rows()``,
``accepts(predicate)``, ``stream(columns, filters)``), which takes a row count. :func:`register` hands
DuckDB its own pyarrow-dataset source for the dataset (so the same filters are pushed and the same
``scanner(columns=, filter=)`` calls are made as by ``con.register``) with ``rows()`` answered from the
manifest: live rows, without reading a file. A dataset with a filter of its own (a view) reports a
fifth of them, DuckDB's own guess for a filtered scan. A DuckDB without the protocol (before 2.0)
gets ``con.register``.

The source's ``stream`` (:func:`dictionary_stream`) makes the same scanner call and reads it through
``LanceScanner._dictionary_reader``: string columns stored with page dictionaries reach DuckDB as Arrow
dictionaries (a group by on one: 4x less CPU in DuckDB; no string of the column is materialised).
"""
from __future__ import annotations

from typing import Any

import duckdb

from ...scan.dataset import LanceDataset

#: The share of rows a dataset with a filter of its own is estimated to keep (DuckDB's default
#: selectivity of a filter it cannot estimate).
FILTERED_SHARE = 0.2

_source_class: Any = None


def _dataset_source() -> Any:
    """DuckDB's source class for pyarrow datasets, subclassed to report a row count; None without one."""
    global _source_class
    if _source_class is None:
        try:
            from duckdb._sources.pyarrow import PyArrowDatasetSource
        except ImportError:
            _source_class = False
        else:
            class LanceDatasetSource(PyArrowDatasetSource):
                """A lance_duck dataset as DuckDB's pyarrow-dataset source, with its row count."""

                def rows(self) -> int | None:
                    return estimated_rows(self.obj)

                def stream(self, columns: Any, filters: Any) -> tuple[object, bool]:
                    return dictionary_stream(self, columns, filters)

            _source_class = LanceDatasetSource
    return _source_class or None


def dictionary_stream(src: Any, columns: Any, filters: Any) -> tuple[object, bool]:
    """DuckDB's pyarrow-dataset ``stream`` (the same scanner call: filters to an Arrow expression,
    columns by name), read through ``_dictionary_reader``: string columns stored with page
    dictionaries reach DuckDB as Arrow dictionaries, which it groups, compares and hashes once
    per distinct value (DuckDB binds the declared schema: the column is still a ``VARCHAR``)."""
    from duckdb._sources.to_arrow import to_arrow
    schema = src.declared_schema()
    mask = None
    for predicate in filters:
        term = to_arrow(predicate, schema)
        mask = term if mask is None else mask & term
    names = schema.names
    chosen = None if columns is None else [names[i] for i in columns]
    scanner = type(src.obj).scanner(src.obj, columns=chosen, filter=mask)
    reader = scanner._dictionary_reader() if hasattr(scanner, "_dictionary_reader") else scanner.to_reader()
    return reader.__arrow_c_stream__(), chosen is not None


def estimated_rows(ds: LanceDataset) -> int:
    """Live rows from the manifest (deletion counts as recorded; no file read); a fifth of them for a
    dataset with a filter of its own."""
    n = 0
    for f in ds._snapshot.fragments:
        n += f.physical_rows - (f.deletion.num_deleted_rows if f.deletion is not None else 0)
    return int(n * FILTERED_SHARE) if ds._base_filter is not None else n


def register(con: duckdb.DuckDBPyConnection, name: str, ds: LanceDataset) -> None:
    """Register ``ds`` on ``con`` as ``name`` (as ``con.register``), with its row count where DuckDB
    takes one.

    Examples:
        >>> import duckdb, lance_duck
        >>> con = duckdb.connect()
        >>> register(con, "orders", lance_duck.dataset(lance_duck.sample_path()))
        >>> con.sql("select count(*) from orders").fetchall()
        [(1902,)]
    """
    cls = _dataset_source()
    if cls is None or not hasattr(con, "_register_arrow_source"):
        con.register(name, ds)
        return
    con._register_arrow_source(name, cls(ds))


__all__ = ["FILTERED_SHARE", "dictionary_stream", "estimated_rows", "register"]
