"""The layered API: parse (unbound) -> bind -> to_arrow / residual; columns; compile_expression."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lance_duck.errors import UnsupportedFeatureError
from lance_duck.predicate import (
    bind, compile_expression, compile_filter, evaluate, parse_filter, referenced_columns, to_arrow,
)
from lance_duck.predicate.expressions import Compare, Lit, Ref

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("l", pa.list_(pa.int32())),
                    ("s", pa.struct([("a", pa.int32())]))])
BATCH = pa.RecordBatch.from_pydict({"id": [1, 2, 3, None], "name": ["a", None, "c", "d"],
                                    "l": [[1, 5], None, [None], [5]], "s": [{"a": 1}, None, {"a": 3}, {"a": 4}]},
                                   schema=SCHEMA)


def test_parse_gives_an_unbound_tree_and_double_quotes_are_strings():
    assert parse_filter('`id` == "x"') == Compare("==", Ref(("id",)), Lit("x"))


def test_bind_types_literals_from_the_schema():
    b = bind(parse_filter("s.a = 3"), SCHEMA)
    assert b.right.scalar.type == pa.int32() and b.left.path == ("s", "a")
    assert referenced_columns(b) == {"s"}


def test_to_arrow_refuses_list_membership_which_goes_to_the_residual():
    from lance_duck.predicate.kernels import NotExpressible
    with pytest.raises(NotExpressible):
        to_arrow(bind(parse_filter("array_has(l, 5)"), SCHEMA))


def test_residual_is_a_mask_after_the_pyarrow_filter():
    cf = compile_filter("array_has(l, 5) AND id > 1", SCHEMA)
    assert str(cf.expression) == "(id > 1)"
    assert set(cf.columns) == {"l", "id"} and cf.residual_columns == {"l"}
    after = BATCH.filter(cf.expression)
    mask = cf.residual(after)
    assert mask.type == pa.bool_() and mask.null_count == 0
    assert after.filter(mask)["id"].to_pylist() == []
    assert compile_filter("array_has(l, 5)", SCHEMA).apply(BATCH)["id"].to_pylist() == [1, None]


def test_not_array_has_keeps_sql_null_semantics():
    # null list -> null -> dropped; [None] without a match -> false -> NOT keeps it
    assert compile_filter("NOT array_has(l, 5)", SCHEMA).apply(BATCH)["id"].to_pylist() == [3]


def test_evaluate_gives_three_valued_results():
    b = bind(parse_filter("NOT (name IN ('a', NULL))"), SCHEMA)
    assert evaluate(b, BATCH).to_pylist() == [False, None, None, None]


def test_no_filter_compiles_to_nothing():
    cf = compile_filter(None, SCHEMA)
    assert cf.is_empty and cf.columns == () and cf.apply(BATCH).num_rows == 4


def test_compile_expression_gives_a_value_expression():
    e = compile_expression("upper(name)", SCHEMA)
    import pyarrow.dataset as pads
    out = pads.dataset(pa.table(BATCH)).to_table(columns={"u": e})
    assert out["u"].to_pylist() == ["A", None, "C", "D"]
    with pytest.raises(UnsupportedFeatureError):
        compile_expression("array_has(l, 5)", SCHEMA)


def test_pyarrow_expression_passes_through_unchanged():
    """No float comparison and no ``is_in`` (where pylance's meaning is not Arrow's): as given."""
    e = (pc.field("s", "a") > 1) & ((pc.field("name") == "c") | (pc.field("name") == "d"))
    cf = compile_filter(e, SCHEMA)
    assert cf.expression is e and cf.residual is None and set(cf.columns) == {"s", "name"}
    assert cf.apply(BATCH)["id"].to_pylist() == [3, None]


def test_pyarrow_is_in_is_read_as_sql_in():
    e = (pc.field("s", "a") > 1) & pc.field("name").isin(["c", "d"])
    cf = compile_filter(e, SCHEMA)
    assert cf.residual is None and set(cf.columns) == {"s", "name"} and cf.conjuncts_complete
    assert cf.apply(BATCH)["id"].to_pylist() == [3, None]
