"""DuckDB over a LanceDataset equals DuckDB over pylance's own to_table() output."""
from __future__ import annotations

import duckdb
import pytest

import lance
from .conftest import assert_tables_equal
from lance_duck.scan import dataset

# Each query is run twice: FROM the lance_duck dataset and FROM pylance's table. Every pushed
# predicate form DuckDB produces is here (comparisons, BETWEEN, IN, IS [NOT] NULL, OR within a
# column, dates, timestamps with zones, decimals, nested fields, LIKE without wildcards), plus
# forms DuckDB keeps for itself.
QUERIES = [
    "select * from T order by id",
    "select count(*) from T",
    "select count(*), sum(id), avg(x), count(name) from T",
    "select id, name from T where id = 5",
    "select id from T where id <> 5 order by id",
    "select id, x from T where id < 100 order by id",
    "select id from T where id >= 1900 order by id",
    "select id, s from T where id between 300 and 700 order by id",
    "select id from T where id in (1, 2, 3, 107, 1500) order by id",
    "select id, name from T where name in ('abc3', 'xyz4', 'abc107') order by id",
    "select id from T where name is null order by id",
    "select count(*) from T where name is not null",
    "select id from T where id = 1 or id = 2 or id = 1999 order by id",
    "select id from T where id in (1, 2, 3) or id = 10 order by id",
    "select id, d from T where d = date '2024-01-05' order by id",
    "select id from T where d > '2024-12-30' order by id",
    "select id, ts from T where ts > timestamp '2024-02-01 00:00:00' order by id",
    "select id from T where ts::date = date '2024-01-02' order by id",
    "select id, tsz from T where tsz >= timestamptz '2024-01-01 20:00:00+00' and tsz < timestamptz '2024-01-02 01:00:00+00' order by id",
    "select id, dec from T where dec = 1.50 order by id",
    "select id from T where dec between 1 and 2 order by id",
    "select id, s.a from T where s.a = 5",
    "select id, s.b from T where s.b = 'b1' and s.a > 1000 order by id",
    "select id from T where name like 'abc3'",
    "select id from T where name like 'abc1%' order by id",
    "select id from T where flag = true order by id",
    "select id from T where x < 3.5 order by id",
    "select id from T where x > 900.5 order by id",
    "select id, u from T where u > 250 order by id",
    "select id, dur, ls from T where ls = 'large3' order by id",
    "select id, dur from T where dur > interval '1 second' order by id",
    "select count(*) from T where extra is null",
    "select name, count(*) as n from T group by name order by n desc, name limit 5",
    "select flag, sum(u), min(ts), max(dec) from T group by flag order by flag",
    "select id, l from T where id < 30 order by id",
    "select a.id from T a join T b on a.id = b.id + 1 where b.name = 'abc3'",
    "select id from T where id < 3 union all select id from T where id > 1997 order by id",
]


@pytest.fixture(scope="module")
def con(table_path):
    c = duckdb.connect()
    c.register("lance_t", dataset(table_path))
    c.register("ref_t", lance.dataset(table_path).to_table())
    return c


@pytest.mark.parametrize("sql", QUERIES)
def test_duckdb_query_equals_pylance_table(con, sql):
    got = con.sql(sql.replace("T", "lance_t")).to_arrow_table()
    want = con.sql(sql.replace("T", "ref_t")).to_arrow_table()
    assert_tables_equal(got, want)


def test_duckdb_limit_streams_first_rows_in_order(table_path):
    c = duckdb.connect()
    c.execute("set threads=1")
    ds = dataset(table_path)
    want = lance.dataset(table_path).to_table(columns=["id"]).slice(0, 10)
    assert_tables_equal(c.sql("select id from ds limit 10").to_arrow_table(), want)


def test_duckdb_replacement_scan_and_time_travel(table_path):
    ds = dataset(table_path)
    old = ds.checkout_version(2)
    assert duckdb.sql("select count(*) from ds").fetchall()[0][0] == lance.dataset(table_path).count_rows()
    assert duckdb.sql("select count(*) from old").fetchall()[0][0] == lance.dataset(table_path, version=2).count_rows()
