"""BTREE and BITMAP indices answer float filters in Lance's float order (-NaN < -inf < ... <
-0.0 = 0.0 < ... < +inf < +NaN), as pylance 14.0.2 filters: float32 and float64 columns holding
NaNs of both signs and a payload, +-inf, +-0.0, nulls and ordinary values, in several fragments,
with and without deletions. Oracles: pylance's rows (row order included, values compared bit for
bit) and counts; the index is shown to answer (exact selections, counts with no data byte read).
"""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck
from lance_duck.index.search import plan_index_selections
from lance_duck.predicate import compile_filter

from .test_index_scan import data_bytes  # noqa: F401  (fixture)

N = 16_000
PER_FILE = 4_000
NEG_NAN = np.frombuffer(np.uint64(0xFFF8000000000001).tobytes(), np.float64)[0]
PAYLOAD_NAN = np.frombuffer(np.uint64(0x7FF0000000000123).tobytes(), np.float64)[0]
SPECIAL = np.array([NEG_NAN, -np.nan, np.nan, PAYLOAD_NAN, -np.inf, np.inf, -0.0, 0.0])


def _table() -> pa.Table:
    rng = np.random.default_rng(32)
    v = rng.integers(-1000, 1001, N).astype(np.float64)
    at = rng.choice(N, N // 8, replace=False)
    v[at] = SPECIAL[np.arange(len(at)) % len(SPECIAL)]
    nulls = rng.random(N) < 0.04
    v32 = v.astype(np.float32)                       # (NaN payloads and signs kept)
    return pa.table({"i": pa.array(np.arange(N), pa.int64()),
                     "x64": pa.array(v, pa.float64(), mask=nulls),
                     "x32": pa.array(v32, pa.float32(), mask=nulls)})


_BUILT: dict[tuple[str | None, bool, bool], str] = {}
_KIND: dict[str, str | None] = {}


def _build(kind: str | None, deleted: bool, stable: bool, tmp_path_factory) -> str:
    """The table (4 fragments; stable row ids when ``stable``) with ``kind`` indices on x64 and
    x32 (None: none), rows deleted after indexing when ``deleted``; written once per session."""
    got = _BUILT.get((kind, deleted, stable))
    if got is None:
        path = str(tmp_path_factory.mktemp("float_order_idx") / "t.lance")
        ds = lance.write_dataset(_table(), path, max_rows_per_file=PER_FILE, enable_stable_row_ids=stable)
        if kind is not None:
            ds.create_scalar_index("x64", kind)
            ds.create_scalar_index("x32", kind)
        if deleted:
            ds.delete("i % 7 = 2 OR (i >= 5000 AND i < 5600)")
        got = _BUILT[(kind, deleted, stable)] = path
        _KIND[path] = kind
    return got


def _ids(p: tuple[str | None, bool, bool]) -> str:
    return f"{p[0] or 'noindex'}-{'deleted' if p[1] else 'plain'}{'-stable' if p[2] else ''}"


INDEXED = [(k, d, False) for k in ("BTREE", "BITMAP") for d in (False, True)] + \
    [("BTREE", True, True), ("BITMAP", True, True)]


@pytest.fixture(scope="session", params=INDEXED + [("ZONEMAP", True, False), (None, False, False), (None, True, False)],
                ids=_ids)
def table(request, tmp_path_factory) -> str:
    return _build(*request.param, tmp_path_factory)


@pytest.fixture(scope="session", params=INDEXED, ids=_ids)
def indexed(request, tmp_path_factory) -> str:
    return _build(*request.param, tmp_path_factory)


def _bits(t: pa.Table) -> list:
    """Rows as comparable values: floats by their bits (NaN signs and payloads, -0.0 told apart)."""
    out = []
    for name in t.column_names:
        col = t.column(name).combine_chunks()
        if pa.types.is_floating(col.type):
            width = np.uint64 if col.type.bit_width == 64 else np.uint32
            raw = np.frombuffer(col.buffers()[1], width)[col.offset:col.offset + len(col)]
            out.append([None if not ok else int(b) for ok, b in zip(col.is_valid().to_pylist(), raw)])
        else:
            out.append(col.to_pylist())
    return out


CONSTS = {"-inf": -np.inf, "-3": -3.0, "-0.0": -0.0, "0.0": 0.0, "+inf": np.inf}
OPS = {"<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal, "==": pc.equal,
       "!=": pc.not_equal}


def _cmp(col: str, op: str, c: float):
    return OPS[op](pc.field(col), pa.scalar(c, pa.float64() if col == "x64" else pa.float32()))


SINGLE = [(op, name) for op in OPS for name in CONSTS]
# selective ones an index answers (few pages / keys)
SELECTIVE = ["{c} < -900", "{c} <= -990", "{c} > 900", "{c} >= 995", "{c} = -0.0", "{c} = 0.0",
             "{c} < -900 OR {c} > 950", "{c} > 900 AND {c} < 950", "{c} < -990 OR i < 3"]
COMBOS = ["{c} < -3 AND {c} > -900", "{c} >= 0 OR {c} < -990", "NOT ({c} > -3)", "NOT ({c} < 0.0)",
          "{c} >= -0.0 AND NOT ({c} > 3)", "({c} < -900 OR {c} > 900) AND i > 100",
          "{c} != 0.0 AND {c} < 10", "{c} IN (-0.0, 5.0, -7.0)", "{c} IS NULL OR {c} < -999"]


def _check(path: str, flt) -> int:
    ref = lance.dataset(path)
    want = ref.to_table(filter=flt, use_scalar_index=False)
    ours = lance_duck.dataset(path)
    got = ours.to_table(filter=flt)
    assert got.schema == want.schema and _bits(got) == _bits(want), flt
    assert ours.count_rows(flt) == want.num_rows, flt
    if _KIND[path] != "ZONEMAP":         # (pylance's ZONEMAP drops the -NaN rows of x < -inf)
        assert ref.count_rows(flt) == want.num_rows, flt
    return want.num_rows


@pytest.mark.parametrize("col", ["x64", "x32"])
@pytest.mark.parametrize("op,const", SINGLE, ids=[f"{o}{c}" for o, c in SINGLE])
def test_single_comparisons_equal_pylance_rows_and_counts(table, col, op, const):
    _check(table, _cmp(col, op, CONSTS[const]))


@pytest.mark.parametrize("col", ["x64", "x32"])
@pytest.mark.parametrize("template", SELECTIVE + COMBOS)
def test_sql_filters_and_combinations_equal_pylance(table, col, template):
    _check(table, template.format(c=col))


@pytest.mark.parametrize("col", ["x64", "x32"])
@pytest.mark.parametrize("op,const", [("<", "-inf"), ("<=", "-inf"), (">", "+inf"), (">=", "+inf")])
def test_nan_only_comparisons_equal_pylance(table, col, op, const):
    """``x < -inf`` holds exactly the NaNs with the sign bit set, ``x > +inf`` the others."""
    assert _check(table, _cmp(col, op, CONSTS[const])) > 0


@pytest.mark.parametrize("col", ["x64", "x32"])
@pytest.mark.parametrize("template", SELECTIVE[:7] + ["< -inf", "> +inf", "<= -inf", ">= +inf"])
def test_selective_float_filters_are_answered_by_the_index(indexed, data_bytes, col, template):  # noqa: F811
    """Exact selections on every fragment, and the count read from the index alone (no data
    byte): a wrong index answer (a -NaN row dropped) would fail the comparisons above."""
    table = indexed
    if "inf" in template:
        op, const = template.split()
        flt = _cmp(col, op, CONSTS[const])
    else:
        flt = template.format(c=col)
    ds = lance_duck.dataset(table)
    snap = ds._snapshot
    compiled = compile_filter(flt, ds.schema)
    sel = plan_index_selections(snap, compiled.conjuncts, snap.fragments)
    assert set(sel.exact) == {f.id for f in snap.fragments}, flt    # type: ignore[attr-defined]
    data_bytes["bytes"] = 0
    got = ds.count_rows(flt)
    assert data_bytes["bytes"] == 0, flt
    assert got == lance.dataset(table).count_rows(flt)


def test_negative_nans_are_in_less_than_answers(table):
    """The fixture holds NaNs with the sign bit set, which ``x < c`` keeps (the index must find
    them: they sort first in its pages and keys)."""
    t = lance.dataset(table).to_table(filter="x64 < -900")
    x = t.column("x64").combine_chunks()
    neg = np.isnan(x.to_numpy(zero_copy_only=False)) & np.signbit(x.to_numpy(zero_copy_only=False))
    assert neg.sum() > 0
    assert lance_duck.dataset(table).count_rows("x64 < -900") == t.num_rows


DUCKDB_WHERE = ["{c} < -900", "{c} > 900", "{c} >= 995", "{c} <= -990", "{c} = 0.0", "{c} > 900 AND {c} < 950",
                "{c} < -3", "{c} >= 0", "{c} > -0.0 AND {c} < 5"]


@pytest.mark.parametrize("template", DUCKDB_WHERE)
def test_duckdb_meaning_filters_equal_duckdb_with_the_index(table, template):
    """Filters in DuckDB's meaning (every NaN, of either sign, above every number; what
    ``lance_duck.sql`` hands the scan) share the index path: rows and counts equal DuckDB's own."""
    from lance_duck.predicate.compiled import compile_duckdb_sql

    from .conftest import arrow_oracle
    where = template.format(c="x64")
    want = [r[0] for r in arrow_oracle(table).execute(f"SELECT i FROM t WHERE {where} ORDER BY i").fetchall()]
    ds = lance_duck.dataset(table)
    view = ds.filter(compile_duckdb_sql(where, ds.schema))
    assert view.to_table(columns=["i"]).column("i").to_pylist() == want, where
    assert view.count_rows() == len(want), where
    if _KIND[table] in ("BTREE", "BITMAP") and template in DUCKDB_WHERE[:6]:
        assert view.scanner()._index_selections() is not None, where      # the index answered
    x = lance.dataset(table).to_table(filter=f"i IN ({', '.join(map(str, want or [-1]))})").column("x64")
    if ">" in where and "<" not in where:          # (the NaNs with their sign bit set are among them)
        v = x.to_numpy(zero_copy_only=False)
        assert (np.isnan(v) & np.signbit(v)).any(), where


@pytest.mark.parametrize("template", ["{c} < -900", "{c} > 900", "{c} <= -0.0", "{c} > 900 OR {c} < -990"])
def test_fragment_reads_equal_pylance_fragments(table, template):
    flt = template.format(c="x32")
    ours, ref = lance_duck.dataset(table).get_fragments(), lance.dataset(table).get_fragments()
    assert [f.fragment_id for f in ours] == [f.fragment_id for f in ref]
    for a, b in zip(ours, ref):
        want = b.to_table(filter=flt)
        assert _bits(a.to_table(filter=flt)) == _bits(want), (flt, a.fragment_id)
        assert a.count_rows(flt) == want.num_rows, (flt, a.fragment_id)


@pytest.fixture(scope="module")
def vectors(tmp_path_factory) -> str:
    """The float table with an 8-d vector per row and a BTREE on x64, two fragments."""
    t = _table().slice(0, 8000)
    vec = np.random.default_rng(5).standard_normal((t.num_rows, 8)).astype(np.float32)
    t = t.append_column("vec", pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), 8))
    path = str(tmp_path_factory.mktemp("float_order_vec") / "t.lance")
    lance.write_dataset(t, path, max_rows_per_file=4000).create_scalar_index("x64", "BTREE")
    return path


@pytest.mark.parametrize("flt", ["x64 < -900", "x64 > 900", "x64 <= -0.0 AND x64 > -50", "x64 > 990 OR x64 < -990"])
def test_nearest_prefilter_equals_pylance(vectors, flt):
    q = np.random.default_rng(6).standard_normal(8).astype(np.float32)
    kw = dict(columns=["i", "x64"], nearest={"column": "vec", "q": q, "k": 25}, filter=flt, prefilter=True)
    want = lance.dataset(vectors).to_table(**kw)
    got = lance_duck.dataset(vectors).to_table(**kw)
    assert _bits(got.select(["i", "x64"])) == _bits(want.select(["i", "x64"])), flt
