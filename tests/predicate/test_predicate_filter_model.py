"""One filter model: a SQL string and a pyarrow Expression compile to the same CompiledFilter parts
(columns, conjuncts, whether they are the whole filter, the AND / OR tree counts use), and what an
Expression means in pylance is kept where the bound model's meaning differs (a float ``>`` on a NaN
with its sign bit set, a plain ``or``): counts and scans of such filters match pylance's (pyarrow's
own evaluation for the plain ``and`` / ``or`` pylance refuses), with exact indices on every column.
"""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pytest

import lance_duck
from lance_duck.predicate import ColumnPredicate, compile_filter
from lance_duck.predicate.bool_tree import AllOf, EitherOf
from lance_duck.predicate.bound import BOpaque

def _plain(name: str, *args: pc.Expression) -> pc.Expression:
    """Arrow's non-Kleene ``and`` / ``or`` (``pc.and_`` / ``pc.or_`` do not build Expressions)."""
    return pc.Expression._call(name, list(args))


def _nan_safe(t: pa.Table) -> pa.Table:
    """``f`` with NaN as a sentinel (``Table.equals`` finds NaN unequal to itself)."""
    f = t.column("f")
    return t.set_column(t.schema.get_field_index("f"), "f", pc.if_else(pc.is_nan(f), -999.0, f))


SCHEMA = pa.schema([("i", pa.int64()), ("s", pa.string()), ("f", pa.float64()), ("j", pa.int64())])


@pytest.mark.parametrize("sql, expr", [
    ("i > 3 AND s = 'a'", (pc.field("i") > 3) & (pc.field("s") == "a")),
    ("i IN (1, 2) AND s IS NOT NULL", pc.field("i").isin([1, 2]) & pc.field("s").is_valid()),
    ("s LIKE '%ab%' AND j < 7", pc.match_substring(pc.field("s"), "ab") & (pc.field("j") < 7)),
    ("i = 1 OR i = 5", (pc.field("i") == 1) | (pc.field("i") == 5)),
])
def test_sql_and_expression_give_the_same_conjuncts_and_tree(sql, expr):
    a, b = compile_filter(sql, SCHEMA), compile_filter(expr, SCHEMA)
    assert a.columns == b.columns
    assert [(c.path, getattr(c, "op", None)) for c in a.conjuncts] == \
        [(c.path, getattr(c, "op", None)) for c in b.conjuncts]
    assert a.conjuncts_complete and b.conjuncts_complete
    assert type(a.tree()) is type(b.tree())


def test_or_across_columns_is_an_either_of_tree_from_both_sources():
    for f in ("i = 1 OR s = 'a'", (pc.field("i") == 1) | (pc.field("s") == "a")):
        tree = compile_filter(f, SCHEMA).tree()
        assert isinstance(tree, EitherOf) and all(isinstance(p, ColumnPredicate) for p in tree.parts)


def test_arrow_meanings_the_bound_model_lacks_are_not_read_as_sql():
    plain_or = compile_filter(_plain("or", pc.field("i") == 1, pc.field("j") == 2), SCHEMA)
    assert isinstance(plain_or.bound, BOpaque) and plain_or.tree() is None and not plain_or.conjuncts
    float_gt = compile_filter(pc.field("f") > 0.5, SCHEMA)     # Arrow: NaN > 0.5 is false
    # read in Lance's order: ``f > 0.5 AND NOT is_negative_nan(f)``, exactly its two conjuncts
    assert [c.op for c in float_gt.conjuncts] == [">", "not_neg_nan"] and float_gt.conjuncts_complete
    assert isinstance(float_gt.tree(), AllOf)
    nan_null = compile_filter(pc.is_null(pc.field("f"), nan_is_null=True), SCHEMA)
    assert not nan_null.conjuncts


def test_an_expression_naming_an_unknown_column_is_refused_by_name():
    with pytest.raises(lance_duck.InvalidArgumentError, match="nope"):
        compile_filter(pc.field("nope") == 1, SCHEMA)


def test_two_filters_anded_keep_one_model():
    a = compile_filter("i > 3", SCHEMA)
    b = compile_filter(pc.field("s") == "a", SCHEMA)
    both = a.and_(b)
    assert both.columns == ("i", "s") and both.conjuncts_complete
    assert isinstance(both.tree(), AllOf) and len(both.conjuncts) == 2


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> str:
    """Nulls, NaNs and -0.0 in indexed columns (BTREE on i, j, f; BITMAP on s), two fragments."""
    n = 2000
    rng = np.random.default_rng(3)
    f = rng.random(n)
    f[rng.random(n) < 0.1] = np.nan
    f[::97] = -0.0
    table = pa.table({
        "i": pa.array(rng.integers(0, 20, n), mask=rng.random(n) < 0.1),
        "s": pa.array([f"v{k % 7}" for k in range(n)], mask=rng.random(n) < 0.1),
        "f": pa.array(f),
        "j": pa.array(rng.integers(0, 20, n), mask=rng.random(n) < 0.1),
    })
    path = str(tmp_path_factory.mktemp("model") / "t.lance")
    ds = lance.write_dataset(table, path, max_rows_per_file=1000)
    for col, kind in (("i", "BTREE"), ("j", "BTREE"), ("f", "BTREE"), ("s", "BITMAP")):
        ds.create_scalar_index(col, kind)
    return path


EXPRESSIONS = [   # (expression, pylance accepts it)
    (_plain("or", pc.field("i") == 1, pc.field("j") == 2), False),    # plain or: null when one side is
    ((pc.field("i") == 1) | (pc.field("j") == 2), True),
    (pc.field("f") > 0.5, True),
    (pc.field("f") >= 0.0, True),
    (pc.field("f") < 0.5, True),
    (~pc.field("i").isin([1, 2, 3]), True),                         # pylance: SQL's IN, null on a null
    (pc.field("i").isin([1, 2]) | (pc.field("s") == "v3"), True),
    (_plain("and", pc.field("i") < 5, pc.field("s") != "v1"), False),
    (~((pc.field("i") == 1) & (pc.field("j") == 2)), True),
]


@pytest.mark.parametrize("k", range(len(EXPRESSIONS)))
def test_expression_counts_and_rows_match_pylance_with_exact_indices(indexed, k):
    expr, pylance_reads = EXPRESSIONS[k]
    data = lance.dataset(indexed).to_table()
    want = lance.dataset(indexed).to_table(filter=expr) if pylance_reads else pads.dataset(data).to_table(filter=expr)
    ds = lance_duck.dataset(indexed)
    assert ds.count_rows(filter=expr) == want.num_rows
    assert _nan_safe(ds.to_table(filter=expr)).equals(_nan_safe(want))


@pytest.mark.parametrize("expr, op", [
    (pc.if_else(pc.field("i").is_valid(), pc.field("i").isin([1, 2]), pa.scalar(None, pa.bool_())), "in"),
    (pc.match_substring(pc.field("s"), "ab", ignore_case=True), "icontains"),
    (pc.match_substring_regex(pc.field("s"), "ab.*cd", ignore_case=True), "icontains"),
    (pc.starts_with(pc.field("s"), "a%b"), "contains"),
    (~pc.field("s").is_null(), "is_valid"),
])
def test_expression_forms_engines_push_read_as_one_conjunct(expr, op):
    got = compile_filter(expr, SCHEMA)
    assert [c.op for c in got.conjuncts] == [op] and got.conjuncts_complete
