"""A scan filter that is exactly its per-column conjuncts is evaluated with compute kernels (integers
compared in numpy), not the expression engine; a boolean result is unpacked from its bitmaps.

Every filter below must give pylance's rows (order included) over a table with nulls, NaN, -0.0,
deletions and several types; conjuncts the kernels refuse (float ``>``, a literal that does not
cast exactly) take the expression, which must agree too.
"""
from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lance_duck.predicate.compiled import bool_mask
from lance_duck.scan import dataset

from .conftest import assert_tables_equal

import lance  # a test dependency: missing, it must fail, not skip

N = 40_000


@pytest.fixture(scope="module", params=["2.0", "2.2"])
def typed_table(request, tmp_path_factory) -> str:
    r = np.random.default_rng(3)
    i = np.arange(N)
    x = r.normal(size=N)
    x[::37] = np.nan
    x[::41] = -0.0
    x[::43] = 0.0
    base = dt.datetime(2024, 1, 1)
    t = pa.table({
        "id": pa.array(i, pa.int64()),
        "small": pa.array(r.integers(-100, 100, N), pa.int8(), mask=r.random(N) < 0.1),
        "u": pa.array(r.integers(0, 1000, N), pa.uint32()),
        "x": pa.array(x, mask=r.random(N) < 0.05),
        "s": pa.array([f"k{v:04d}" for v in r.integers(0, 3000, N)], mask=r.random(N) < 0.05),
        "ts": pa.array([base + dt.timedelta(seconds=int(v)) for v in r.integers(0, 10**6, N)], pa.timestamp("us")),
        "b": pa.array(r.random(N) < 0.3, mask=r.random(N) < 0.05),
    })
    p = str(tmp_path_factory.mktemp(f"conjunct_kernels_{request.param}") / "t.lance")
    lance.write_dataset(t, p, max_rows_per_file=15_000, data_storage_version=request.param)
    lance.dataset(p).delete("id % 89 = 4")
    return p


FILTERS = [
    "id >= 1000 and id <= 1200", "id between 20000 and 20010", "id < 5", "id = 39999", "id in (3, 17, 30000, 99999)",
    "small > 50", "small <= -99", "small = 0", "small is null", "small in (1, 2, null)", "small < 100",
    "small > -100", "u >= 999", "u < 1", "u = 500 and id > 20000",
    "x < 0", "x <= -0.0", "x = 0", "x = 0.0 and id < 20000", "x in (0.0, 1.5)", "x > 1.5", "x is null",
    "s = 'k0007'", "s < 'k0010'", "s >= 'k2990'", "s in ('k0001', 'k0002')", "s is null",
    "ts < timestamp '2024-01-02 00:00:00'", "ts >= timestamp '2024-01-12 13:00:00'",
    "b = true", "b = false", "b is null",
    "id >= 100 and id < 30000 and small > 90 and u < 100",
]


@pytest.mark.parametrize("flt", FILTERS)
def test_conjunct_filters_equal_pylance(typed_table, flt):
    for cols in (["id"], None):
        ours = dataset(typed_table).to_table(columns=cols, filter=flt)
        ref = lance.dataset(typed_table).to_table(columns=cols, filter=flt)
        assert_tables_equal(_nan_marked(ours), _nan_marked(ref))
        assert dataset(typed_table).count_rows(filter=flt) == ref.num_rows


@pytest.mark.parametrize("expr, pylance_reads", [
    (pc.field("id") > 2.5, False), (pc.field("id") < 1e3, False), (pc.field("small") == 1.5, False),
    (pc.field("small") <= 7.0, False), (pc.field("x") > 0, True), (pc.field("u") >= -1, False),
    (pc.field("id").isin([1, 2, 2**40]), True)])
def test_expression_filters_with_other_literal_types_equal_pylance(typed_table, expr, pylance_reads):
    """Literals that do not cast exactly to the column's type (pylance refuses them in SQL): the
    rows pylance's scan keeps; where pylance refuses the Expression too (it casts the column), the
    rows pyarrow's own filter keeps on pylance's table."""
    ours = dataset(typed_table).to_table(filter=expr)
    ref = lance.dataset(typed_table).to_table(filter=expr) if pylance_reads else \
        lance.dataset(typed_table).to_table().filter(expr)
    assert_tables_equal(_nan_marked(ours), _nan_marked(ref))


def _nan_marked(t: pa.Table) -> pa.Table:
    """NaN replaced by a marker value (Arrow's equality holds no NaN equal), nulls kept."""
    if "x" not in t.column_names:
        return t
    x = t.column("x")
    marked = pc.if_else(pc.is_nan(x), pa.scalar(1e300), x)
    return t.set_column(t.column_names.index("x"), "x", marked)


@pytest.mark.parametrize("values", [
    [True, None, False, True] * 9, [None] * 5, [], [False] * 13, [True] * 70 + [None, False]])
@pytest.mark.parametrize("cut", [(0, None), (3, None), (5, 9), (1, 1)])
def test_bool_mask_equals_arrow_conversion(values, cut):
    a = pa.array(values, pa.bool_())
    a = a.slice(cut[0], cut[1]) if cut[0] <= len(a) else a
    got = bool_mask(a)
    assert got.dtype == np.bool_ and got.flags.writeable
    assert got.tolist() == a.fill_null(False).to_numpy(zero_copy_only=False).tolist()


def test_count_rows_reads_in_large_tasks_without_a_ramp(typed_table, monkeypatch):
    """count_rows reads every row: its tasks start at LARGE_TASK_ROWS (lowered here), no 2K-row ramp
    for an early stop; the count stays pylance's."""
    from lance_duck.scan import execution, scanner
    monkeypatch.setattr(scanner, "LARGE_TASK_ROWS", 4096)
    sizes = []
    run = execution.ScanContext.run
    monkeypatch.setattr(execution.ScanContext, "run", lambda self, task: sizes.append(len(task.rows)) or run(self, task))
    flt = "s >= 'k1000' and id < 30000"
    assert dataset(typed_table).count_rows(filter=flt) == lance.dataset(typed_table).count_rows(filter=flt)
    assert sizes and max(sizes) == 4096 and sizes[0] == 4096, sizes
