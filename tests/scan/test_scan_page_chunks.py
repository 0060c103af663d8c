"""A scan hands a task's pages of a fixed-width column to the engine as they were decoded.

A task whose column pages decode apart (pages with deleted rows left out while decoding, page
dictionaries beside plain pages) yields the table's batches cut at the pages' edges, not one
joined array (``ScanContext.assemble`` makes a table; ``execution._pieces`` its batches). Pinned:
every read equals pylance's, row order included, through every consumer of those batches (a
table, the batch stream, expressions over the chunked columns, offsets and limits that cut inside
a page, row ids beside them, DuckDB aggregates), and the chunked hand-over really ran.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck
from lance_duck.file.v2_1 import column as column_mod
from lance_duck.trace import decode_trace

from .conftest import assert_tables_equal
from .._page_tables import pages_of_mixed_kinds, write_small_pages

import lance  # a test dependency: missing, it must fail, not skip

N = 60_000


@pytest.fixture(autouse=True)
def short_chunks(monkeypatch):
    """Pages of 5,000 rows handed on unjoined (at the default they are joined, see the last test)."""
    monkeypatch.setattr(column_mod, "PAGE_CHUNK_MIN_ROWS", 1000)


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> str:
    p = str(tmp_path_factory.mktemp("scan_page_chunks") / "t.lance")
    write_small_pages(pages_of_mixed_kinds(N, seed=43), p, max_rows_per_file=40_000)
    lance.dataset(p).delete("id % 41 = 3 or (id >= 29990 and id < 30100)")
    return p


@pytest.mark.parametrize("columns", [None, ["r"], ["x", "s"], ["mixed", "id"]])
def test_scan_of_page_chunks_equals_pylance(table, columns):
    with decode_trace() as t:
        got = lance_duck.dataset(table).to_table(columns=columns)
    assert_tables_equal(got, lance.dataset(table).to_table(columns=columns))
    assert "path:page-chunks" in t.names()


def test_batch_stream_of_page_chunks_equals_pylance(table):
    with decode_trace() as t:
        batches = list(lance_duck.dataset(table).to_batches(columns=["r", "s"]))
    assert "path:page-chunks" in t.names()
    assert all(isinstance(b, pa.RecordBatch) for b in batches)
    assert_tables_equal(pa.Table.from_batches(batches), lance.dataset(table).to_table(columns=["r", "s"]))


@pytest.mark.parametrize("kw", [
    {"columns": {"r2": "r + 1", "x": "x"}},
    {"columns": ["r", "x"], "offset": 4_321, "limit": 30_000},
    {"columns": ["r"], "with_row_id": True},
    {"columns": ["mixed"], "with_row_address": True},
])
def test_consumers_of_page_chunks_equal_pylance(table, kw):
    got = lance_duck.dataset(table).to_table(**kw)
    assert_tables_equal(got, lance.dataset(table).to_table(**kw))


def test_duckdb_aggregates_over_page_chunks_equal_pylance(table):
    want = lance.dataset(table).to_table()
    got = lance_duck.sql(f"select sum(r::hugeint), sum(mixed), count(x), count(*), max(x) from '{table}'").fetchall()
    assert got == [(pc.sum(want["r"].cast(pa.decimal128(38, 0))).as_py(), pc.sum(want["mixed"]).as_py(),
                    len(want) - want["x"].null_count, len(want), pc.max(want["x"]).as_py())]


def test_pages_shorter_than_the_chunk_minimum_are_joined(table, monkeypatch):
    monkeypatch.setattr(column_mod, "PAGE_CHUNK_MIN_ROWS", 1 << 16)
    with decode_trace() as t:
        batches = list(lance_duck.dataset(table).to_batches(columns=["r", "mixed"]))
    assert "path:page-chunks" not in t.names()
    assert_tables_equal(pa.Table.from_batches(batches), lance.dataset(table).to_table(columns=["r", "mixed"]))
