"""A directory of Lance tables as a namespace: lance_duck.connect (LanceDB's names) and
ATTACH 'dir' AS ns (TYPE LANCE) in lance_duck.sql (DuckDB's Lance extension's statement), read only."""
from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

import lance
import lance_duck


@pytest.fixture(scope="module")
def directory(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("ns")
    t = pa.table({"id": list(range(120)), "kind": [f"k{i % 4}" for i in range(120)]})
    lance.write_dataset(t, str(root / "orders.lance"), max_rows_per_file=50)
    lance.dataset(str(root / "orders.lance")).delete("id % 9 = 2")
    lance.write_dataset(pa.table({"kind": ["k0", "k1"], "label": ["zero", "one"]}), str(root / "kinds.lance"))
    (root / "not_a_table.lance").mkdir()          # no _versions/: not listed
    (root / "notes").mkdir()
    (root / "readme.txt").write_text("x")
    return str(root)


def test_connect_lists_and_opens_tables_like_pylance(directory):
    db = lance_duck.connect(directory)
    assert db.table_names() == ["kinds", "orders"]
    for v in (1, 2):
        got = db.open_table("orders", version=v).to_table()
        assert got.equals(lance.dataset(f"{directory}/orders.lance", version=v).to_table())
    with pytest.raises(lance_duck.NotFoundError, match="nope"):
        db.open_table("nope")
    with pytest.raises(lance_duck.UnsupportedFeatureError, match="create_table"):
        db.create_table("x", data=None)


def test_attach_reads_tables_with_time_travel_and_show_tables(directory):
    con = duckdb.connect()
    assert lance_duck.sql(f"ATTACH '{directory}' AS shop (TYPE LANCE)", connection=con) is None
    assert lance_duck.sql("SHOW TABLES FROM shop.main", connection=con).fetchall() == [("kinds",), ("orders",)]
    orders = f"{directory}/orders.lance"
    assert lance_duck.sql("select count(*) from shop.main.orders", connection=con).fetchall() == \
        [(lance.dataset(orders).count_rows(),)]
    assert lance_duck.sql("select count(*) from shop.main.orders AT (VERSION => 1)", connection=con).fetchall() == \
        [(lance.dataset(orders, version=1).count_rows(),)]
    got = lance_duck.sql("select o.kind, k.label, count(*) from shop.orders o join shop.main.kinds k using (kind) "
                         "group by all order by 1", connection=con).fetchall()
    t = lance.dataset(orders).to_table().to_pylist()
    want = [(k, label, sum(1 for r in t if r["kind"] == k)) for k, label in (("k0", "zero"), ("k1", "one"))]
    assert got == want
    assert lance_duck.sql("select orders.id from shop.main.orders where id < 3 order by 1",
                          connection=con).fetchall() == [(0,), (1,)]
    assert lance_duck.sql("DETACH shop", connection=con) is None
    with pytest.raises(duckdb.Error):
        lance_duck.sql("select count(*) from shop.main.orders", connection=con).fetchall()


@pytest.mark.parametrize("statement", ["insert into ns.main.orders values (1, 'k9')", "drop table ns.main.orders",
                                       "delete from ns.orders where id = 1", "create table ns.main.x as select 1"])
def test_writes_to_a_namespace_are_refused_by_name(directory, statement):
    con = duckdb.connect()
    lance_duck.sql(f"ATTACH '{directory}' AS ns (TYPE LANCE)", connection=con)
    with pytest.raises(lance_duck.UnsupportedFeatureError, match="never changes"):
        lance_duck.sql(statement, connection=con)
    assert lance.dataset(f"{directory}/orders.lance").version == 2


def test_attach_options_and_duckdbs_own_attach(directory):
    con = duckdb.connect()
    with pytest.raises(lance_duck.InvalidArgumentError, match="BLOCK_SIZE"):
        lance_duck.sql(f"ATTACH '{directory}' AS a (TYPE LANCE, BLOCK_SIZE 1)", connection=con)
    lance_duck.sql(f"ATTACH '{directory}' AS a (TYPE LANCE)", connection=con)
    with pytest.raises(lance_duck.InvalidArgumentError, match="already attached"):
        lance_duck.sql(f"ATTACH '{directory}' AS a (TYPE LANCE)", connection=con)
    lance_duck.sql("ATTACH ':memory:' AS mem", connection=con)          # not a Lance namespace: DuckDB's
    lance_duck.sql("create table mem.main.t as select 42 as x", connection=con)
    assert lance_duck.sql("select x from mem.main.t", connection=con).fetchall() == [(42,)]
