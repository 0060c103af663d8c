"""Conjunct extraction for pruning, from our SQL filters and from DuckDB-shaped Expressions."""
from __future__ import annotations

import datetime as dt
import decimal

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pytest

from lance_duck.predicate import (
    AnyOf, ColumnPredicate, ColumnStats, compile_filter, extract_conjuncts, may_match,
)

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("name", pa.string()),
                    ("ts", pa.timestamp("us")), ("dec", pa.decimal128(10, 2)),
                    ("s", pa.struct([("a", pa.int32()), ("b", pa.string())])),
                    ("l", pa.list_(pa.int32()))])


def _preds(f):
    return compile_filter(f, SCHEMA).conjuncts


def test_sql_comparisons_become_column_predicates():
    assert _preds("id > 5 AND 10 >= id") == (ColumnPredicate(("id",), ">", pa.scalar(5)),
                                            ColumnPredicate(("id",), "<=", pa.scalar(10)))


def test_between_in_and_null_tests_are_extracted():
    c = _preds("id BETWEEN 1 AND 3 AND name IN ('a', 'b') AND s.a IS NULL AND s.b IS NOT NULL")
    assert [(p.path, p.op) for p in c] == [(("id",), ">="), (("id",), "<="), (("name",), "in"),
                                          (("s", "a"), "is_null"), (("s", "b"), "is_valid")]
    assert c[2].value.to_pylist() == ["a", "b"]


def test_or_on_one_column_is_kept_as_any_of_and_across_columns_dropped():
    assert _preds("id = 1 OR id = 7") == (AnyOf(("id",), (ColumnPredicate(("id",), "==", pa.scalar(1)),
                                                          ColumnPredicate(("id",), "==", pa.scalar(7)))),)
    assert _preds("id = 1 OR name = 'a'") == ()


def test_unknown_conjunct_is_dropped_but_others_kept():
    assert [p.path for p in _preds("abs(id) = 3 AND lower(name) = 'a' AND id < 4")] == [("id",)]


def test_list_membership_becomes_has_any_and_has_all_conjuncts_without_null_needles():
    (p,) = _preds("array_has(l, 3)")
    assert (p.path, p.op, p.value.to_pylist()) == (("l",), "has_any", [3])
    (p,) = _preds("array_has_all(l, [3, 4])")
    assert (p.path, p.op, p.value.to_pylist()) == (("l",), "has_all", [3, 4])
    assert _preds("array_has_any(l, [3, NULL])") == ()     # a null needle matches null elements
    assert _preds("array_has_all(l, [])") == ()


def test_float_greater_than_prunes_only_units_known_to_hold_no_nan():
    # Lance's order puts a NaN with its sign bit set below -inf: ``x > 1.0`` is ``x > 1.0`` (NaN
    # last) AND not such a NaN, ``x < 1.0`` is ``x < 1.0`` OR such a NaN: exactly their conjuncts
    conj = _preds("x > 1.0")
    assert conj == (ColumnPredicate(("x",), ">", pa.scalar(1.0)), ColumnPredicate(("x",), "not_neg_nan"))
    below = (AnyOf(("x",), (ColumnPredicate(("x",), "<", pa.scalar(1.0)), ColumnPredicate(("x",), "neg_nan"))),)
    assert _preds("x < 1.0") == below and compile_filter("x < 1.0", SCHEMA).conjuncts_complete
    either = _preds("x > 5.0 OR x < 1.0")         # Lance's ``>`` in an OR: one predicate
    assert [p.op for p in either[0].preds] == ["lance>", "<", "neg_nan"]
    assert not may_match(below, {"x": ColumnStats(min=2.0, max=3.0, nan_count=0)})
    assert may_match(below, {"x": ColumnStats(min=2.0, max=3.0, nan_count=1)})
    assert _preds("x != 1.0") == ()                       # NaN != 1.0: no min/max answer
    # NaN sorts above +inf: it satisfies > and >=, so only a NaN-free unit can be skipped
    assert may_match(conj, {"x": ColumnStats(min=0.0, max=0.5)})          # NaN count unknown
    assert may_match(conj, {"x": ColumnStats(min=0.0, max=0.5, nan_count=3)})
    assert not may_match(conj, {"x": ColumnStats(min=0.0, max=0.5, nan_count=0)})
    # a NaN max is an open upper bound; a NaN min an all-NaN unit
    assert may_match(_preds("x = 5.0"), {"x": ColumnStats(min=0.0, max=float("nan"))})
    assert not may_match(_preds("x = 5.0"), {"x": ColumnStats(min=float("nan"), max=float("nan"))})


def _duckdb_pushed(where: str) -> pc.Expression | None:
    """The Expression DuckDB 2.0 pushes into a pyarrow dataset for ``where``."""
    seen = []
    table = pa.table({f.name: pa.nulls(1, f.type) for f in SCHEMA})

    class Spy(pads.Dataset):
        @property
        def schema(self):
            return SCHEMA

        def scanner(self, columns=None, filter=None, **kw):
            seen.append(filter)
            return pads.dataset(table).scanner(columns=columns, filter=filter)

    spy = Spy.__new__(Spy)
    con = duckdb.connect()
    con.register("t", spy)
    con.sql(f"SELECT id FROM t WHERE {where}").fetchall()
    return seen[0]


@pytest.mark.skipif(int(duckdb.__version__.split(".")[0]) < 2,
                    reason="pins the Expressions DuckDB 2 pushes (DuckDB 1.x pushes IN as a range, no IS NULL)")
@pytest.mark.parametrize("where,expected", [
    ("id = 5", [(("id",), "==", 5)]),
    ("id BETWEEN 3 AND 6", [(("id",), ">=", 3), (("id",), "<=", 6)]),
    ("id IN (1, 2, 3)", [(("id",), "in", [1, 2, 3])]),
    ("name IN ('a', 'b') AND id > 2", [(("name",), "in", ["a", "b"]), (("id",), ">", 2)]),
    ("name IS NULL", [(("name",), "is_null", None)]),
    ("name IS NOT NULL", [(("name",), "is_valid", None)]),
    ("s.a = 5", [(("s", "a"), "==", 5)]),
    ("ts > TIMESTAMP '2024-02-01 00:00:00'", [(("ts",), ">", dt.datetime(2024, 2, 1))]),
    ("dec > 19.5", [(("dec",), ">", decimal.Decimal("19.50"))]),
])
def test_duckdb_pushed_expression_is_understood(where, expected):
    expr = _duckdb_pushed(where)
    got = []
    for c in extract_conjuncts(expr, SCHEMA):
        assert isinstance(c, ColumnPredicate)
        v = c.value.to_pylist() if isinstance(c.value, pa.Array) else (c.value.as_py() if c.value is not None else None)
        got.append((c.path, c.op, v))
    assert got == expected


def test_duckdb_or_on_one_column_is_any_of():
    c = extract_conjuncts(_duckdb_pushed("id = 1 OR id = 2"), SCHEMA)
    assert len(c) == 1 and isinstance(c[0], AnyOf) and [p.value.as_py() for p in c[0].preds] == [1, 2]


def test_undecodable_expression_means_no_pruning_and_still_exact():
    class Weird:  # not an Expression at all: the decoder must refuse, not guess
        def __reduce__(self):
            raise TypeError("no")
    from lance_duck.predicate.arrow_introspect import IntrospectionError, decode
    with pytest.raises(IntrospectionError):
        decode(Weird())  # type: ignore[arg-type]
    expr = pc.utf8_length(pc.field("name")) > 3   # understood structurally but not prunable
    assert extract_conjuncts(expr, SCHEMA) == []
    cf = compile_filter(expr, SCHEMA)
    assert cf.expression is expr and cf.columns == ("name",)
    # no pruning: a fragment whose statistics say nothing about name lengths may match
    assert may_match(cf.conjuncts, {"name": ColumnStats(min="a", max="b", null_count=0, num_rows=4)})
    # still exact: the filter evaluated on data selects what DuckDB selects
    data = pa.table({"id": pa.array(range(6), pa.int64()),
                     "name": pa.array(["ab", "abcd", None, "Ünïc", "xyz", "longer"])}).cast(
        pa.schema([SCHEMA.field("id"), SCHEMA.field("name")]))
    want = duckdb.sql("SELECT * FROM data WHERE length(name) > 3 ORDER BY id").to_arrow_table()
    got = cf.apply(data)
    assert got.column("id").to_pylist() == want.column("id").to_pylist() == [1, 3, 5]


def test_may_match_uses_min_max_and_null_counts():
    conj = _preds("id > 10 AND name IS NULL")
    assert not may_match(conj, {"id": ColumnStats(min=0, max=10)})
    assert may_match(conj, {"id": ColumnStats(min=0, max=11)})
    assert not may_match(conj, {"name": ColumnStats(null_count=0, num_rows=5)})
    assert may_match(_preds("id IN (3, 40)"), {"id": ColumnStats(min=30, max=50)})
    assert not may_match(_preds("id IN (3, 60)"), {"id": ColumnStats(min=30, max=50)})
    assert not may_match(_preds("id = 1 OR id = 2"), {"id": ColumnStats(min=5, max=9)})
    assert may_match(_preds("s.a = 1"), {})
