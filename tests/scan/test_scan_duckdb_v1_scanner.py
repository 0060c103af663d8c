"""How a dataset tells DuckDB 1.x's pushed filter from a pyarrow user's: DuckDB 1.x calls
``type(ds).scanner(ds, filter=...)`` (``scanner`` looked up on the class) and means DuckDB's
semantics (NaN, of either sign, equal to NaN and above every number); ``ds.scanner(filter=...)`` is
pyarrow's API and means pylance's (Lance's float order: a NaN with its sign bit set below -inf).
With DuckDB 2 (its source
protocol) ``scanner`` is a plain method either way. And how such an Expression is bound in DuckDB's
meaning (:func:`lance_duck.predicate.compiled.compile_duckdb_expression`)."""
from __future__ import annotations

import duckdb
import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck
from lance_duck.errors import UnsupportedFeatureError
from lance_duck.predicate.compiled import compile_duckdb_expression
from lance_duck.scan.duckdb_source import HAS_PROTOCOL
from lance_duck.scan.views import with_hidden_columns

NAN = float("nan")
NEG_NAN = float(np.array([0xFFF8000000000000], np.uint64).view(np.float64)[0])
VALUES = [0.1, 0.5, NAN, None, float("inf"), -0.0, 0.0, float("-inf"), 2.5, NEG_NAN] * 30


@pytest.fixture(scope="module")
def path(tmp_path_factory) -> str:
    p = str(tmp_path_factory.mktemp("v1scan") / "t.lance")
    t = pa.table({"id": np.arange(len(VALUES)), "f": pa.array(VALUES, pa.float64()),
                  "g": pa.array(VALUES, pa.float32()), "s": [f"s{i % 3}" for i in range(len(VALUES))]})
    lance.write_dataset(t, p, max_rows_per_file=100)
    return p


def _ids(table: pa.Table) -> list[int]:
    return table.column("id").to_pylist()


def _total_order_ids(path: str, where: str) -> list[int]:
    con = duckdb.connect()
    rows = lance.dataset(path).to_table()      # noqa: F841 - read by DuckDB below
    con.execute("create table n as select * from rows")
    return [r[0] for r in con.sql(f"select id from n where {where} order by id").fetchall()]


@pytest.mark.parametrize("make", [lambda p: lance_duck.dataset(p),
                                  lambda p: with_hidden_columns(lance_duck.dataset(p), ["_rowid"])],
                         ids=["dataset", "hidden_columns_view"])
def test_class_level_scanner_reads_duckdbs_meaning_only_under_duckdb_1x(path, make):
    ds = make(path)
    expr = pc.field("f") > 0.5
    pylance = _ids(lance.dataset(path).to_table(columns=["id"], filter=expr))
    duck = _total_order_ids(path, "f > 0.5")
    assert pylance != duck                      # the -NaN rows
    assert _ids(ds.scanner(columns=["id"], filter=expr).to_table()) == pylance
    assert _ids(ds.to_table(columns=["id"], filter=expr)) == pylance
    got = _ids(type(ds).scanner(ds, columns=["id"], filter=expr).to_table())
    assert got == (pylance if HAS_PROTOCOL else duck)


def test_hidden_columns_through_lance_duck_sql_keep_duckdbs_meaning(path):
    got = lance_duck.sql(f"select id, _rowid from '{path}' where g >= 0.5 order by id").fetchall()
    assert [r[0] for r in got] == _total_order_ids(path, "g >= 0.5")
    assert all(r[1] is not None for r in got)


SCHEMA = pa.schema([("f", pa.float64()), ("g", pa.float32()), ("i", pa.int32()), ("s", pa.string())])
ROWS = pa.table({"f": pa.array([0.1, NAN, None, -0.0, 0.5], pa.float64()),
                 "g": pa.array([0.1, NAN, None, -0.0, 0.5], pa.float32()),
                 "i": pa.array([1, 2, 3, 4, 5], pa.int32()), "s": ["a", "b", "c", "d", "e"]})


@pytest.mark.parametrize("expr,want", [
    (pc.field("f") > 0.2, [NAN, 0.5]),
    (pc.field("f") != 0.5, [0.1, NAN, -0.0]),
    (pc.field("f") == 0.0, [-0.0]),
    (pc.field("f").isin([0.0, NAN]), [NAN, -0.0]),
    # a float32 column's value set as DuckDB hands it (Python floats: double); 0.1 is no float32
    (pc.field("g").isin([0.1, 0.5]), [0.5]),
    (pc.field("g").isin([float(np.float32(0.1)), 0.5]), [0.1, 0.5]),
    (pc.field("i").isin([2, 4]), [NAN, -0.0]),
    ((pc.field("f") >= 0.5) | (pc.field("s") == "a"), [0.1, NAN, 0.5]),
    (~pc.field("f").is_nan() & (pc.field("g") > float(np.float32(0.1))), [0.5]),
])
def test_duckdb_expressions_bind_in_the_total_order(expr, want):
    got = compile_duckdb_expression(expr, SCHEMA).apply(ROWS).column("f").to_pylist()
    assert [repr(v) for v in got] == [repr(v) for v in want]


def test_a_part_not_read_on_a_float_column_is_refused_by_name():
    expr = pc.field("f").cast(pa.int64()) > 1
    with pytest.raises(UnsupportedFeatureError, match="cast"):
        compile_duckdb_expression(expr, SCHEMA)


def test_a_part_not_read_without_floats_is_evaluated_as_given():
    expr = pc.utf8_length(pc.field("s")) == 1
    f = compile_duckdb_expression(expr, SCHEMA)
    assert f.expression is expr and f.apply(ROWS).num_rows == 5


@pytest.fixture(scope="module")
def rich(tmp_path_factory) -> str:
    from .conftest import rich_table
    t = rich_table(1000)
    x = t.column("x").to_numpy(zero_copy_only=False).copy()
    x[::9] = np.nan
    t = t.set_column(t.schema.get_field_index("x"), "x", pa.array(x, pa.float64(), mask=t.column("x").is_null().to_numpy()))
    p = str(tmp_path_factory.mktemp("v1rich") / "t.lance")
    lance.write_dataset(t, p, max_rows_per_file=300)
    return p


@pytest.mark.parametrize("other", [
    "ts > TIMESTAMP '2024-01-10 00:00:00'", "tsz <= TIMESTAMPTZ '2024-01-01 10:00:00+00'", "d < DATE '2024-06-01'",
    "dec >= 3.5", "name = 'abc45'", "name in ('abc7', 'xyz8', 'abc9')", "flag", "u between 10 and 200",
    "s.a > 100", "s.b = 'b3'", "ls = 'large3'", "id != 7",
])
def test_float_filters_beside_other_types_keep_duckdbs_meaning(rich, other):
    """A pushed filter holding a float comparison is bound whole in DuckDB's meaning: its other
    conjuncts (timestamps, decimals, strings, struct fields...) keep theirs."""
    where = f"x > 10.5 and {other}"
    con = duckdb.connect()
    rows = lance.dataset(rich).to_table()      # noqa: F841 - read by DuckDB below
    con.execute("create table n as select * from rows")
    want = con.sql(f"select id from n where {where} order by id").fetchall()
    ds = lance_duck.dataset(rich)      # noqa: F841 - read by DuckDB below
    assert con.sql(f"select id from ds where {where} order by id").fetchall() == want
    assert lance_duck.sql(f"select id from '{rich}' where {where} order by id", con).fetchall() == want
    assert want
