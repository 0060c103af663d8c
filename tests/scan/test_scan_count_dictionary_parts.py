"""Counting a filter on one column page by page: each page dictionary evaluated once, its indices counted.

A counting task whose filter reads one column reads it as the reader's parts (2.1+: every page
with a dictionary on its own, no dictionaries unified across pages) and counts each. Pinned on a
table written by pylance with several dictionary pages per fragment, a column mixing dictionary and
plain pages, nulls and deletions: ``count_rows`` equals pylance's for equality, IN, ranges, IS
[NOT] NULL, negations and ORs (with the column itself and with another column), with the numpy
and the compiled kernels; ``lance_duck.sql`` counts equal DuckDB's over the same rows; a filter
failing on a value only deleted rows hold still counts the live rows; the part path really ran;
damaged pages fail naming the file.
"""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.encodings import _compiled
from lance_duck.trace import decode_trace

from .._kernels import KERNELS, use_kernels

import lance  # a test dependency: missing, it must fail, not skip

N = 36_000
ROWS_PER_FILE = 12_000

FILTERS = [
    "cat = 'cat_7'",
    "cat = 'absent'",
    "cat <> 'cat_7'",
    "cat != 'cat_7'",
    "cat in ('cat_1', 'cat_2')",
    "cat in ('cat_1', 'cat_2', 'cat_3', 'cat_4', 'cat_5', 'cat_6')",
    "cat not in ('cat_1', 'cat_2')",
    "cat > 'cat_3'",
    "cat >= 'cat_3' and cat < 'cat_5'",
    "cat is null",
    "cat is not null",
    "cat = 'cat_7' or cat is null",
    "not (cat = 'cat_7')",
    "cat = 'cat_7' or other < 100",
    "mix = 'm3'",
    "mix > 'm5'",
    "mix in ('m1', 'm2', 'u123', 'u20000')",
    "mix is null",
    "num = 3",
    "num in (1, 2, 3, 4)",
    "num between 2 and 20",
    "num is null",
]


@pytest.fixture(scope="module", params=["2.0", "2.2", "2.3"])
def table(request, tmp_path_factory) -> str:
    r = np.random.default_rng(7)
    i = np.arange(N)
    cat = np.array([f"cat_{k}" for k in r.integers(0, 20, N)], dtype=object)
    cat[r.random(N) < 0.05] = None
    # per file: a low-cardinality first half (dictionary pages), unique strings after (plain pages)
    low = (i % ROWS_PER_FILE) < ROWS_PER_FILE // 2
    mix = np.where(low, np.char.add("m", r.integers(0, 9, N).astype(str)), np.char.add("u", i.astype(str))).astype(object)
    mix[r.random(N) < 0.03] = None
    num = pa.array(r.integers(0, 30, N), mask=r.random(N) < 0.04)
    t = pa.table({"id": i, "cat": pa.array(cat, pa.string()), "mix": pa.array(mix, pa.string()),
                  "num": num, "other": r.integers(0, 1000, N)})
    p = str(tmp_path_factory.mktemp(f"count_parts_{request.param}") / "t.lance")
    batches = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=3000))
    lance.write_dataset(batches, p, data_storage_version=request.param, max_rows_per_file=ROWS_PER_FILE,
                        data_cache_bytes=4096)
    lance.dataset(p).delete("id % 7 = 3 or (id >= 5990 and id < 6100) or (id >= 24000 and id < 24100)")
    return p


@pytest.fixture(params=KERNELS)
def kernels(request, monkeypatch) -> str:
    use_kernels(monkeypatch, request.param)
    if request.param == "compiled":
        monkeypatch.setattr(_compiled, "FASTLANES_MIN_VALUES", 0)
    return str(request.param)


@pytest.mark.parametrize("flt", FILTERS)
def test_count_equals_pylance(table, kernels, flt):
    assert lance_duck.dataset(table).count_rows(filter=flt) == lance.dataset(table).count_rows(filter=flt)


@pytest.mark.parametrize("flt", FILTERS)
def test_sql_count_equals_duckdb(table, flt):
    rows = lance.dataset(table).to_table()
    con = duckdb.connect()
    con.register("t", rows)
    want = con.sql(f"select count(*) from t where {flt}").fetchall()
    assert lance_duck.sql(f"select count(*) from '{table}' where {flt}").fetchall() == want


def test_dictionary_pages_counted_one_by_one(table):
    ds = lance_duck.dataset(table)
    with decode_trace() as t:
        got = ds.count_rows(filter="cat = 'cat_7'")
    assert got == lance.dataset(table).count_rows(filter="cat = 'cat_7'")
    parts = t.values("path:count-parts")
    assert len(parts) == len(ds.get_fragments())        # one counting task per fragment
    if lance.dataset(table).data_storage_version == "2.0":
        assert set(parts) == {1}                         # (2.0 readers: one array per task)
    else:
        assert sum(parts) > len(parts)                   # several dictionary pages in a task


def test_filter_failing_on_a_deleted_value_counts_live_rows(tmp_path):
    """A value only deleted rows hold makes the filter fail: the live rows are counted as pylance does."""
    n = 8000
    vals = np.array([str(k % 5) for k in range(n)], dtype=object)
    vals[4321] = "x"                              # deleted below: the filter never sees it in pylance
    p = str(tmp_path / "t.lance")
    lance.write_dataset(pa.table({"id": np.arange(n), "s": pa.array(vals, pa.string())}), p,
                        data_storage_version="2.2")
    lance.dataset(p).delete("id = 4321 or id % 11 = 0")
    flt = "cast(s as int) > 2"
    assert lance_duck.dataset(p).count_rows(filter=flt) == lance.dataset(p).count_rows(filter=flt)


def test_damaged_dictionary_indices_raise_naming_the_file(tmp_path):
    """A dictionary page's chunk bytes overwritten fail the count (read page by page), naming the data file."""
    from lance.file import LanceFileReader

    from lance_duck.errors import CorruptFileError
    n = 8000
    p = str(tmp_path / "t.lance")
    lance.write_dataset(pa.table({"id": np.arange(n), "cat": pa.array([f"cat_{k % 20}" for k in range(n)])}), p,
                        data_storage_version="2.2")
    (path,) = [str(f) for f in (tmp_path / "t.lance" / "data").iterdir()]
    page = LanceFileReader(path).metadata().columns[1].pages[0]
    assert "dictionary" in str(page.encoding)
    values = page.buffers[1]                      # the page's chunks of packed indices
    with open(path, "r+b") as fh:
        fh.seek(values.position + 4)
        fh.write(b"\xff" * 64)
    with pytest.raises(CorruptFileError, match=path.rsplit("/", 1)[-1]):
        lance_duck.dataset(p).count_rows(filter="cat = 'cat_7'")
