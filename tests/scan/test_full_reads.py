"""Full-column scans (every row of a column read, deleted rows and filtered rows dropped):
lance_duck equals pylance on tables written by pylance, at every storage version, across page
edges, batch sizes, limit / offset, and through DuckDB (the ``amount > 230`` benchmark query's
shape: DuckDB pushes no DOUBLE comparison, so both columns stream whole)."""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import lance  # a test dependency: missing, it must fail, not skip
import lance_duck
from lance_duck.scan.execution import mask_array

from .conftest import assert_tables_equal

N = 150_000


@pytest.fixture(scope="module", params=["2.0", "2.1", "2.2", "2.3"])
def numeric_path(request, tmp_path_factory) -> str:
    """id (bit-packed int64), amount (float64, nulls), two files per version; deletions: every
    id % 1000 = 3 and the run 70,000..70,999 (a whole stretch of pages' rows)."""
    rng = np.random.default_rng(11)
    amount = np.arange(N) * (250.0 / N) + rng.random(N)
    t = pa.table({"id": pa.array(np.arange(N, dtype=np.int64)),
                  "amount": pa.array(amount, mask=rng.random(N) < 0.02)})
    p = str(tmp_path_factory.mktemp(f"full_{request.param}") / "t.lance")
    lance.write_dataset(t, p, max_rows_per_file=N // 2 + 1234, data_storage_version=request.param)
    ds = lance.dataset(p)
    ds.delete("id % 1000 = 3 OR (id >= 70000 AND id < 71000)")
    return p


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 1000, 65_537])
def test_mask_array_equals_pyarrow_conversion(n):
    rng = np.random.default_rng(n)
    m = rng.random(n) < 0.5
    got = mask_array(m)
    assert got.equals(pa.array(m, pa.bool_()))
    assert got.null_count == 0
    assert mask_array(m.astype(np.uint8)).equals(got)      # a 0/1 mask of another dtype: same bits
    values = pa.array(np.arange(n))
    assert values.filter(got).equals(values.filter(pa.array(m)))


@pytest.mark.parametrize("batch_size", [None, 1000, 4096, 65_536])
def test_full_scan_with_deletions_equals_pylance(numeric_path, batch_size):
    ours = lance_duck.dataset(numeric_path).to_table(columns=["id", "amount"], batch_size=batch_size)
    theirs = lance.dataset(numeric_path).to_table(columns=["id", "amount"])
    assert ours.num_rows == N - 150 - 1000 + 1     # (id 70003 is in both deleted sets)
    assert_tables_equal(ours, theirs)


@pytest.mark.parametrize("flt", ["amount > 230", "amount < 3.5 OR id > 149990", "amount IS NULL"])
def test_filtered_full_scan_equals_pylance(numeric_path, flt):
    ours = lance_duck.dataset(numeric_path).to_table(columns=["id", "amount"], filter=flt)
    theirs = lance.dataset(numeric_path).to_table(columns=["id", "amount"], filter=flt)
    assert ours.num_rows > 0
    assert_tables_equal(ours, theirs)


@pytest.mark.parametrize("offset,limit", [(0, 5), (8180, 30), (70_000, 2000), (N - 2000, 5000)])
def test_full_scan_limit_offset_equals_pylance(numeric_path, offset, limit):
    ours = lance_duck.dataset(numeric_path).to_table(columns=["amount", "id"], offset=offset, limit=limit)
    theirs = lance.dataset(numeric_path).to_table(columns=["amount", "id"], offset=offset, limit=limit)
    assert ours.num_rows == min(limit, max(0, N - 1149 - offset))
    assert_tables_equal(ours, theirs)


def test_duckdb_full_column_aggregate_equals_pylance(numeric_path):
    sql = "select count(*), max(id), sum(amount) from T where amount > 230"
    ours, theirs = duckdb.connect(), duckdb.connect()
    ours.register("T", lance_duck.dataset(numeric_path))
    theirs.register("T", lance.dataset(numeric_path))
    got, want = ours.sql(sql).fetchall(), theirs.sql(sql).fetchall()
    assert got[0][0] == want[0][0] and got[0][0] > 0
    assert got[0][1] == want[0][1]
    assert got[0][2] == pytest.approx(want[0][2], rel=1e-12)
