"""DuckDB plans joins over lance_duck tables knowing each table's size (``integrations/duckdb/source.py``).

A plain Arrow dataset gives DuckDB no row count, so every Lance scan was estimated at one row. Pinned
separately: the answer of a multi-table join through ``lance_duck.sql`` equals DuckDB's answer over
pylance's tables (row order included), and DuckDB's estimate for each scan is the table's live row
count (EXPLAIN), for ``lance_duck.sql`` references, the caller's dataset variables and ``register``.
"""
from __future__ import annotations

import re

import duckdb
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.integrations.duckdb import register
from lance_duck.integrations.duckdb.source import FILTERED_SHARE, estimated_rows

lance = pytest.importorskip("lance")

HAS_SOURCES = hasattr(duckdb.connect(), "_register_arrow_source")
needs_sources = pytest.mark.skipif(not HAS_SOURCES, reason="this DuckDB has no Arrow-source protocol")

JOIN = """
    select c.region, count(*) as n, sum(o.amount) as total
    from '{orders}' o join '{customers}' c on o.cust = c.id
    where o.amount > 10
    group by c.region order by c.region
"""


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict[str, str]:
    """customers: 50 rows; orders: 3000 rows in 3 fragments, then every 7th deleted (2571 live)."""
    d = tmp_path_factory.mktemp("joins")
    customers = pa.table({"id": pa.array(range(50), pa.int64()),
                          "region": pa.array([["north", "south", "east", "west"][i % 4] for i in range(50)])})
    orders = pa.table({"id": pa.array(range(3000), pa.int64()),
                       "cust": pa.array([(i * 13) % 50 for i in range(3000)], pa.int64()),
                       "amount": pa.array([float(i % 97) for i in range(3000)])})
    paths = {"customers": str(d / "customers.lance"), "orders": str(d / "orders.lance")}
    lance.write_dataset(customers, paths["customers"])
    lance.write_dataset(orders, paths["orders"], max_rows_per_file=1000)
    lance.dataset(paths["orders"]).delete("id % 7 = 0")
    return paths


def _estimates(plan: str) -> list[int]:
    return [int(m.replace(",", "")) for m in re.findall(r"~([\d,]+) rows", plan)]


def _scan_estimates(con: duckdb.DuckDBPyConnection, sql: str) -> list[int]:
    """DuckDB's estimated rows of each Arrow scan in the plan of ``sql`` (EXPLAIN, text boxes)."""
    plan = con.sql("EXPLAIN " + sql).fetchall()[0][1]
    boxes = re.split(r"╭─", plan)
    return [n for box in boxes if "ARROW_SCAN" in box.upper().replace(" ", "_") for n in _estimates(box)]


def test_join_answer_equals_duckdb_over_pylance_tables(tables):
    con = duckdb.connect()
    ours = lance_duck.sql(JOIN.format(**tables), con).fetchall()
    ref = duckdb.connect()
    ref.register("o_ref", lance.dataset(tables["orders"]).to_table())
    ref.register("c_ref", lance.dataset(tables["customers"]).to_table())
    want = ref.sql(JOIN.replace("'{orders}'", "o_ref").replace("'{customers}'", "c_ref")).fetchall()
    assert ours == want
    assert sum(n for _, n, _ in ours) == lance.dataset(tables["orders"]).count_rows("amount > 10")


def test_estimated_rows_are_the_live_rows_from_the_manifest(tables):
    for path in tables.values():
        ds = lance_duck.dataset(path)
        assert estimated_rows(ds) == lance.dataset(path).count_rows()
    filtered = lance_duck.dataset(tables["orders"]).filter("amount > 10")
    assert estimated_rows(filtered) == int(2571 * FILTERED_SHARE)


@needs_sources
def test_sql_references_are_planned_with_their_row_counts(tables):
    con = duckdb.connect()
    sql = f"select * from '{tables['orders']}' o join '{tables['customers']}' c on o.cust = c.id"
    rewritten = lance_duck.sql("EXPLAIN " + sql, con).fetchall()[0][1]
    boxes = [b for b in re.split(r"╭─", rewritten) if "ARROW" in b.upper()]
    assert sorted(n for b in boxes for n in _estimates(b)) == [50, 2571]


@needs_sources
def test_dataset_variables_and_register_are_planned_with_their_row_counts(tables):
    orders = lance_duck.dataset(tables["orders"])
    con = duckdb.connect()
    plan = lance_duck.sql("EXPLAIN select * from orders", con).fetchall()[0][1]
    assert _estimates(plan) == [2571]
    register(con, "customers_t", tables["customers"])
    assert _scan_estimates(con, "select * from customers_t") == [50]
    assert con.sql("select count(*) from customers_t").fetchall() == [(50,)]
