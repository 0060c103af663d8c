"""Texts that differ only in numbers (``integrations/duckdb/shapes.py``, ``statements.py``).

``lance_duck.sql`` rewrites the first text of a literal shape with marks for its numbers and
reuses that rewrite for later texts of the shape when it reads no number's value; otherwise each
text is rewritten itself. The answer is asserted against pylance's reading of the table, and
whether sqlglot parsed the text again is asserted separately (sqlglot's ``parse`` counted).
"""
from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import sqlglot

import lance_duck
from lance_duck.integrations.duckdb import cache as sql_cache
from lance_duck.integrations.duckdb import rewrite as rewrite_module
from lance_duck.integrations.duckdb.shapes import literal_shape

lance = pytest.importorskip("lance")


@pytest.fixture
def table(tmp_path) -> str:
    """Version 1: ids 0-59; version 2: ids 60-89 appended; then ids 10-14 deleted (version 3)."""
    path = str(tmp_path / "shaped.lance")

    def rows(start: int, n: int) -> pa.Table:
        ids = list(range(start, start + n))
        return pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array([i / 4 - 5 for i in ids], pa.float64()),
                         "s": pa.array([f"v{i % 7}" for i in ids])})
    lance.write_dataset(rows(0, 60), path)
    lance.write_dataset(rows(60, 30), path, mode="append")
    lance.dataset(path).delete("id >= 10 AND id < 15")
    return path


@pytest.fixture
def parses(monkeypatch) -> list[str]:
    """The texts sqlglot parses from now on."""
    seen: list[str] = []
    real = sqlglot.parse

    def counted(sql: str, *args, **kwargs):
        seen.append(sql)
        return real(sql, *args, **kwargs)
    monkeypatch.setattr(rewrite_module.sqlglot, "parse", counted)
    sql_cache.clear()
    return seen


def _rows(t: pa.Table) -> list[tuple]:
    return [tuple(r.values()) for r in t.to_pylist()]


def _pylance(path: str, flt: str | None, version: int | None = None, columns: list[str] | None = None) -> list[tuple]:
    t = lance.dataset(path, version=version).to_table(filter=flt, columns=columns)
    return _rows(t.sort_by("id"))


# -- the shape of a text -------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "literals"), [
    ("select * from t where id = 7", ("7",)),
    ("select 7.5, .5, 7., 1e-3, 2E+4 from t", ("7.5", ".5", "7.", "1e-3", "2E+4")),
    ("select * from t1 where a = -3 limit 10", ("3", "10")),
    ("select 'a 1', \"col 2\", x from t -- 3 rows\n where y > 4", ("4",)),
    ("select 'it''s 5' from t where z = 6", ("6",)),
    ("select 1_000, 0x1F, a.1, x2 from t", ()),
    ("select * from 'data/v2.lance' where id in (1, 2, 3)", ("1", "2", "3")),
])
def test_numbers_outside_strings_names_and_comments_are_the_literals(text, literals):
    shape = literal_shape(text)
    assert shape is not None and shape.literals == literals
    assert shape.key.count("\x00") == len(literals)


@pytest.mark.parametrize("text", [
    "select E'a\\'1' from t", "select $1 from t", "select $$5$$", "select `a` from t",
    "select /* 5 */ 6", "select 'open 5", "select \"open 5", "select 1\x002",
])
def test_text_whose_tokens_are_unsure_has_no_shape(text):
    assert literal_shape(text) is None


def test_texts_differing_in_numbers_share_a_shape_and_strings_do_not():
    a, b = literal_shape("select * from t where id = 7"), literal_shape("select * from t where id = 123456")
    assert a is not None and b is not None and a.key == b.key
    c = literal_shape("select * from t where id = 7.0")
    assert c is not None and c.key != a.key                # another kind of literal
    d, e = literal_shape("select * from t where s = 'v1'"), literal_shape("select * from t where s = 'v2'")
    assert d is not None and e is not None and d.key != e.key


# -- rewrites reused across a shape ----------------------------------------------------------------
def test_point_lookups_with_new_ids_are_pylances_rows_and_parse_once(table, parses):
    con = duckdb.connect()
    for i in (0, 7, 12, 59, 60, 89, 1000, -3):
        q = f"SELECT * FROM '{table}' WHERE id = {i}"
        assert lance_duck.sql(q, con).fetchall() == _pylance(table, f"id = {i}")
    assert len(parses) == 2                         # the marked rewrite of each shape: 'id = n' and 'id = -n'


def test_several_numbers_in_one_text_each_land_in_their_place(table, parses):
    con = duckdb.connect()
    for lo, hi, n in ((3, 20, 5), (50, 80, 100), (0, 2, 1), (11, 16, 3)):
        q = f"SELECT id, s FROM '{table}' WHERE id >= {lo} AND id < {hi} ORDER BY id LIMIT {n}"
        assert lance_duck.sql(q, con).fetchall() == _pylance(table, f"id >= {lo} AND id < {hi}", columns=["id", "s"])[:n]
    assert len(parses) == 1


def test_double_comparisons_get_a_view_filtered_by_their_own_value(table, parses):
    """A comparison on a float64 column is a filtered view made per value: the reused rewrite
    recomputes the view's comparison from the text's own literal (exact or not, negative or not)."""
    con = duckdb.connect()
    for v in ("2.5", "-1.25", "10", "3e0", "-4.75", "12345678901234567.5", ".5"):
        q = f"SELECT id FROM '{table}' WHERE x > {v} ORDER BY id"
        assert lance_duck.sql(q, con).fetchall() == _pylance(table, f"x > {float(v)!r}", columns=["id"]), v
    assert len(parses) <= 4                                   # one per kind of literal: i, d, e (and .5's d)


def test_a_literal_too_large_for_a_double_is_rewritten_itself(table):
    con = duckdb.connect()
    q = "SELECT count(*) FROM '" + table + "' WHERE x < {v} AND id >= 0"
    assert lance_duck.sql(q.format(v="5.5"), con).fetchall() == [(len(_pylance(table, "x < 5.5")),)]
    huge = "1" + "0" * 400 + ".5"                         # DuckDB: a DOUBLE, infinite
    assert lance_duck.sql(q.format(v=huge), con).fetchall() == [(len(_pylance(table, None)),)]


def test_versions_given_as_numbers_are_read_per_text(table, parses):
    con = duckdb.connect()
    for v in (1, 2, 3, 1):
        q = f"SELECT * FROM '{table}' AT (VERSION => {v}) ORDER BY id"
        assert lance_duck.sql(q, con).fetchall() == _pylance(table, None, version=v)
        q = f"SELECT id FROM lance_scan('{table}', version => {v}) WHERE id > 55 ORDER BY id"
        assert lance_duck.sql(q, con).fetchall() == _pylance(table, "id > 55", version=v, columns=["id"])
    shape = literal_shape(f"SELECT * FROM '{table}' AT (VERSION => 1) ORDER BY id")
    assert shape is not None and sql_cache.shapes.get(shape.key) == "per text"


def test_counts_with_numbers_in_their_filter_are_exact_per_text(table, parses):
    con = duckdb.connect()
    for lo in (0, 12, 59, 88, 200):
        q = f"SELECT count(*) FROM '{table}' WHERE id > {lo}"
        assert lance_duck.sql(q, con).fetchall() == [(len(_pylance(table, f"id > {lo}")),)]


def test_deleted_rows_stay_deleted_under_reused_rewrites(table, parses):
    con = duckdb.connect()
    for i in range(8, 17):
        got = lance_duck.sql(f"SELECT id FROM '{table}' WHERE id = {i}", con).fetchall()
        assert got == ([] if 10 <= i < 15 else [(i,)])
    assert len(parses) == 1


def test_a_new_version_is_read_by_the_next_text_of_a_shape(table, parses):
    con = duckdb.connect()
    q = "SELECT id, s FROM '" + table + "' WHERE id >= {n} ORDER BY id"
    assert lance_duck.sql(q.format(n=85), con).fetchall() == _pylance(table, "id >= 85", columns=["id", "s"])
    lance.write_dataset(pa.table({"id": pa.array([95, 96], pa.int64()), "x": [1.0, 2.0], "s": ["n", "m"]}),
                        table, mode="append")
    assert lance_duck.sql(q.format(n=86), con).fetchall() == _pylance(table, "id >= 86", columns=["id", "s"])
    assert (95, "n") in lance_duck.sql(q.format(n=87), con).fetchall()


def test_strings_with_digits_and_hidden_columns_are_part_of_the_shape(table, parses):
    con = duckdb.connect()
    for s, n in (("v1", 3), ("v2", 5), ("v1", 40)):
        q = f"SELECT id, _rowid FROM '{table}' WHERE s = '{s}' AND id > {n} ORDER BY id"
        want = lance.dataset(table).to_table(filter=f"s = '{s}' AND id > {n}", columns=["id"], with_row_id=True)
        assert lance_duck.sql(q, con).fetchall() == _rows(want.sort_by("id"))
    assert len(parses) == 2                                   # 'v1' and 'v2' are two shapes


def test_a_number_bound_differently_fails_at_its_first_fetch(table):
    """A later text of a shape bound before runs when a result is asked for: an error only its
    number causes is DuckDB's, raised there."""
    con = duckdb.connect()
    assert lance_duck.sql(f"SELECT id, s FROM '{table}' ORDER BY 1 LIMIT 2", con).fetchall() == [(0, "v0"), (1, "v1")]
    rel = lance_duck.sql(f"SELECT id, s FROM '{table}' ORDER BY 5 LIMIT 2", con)
    with pytest.raises(duckdb.BinderException, match="ORDER term out of range"):
        rel.fetchall()
    with pytest.raises(duckdb.BinderException, match="ORDER term out of range"):
        rel.to_arrow_table()
    assert lance_duck.sql(f"SELECT id, s FROM '{table}' ORDER BY 2, 1 LIMIT 2", con).fetchall() == [(0, "v0"), (7, "v0")]


def test_a_shape_used_on_another_connection_binds_there_first(table):
    a, b = duckdb.connect(), duckdb.connect()
    q = "SELECT id FROM '" + table + "' WHERE id = {n}"
    assert lance_duck.sql(q.format(n=1), a).fetchall() == [(1,)]
    with pytest.raises(duckdb.BinderException):
        lance_duck.sql(f"SELECT id FROM '{table}' ORDER BY 9", b)      # bound at the call there
    assert lance_duck.sql(q.format(n=2), b).fetchall() == [(2,)]


def test_the_shape_cache_is_bounded_and_cleared(table):
    con = duckdb.connect()
    for i in range(sql_cache.SHAPES_KEPT + 5):
        lance_duck.sql(f"SELECT id AS c{i} FROM '{table}' WHERE id = 1", con).fetchall()
    assert 0 < len(sql_cache.shapes) <= sql_cache.SHAPES_KEPT
    sql_cache.clear()
    assert len(sql_cache.shapes) == 0


def test_a_shape_reused_matches_the_rewrite_of_its_own_text(table):
    """The reused rewrite (marks filled) and the text's own rewrite read the same rows, for a query
    with a join, a subquery, a CTE, arithmetic and a window."""
    con = duckdb.connect()
    q = ("WITH a AS (SELECT id, x FROM '" + table + "' WHERE id < {n}) "
         "SELECT a.id, a.x * {k} AS y, row_number() OVER (ORDER BY a.id DESC) AS r, "
         "(SELECT max(id) FROM '" + table + "' WHERE id < {m}) AS top "
         "FROM a JOIN '" + table + "' b ON a.id = b.id + {d} ORDER BY a.id")
    for n, k, m, d in ((20, 2, 30, 1), (70, 3.5, 5, 0), (9, -1, 90, 2)):
        text = q.format(n=n, k=k, m=m, d=d)
        got = lance_duck.sql(text, con).fetchall()
        sql_cache.clear()
        assert lance_duck.sql(text, duckdb.connect()).fetchall() == got
        ids = set(pc.add(pa.array(_rows_ids(table)), d).to_pylist())
        assert [r[0] for r in got] == [i for i in _rows_ids(table) if i < n and i in ids]


def _rows_ids(path: str) -> list[int]:
    return sorted(lance.dataset(path).to_table(columns=["id"])["id"].to_pylist())


_T = "'/data/t.lance'"
SHAPED = [
    "SELECT * FROM {t} WHERE id = {a}",
    "SELECT id, x * {a} + {b} FROM {t} WHERE id BETWEEN {a} AND {b} ORDER BY 2 DESC LIMIT {a} OFFSET {b}",
    "SELECT CASE WHEN x > {a} THEN {b} ELSE -{a} END FROM {t} WHERE id IN ({a}, {b}, {a}.5)",
    "SELECT * FROM {t} WHERE x >= {a}.25 AND x < {b}e1 AND s LIKE '%v1%'",
    "SELECT x FROM {t} USING SAMPLE {a} ROWS",
    "SELECT ts + INTERVAL {a} DAY, CAST(x AS DECIMAL(18, 3)) FROM {t} WHERE id % {b} = 0",
    "SELECT id FROM {t} WHERE id < {a} UNION ALL SELECT id FROM lance_scan({t_}, columns => ['id']) WHERE id > {b}",
    "EXPLAIN SELECT sum(x) FROM {t} WHERE id > {a} GROUP BY s HAVING sum(x) > {b}",
    "SELECT count(*) FROM {t}",
    "SELECT count(*) + {a} FROM {t} WHERE x = {b}",
    "DESCRIBE SELECT id + {a} FROM {t}",
    "SELECT list_value({a}, {b})[{a}], 'text {a}' FROM {t} -- {b} rows\n",
    "SELECT * FROM {t} WHERE -{a}.5 < x AND x <= 1{b}0000000000000000.5 AND x > 1e{a}00",
    "SELECT a.id FROM {t} a JOIN lance_scan({t_}, with_row_id => true) b ON a.id = b.id + {a} WHERE b.x > {b}",
    "SELECT * FROM (SELECT id FROM {t} LIMIT {a}) WHERE id > {b}",
]


@pytest.mark.parametrize("query", SHAPED)
def test_the_reused_rewrite_is_the_texts_own(query):
    """Property: for texts of one shape, the template filled with a text's numbers equals the
    rewrite of that text itself (its SQL compared as sqlglot reads it)."""
    from lance_duck.integrations.duckdb import statements

    sql_cache.clear()
    lookup = lambda name: None  # noqa: E731
    texts = [query.format(t=_T, t_=_T, a=a, b=b) for a, b in ((3, 7), (0, 123456789), (41, 2))]
    first = statements.template(texts[0], lookup)
    assert first == statements._rewritten(texts[0], lookup, None)
    shape = literal_shape(texts[0])
    assert shape is not None and isinstance(sql_cache.shapes.get(shape.key), statements.ShapeTemplate)
    for text in texts[1:]:
        got, own = statements.template(text, lookup), statements._rewritten(text, lookup, None)
        assert got.refs == own.refs and got.asked == own.asked and got.probes == own.probes
        g, o = got.rewritten, own.rewritten
        assert (g.refs, g.count_ref, g.count_alias, g.views, g.whole, g.query) == \
            (o.refs, o.count_ref, o.count_alias, o.views, o.whole, o.query)
        assert sqlglot.parse(g.sql, read="duckdb") == sqlglot.parse(o.sql, read="duckdb"), (g.sql, o.sql)


@pytest.mark.parametrize("query", [
    "SELECT * FROM {t} AT (VERSION => {a}) WHERE id = {b}",
    "SELECT * FROM lance_scan({t}, batch_size => {a})",
    "SELECT count(*) FROM {t} WHERE id > {a}",
    "SELECT * FROM lance_versions({t}) WHERE version > {a}",
])
def test_a_shape_whose_rewrite_reads_a_number_is_rewritten_per_text(query):
    from lance_duck.integrations.duckdb import statements

    sql_cache.clear()
    text = query.format(t=_T, a=3, b=4)
    shape = literal_shape(text)
    assert shape is not None
    kept = statements._shape_template(shape, lambda name: None)
    assert kept == statements.PER_TEXT


def test_threads_sharing_shapes_each_get_their_own_rows(table):
    """Four threads, a connection each, interleave lookups of one shape with new ids and new float
    bounds (shared kept rewrites, per-connection bound statements and views): every answer is
    pylance's."""
    from concurrent.futures import ThreadPoolExecutor

    sql_cache.clear()
    want_id = {i: _pylance(table, f"id = {i}") for i in range(0, 90, 3)}
    want_x = {v: _pylance(table, f"x > {v!r}", columns=["id"]) for v in (-4.5, 0.25, 7.75, 15.5)}

    def work(k: int) -> list[str]:
        con = duckdb.connect()
        wrong = []
        for n, i in enumerate(sorted(want_id, key=lambda i: (i * (k + 1)) % 31)):
            if lance_duck.sql(f"SELECT * FROM '{table}' WHERE id = {i}", con).fetchall() != want_id[i]:
                wrong.append(f"id {i}")
            v = list(want_x)[(n + k) % len(want_x)]
            if lance_duck.sql(f"SELECT id FROM '{table}' WHERE x > {v!r} ORDER BY id", con).fetchall() != want_x[v]:
                wrong.append(f"x {v}")
        return wrong
    with ThreadPoolExecutor(4) as pool:
        assert [w for ws in pool.map(work, range(4)) for w in ws] == []
