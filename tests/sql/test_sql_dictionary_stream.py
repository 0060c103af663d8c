"""String columns stored with page dictionaries reach DuckDB as Arrow dictionaries, with the same values.

``LanceScanner._dictionary_reader`` (what DuckDB's Arrow-source ``stream`` reads through
``scan/duckdb_source.py``) keeps a string column's page dictionaries when its first batch
came back as one, wraps later plain batches of it as dictionaries of themselves, and decodes later
dictionaries of a column that started plain. Pinned: its values equal pylance's (row order, nulls,
deletions), the public readers' schemas do not change, and ``lance_duck.sql`` answers (and result
types) equal DuckDB's over pylance's table.
"""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.scan.duckdb_source import HAS_PROTOCOL
from lance_duck.scan import dataset

import lance  # a test dependency: missing, it must fail, not skip

N = 60_000


@pytest.fixture(scope="module", params=["2.0", "2.1", "2.2", "2.3"])
def table(request, tmp_path_factory) -> str:
    r = np.random.default_rng(5)
    words = np.array(["apple", "banana", "cherry", "date", "", "fig"])
    cat = words[r.integers(0, len(words), N)].astype(object)
    cat[r.random(N) < 0.05] = None
    unique = np.array([f"u{i}" for i in range(N)], dtype=object)
    first_half = np.arange(N) < N // 2
    # dictionary pages first, then plain ones; and the other way round
    dict_first = np.where(first_half, cat, unique)
    plain_first = np.where(first_half, unique, cat)
    t = pa.table({"id": np.arange(N), "cat": pa.array(cat, pa.string()),
                  "dict_first": pa.array(dict_first, pa.string()),
                  "plain_first": pa.array(plain_first, pa.string()),
                  "big": pa.array(np.char.add("w", r.integers(0, 9, N).astype(str)).astype(object), pa.large_string()),
                  "x": r.random(N)})
    p = str(tmp_path_factory.mktemp(f"dict_stream_{request.param}") / "t.lance")
    lance.write_dataset(t, p, max_rows_per_file=25_000, data_storage_version=request.param)
    lance.dataset(p).delete("id % 97 = 5 or (id >= 40000 and id < 40300)")
    return p


def _decoded(t: pa.Table) -> pa.Table:
    cols = [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in t.columns]
    return pa.table(cols, schema=pa.schema([f.with_type(c.type) for f, c in zip(t.schema, cols)],
                                           metadata=t.schema.metadata))


@pytest.mark.parametrize("columns", [None, ["cat"], ["x", "dict_first", "id"], ["plain_first", "big"]])
@pytest.mark.parametrize("flt", [None, "x < 0.3", "cat = 'fig'", "id >= 29000 and id < 31000"])
def test_dictionary_reader_values_equal_pylance(table, columns, flt):
    sc = dataset(table).scanner(columns=columns, filter=flt, batch_size=7000)
    got = sc._dictionary_reader().read_all()
    want = lance.dataset(table).to_table(columns=columns, filter=flt)
    assert _decoded(got).equals(want)
    assert sc.to_table().schema.equals(want.schema, check_metadata=True)   # the public schema stays


def test_dictionary_reader_keeps_dictionaries_of_dictionary_pages(table):
    got = dataset(table).scanner(columns=["cat", "dict_first", "plain_first", "x"])._dictionary_reader()
    types = {f.name: f.type for f in got.schema}
    stored_as_dictionary = not lance.dataset(table).data_storage_version.startswith("2.0")
    if stored_as_dictionary:
        assert types["cat"] == pa.dictionary(pa.int32(), pa.string())
        assert types["dict_first"] == pa.dictionary(pa.int32(), pa.string())
    assert types["plain_first"] == pa.string()
    assert types["x"] == pa.float64()
    batches = list(got)                      # every batch in the stream's schema
    assert all(b.schema.equals(got.schema) for b in batches)


def test_duckdb_stream_holds_dictionaries_for_sql(table):
    ds = lance_duck.dataset(table)
    if not HAS_PROTOCOL:
        pytest.skip("this DuckDB has no Arrow-source protocol")   # (DuckDB < 2: con.register)
    capsule, narrowed = ds.stream([1], [])

    class Stream:
        def __arrow_c_stream__(self, requested_schema=None):
            return capsule
    reader = pa.RecordBatchReader.from_stream(Stream())
    assert narrowed
    want_dictionary = not lance.dataset(table).data_storage_version.startswith("2.0")
    assert pa.types.is_dictionary(reader.schema.field("cat").type) == want_dictionary
    assert _decoded(reader.read_all()).equals(lance.dataset(table).to_table(columns=["cat"]))


def _table(result) -> pa.Table:
    return result.read_all() if isinstance(result, pa.RecordBatchReader) else result


QUERIES = [
    "select cat, count(*), round(sum(x), 6) from T group by cat order by cat nulls first",
    "select count(*) from T where cat = 'fig'",
    "select count(*), min(id) from T where dict_first = 'banana' or plain_first = 'u7'",
    "select dict_first, plain_first, big, id from T where id % 1000 = 1 order by id",
    "select big, count(*) from T group by big order by big",
    "select cat, dict_first from T order by id limit 20",
    "select count(distinct dict_first), max(plain_first), min(cat) from T",
]


@pytest.mark.parametrize("query", QUERIES)
def test_sql_over_dictionary_stream_equals_duckdb_over_pylance(table, query):
    got = lance_duck.sql(query.replace("from T", f"from '{table}'"), connection=duckdb.connect())
    got_arrow = _table(got.arrow())
    con = duckdb.connect()
    con.register("T", lance.dataset(table))
    want_arrow = _table(con.sql(query).arrow())
    assert got_arrow.to_pylist() == want_arrow.to_pylist()
    assert got_arrow.schema.equals(want_arrow.schema)         # VARCHAR, never a dictionary


@pytest.fixture(scope="module")
def one_fragment(tmp_path_factory) -> str:
    n = 100_000
    r = np.random.default_rng(8)
    t = pa.table({"cat": pa.array(np.char.add("category_", r.integers(0, 20, n).astype(str)).astype(object), pa.string()),
                  "free": pa.array([f"u{i}" for i in range(n)], pa.string()), "x": r.random(n)})
    p = str(tmp_path_factory.mktemp("dict_stream_tasks") / "t.lance")
    lance.write_dataset(t, p, max_rows_per_file=n, data_storage_version="2.2")
    return p


@pytest.mark.parametrize("columns,grows", [(["cat", "x"], True), (["x", "cat"], True), (["free", "x"], False),
                                           (["cat", "free"], False)])
def test_tasks_grow_once_every_variable_width_column_is_a_dictionary(one_fragment, columns, grows, monkeypatch):
    """After the first batch, a scan whose only non-fixed-width columns came back as dictionaries
    plans its later tasks up to LARGE_TASK_ROWS (lowered here to see it on a small table)."""
    from lance_duck.scan import execution, scanner
    from lance_duck.scan.planning import FIRST_BATCH_ROWS, FIRST_TASK_ROWS
    monkeypatch.setattr(scanner, "LARGE_TASK_ROWS", 40_000)
    sizes = []
    run = execution.ScanContext.run
    monkeypatch.setattr(execution.ScanContext, "run", lambda self, task: sizes.append(len(task.rows)) or run(self, task))
    got = dataset(one_fragment).scanner(columns=columns)._dictionary_reader().read_all()
    assert _decoded(got).equals(lance.dataset(one_fragment).to_table(columns=columns))
    # (tasks run on the read-ahead threads: they start in any order, and how many ramp tasks are
    # planned before the first batch is consumed depends on timing)
    assert sizes[0] == FIRST_TASK_ROWS and {FIRST_TASK_ROWS, 4 * FIRST_BATCH_ROWS} <= set(sizes), sizes
    assert (40_000 in sizes) == grows, sizes
