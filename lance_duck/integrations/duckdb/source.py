"""Registering a dataset so that DuckDB's planner knows its size.

DuckDB estimates a join order from each scan's cardinality. A plain ``pyarrow.dataset.Dataset`` tells
DuckDB none, so every Lance scan was planned as one row and multi-table joins were ordered blindly
(TPC-H q5 joined the 6M-row ``lineitem`` first and pushed 1.2M rows through the next join; q9 did
worse). DuckDB 2 reads Python objects through its Arrow *source* protocol (``duckdb._sources``:
``rows()``, ``accepts(predicate)``, ``stream(columns, filters)``), which takes a row count, and a
``LanceDataset`` is such a source itself (``scan/duckdb_source.py``: ``rows()`` from the manifest,
exact filters in DuckDB's meaning). :func:`register` registers it through that protocol; a DuckDB
without the protocol (before 2.0) gets ``con.register``.
"""
from __future__ import annotations

import duckdb

from ...scan.dataset import LanceDataset
from ...scan.duckdb_source import FILTERED_SHARE, HAS_PROTOCOL


def estimated_rows(ds: LanceDataset) -> int:
    """Live rows from the manifest (deletion counts as recorded; no file read); a fifth of them for a
    dataset with a filter of its own."""
    return int(ds.rows() or 0)


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
    if not HAS_PROTOCOL or not hasattr(con, "_register_arrow_source"):
        con.register(name, ds)
        return
    con._register_arrow_source(name, ds)


__all__ = ["FILTERED_SHARE", "estimated_rows", "register"]
