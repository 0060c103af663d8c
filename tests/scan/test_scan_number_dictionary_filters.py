"""Filters on number, decimal and temporal columns stored with page dictionaries.

pylance writes page dictionaries for low-cardinality decimals (2.1, 2.2) and for 64-bit integers,
doubles and timestamps (2.2). The scan keeps those dictionaries for the filter's columns (as it does
for strings): a filter is evaluated once per distinct value and gathered by the indices, and values
are taken only for the rows it keeps (TPC-H q6's ``l_discount between ... and l_quantity < 24``).
Pinned: every result equals pylance's (nulls, NaN and deletions included, several storage versions)
and DuckDB-over-pylance's through ``lance_duck.sql``, and the per-value paths really ran.
"""
from __future__ import annotations

import decimal

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.scan import dataset
from lance_duck.trace import decode_trace

from .conftest import assert_tables_equal as _assert_equal_no_nan

import lance  # a test dependency: missing, it must fail, not skip

N = 40_000
# decimal literals as pylance takes them (it refuses a float literal against a decimal column)
D5, D7, D2 = (f"cast({v} as decimal(15,2))" for v in ("0.05", "0.07", "0.02"))


def assert_tables_equal(got: pa.Table, want: pa.Table) -> None:
    """Schema, nulls and values, row order included; NaN equals NaN (column ``f`` holds some)."""
    got, want = got.combine_chunks(), want.combine_chunks()
    if "f" in want.column_names:
        a, b = got.column("f"), want.column("f")
        assert a.type == b.type and a.is_null().equals(b.is_null())
        assert np.array_equal(a.fill_null(0.0).to_numpy(), b.fill_null(0.0).to_numpy(), equal_nan=True)
        got, want = got.drop_columns(["f"]), want.drop_columns(["f"])
    _assert_equal_no_nan(got, want)


@pytest.fixture(scope="module", params=["2.1", "2.2", "2.3"])
def table(request, tmp_path_factory) -> str:
    r = np.random.default_rng(32)
    disc = pa.array([decimal.Decimal(int(x)) / 100 for x in r.integers(0, 11, N)], pa.decimal128(15, 2),
                    mask=r.random(N) < 0.03)
    qty = pa.array([decimal.Decimal(int(x)) for x in r.integers(1, 51, N)], pa.decimal128(15, 2))
    big = pa.array(r.integers(0, 40, N) * 1_000_003, mask=r.random(N) < 0.04)
    f = r.integers(0, 11, N) / 100.0
    f[r.random(N) < 0.02] = np.nan
    ts = np.datetime64("2024-01-01T00:00:00") + r.integers(0, 30, N).astype("timedelta64[s]")
    day = np.datetime64("1994-01-01") + r.integers(0, 700, N).astype("timedelta64[D]")
    t = pa.table({"id": np.arange(N), "disc": disc, "qty": qty, "big": big,
                  "f": pa.array(f, mask=r.random(N) < 0.03), "ts": pa.array(ts),
                  "day": pa.array(day, pa.date32()), "price": pa.array(r.random(N) * 1000)})
    p = str(tmp_path_factory.mktemp(f"number_dict_{request.param}") / "t.lance")
    lance.write_dataset(t, p, max_rows_per_file=15_000, data_storage_version=request.param)
    lance.dataset(p).delete("id % 97 = 5 or (id >= 20000 and id < 20300)")
    return p


FILTERS = [
    f"disc between {D5} and {D7}",
    "disc is null",
    "qty < 24",
    "big = 3000009",
    "big > 20000000 or big is null",
    "f > 0.04",
    "f is null",
    "ts >= timestamp '2024-01-01 00:00:10' and ts < timestamp '2024-01-01 00:00:20'",
    # q6's shape: a date range and two dictionary columns, each evaluated on its own
    f"day >= date '1994-01-01' and day < date '1995-01-01' and disc between {D5} and {D7} and qty < 24",
    f"disc = {D5} and (big < 5000000 or f > 0.08)",     # not per column: the dictionary pre-filter
    f"disc > {D2} and price > 500",
    "cast(disc as double) * 100 = cast(qty as double)",   # one term over two columns: rows
]


@pytest.mark.parametrize("flt", FILTERS)
def test_number_dictionary_filters_equal_pylance(table, flt):
    for cols in (["id"], ["disc", "id", "price"], None):
        ours = dataset(table).to_table(columns=cols, filter=flt)
        ref = lance.dataset(table).to_table(columns=cols, filter=flt)
        assert_tables_equal(ours, ref)
    assert dataset(table).count_rows(filter=flt) == lance.dataset(table).count_rows(filter=flt)


def test_a_decimal_filter_is_evaluated_per_distinct_value(table):
    flt = f"day >= date '1994-01-01' and day < date '1995-01-01' and disc between {D5} and {D7} and qty < 24"
    with decode_trace() as t:
        got = dataset(table).to_table(columns=["price", "disc"], filter=flt)
    assert_tables_equal(got, lance.dataset(table).to_table(columns=["price", "disc"], filter=flt))
    if "dictionary" in t.names():        # the decimals were written with page dictionaries
        assert "path:filter-per-column" in t.names()
        assert {"disc", "qty"} & set(t.values("path:filter-per-column")[0])
    with decode_trace() as t:
        got = dataset(table).to_table(columns=["id"], filter=f"disc between {D5} and {D7}")
    assert_tables_equal(got, lance.dataset(table).to_table(columns=["id"], filter=f"disc between {D5} and {D7}"))


def test_kept_dictionaries_never_reach_the_output(table):
    ds = dataset(table)
    got = ds.to_table(filter=f"disc > {D2} and big < 30000000 and f < 0.09")
    assert got.schema == lance.dataset(table).schema
    assert not any(pa.types.is_dictionary(t) for t in got.schema.types)


def test_tpch_q6_shape_through_duckdb_equals_duckdb_over_pylance(table):
    sql = ("select sum(price * disc), count(*) from {} where day >= date '1994-01-01' "
           "and day < date '1995-01-01' and disc between 0.05 and 0.07 and qty < 24")
    ours = lance_duck.sql(sql.format(f"'{table}'")).fetchall()
    con = duckdb.connect()
    con.register("ref", lance.dataset(table))
    ref = con.sql(sql.format("ref")).fetchall()
    assert ours[0][1] == ref[0][1] and ours[0][1] > 0
    assert float(ours[0][0]) == pytest.approx(float(ref[0][0]), rel=1e-12)


@pytest.fixture(scope="module")
def indexed(table, tmp_path_factory) -> str:
    """The table with a BTREE on ``id`` (index-selected rows read at their offsets, lean point reads)."""
    p = str(tmp_path_factory.mktemp("number_dict_indexed") / "t.lance")
    src = lance.dataset(table)
    lance.write_dataset(src.to_table(), p, max_rows_per_file=15_000,
                        data_storage_version=src.data_storage_version)
    ds = lance.dataset(p)
    ds.delete("id % 89 = 4")
    ds.create_scalar_index("id", "BTREE")
    return p


@pytest.mark.parametrize("flt", [
    "id = 1234",
    f"id = 1234 and disc >= {D2}",
    f"id in (5, 77, 15001, 30002, 39999) and (disc > {D2} or disc is null)",
    "id between 14990 and 15010 and qty < 24 and big > 1000",
    "id in (3, 4, 93, 20001) and f > 0.01",
])
def test_index_selected_rows_with_number_dictionaries_equal_pylance(indexed, flt):
    for cols in (["id"], ["disc", "qty", "big", "f", "ts"], None):
        ours = dataset(indexed).to_table(columns=cols, filter=flt)
        ref = lance.dataset(indexed).to_table(columns=cols, filter=flt)
        assert_tables_equal(ours, ref)


def test_a_btree_selection_reads_number_dictionaries_at_its_offsets(indexed):
    flt = f"id in (5, 77, 15001) and disc >= {D2}"
    with decode_trace() as t:
        got = dataset(indexed).to_table(filter=flt)
    assert "path:selected-offsets" in t.names()          # the BTREE chose the rows
    assert_tables_equal(got, lance.dataset(indexed).to_table(filter=flt))
