"""A user's pyarrow Expression filter on floats means what pylance makes of it: Lance's float order,
IEEE 754 totalOrder with the zeros equal (-NaN < -inf < ... < -0.0 = 0.0 < ... < +inf < +NaN, a NaN
equal only to a NaN of the same bits), and ``is_in`` as SQL's ``IN`` (on any type: null on a null row).

Every read method that takes ``filter=`` is compared with pylance live on the same table (float64,
float32 and a struct's float64 field; NaN, -NaN, a NaN with a payload, NULL, +-inf, +-0.0, ordinary
values), plain, with deletions, and with a BTREE / BITMAP / ZONEMAP index on the float columns.
pylance refuses nested field references in an Expression, so a struct field's filter is compared
with pylance's answer for the top-level column holding the same values. pylance's ZONEMAP search
drops the -NaN rows of ``x < -inf`` (its zones' minimum skips NaN) where its plain scan keeps them:
with a ZONEMAP the oracle is pylance's scan without the index."""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck

N = 3000
PER_FILE = 1000
BITS = [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000000000001, 0x7FF0000000000000,
        0xFFF0000000000000, 0x0, 0x8000000000000000, 0x3FE0000000000000, 0x3FF8000000000000,
        0xBFF0000000000000, 0x3FE6666666666666, 0x4000000000000000]
NAN = float("nan")
NEG_NAN = float(np.array([0xFFF8000000000000], np.uint64).view(np.float64)[0])


def _table() -> pa.Table:
    rng = np.random.default_rng(11)
    v = rng.uniform(-2.0, 2.0, N)
    v[:PER_FILE] = rng.uniform(0.6, 2.0, PER_FILE)       # one fragment of positive numbers and NaN
    special = rng.random(N) < 0.4
    picks = np.array(BITS, np.uint64)[rng.integers(0, len(BITS), N)].view(np.float64)
    v[special] = picks[special]
    v[:PER_FILE][np.isnan(v[:PER_FILE]) & np.signbit(v[:PER_FILE])] = 1.25
    v[PER_FILE + 5] = NEG_NAN                             # the second fragment holds a -NaN for sure
    valid = rng.random(N) > 0.06
    f64 = pa.array(v, pa.float64(), mask=~valid)
    return pa.table({
        "id": pa.array(np.arange(N, dtype=np.int64)),
        "f64": f64,
        "f32": pa.array(v.astype(np.float32), pa.float32(), mask=~valid),   # NaN signs kept by the cast
        "s": pa.array(np.char.add("s", (np.arange(N) % 4).astype(str))),
        "i": pa.array(rng.integers(0, 6, N), pa.int32(), mask=rng.random(N) < 0.1),
        "st": pa.StructArray.from_arrays([f64], names=["x"]),
    })


VARIANTS = {
    "plain": None,
    "deletions": [],
    "btree": [("f64", "BTREE"), ("f32", "BTREE")],
    "bitmap": [("f64", "BITMAP"), ("f32", "BITMAP")],
    "zonemap": [("f64", "ZONEMAP"), ("f32", "ZONEMAP")],
}


@pytest.fixture(scope="module", params=list(VARIANTS))
def table(request, tmp_path_factory) -> tuple[str, bool]:
    p = str(tmp_path_factory.mktemp(f"xnan_{request.param}") / "t.lance")
    lance.write_dataset(_table(), p, max_rows_per_file=PER_FILE)
    indices = VARIANTS[request.param]
    if indices is not None:
        lance.dataset(p).delete("id % 7 = 3")
    for col, kind in indices or ():
        lance.dataset(p).create_scalar_index(col, kind)
    assert len(lance.dataset(p).describe_indices()) == len(indices or ())
    return p, request.param == "zonemap"


F = pc.field


def _lit(col: str, x: float) -> pa.Scalar:
    return pa.scalar(x, pa.float32() if col == "f32" else pa.float64())


OPS = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
       "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
LITERALS = {"0.5": 0.5, "0.0": 0.0, "-0.0": -0.0, "nan": NAN, "-nan": NEG_NAN, "inf": float("inf"),
            "-inf": float("-inf"), "-1": -1.0}


def _comparisons() -> list:
    out = []
    for col in ("f64", "f32", "st.x"):
        for op, fn in OPS.items():
            for name, x in LITERALS.items():
                out.append(pytest.param(col, lambda c, fn=fn, x=x: fn(F(*c.split(".")), _lit(c, x)),
                                        id=f"{col} {op} {name}"))
            out.append(pytest.param(col, lambda c, fn=fn: fn(_lit(c, 0.5), F(*c.split("."))),
                                    id=f"0.5 {op} {col}"))
    return out


def _others() -> list:
    def c(name: str) -> pc.Expression:
        return F(*name.split("."))
    forms = {
        "isin(0.5, 1.5)": lambda x: c(x).isin([0.5, 1.5]),
        "isin(0.5, nan)": lambda x: c(x).isin([0.5, NAN]),
        "isin(-nan)": lambda x: c(x).isin(pa.array([NEG_NAN])),
        "isin(0.0)": lambda x: c(x).isin([0.0]),
        "isin(-0.0, inf)": lambda x: c(x).isin([-0.0, float("inf")]),
        "isin(0.5, null)": lambda x: c(x).isin(pa.array([0.5, None])),
        "~isin(0.5)": lambda x: ~c(x).isin([0.5]),
        "~isin(0.5, null)": lambda x: ~c(x).isin(pa.array([0.5, None])),
        "is_nan": lambda x: pc.is_nan(c(x)),
        "~is_nan": lambda x: ~pc.is_nan(c(x)),
        "is_null": lambda x: c(x).is_null(),
        "is_valid": lambda x: c(x).is_valid(),
        "~(x > 0.5)": lambda x: ~(c(x) > 0.5),
        "~(x < 0.5)": lambda x: ~(c(x) < 0.5),
        "~(x == nan)": lambda x: ~(c(x) == NAN),
        "x > 0.5 & x < 1.7": lambda x: (c(x) > 0.5) & (c(x) < 1.7),
        "x >= -1 & x <= 1": lambda x: (c(x) >= -1.0) & (c(x) <= 1.0),
        "x < -1 | x > 1": lambda x: (c(x) < -1.0) | (c(x) > 1.0),
        "x > 1.5 | is_null": lambda x: (c(x) > 1.5) | c(x).is_null(),
        "x > 0.5 & s == s1": lambda x: (c(x) > 0.5) & (F("s") == "s1"),
        "(x > 1.5 | s == s2) & id > 1500": lambda x: ((c(x) > 1.5) | (F("s") == "s2")) & (F("id") > 1500),
        "~(x > 0.5 & id < 2000)": lambda x: ~((c(x) > 0.5) & (F("id") < 2000)),
        "x == x": lambda x: c(x) == c(x),
        "x != x": lambda x: c(x) != c(x),
        "x < x": lambda x: c(x) < c(x),
        "x + 1 > 1.5": lambda x: (c(x) + 1.0) > 1.5,
        "-x > 0": lambda x: pc.negate(c(x)) > 0.0,
        "abs(x) < 0.6": lambda x: pc.abs(c(x)) < 0.6,
        "x > 0 (int)": lambda x: c(x) > 0,
        "x == 1 (int)": lambda x: c(x) == 1,
        "x < 1 (int)": lambda x: c(x) < 1,
        "x > null": lambda x: c(x) > pa.scalar(None, pa.float64()),
        "if_else(id < 1500, x > 0.5, x < 0.5)": lambda x: pc.if_else(F("id") < 1500, c(x) > 0.5, c(x) < 0.5),
    }
    out = [pytest.param(col, fn, id=f"{name} [{col}]") for name, fn in forms.items() for col in ("f64", "st.x")]
    sql_in = {   # is_in on other types: SQL's IN too, in pylance
        "~i.isin(1, 3)": lambda x: ~F("i").isin([1, 3]),
        "i.isin(1, null)": lambda x: F("i").isin(pa.array([1, None])),
        "~i.isin(1, null)": lambda x: ~F("i").isin(pa.array([1, None])),
        "i.isin(null)": lambda x: F("i").isin(pa.array([None], pa.int32())),
        "~s.isin(s1)": lambda x: ~F("s").isin(["s1"]),
        "x > 1.5 | ~i.isin(2)": lambda x: (c(x) > 1.5) | ~F("i").isin([2]),
    }
    return out + [pytest.param("f64", fn, id=name) for name, fn in sql_in.items()]


def _oracle(path: str, zonemap: bool, col: str, make) -> pc.Expression:
    """pylance's ids for the filter (a struct field's on the top-level column of the same values)."""
    expr = make("f64" if col == "st.x" else col)
    return lance.dataset(path).to_table(columns=["id"], filter=expr, use_scalar_index=not zonemap)


def _check(table, col, make) -> None:
    path, zonemap = table
    want = _oracle(path, zonemap, col, make).column("id").to_pylist()
    expr = make(col)
    ds = lance_duck.dataset(path)
    assert ds.to_table(columns=["id"], filter=expr).column("id").to_pylist() == want, "to_table"
    assert ds.scanner(columns=["id"], filter=expr).to_table().column("id").to_pylist() == want, "scanner"
    assert ds.count_rows(filter=expr) == len(want), "count_rows"
    got = [i for b in ds.to_batches(columns=["id", "f64"], filter=expr, batch_size=700)
           for i in b.column("id").to_pylist()]
    assert got == want, "to_batches"
    frags = [i for fr in ds.get_fragments()
             for i in fr.to_table(columns=["id"], filter=expr).column("id").to_pylist()]
    assert frags == want, "fragments"
    assert sum(fr.count_rows(filter=expr) for fr in ds.get_fragments()) == len(want), "fragment counts"
    full = ds.to_table(filter=expr)                      # every column (late materialisation)
    assert full.column("id").to_pylist() == want
    assert full.schema == ds.schema


@pytest.mark.parametrize(("col", "make"), _comparisons())
def test_float_comparisons_in_expressions_match_pylance(table, col, make):
    _check(table, col, make)


@pytest.mark.parametrize(("col", "make"), _others())
def test_float_expression_forms_match_pylance(table, col, make):
    _check(table, col, make)


def test_pylance_orders_negative_nan_below_minus_infinity(table):
    """The order itself, as pylance has it (the reason a -NaN row fails ``x > 0.5``)."""
    path, _ = table
    ds = lance.dataset(path)
    below = ds.to_table(columns=["f64"], filter=F("f64") < float("-inf"), use_scalar_index=False).column(0)
    assert len(below) > 0 and all(np.signbit(x) and x != x for x in below.to_pylist())
    assert lance_duck.dataset(path).count_rows(filter=F("f64") < float("-inf")) == len(below)


SQL_LITERALS = ["0.5", "0.0", "-0.0", "'Infinity'::double", "'-Infinity'::double", "'NaN'::double", "-1"]
SQL_FORMS = ["NOT ({c} > 0.5)", "NOT ({c} < 0.5)", "{c} BETWEEN -1 AND 1", "{c} IN (0.5, -1.0)",
             "{c} NOT IN (0.5, -1.0)", "isnan({c})", "NOT isnan({c})", "{c} IS NULL", "{c} = {c}", "{c} <> {c}",
             "abs({c}) < 0.6", "-{c} > 0", "{c} + 1 > 1.5", "{c} > 0.5 OR s = 's1'", "{c} < 0 AND id > 1000",
             "{c} > 1.5 OR {c} IS NULL"]


def _sql_cases() -> list:
    forms = [f"{{c}} {op} {lit}" for op in ("=", "!=", "<", "<=", ">", ">=") for lit in SQL_LITERALS]
    return [pytest.param(col, form, id=f"{form.format(c=col)}")
            for col in ("f64", "f32", "st.x") for form in forms + SQL_FORMS]


@pytest.mark.parametrize(("col", "form"), _sql_cases())
def test_float_sql_filters_match_pylance(table, col, form):
    """A SQL filter string means Lance's order too (pylance's SQL and Expressions meet in DataFusion)."""
    _check(table, col, lambda c: form.format(c=c))
