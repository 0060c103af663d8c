"""Filters over several columns, one or more stored with page dictionaries, evaluated column by column.

A filter that is exactly the AND of per-column terms (DuckDB's pushed ``l_shipmode IN (...) AND
l_receiptdate >= ...``) runs each column's terms with compute kernels, a dictionary column's once per
distinct value (never materialising its strings for the filter). Pinned separately: every result equals
pylance's (nulls and deletions included, every storage version) and DuckDB-over-pylance's, and the
column-by-column path really ran (trace ``path:filter-per-column``) where the filter allows it, and not
where it does not (a term over two columns, a cast).
"""
from __future__ import annotations

import datetime

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lance_duck.scan import dataset
from lance_duck.trace import decode_trace

from .conftest import assert_tables_equal

import lance  # a test dependency: missing, it must fail, not skip

N = 40_000
PER_COLUMN = "path:filter-per-column"
PREFILTER = "path:filter-dictionary-prefilter"


@pytest.fixture(scope="module", params=["2.1", "2.2", "2.0", "2.3"])
def table(request, tmp_path_factory) -> str:
    r = np.random.default_rng(5)
    modes = np.array(["MAIL", "SHIP", "AIR", "RAIL", "TRUCK", "FOB", "REG AIR", ""])
    mode = modes[r.integers(0, len(modes), N)].astype(object)
    mode[r.random(N) < 0.05] = None
    instr = np.array(["DELIVER IN PERSON", "NONE", "TAKE BACK RETURN", "COLLECT COD"])[r.integers(0, 4, N)]
    day = np.datetime64("1994-01-01") + r.integers(0, 900, N).astype("timedelta64[D]")
    qty = r.integers(1, 51, N).astype(np.int64)
    price = pa.array(r.random(N) * 1000, mask=r.random(N) < 0.03)
    t = pa.table({"id": np.arange(N), "mode": pa.array(mode, pa.string()), "instr": pa.array(instr),
                  "day": pa.array(day, pa.date32()), "qty": pa.array(qty, mask=r.random(N) < 0.04),
                  "price": price})
    p = str(tmp_path_factory.mktemp(f"multi_dict_{request.param}") / "t.lance")
    lance.write_dataset(t, p, max_rows_per_file=15_000, data_storage_version=request.param)
    lance.dataset(p).delete("id % 97 = 5 or (id >= 20000 and id < 20300)")
    return p


PER_COLUMN_FILTERS = [
    "mode in ('MAIL', 'SHIP') and day >= date '1994-06-01' and day < date '1995-01-01'",
    "mode = 'AIR' and instr = 'DELIVER IN PERSON' and qty between 1 and 11",
    "mode != 'RAIL' and qty < 20",
    "mode is null and day > date '1995-01-01'",
    "mode = '' and instr in ('NONE', 'COLLECT COD')",
    "mode >= 'M' and qty is not null and price < 500",
]
PREFILTERED = [
    "mode in ('AIR', 'REG AIR') and (qty between 1 and 11 or qty between 30 and 40) and instr = 'NONE'",
    "mode = 'SHIP' and (day < date '1994-03-01' or qty is null)",
    "mode is null and (price < 100 or price > 900)",
]
OTHER_FILTERS = [
    "mode = instr or qty > 40",
    "(mode = 'MAIL' or qty < 3) and day < date '1995-03-01'",
    "mode = 'SHIP' and cast(qty as string) = '7'",
    "mode in ('AIR', 'FOB') and price > 900",
]


@pytest.mark.parametrize("flt", PER_COLUMN_FILTERS + PREFILTERED + OTHER_FILTERS)
def test_multi_column_filters_equal_pylance(table, flt):
    for cols in (["id"], ["mode", "id", "day"], None):
        ours = dataset(table).to_table(columns=cols, filter=flt)
        ref = lance.dataset(table).to_table(columns=cols, filter=flt)
        assert_tables_equal(ours, ref)
    assert dataset(table).count_rows(filter=flt) == lance.dataset(table).count_rows(filter=flt)


@pytest.mark.parametrize("where", [
    "mode in ('MAIL', 'SHIP') and day >= date '1994-06-01' and day < date '1995-01-01'",
    "mode = 'AIR' and instr = 'DELIVER IN PERSON' and qty >= 1 and qty <= 11",
    "mode < 'N' and price < 300",
    "mode in ('AIR', 'REG AIR') and (qty between 1 and 11 or qty between 30 and 40) and instr = 'NONE'",
])
def test_duckdb_pushed_multi_column_filters_equal_duckdb_over_pylance(table, where):
    ref = lance.dataset(table).to_table()
    for sel in ("count(*), min(id), max(id), round(sum(price), 6)", "mode, count(*), sum(qty)"):
        group = " group by mode order by mode" if sel.startswith("mode") else ""
        con = duckdb.connect()
        con.register("T", dataset(table))
        got = con.sql(f"select {sel} from T where {where}{group}").fetchall()
        want = duckdb.connect().sql(f"select {sel} from ref where {where}{group}").fetchall()
        assert got == want, (where, sel)


def test_per_column_path_runs_for_a_conjunction_with_a_dictionary_column(table):
    flt = (pc.field("mode").isin(["MAIL", "SHIP"]) & (pc.field("day") >= pa.scalar(datetime.date(1994, 6, 1)))
           & (pc.field("day") < pa.scalar(datetime.date(1995, 1, 1))))
    with decode_trace() as trace:
        dataset(table).to_table(columns=["id"], filter=flt)
    if lance.dataset(table).data_storage_version == "2.0":
        assert PER_COLUMN not in trace.names()          # 2.0 files keep no page dictionaries
    else:
        assert set(trace.values(PER_COLUMN)) == {("mode",)}


@pytest.mark.parametrize("flt", ["mode = instr or qty > 40", "mode = 'SHIP' and cast(qty as string) = '7'",
                                 "mode = 'AIR' and price > 900"])
def test_per_column_path_is_not_taken_where_the_filter_is_not_per_column_exact(table, flt):
    with decode_trace() as trace:
        dataset(table).to_table(columns=["id"], filter=flt)
    assert PER_COLUMN not in trace.names()


@pytest.mark.parametrize("flt, columns", list(zip(PREFILTERED, [("instr", "mode"), ("mode",), ("mode",)])))
def test_dictionary_conjuncts_prefilter_a_filter_that_is_not_per_column(table, flt, columns):
    with decode_trace() as trace:
        dataset(table).to_table(columns=["id"], filter=flt)
    if lance.dataset(table).data_storage_version == "2.0":
        assert PREFILTER not in trace.names()           # 2.0 files keep no page dictionaries
    else:
        assert set(trace.values(PREFILTER)) == {columns}
        assert PER_COLUMN not in trace.names()


def test_no_prefilter_when_the_dictionary_conjuncts_keep_most_rows(table):
    with decode_trace() as trace:
        dataset(table).to_table(columns=["id"], filter="mode != 'AIR' and (qty < 3 or qty > 40)")
    assert PREFILTER not in trace.names()
