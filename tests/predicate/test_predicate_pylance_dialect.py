"""Our compiled filters select exactly the rows pylance selects, for its whole filter dialect."""
from __future__ import annotations

import pytest

from lance_duck.predicate import compile_filter
from .helpers_predicate import assert_tables_equal

# Filters pylance 14.0.2 accepts (integration.md §3.2 probes plus null/type edge cases).
PYLANCE_FILTERS = [
    "id = 5", "id == 5", "`id` = 5", "id != 5", "id <> 5", "5 < id AND id <= 9",
    "id BETWEEN 3 AND 6", "id NOT BETWEEN 3 AND 595", "id IN (1, 2, 3)", "id NOT IN (1, 2, 3)",
    # SQL null semantics
    # (NOT) IN with a NULL item is NULL, never TRUE, where the value is not listed: OR it with a
    # filter that selects rows, so an always-false or an always-true reading is seen.
    "i32 NOT IN (1, 2, NULL) OR id < 5", "i32 NOT IN (-926, -772, NULL) OR id < 5",
    "i32 IN (-926, -772, NULL)", "i32 IS NULL", "i32 IS NOT NULL",
    "NOT (i32 > 0)", "NOT (i32 > 0 AND id < 100)", "NOT (i32 > 0 OR id < 100)", "i32 > 0 OR x > 0",
    "NOT (i32 = NULL) OR id < 3", "i32 = NULL OR id < 3",
    # floats: NaN sorts above everything and equals itself
    "x > 2.5", "x >= 2.5", "x < 2.5", "x <= 2.5", "isnan(x)", "NOT isnan(x)", "x != 3.0",
    "NOT (x > 2.5)", "f32 > 1", "f32 = 0.5",
    # unsigned
    "u8 > 200", "u8 = 255", "u8 < 3", "u64 > 1099511627776", "u64 = 0",
    # strings, large_string
    "name = 'abc1'", "name = \"abc1\"", "name = 'it''s'", "name IN ('abc3', 'xyz4')",
    "name NOT IN ('abc3', 'xyz4')", "name LIKE 'abc1%'", "name LIKE 'a_c3'", "name NOT LIKE '%1%'",
    "name ILIKE 'ABC3'", "name LIKE 'a\\%b'", "name LIKE 'a\\_b%'", "name LIKE '%\\\\%'",
    "lname = 'abc1'", "lname LIKE 'xyz%'", "lname IN ('abc3', 'xyz4')", "lname > 'x'",
    "regexp_like(name, '^abc1')", "regexp_match(name, '^abc1')", "regexp_like(name, '^ABC1', 'i')",
    "regexp_match(name, '^XYZ', 'i')", "regexp_like(name, '^abc1', '')", "starts_with(name, 'xyz')",
    "ends_with(name, '3')", "contains(name, 'bc')", "lower(name) = 'abc3'", "upper(name) = 'ABC3'",
    "length(name) = 4", "character_length(name) = 4", "length(name) = 7", "concat(name, '!') = 'abc3!'",
    # arithmetic
    "abs(i32) < 10", "coalesce(i32, 0) = 0", "id + 1 = 6", "id - 1 = 6", "id * 2 = 6", "id / 2 = 3",
    "id % 100 = 7", "-id < -590", "i32 % 7 = -3",
    # booleans
    "flag", "NOT flag", "flag = true", "flag IS TRUE", "flag IS NOT TRUE", "flag IS FALSE",
    "flag IS NOT FALSE",
    # temporal: naive, UTC and zoned timestamps, dates
    "ts > TIMESTAMP '2024-02-01 00:00:00'", "ts > timestamp '2024-02-01 00:00:00'",
    "ts = TIMESTAMP '2024-01-01 07:00:00.000001'", "tstz > TIMESTAMP '2024-02-01 00:00:00'",
    "tsny > TIMESTAMP '2024-02-01 00:00:00'", "tsny < TIMESTAMP '2024-01-02 00:00:00'",
    "tstz = TIMESTAMP '2024-01-01 07:00:00.000001'", "d = DATE '2024-01-05'", "d = date '2024-01-05'",
    "d > DATE '2024-12-30'", "d BETWEEN DATE '2024-02-01' AND DATE '2024-02-10'",
    "CAST(d AS TIMESTAMP) > TIMESTAMP '2024-06-01 00:00:00'",
    "date_part('year', ts) = 2024", "date_part('month', ts) = 3",
    "date_trunc('day', ts) = TIMESTAMP '2024-01-02 00:00:00'",
    # decimals
    "dec = CAST(1.47 AS DECIMAL(10,2))", "dec > CAST(19.5 AS DECIMAL(10,2))", "dec = 7",
    "dec IN (CAST(0.07 AS DECIMAL(10,2)), CAST(0.14 AS DECIMAL(10,2)))",
    # nested
    "s.a = 5", "s.a > 40", "s['b'] = 'b1'", "get_field(s, 'a') = 5", "s.inner.c = 30", "s.a IS NULL",
    "s IS NULL", "s.b = 'b1' AND id < 100",
    # lists (residual)
    "array_has(l, 3)", "array_contains(l, 3)", "list_contains(l, 3)", "NOT array_has(l, 3)",
    "array_has(l, 3) AND id < 100", "array_has(l, 3) OR id < 10", "array_has(tags, 't1')",
    "l[1] = 2", "l[2] = 3", "array_length(l) = 2",
    # casts
    "CAST(id AS DOUBLE) = 5.0", "id::double = 5.0",
]


@pytest.fixture(scope="module")
def full_table(lance_types):
    return lance_types.to_table()


def assert_selects_some_not_all(expected, full_table, sql: str) -> None:
    """A filter selecting no row or every row passes for an always-false or an ignored filter."""
    assert 0 < expected.num_rows < full_table.num_rows, f"{sql!r} selects {expected.num_rows} rows"


@pytest.mark.parametrize("sql", PYLANCE_FILTERS)
def test_filter_selects_the_rows_pylance_selects(lance_types, full_table, sql):
    expected = lance_types.to_table(filter=sql)
    assert_selects_some_not_all(expected, full_table, sql)
    got = compile_filter(sql, full_table.schema).apply(full_table)
    assert_tables_equal(got, expected)


def test_rowid_filter_matches_pylance_when_the_scanner_supplies_rowid(lance_types):
    table = lance_types.to_table(with_row_id=True)
    expected = lance_types.to_table(filter="_rowid < 5 OR _rowid > 4294967300", with_row_id=True)
    assert 5 < expected.num_rows < table.num_rows
    got = compile_filter("_rowid < 5 OR _rowid > 4294967300", lance_types.schema).apply(table)
    assert_tables_equal(got, expected)


# Where pylance refuses a literal, we accept it with the column's type. The same filter with an
# explicitly typed literal is what pylance accepts, so both must select the same rows.
LENIENT = [
    ("d > '2024-12-30'", "d > DATE '2024-12-30'"),
    ("ts > '2024-02-01T00:00:00'", "ts > TIMESTAMP '2024-02-01 00:00:00'"),
    ("tsny > '2024-02-01 00:00:00'", "tsny > TIMESTAMP '2024-02-01 00:00:00'"),
    ("dec > 19.5", "dec > CAST(19.5 AS DECIMAL(10,2))"),
    ("dec = 0.07", "dec = CAST(0.07 AS DECIMAL(10,2))"),
    ("name LIKE 'a!%b' ESCAPE '!'", "name LIKE 'a\\%b'"),
    ("u64 > -1 AND id < 10", "u64 >= 0 AND id < 10"),
    ("u64 < -1 OR id < 10", "id < 10"),
    ("id IN (1, 2.5, 3)", "id IN (1, 3)"),
]


@pytest.mark.parametrize("lenient,typed", LENIENT)
def test_untyped_literal_is_read_as_the_column_type(lance_types, full_table, lenient, typed):
    expected = lance_types.to_table(filter=typed)
    assert_selects_some_not_all(expected, full_table, typed)
    got = compile_filter(lenient, full_table.schema).apply(full_table)
    assert_tables_equal(got, expected)


@pytest.mark.parametrize("flags", ["g", "c", "ix"])
def test_regexp_like_flag_outside_what_re2_shares_is_refused_by_name(full_table, flags):
    from lance_duck.errors import UnsupportedFeatureError

    with pytest.raises(UnsupportedFeatureError, match=f"flag.*{flags[-1]}"):
        compile_filter(f"regexp_like(name, 'abc', '{flags}')", full_table.schema).apply(full_table)
