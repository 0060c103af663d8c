"""Float filters DuckDB pushes into a dataset keep DuckDB's meaning: NaN (whatever its sign bit)
equals NaN and sorts above every number (``f > 0.5`` holds for NaN), ``-0.0 = 0.0``, NULL matches
nothing.

DuckDB 1.x hands them over as pyarrow Expressions (``type(ds).scanner(ds, filter=...)``), DuckDB 2
through its source protocol; either way the rows must be those of DuckDB's own storage holding the
same data (the oracle here), through ``lance_duck.sql`` and through DuckDB over ``lance_duck.dataset``,
on float32 and float64 columns with NaN, NULL, +-inf and +-0.0, with deletions and with scalar
indices (BTREE, ZONEMAP, BITMAP) on the float columns. A pyarrow user's own Expression means what
pylance makes of it (``test_scan_expression_float_order.py`` has the whole order)."""
from __future__ import annotations

import math

import duckdb
import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck
from lance_duck.errors import UnsupportedFeatureError
from lance_duck.scan.duckdb_source import HAS_PROTOCOL

N = 3000
PER_FILE = 1000


def _values(n: int) -> tuple[np.ndarray, np.ndarray]:
    """float64 values (one fragment negative, one positive, one NaN-heavy with the specials) and a
    validity mask: zone maps and fragment statistics see different ranges per fragment."""
    rng = np.random.default_rng(7)
    v = np.concatenate([rng.uniform(-2.0, -0.5, PER_FILE), rng.uniform(0.5, 2.0, PER_FILE),
                        rng.uniform(-2.0, 2.0, n - 2 * PER_FILE)])
    v[0] = -np.inf
    v[PER_FILE + 3] = 0.5
    v[PER_FILE + 4] = 1.5
    tail = np.arange(2 * PER_FILE, n)
    v[tail[::5]] = np.nan
    v[tail[1::17]] = np.inf
    v[tail[2::19]] = -np.inf
    v[tail[3::23]] = -0.0
    v[tail[4::29]] = 0.0
    v[tail[6::31]] = 0.5
    v[tail[7::37]] = -np.nan        # its sign bit set: DuckDB's NaN all the same, pylance's below -inf
    valid = np.ones(n, bool)
    valid[3::11] = False
    return v, valid


def _table() -> pa.Table:
    v, valid = _values(N)
    return pa.table({
        "id": pa.array(np.arange(N, dtype=np.int64)),
        "f64": pa.array(v, pa.float64(), mask=~valid),
        "f32": pa.array(v.astype(np.float32), pa.float32(), mask=~valid),
        "s": pa.array(np.char.add("s", (np.arange(N) % 4).astype(str))),
        "st": pa.StructArray.from_arrays([pa.array(v, pa.float64(), mask=~valid)], names=["x"]),
    })


VARIANTS = {
    "plain": None,
    "deletions": [],
    "btree_f64_zonemap_f32": [("f64", "BTREE"), ("f32", "ZONEMAP")],
    "zonemap_f64_bitmap_f32": [("f64", "ZONEMAP"), ("f32", "BITMAP")],
}


@pytest.fixture(scope="module", params=list(VARIANTS))
def table(request, tmp_path_factory) -> str:
    p = str(tmp_path_factory.mktemp(f"fnan_{request.param}") / "t.lance")
    lance.write_dataset(_table(), p, max_rows_per_file=PER_FILE)
    indices = VARIANTS[request.param]
    if indices is not None:
        # deleted rows that pass most filters below: NaN, +-inf, zeros, ordinary values, in every fragment
        lance.dataset(p).delete("id % 7 = 3 or id % 10 = 0")
    for col, kind in indices or ():
        lance.dataset(p).create_scalar_index(col, kind)
    if indices:
        assert len(lance.dataset(p).describe_indices()) == len(indices)
    return p


@pytest.fixture(scope="module")
def native(table) -> duckdb.DuckDBPyConnection:
    """The same rows in DuckDB's own storage (no pushdown into Arrow): DuckDB's meaning."""
    con = duckdb.connect()
    rows = lance.dataset(table).to_table()        # noqa: F841 - read by DuckDB below
    con.execute("create table n as select * from rows")
    return con


TEMPLATES = [
    "{c} > 0.5", "{c} >= 0.5", "{c} < 0.5", "{c} <= 0.5", "{c} = 0.5", "{c} != 0.5", "{c} <> 1.5",
    "{c} > 0", "{c} >= 0", "{c} = 0", "{c} != 0", "{c} = -0.0", "{c} > -0.0", "{c} < 0", "{c} <= -0.0",
    "{c} > 'inf'", "{c} >= 'inf'", "{c} = 'inf'", "{c} < '-inf'", "{c} > '-inf'", "{c} <= '-inf'",
    "{c} = 'nan'", "{c} != 'nan'", "{c} > 'nan'", "{c} >= 'nan'", "{c} < 'nan'",
    "{c} between 0.5 and 1.5", "{c} between -1 and 'inf'", "{c} between 0.5 and 'nan'", "{c} not between -1 and 1",
    "{c} in (0.5, 1.5)", "{c} in (0.5, 'nan')", "{c} in (0.0)", "{c} in (-0.0, 'inf')", "{c} not in (0.5, 'nan')",
    "not ({c} > 0.5)", "not ({c} <= 0.5)", "not ({c} < 0.5)", "not ({c} = 'nan')",
    "{c} > 0.5 or {c} < -1.5", "{c} > 1.5 or {c} is null", "{c} >= 0.5 and s = 's1'", "{c} > 0.5 and {c} < 'nan'",
    "({c} > 1.5 or s = 's2') and id > 1500", "{c} is not null and {c} >= 1", "{c} is null", "isnan({c})",
    "{c} > 0.5 and f64 < 1.9 and f32 > 0.6",
]
# DuckDB 1.5 pushes `x <= NaN` as the literal `true`, which would keep the NULL rows (DuckDB's own
# translation, pylance's scans and Arrow tables see the same); the column is lost with it, so under
# DuckDB 1.x a dataset refuses a pushed `true` (scan/duckdb_v1.refuse_lossy) rather than answer wrong
NULLS_KEPT_BY_DUCKDB_1X = ["{c} <= 'nan'"]
#: forms among TEMPLATES holding `x <= NaN`, refused under DuckDB 1.x
REFUSED_BY_DUCKDB_1X = {"{c} between 0.5 and 'nan'"}


def _ids(rows: list[tuple]) -> list[int]:
    return [r[0] for r in rows]


def _query(source: str, where: str) -> str:
    return f"select id from {source} where {where} order by id"


@pytest.mark.parametrize("col", ["f64", "f32", "st.x"])
@pytest.mark.parametrize("template", TEMPLATES)
def test_duckdb_filters_on_floats_keep_duckdbs_meaning(table, native, col, template):
    where = template.format(c=col)
    want = _ids(native.sql(_query("n", where)).fetchall())
    con = duckdb.connect()
    if template in REFUSED_BY_DUCKDB_1X and not HAS_PROTOCOL:
        with pytest.raises((UnsupportedFeatureError, duckdb.Error), match="comparison with NaN"):
            lance_duck.sql(_query(f"'{table}'", where), con).fetchall()
        return
    assert _ids(lance_duck.sql(_query(f"'{table}'", where), con).fetchall()) == want, "lance_duck.sql"
    ds = lance_duck.dataset(table)      # noqa: F841 - read by DuckDB below
    assert _ids(con.sql(_query("ds", where)).fetchall()) == want, "duckdb over lance_duck.dataset"
    agg = "select count(*), min(f32), max(f64) from {} where " + where
    assert _nan_equal(con.sql(agg.format("ds")).fetchall(), native.sql(agg.format("n")).fetchall())


def _nan_equal(a: list[tuple], b: list[tuple]) -> bool:
    return len(a) == len(b) and all(
        len(x) == len(y) and all(p == q or (isinstance(p, float) and isinstance(q, float) and math.isnan(p)
                                            and math.isnan(q)) for p, q in zip(x, y)) for x, y in zip(a, b))


@pytest.mark.parametrize("col", ["f64", "f32"])
@pytest.mark.parametrize("template", NULLS_KEPT_BY_DUCKDB_1X)
def test_duckdb_1x_pushing_le_nan_as_true_is_refused_not_answered_with_null_rows(table, native, col, template):
    where = template.format(c=col)
    want = _ids(native.sql(_query("n", where)).fetchall())
    con = duckdb.connect()
    ds = lance_duck.dataset(table)      # noqa: F841 - read by DuckDB below
    if HAS_PROTOCOL:
        assert _ids(con.sql(_query("ds", where)).fetchall()) == want
        return
    with pytest.raises(duckdb.Error, match=r"UnsupportedFeatureError: a comparison with NaN"):
        con.sql(_query("ds", where)).fetchall()
    ref = lance.dataset(table)      # noqa: F841 - read by DuckDB below: pylance's dataset keeps the nulls
    nulls = _ids(native.sql(_query("n", f"{col} is null")).fetchall())
    assert _ids(con.sql(_query("ref", where)).fetchall()) == sorted(want + nulls)


F = pc.field
ARROW_FILTERS = [
    F("f64") > 0.5, F("f32") >= 0.5, F("f64") < 0.5, F("f32") <= 0.5, F("f64") == 0.5, F("f64") != 0.5,
    F("f64") == float("nan"), F("f32") != float("nan"), F("f64") > float("-inf"),
    ~(F("f64") > 0.5), (F("f64") > 0.5) | (F("s") == "s1"), (F("f32") > 0.5) & (F("id") > 1500),
    F("f64").isin([0.5, float("nan")]), F("f64").is_nan(),
]


@pytest.mark.parametrize("expr", ARROW_FILTERS, ids=str)
def test_pyarrow_expressions_of_a_user_mean_what_pylance_makes_of_them(table, expr):
    """``ds.scanner(filter=...)`` / ``to_table`` / ``count_rows`` with a user's Expression: the rows
    pylance's scan returns (floats in Lance's order: ``f > 0.5`` holds for NaN), not those of
    pyarrow's ``Table.filter`` (a NaN compares false there)."""
    ds = lance_duck.dataset(table)
    want = lance.dataset(table).to_table(filter=expr).column("id").to_pylist()
    assert ds.to_table(columns=["id"], filter=expr).column("id").to_pylist() == want
    assert ds.scanner(columns=["id"], filter=expr).to_table().column("id").to_pylist() == want
    assert ds.count_rows(filter=expr) == len(want)
