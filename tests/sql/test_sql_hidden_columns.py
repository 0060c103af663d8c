"""Row ids, row addresses and row versions by name -- in scans and in SQL -- and lance_scan's scan options,
against pylance's scanner on tables with and without stable row ids."""
from __future__ import annotations

import pyarrow as pa
import pytest

import lance
import lance_duck

HIDDEN = ["_rowid", "_rowaddr", "_row_created_at_version", "_row_last_updated_at_version"]


def _history(path: str, stable: bool) -> str:
    t = pa.table({"id": list(range(200)), "name": [f"n{i % 13}" for i in range(200)]})
    lance.write_dataset(t, path, max_rows_per_file=80, enable_stable_row_ids=stable)
    ds = lance.dataset(path)
    ds.update({"name": "'updated'"}, where="id % 10 = 3")
    ds = lance.dataset(path)
    ds.delete("id % 17 = 5")
    lance.write_dataset(pa.table({"id": list(range(200, 230)), "name": ["late"] * 30}), path, mode="append")
    return path


@pytest.fixture(scope="module", params=[True, False], ids=["stable-row-ids", "row-addresses"])
def table(request, tmp_path_factory) -> str:
    return _history(str(tmp_path_factory.mktemp("hidden") / "t.lance"), request.param)


def test_scans_return_every_hidden_column_as_pylance(table):
    cols = ["id", *HIDDEN]
    got, want = lance_duck.dataset(table).to_table(columns=cols), lance.dataset(table).to_table(columns=cols)
    assert got.equals(want) and got.schema.equals(want.schema)
    if lance.dataset(table).has_stable_row_ids:     # the update and the append give other versions
        assert len(set(want["_row_last_updated_at_version"].to_pylist())) > 1
        assert len(set(want["_row_created_at_version"].to_pylist())) > 1


@pytest.mark.parametrize("flt", ["_row_last_updated_at_version > 1", "_row_created_at_version = 1 and id < 50",
                                 "_rowid >= 100", "_rowaddr < 4294967296 or name = 'late'"])
def test_filters_on_hidden_columns_equal_pylance(table, flt):
    got = lance_duck.dataset(table).to_table(columns=["id", "_rowid"], filter=flt)
    assert got.equals(lance.dataset(table).to_table(columns=["id", "_rowid"], filter=flt))


def test_sql_selects_hidden_columns_by_name(table):
    want = lance.dataset(table).to_table(columns=["id", *HIDDEN])
    rows = lance_duck.sql(f"select id, {', '.join(HIDDEN)} from '{table}'").fetchall()
    assert rows == [tuple(r.values()) for r in want.to_pylist()]


@pytest.mark.parametrize("where,flt", [("_rowid >= 100 and id % 2 = 0", "_rowid >= 100 and id % 2 = 0"),
                                       ("_row_last_updated_at_version > 1", "_row_last_updated_at_version > 1"),
                                       ("name like 'upd%' and _rowaddr > 0", "name like 'upd%' and _rowaddr > 0")])
def test_sql_filters_and_counts_on_hidden_columns(table, where, flt):
    want = lance.dataset(table).to_table(columns=["id"], filter=flt)["id"].to_pylist()
    assert [r[0] for r in lance_duck.sql(f"select id from '{table}' where {where}").fetchall()] == want
    assert lance_duck.sql(f"select count(*) from '{table}' where {where}").fetchall() == [(len(want),)]


def test_star_without_hidden_names_keeps_the_table_columns(table):
    rel = lance_duck.sql(f"select * from '{table}' limit 1")
    assert rel.columns == ["id", "name"]


def test_lance_scan_with_row_id_and_address_appends_them_as_pylance(table):
    want = lance.dataset(table, version=2).to_table(with_row_id=True, with_row_address=True)
    rel = lance_duck.sql(f"select * from lance_scan('{table}', version => 2, with_row_id => true, "
                         f"with_row_address => true)")
    assert rel.columns == want.column_names
    assert rel.fetchall() == [tuple(r.values()) for r in want.to_pylist()]


def test_lance_scan_columns_filter_and_batch_size(table):
    want = lance.dataset(table).to_table(columns=["name", "_rowid"], filter="id < 120 and id % 3 = 0")
    rel = lance_duck.sql(f"select * from lance_scan('{table}', columns => ['name', '_rowid'], "
                         f"filter => 'id < 120 and id % 3 = 0', batch_size => 7)")
    assert rel.columns == ["name", "_rowid"]
    assert rel.fetchall() == [tuple(r.values()) for r in want.to_pylist()]


@pytest.mark.parametrize("args,match", [("columns => ['nope']", "nope"), ("with_row_id => 3", "with_row_id"),
                                        ("batch_size => 0", "batch_size"), ("filter => 5", "filter"),
                                        ("frobnicate => 1", "frobnicate")])
def test_bad_lance_scan_options_are_refused_by_name(table, args, match):
    with pytest.raises(lance_duck.InvalidArgumentError, match=match):
        lance_duck.sql(f"select * from lance_scan('{table}', {args})").fetchall()
