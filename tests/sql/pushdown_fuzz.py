"""Shared by the pushdown fuzzers (``test_sql_pushdown_fuzz``, ``scan/test_scan_filter_fuzz``): a
pylance-written table with every scalar type at its edges (integer bounds, uint64 above int64's max,
NaN / -0.0 / inf, decimals, dates, timestamps of every unit with and without a zone, strings with
empty / trailing-space / NUL / high code points, binary, booleans, a struct, lists, a dictionary
column), in several fragments, with deletions, an update and versions, with and without scalar
indices; and seeded random predicates in DuckDB's SQL and in pylance's dialect.
"""
from __future__ import annotations

import datetime
import decimal
import random

import lance
import numpy as np
import pyarrow as pa

N = 600
D = decimal.Decimal
_I8 = [-128, -127, -1, 0, 1, 5, 126, 127]
_I64 = [-2**63, -2**53 - 1, -1, 0, 2, 2**53 + 1, 2**63 - 1]
_U8 = [0, 1, 127, 128, 254, 255]
_U32 = [0, 1, 2**31, 2**32 - 1]
_U64 = [0, 1, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 1]
_F = [float("nan"), -float("inf"), -1.5, -0.0, 0.0, 0.1, 2.5, 3.0, 1e300, float("inf")]
_DEC = [D(x) for x in ["-99999999.99", "-1.50", "0.00", "0.01", "1.25", "1.50", "99999999.99"]]
_DATES = [datetime.date(1, 1, 1), datetime.date(1969, 12, 31), datetime.date(1970, 1, 1), datetime.date(2024, 2, 29),
          datetime.date(9999, 12, 31)]
_MICROS = [-1_500_000, -1, 0, 1, 999_999, 1_000_000, 1_700_000_000_123_456]
_STR = ["", " ", "a", "a ", "ab", "abc", "a%c", "a_c", "A", "é", "ß", "İx", "\x00", "a\x00", "z\U0010ffff", "🙂x",
        "Ab_%", "a\\b", "xyz"]
_BIN = [b"", b"\x00", b"\x00\x01", b"a", b"\xff", b"ab"]


def make_table(n: int = N, seed: int = 5, first_id: int = 0) -> pa.Table:
    """``n`` rows of the type matrix (seeded); ids from ``first_id``."""
    rng = np.random.default_rng(seed)

    def pick(values: list, t: pa.DataType, null_every: int | None = None) -> pa.Array:
        out = [values[i] for i in rng.integers(0, len(values), n)]
        if null_every:
            out = [None if i % null_every == 3 else v for i, v in enumerate(out)]
        return pa.array(out, t)

    def micros(unit_div: int, t: pa.DataType, null_at: int, ns_extra: bool = False) -> pa.Array:
        vals = [_MICROS[i] for i in rng.integers(0, len(_MICROS), n)]
        return pa.array([None if i % 9 == null_at else (v * 1000 + i % 3 - 1 if ns_extra else v // unit_div)
                         for i, v in enumerate(vals)], t)

    return pa.table({
        "id": pa.array(np.arange(first_id, first_id + n), pa.int64()),
        "i8": pick(_I8, pa.int8(), 9), "i16": pick([-32768, -1, 0, 7, 32767], pa.int16(), 11),
        "i32": pick([-2**31, -5, 0, 3, 2**31 - 1], pa.int32(), 13), "i64": pick(_I64, pa.int64(), 7),
        "u8": pick(_U8, pa.uint8(), 10), "u16": pick([0, 1, 32768, 65535], pa.uint16()),
        "u32": pick(_U32, pa.uint32(), 8), "u64": pick(_U64, pa.uint64(), 6),
        "f32": pick(_F[:-2] + [float("inf")], pa.float32(), 9), "f64": pick(_F, pa.float64(), 8),
        "dec": pick(_DEC, pa.decimal128(10, 2), 7), "dt": pick(_DATES, pa.date32(), 8),
        "ts_s": micros(1_000_000, pa.timestamp("s"), 1), "ts_ms": micros(1000, pa.timestamp("ms"), 2),
        "ts_us": micros(1, pa.timestamp("us"), 0), "ts_ns": micros(1, pa.timestamp("ns"), 4, ns_extra=True),
        "ts_tz": micros(1, pa.timestamp("us", tz="UTC"), 5),
        "ts_tzms": micros(1000, pa.timestamp("ms", tz="UTC"), 6),
        "s": pick(_STR, pa.string(), 6), "ls": pick(_STR, pa.large_string(), 7), "bin": pick(_BIN, pa.binary(), 8),
        "b": pick([True, False], pa.bool_(), 5),
        "st": pa.array([{"x": int(v), "y": s} for v, s in zip(rng.integers(-3, 4, n), pick(_STR, pa.string()).to_pylist())],
                       pa.struct([("x", pa.int32()), ("y", pa.string())])),
        "li": pa.array([None if i % 10 == 0 else [int(x) for x in rng.integers(0, 5, i % 4)] for i in range(n)],
                       pa.list_(pa.int32())),
        "tags": pa.array([None if i % 11 == 0 else [str(x) for x in rng.choice(["a", "b", "c", ""], i % 3)]
                          for i in range(n)], pa.list_(pa.string())),
        "dict": pick(["red", "green", "", "blue"], pa.string(), 5).dictionary_encode(),
        "lowcard": pick(["p", "q", "r"], pa.string(), 9),
    })


INDICES = [("i32", "BTREE"), ("i64", "BTREE"), ("u64", "BTREE"), ("s", "BTREE"), ("f64", "BTREE"),
           ("i8", "BITMAP"), ("lowcard", "BITMAP"), ("u8", "BITMAP"), ("b", "BITMAP"), ("f32", "ZONEMAP"),
           ("dt", "ZONEMAP"), ("i16", "ZONEMAP"), ("ts_tz", "ZONEMAP"), ("ts_us", "BTREE"), ("dec", "BTREE"),
           ("u32", "BLOOMFILTER"), ("ls", "NGRAM"), ("tags", "LABEL_LIST")]


def write_table(path: str, indexed: bool) -> int:
    """Write the table (two appends, fragments of 150 rows), delete, update, delete again; with
    ``indexed``, index it and append unindexed rows. Returns the version after the first deletion."""
    t = make_table()
    ds = lance.write_dataset(t.slice(0, N // 2), path, max_rows_per_file=150)
    ds = lance.write_dataset(t.slice(N // 2), path, mode="append", max_rows_per_file=150)
    ds.delete("id % 17 = 3")
    older = ds.version
    ds.update({"i32": "i32 + 1"}, where="id % 23 = 5 AND i32 < 1000")
    ds.delete("id % 29 = 4")
    if indexed:
        for col, kind in INDICES:
            ds.create_scalar_index(col, kind)
        ds = lance.write_dataset(make_table(60, seed=9, first_id=N), path, mode="append")
        ds.delete("id % 31 = 2")
    return older


# -- DuckDB SQL predicates --------------------------------------------------------------------------
DUCK_LITERALS = {
    "i8": ["-128", "-129", "127", "128", "0", "5", "2.5", "-0.5"],
    "i16": ["-32768", "32767", "7", "6.5", "40000"],
    "i32": ["-2147483648", "2147483647", "3", "4", "2.5", "3000000000"],
    "i64": ["-9223372036854775808", "9223372036854775807", "9007199254740993", "9007199254740993.0", "1.5",
            "9223372036854775808"],
    "u8": ["0", "255", "256", "-1", "127.5"],
    "u16": ["0", "65535", "-1"],
    "u32": ["0", "4294967295", "2147483648", "4294967296"],
    "u64": ["0", "9223372036854775807", "9223372036854775808", "18446744073709551615", "18446744073709551616", "-1",
            "9.3e18"],
    "f32": ["0.1", "0.1::FLOAT", "2.5", "-0.0", "'NaN'::FLOAT", "'inf'::FLOAT", "1e39"],
    "f64": ["0.1", "2.5", "0", "-0.0", "'NaN'::DOUBLE", "'-inf'::DOUBLE", "1e300", "0.30000000000000004"],
    "dec": ["1.25", "1.5", "1.505", "0", "-1.5", "99999999.99", "1.25::DECIMAL(18,6)", "100000000"],
    "dt": ["DATE '1970-01-01'", "DATE '2024-02-29'", "DATE '0001-01-01'", "TIMESTAMP '1970-01-01 00:00:01'",
           "'2024-02-29'"],
    "ts_s": ["TIMESTAMP '1970-01-01 00:00:00'", "TIMESTAMP '1969-12-31 23:59:58.5'", "DATE '1970-01-01'"],
    "ts_ms": ["TIMESTAMP '1970-01-01 00:00:00'", "TIMESTAMP '1969-12-31 23:59:59.999'",
              "TIMESTAMP '1970-01-01 00:00:00.0005'"],
    "ts_us": ["TIMESTAMP '1970-01-01 00:00:00'", "TIMESTAMP '1970-01-01 00:00:00.000001'",
              "TIMESTAMP_NS '1970-01-01 00:00:00.0000005'", "DATE '1970-01-01'"],
    "ts_ns": ["TIMESTAMP '1970-01-01 00:00:00'", "TIMESTAMP_NS '1970-01-01 00:00:00.000000001'",
              "TIMESTAMP_NS '1969-12-31 23:59:59.999999'"],
    "ts_tz": ["TIMESTAMPTZ '1970-01-01 00:00:00+00'", "TIMESTAMPTZ '1970-01-01 01:00:01+01'",
              "TIMESTAMP '1970-01-01 00:00:00'"],
    "ts_tzms": ["TIMESTAMPTZ '1970-01-01 00:00:00+00'", "TIMESTAMPTZ '1970-01-01 00:00:00.0005+00'"],
    "s": ["''", "' '", "'a'", "'a '", "'ab'", "'A'", "'ß'", "'a%c'", "chr(0)", "'z' || chr(1114111)", "'🙂'", "'İx'"],
    "ls": ["''", "'a'", "'ab'", "'xyz'", "chr(0)"],
    "bin": ["''::BLOB", "'\\x00'::BLOB", "'a'::BLOB", "'\\xFF'::BLOB"],
    "dict": ["'red'", "''", "'zz'"],
    "lowcard": ["'p'", "'q'", "'zz'"],
}
_OPS = ["=", "<>", "<", "<=", ">", ">="]
_LIKES = ["a%", "%a", "a_c", "%\\%%", "a\\_c", "_", "", "%", "%b%", "A%", "%ß%", "İ%"]


def _duck_atom(r: random.Random) -> str:   # noqa: C901 - one case per form
    col = r.choice(list(DUCK_LITERALS))

    def lit() -> str:
        return r.choice(DUCK_LITERALS[col]) if r.random() > 0.06 else "NULL"
    k = r.random()
    if k < 0.35:
        return f"{col} {r.choice(_OPS)} {lit()}" if r.random() < 0.6 else f"{lit()} {r.choice(_OPS)} {col}"
    if k < 0.45:
        return f"{col} {'NOT ' if r.random() < 0.4 else ''}IN ({', '.join(lit() for _ in range(r.randint(1, 4)))})"
    if k < 0.52:
        return f"{col} {'NOT ' if r.random() < 0.3 else ''}BETWEEN {lit()} AND {lit()}"
    if k < 0.57:
        return f"{col} IS {'NOT ' if r.random() < 0.5 else ''}NULL"
    if k < 0.61:
        return f"{col} IS {'NOT ' if r.random() < 0.5 else ''}DISTINCT FROM {lit()}"
    if k < 0.71:
        pattern = r.choice(_LIKES)
        escape = " ESCAPE '\\'" if "\\" in pattern and r.random() < 0.7 else ""
        op = r.choice(["LIKE", "ILIKE", "NOT LIKE", "NOT ILIKE"])
        return f"{r.choice(['s', 'ls', 'dict', 'st.y'])} {op} '{pattern}'{escape}"
    if k < 0.77:
        fn = r.choice(["contains", "starts_with", "ends_with", "prefix", "suffix", "regexp_matches"])
        return f"{fn}({r.choice(['s', 'ls', 'dict'])}, '{r.choice(['a', '', 'b', 'ß', 'c$', '^a', 'a.', '🙂'])}')"
    if k < 0.82:
        return r.choice(["b", "NOT b", "b IS TRUE", "b IS NOT TRUE", "b IS FALSE", "b = true", "b <> true",
                         "b IS NOT FALSE"])
    if k < 0.86:
        return r.choice([f"st.x {r.choice(_OPS)} {r.randint(-4, 4)}", "st.y = 'a'", "st.y > 'a'", "st IS NULL",
                         "st.x IN (1, NULL)"])
    if k < 0.90:
        return r.choice(["list_contains(li, 1)", "len(li) = 0", "li IS NULL", "list_contains(tags, 'a')",
                         "list_has_any(tags, ['a', 'c'])", "list_has_all(tags, ['a'])", "array_contains(tags, '')"])
    if k < 0.95:
        return r.choice([f"coalesce(i8, 0) {r.choice(_OPS)} 5", "f32::DOUBLE > 0", "i32 + 1 > 4",
                         "u64 - 1 > 9223372036854775807", "i8 * 2 > 100", "CAST(u8 AS VARCHAR) = '0'"])
    return r.choice(["i8 = i16", "s = ls", "u8 > i8", "f32 = f64", "s < dict", "id % 5 = 0", "true", "false",
                     "NULL", "i32 = NULL"])


def _nested(r: random.Random, atom, depth: int = 0) -> str:  # type: ignore[no-untyped-def]
    if depth > 2 or r.random() < 0.45:
        return str(atom(r))
    k = r.random()
    if k < 0.8:
        return f"({_nested(r, atom, depth + 1)} {'AND' if k < 0.4 else 'OR'} {_nested(r, atom, depth + 1)})"
    return f"NOT ({_nested(r, atom, depth + 1)})"


def duck_predicate(r: random.Random) -> str:
    """A random ``WHERE`` in DuckDB's SQL: mostly top-level ANDs (what DuckDB pushes), else nested."""
    if r.random() < 0.6:
        return " AND ".join(_duck_atom(r) for _ in range(r.randint(1, 3)))
    return _nested(r, _duck_atom)


# -- pylance-dialect predicates ------------------------------------------------------------------------
LANCE_LITERALS = {
    "i8": ["-128", "127", "128", "-129", "0", "5", "2.5"], "i16": ["-32768", "32767", "7", "6.5"],
    "i32": ["-2147483648", "2147483647", "3", "2.5", "3000000000"],
    "i64": ["-9223372036854775808", "9223372036854775807", "9007199254740993", "1.5"],
    "u8": ["0", "255", "256", "-1"], "u32": ["0", "4294967295", "4294967296"],
    "u64": ["0", "9223372036854775807", "9223372036854775808", "18446744073709551615", "-1"],
    # no float32 literal off float32's grid: pylance compares `f32 > 0.1` in float32 but `NOT (f32 > 0.1)`
    # in float64 (0.1f passes neither), where lance_duck keeps NOT's meaning
    "f32": ["0.5", "2.5", "-0.0", "3", "1e39"], "f64": ["0.1", "2.5", "0", "-0.0", "1e300"],
    # no 99999999.99: pylance refuses `dec > 99999999.99` (a float it cannot make a decimal) yet answers
    # `NOT (dec > 99999999.99)` in float64, without the rows equal to it
    "dec": ["1.25", "1.5", "1.505", "0", "100000000"],
    "dt": ["date '1970-01-01'", "date '2024-02-29'", "date '0001-01-01'"],
    "ts_s": ["timestamp '1970-01-01 00:00:00'", "timestamp '1969-12-31 23:59:58.5'", "timestamp '1970-01-01 00:00:00.5'"],
    "ts_ms": ["timestamp '1969-12-31 23:59:59.999'", "timestamp '1970-01-01 00:00:00.0005'"],
    "ts_us": ["timestamp '1970-01-01 00:00:00'", "timestamp '1970-01-01 00:00:00.000001'"],
    "ts_ns": ["timestamp '1970-01-01 00:00:00'", "timestamp '1969-12-31 23:59:59.999999'"],
    "ts_tz": ["timestamp '1970-01-01 00:00:00'", "timestamp '1970-01-01 00:00:01'"],
    "s": ["''", "' '", "'a'", "'a '", "'ab'", "'A'", "'ß'", "'a%c'", "'İx'", "'🙂x'"],
    "ls": ["''", "'a'", "'ab'", "'xyz'"], "lowcard": ["'p'", "'q'", "'zz'"], "b": ["true", "false"],
    "dict": ["'red'", "''", "'zz'"],
}


def _lance_atom(r: random.Random) -> str:
    col = r.choice(list(LANCE_LITERALS))

    def lit() -> str:
        return r.choice(LANCE_LITERALS[col]) if r.random() > 0.05 else "NULL"
    k = r.random()
    if k < 0.4:
        return f"{col} {r.choice(_OPS)} {lit()}" if r.random() < 0.7 else f"{lit()} {r.choice(_OPS)} {col}"
    if k < 0.5:
        return f"{col} {'NOT ' if r.random() < 0.4 else ''}IN ({', '.join(lit() for _ in range(r.randint(1, 3)))})"
    if k < 0.57:
        return f"{col} {'NOT ' if r.random() < 0.3 else ''}BETWEEN {lit()} AND {lit()}"
    if k < 0.62:
        return f"{col} IS {'NOT ' if r.random() < 0.5 else ''}NULL"
    if k < 0.72:
        return f"{r.choice(['s', 'ls', 'st.y', 'lowcard'])} {r.choice(['LIKE', 'NOT LIKE', 'ILIKE'])} '{r.choice(_LIKES)}'"
    if k < 0.78:
        fn = r.choice(["contains", "starts_with", "ends_with", "regexp_like"])
        return f"{fn}({r.choice(['s', 'ls'])}, '{r.choice(['a', '', 'b', 'ß', 'c$', '^a', 'a.'])}')"
    if k < 0.84:
        return r.choice(["b", "NOT b", "b IS TRUE", "b IS NOT TRUE", "b IS FALSE", "b = true", "b IS NOT FALSE"])
    if k < 0.89:
        return r.choice([f"st.x {r.choice(_OPS)} {r.randint(-4, 4)}", "st.y = 'a'", "st.x IN (1, 2)"])
    if k < 0.94:
        return r.choice(["array_has_any(tags, ['a', 'c'])", "array_has_all(tags, ['a'])", "array_contains(tags, 'a')",
                         "array_contains(li, 1)", "array_length(li) = 0", "li IS NULL", "tags IS NULL"])
    return r.choice(["i8 = i16", "u8 > i8", "f32 = f64", "id % 5 = 0", "true", "false", "i32 + 1 > 4",
                     "CAST(i8 AS BIGINT) > 5", "isnan(f64)", "NOT isnan(f32)", "coalesce(i8, 0) > 0", "s = lowcard"])


def lance_predicate(r: random.Random) -> str:
    """A random filter in pylance's dialect."""
    if r.random() < 0.5:
        return " AND ".join(_lance_atom(r) for _ in range(r.randint(1, 3)))
    return _nested(r, _lance_atom)
