"""Filters on dictionary-encoded string columns are evaluated per distinct value, exactly.

The reader may hand the scan a column's page dictionaries (``keep_dictionary``); a filter on
that one column then runs on the dictionary values (plus null) and is gathered by the indices.
Every result must equal pylance's and DuckDB-over-pylance's, nulls and deletions included.
"""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from lance_duck.file import open_data_file
from lance_duck.scan import dataset

from .conftest import assert_tables_equal

import lance  # a test dependency: missing, it must fail, not skip

N = 60_000


@pytest.fixture(scope="module", params=["2.1", "2.2", "2.0", "2.3"])
def cat_table(request, tmp_path_factory) -> str:
    r = np.random.default_rng(11)
    words = np.array(["apple", "banana", "cherry", "date", "elder", "fig", "", "Apple", "ban%ana"])
    cat = words[r.integers(0, len(words), N)].astype(object)
    cat[r.random(N) < 0.07] = None
    # the second half of ``mixed`` is high-cardinality: its pages are not dictionary-encoded
    mixed = np.where(np.arange(N) < N // 2, cat, np.array([f"u{i}" for i in range(N)], dtype=object))
    t = pa.table({"id": np.arange(N), "cat": pa.array(cat, pa.string()),
                  "mixed": pa.array(mixed, pa.string()), "x": r.random(N)})
    p = str(tmp_path_factory.mktemp(f"dict_filters_{request.param}") / "t.lance")
    lance.write_dataset(t, p, max_rows_per_file=25_000, data_storage_version=request.param)
    lance.dataset(p).delete("id % 101 = 7 or (id >= 30000 and id < 30500)")
    return p


FILTERS = ["cat = 'banana'", "cat != 'banana'", "cat in ('fig', 'date', 'nothing')", "cat is null",
           "cat is not null", "cat like 'ban%'", "cat < 'c'", "cat >= 'Apple' and cat <= 'banana'",
           "not (cat = 'apple')", "cat = ''", "coalesce(cat, 'zz') = 'zz'", "length(cat) > 4",
           "cat = 'banana' or cat is null", "mixed = 'fig'", "mixed like 'u1%'", "mixed is null",
           "cat = 'fig' and x < 0.5", "cat = mixed"]


@pytest.mark.parametrize("flt", FILTERS)
def test_string_filters_equal_pylance(cat_table, flt):
    for cols in (["id"], ["cat", "id"], None):
        ours = dataset(cat_table).to_table(columns=cols, filter=flt)
        ref = lance.dataset(cat_table).to_table(columns=cols, filter=flt)
        assert_tables_equal(ours, ref)


@pytest.mark.parametrize("where", ["cat = 'banana'", "cat in ('fig', 'Apple')", "cat is null", "cat > 'date'",
                                   "cat like 'ba%'", "mixed = 'u40000'", "mixed = 'cherry'"])
def test_duckdb_pushed_string_filters_equal_duckdb_over_pylance(cat_table, where):
    ours = dataset(cat_table)
    ref = lance.dataset(cat_table).to_table()
    for sel in ("count(*)", "count(*), min(id), max(id), round(sum(x), 6)", "cat, count(*) group by cat order by cat"):
        con = duckdb.connect()
        con.register("T", ours)
        got = con.sql(f"select {sel.split(' group by')[0]} from T where {where}"
                      + (" group by" + sel.split(" group by")[1] if " group by" in sel else "")).fetchall()
        con = duckdb.connect()
        want = con.sql(f"select {sel.split(' group by')[0]} from ref where {where}"
                       + (" group by" + sel.split(" group by")[1] if " group by" in sel else "")).fetchall()
        assert got == want, (where, sel)


def test_filter_failing_only_on_values_of_deleted_rows_equals_pylance(tmp_path):
    """Page dictionaries still hold the values of deleted rows; a cast that fails on them must
    not fail the scan (pylance evaluates live rows only)."""
    n = 20_000
    cat = np.array([str(i % 7) for i in range(n)], dtype=object)
    cat[::50] = "bad"
    p = str(tmp_path / "cast.lance")
    lance.write_dataset(pa.table({"id": np.arange(n), "cat": pa.array(cat, pa.string())}), p)
    lance.dataset(p).delete("cat = 'bad'")
    flt = "cast(cat as int) > 3"
    assert dataset(p).count_rows(filter=flt) == lance.dataset(p).count_rows(filter=flt) == 8400
    assert_tables_equal(dataset(p).to_table(filter=flt), lance.dataset(p).to_table(filter=flt))
    # a failure on a live row is still an error, in our exception family
    from lance_duck.errors import InvalidArgumentError
    lance.write_dataset(pa.table({"id": [n], "cat": ["worse"]}), p, mode="append")
    with pytest.raises(InvalidArgumentError, match="worse"):
        dataset(p).to_table(filter=flt)


def test_reader_keeps_page_dictionaries_only_when_asked(cat_table):
    ds = dataset(cat_table)
    snap = ds._snapshot
    frag = snap.fragments[0]
    field = next(f for f in snap.schema.fields if f.name == "cat")
    reader = open_data_file(snap.io, frag.file_for_field(field.id))
    plain = reader.read_fields([field], None)[0]
    assert plain.type == pa.string()
    kept = reader.read_fields([field], None, keep_dictionary=True)[0]
    if snap.data_storage_version in ("2.1", "2.2", "2.3"):
        assert pa.types.is_dictionary(kept.type)       # the path under test really runs
    for sel in (None, range(100, 20_000), np.arange(3, 24_000, 97)):
        a = reader.read_fields([field], sel, keep_dictionary=True)[0]
        b = reader.read_fields([field], sel)[0]
        a = a.dictionary_decode() if pa.types.is_dictionary(a.type) else a
        assert a.equals(b)
