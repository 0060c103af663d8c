"""Deleted rows left out inside the page decode (no filter pass after it).

A scan task hands its live-row mask to the data file reader; 2.1+ readers give each mini-block
page of a plain field the task's deleted rows in its range, flat values copy only the live runs
between them (``path:live-runs``), other encodings (bit-packed, dictionaries, strings) decode the
range and drop those rows, pages with no live row are skipped. Pinned against pylance: several
fragments with sparse deletions, a deleted run crossing pages, a fragment with one row left,
nulls, mixed dictionary / plain pages, 2.0 to 2.3 files, filters, take, ``lance_duck.sql``.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.trace import decode_trace

from .conftest import assert_tables_equal

import lance  # a test dependency: missing, it must fail, not skip

N = 30_000
COLUMNS = ["id", "i", "x", "f", "n", "b", "s", "m", "st"]


def _data() -> pa.Table:
    r = np.random.default_rng(7)
    half = N // 2
    mixed = np.concatenate([r.integers(0, 30, half) * 1_000_003, r.integers(-10**12, 10**12, half)]).astype(np.int64)
    return pa.table({
        "id": np.arange(N, dtype=np.int64),
        "i": r.integers(-10**15, 10**15, N),                                  # plain 64-bit
        "x": pa.array(r.integers(-10**15, 10**15, N), mask=r.random(N) < 0.05),  # plain 64-bit, nulls
        "f": pa.array(r.random(N) * 1e6, mask=r.random(N) < 0.03),            # nullable doubles
        "n": pa.array(r.integers(0, 200, N).astype(np.int32), mask=r.random(N) < 0.1),  # bit-packed, nulls
        "b": r.random(N) < 0.5,
        "s": pa.array([f"v{x % 50}" if x % 3 else f"long string {x}" for x in range(N)]),
        "m": mixed,                                                            # dictionary + plain pages
        "st": pa.StructArray.from_arrays([pa.array(np.arange(N) % 11), pa.array(np.arange(N) * 0.5)], ["a", "c"]),
    })


# sparse deletions in every fragment, a run crossing page edges, most of the last fragment
DELETE = "id % 97 = 5 or (id >= 12000 and id < 12700) or id = 0 or id >= 24001"


@pytest.fixture(scope="module", params=["2.0", "2.1", "2.2", "2.3"])
def table(request, tmp_path_factory) -> tuple[str, str]:
    version = request.param
    p = str(tmp_path_factory.mktemp(f"del_gather_{version}") / "t.lance")
    t = _data()
    batches = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=3000))
    lance.write_dataset(batches, p, data_storage_version=version, max_rows_per_file=12_000, data_cache_bytes=16_384)
    lance.dataset(p).delete(DELETE)
    return p, version


def test_scan_with_sparse_deletions_equals_pylance(table):
    p, version = table
    with decode_trace() as tr:
        got = lance_duck.dataset(p).to_table(columns=COLUMNS)
    assert_tables_equal(got, lance.dataset(p).to_table(columns=COLUMNS))
    if version != "2.0":   # the deletions went down to the pages (2.0 files are filtered after decoding)
        assert "path:live-pages" in tr.names()
        assert "path:live-runs" in tr.names()


@pytest.mark.parametrize("batch_size", [5000, 12_000])
def test_scan_in_tasks_of_other_lengths_equals_pylance(table, batch_size):
    p, _ = table
    got = lance_duck.dataset(p).to_table(columns=["id", "i", "f", "m"], batch_size=batch_size)
    assert_tables_equal(got, lance.dataset(p).to_table(columns=["id", "i", "f", "m"]))


@pytest.mark.parametrize("flt", ["n > 100", "f is null", "id between 11000 and 13000", "s = 'v7'", "m > 5000000"])
def test_filtered_scan_with_deletions_equals_pylance(table, flt):
    p, _ = table
    got = lance_duck.dataset(p).to_table(columns=["id", "i", "n", "f", "s"], filter=flt)
    assert_tables_equal(got, lance.dataset(p).to_table(columns=["id", "i", "n", "f", "s"], filter=flt))


def test_take_with_deletions_equals_pylance(table):
    p, _ = table
    rows = [0, 1, 96, 97, 5000, 11_900, 11_901, 20_000]   # positions among the live rows
    got = lance_duck.dataset(p).take(rows, columns=COLUMNS)
    assert_tables_equal(got, lance.dataset(p).take(rows, columns=COLUMNS))


def test_sql_aggregates_with_deletions_equal_pylance(table):
    p, _ = table
    want = lance.dataset(p).to_table(columns=["id", "i", "n", "m"])
    got = lance_duck.sql(f"select count(*), sum(id), sum(i), sum(n), count(n), sum(m) from '{p}'").fetchall()
    assert got == [(len(want), *(int(np.sum(want[c].to_numpy(zero_copy_only=False))) for c in ("id", "i")),
                    int(np.nansum(want["n"].to_numpy(zero_copy_only=False))), len(want) - want["n"].null_count,
                    int(np.sum(want["m"].to_numpy()))) ]


def test_deleted_rows_never_come_back(table):
    p, _ = table
    ids = lance_duck.dataset(p).to_table(columns=["id"])["id"].to_numpy()
    dead = (ids % 97 == 5) | ((ids >= 12000) & (ids < 12700)) | (ids == 0) | (ids >= 24001)
    assert not dead.any()
    assert ids.size == N - int(np.count_nonzero(
        (np.arange(N) % 97 == 5) | ((np.arange(N) >= 12000) & (np.arange(N) < 12700)) | (np.arange(N) == 0)
        | (np.arange(N) >= 24001)))


# -- the reader's ``dead`` argument, against pylance's values with those rows taken out ---------
@pytest.mark.parametrize("pattern", ["sparse", "dense", "page run", "edges", "none"])
def test_reader_leaves_out_the_dead_rows_it_is_given(table, pattern):
    from lance_duck.file import open_data_file
    from lance_duck.table.snapshot import open_snapshot

    p, _ = table
    snap = open_snapshot(p)
    frag = snap.fragments[1]                         # rows 12000-23999 of the data (700 deleted)
    reader = open_data_file(snap.io, frag.files[0])
    rows = range(500, 11_800)
    dead = {"sparse": np.arange(3, len(rows), 211), "dense": np.arange(0, len(rows), 5),
            "page run": np.arange(2000, 9000), "edges": np.array([0, 1, len(rows) - 1]),
            "none": np.zeros(0, np.int64)}[pattern].astype(np.int64)
    fields = [snap.schema.field(c) for c in ("id", "i", "x", "f", "n", "s", "m", "st")]
    got = reader.read_fields(fields, rows, dead=dead)
    written = _data().slice(12_000 + rows.start, len(rows))   # what pylance wrote there
    keep = np.ones(len(rows), bool)
    keep[dead] = False
    for f, g in zip(fields, got):
        want = written[f.name].combine_chunks().filter(pa.array(keep))
        assert g.type == want.type and g.equals(want), f.name


def test_reader_refuses_dead_rows_outside_its_range(table):
    from lance_duck.errors import InvalidArgumentError
    from lance_duck.file import open_data_file
    from lance_duck.table.snapshot import open_snapshot

    p, _ = table
    snap = open_snapshot(p)
    reader = open_data_file(snap.io, snap.fragments[0].files[0])
    with pytest.raises(InvalidArgumentError, match="rows to leave out"):
        reader.read_fields([snap.schema.field("i")], range(0, 100), dead=np.array([100]))
    with pytest.raises(InvalidArgumentError, match="rows to leave out"):
        reader.read_fields([snap.schema.field("i")], np.arange(5), dead=np.array([1]))


# -- tasks longer than NUMPY_FILTER_ROWS: the Arrow mask is made from the deleted positions ------
@pytest.mark.parametrize("n", [1, 7, 8, 9, 64, 1000, 40_001])
@pytest.mark.parametrize("pattern", ["none", "first", "last", "sparse", "same byte", "dense", "all"])
def test_arrow_mask_from_deleted_positions_equals_the_boolean_mask(n, pattern):
    from lance_duck.file.base import arrow_mask_without
    dead = {"none": np.zeros(0, np.int64), "first": np.array([0]), "last": np.array([n - 1]),
            "sparse": np.arange(3, n, 97), "same byte": np.array([0, 1, 2, 5, 7]) % n,
            "dense": np.arange(0, n, 2), "all": np.arange(n)}[pattern]
    dead = np.unique(dead).astype(np.int64)
    keep = np.ones(n, bool)
    keep[dead] = False
    got = arrow_mask_without(n, dead)
    assert len(got) == n and got.null_count == 0
    assert np.array_equal(got.to_numpy(zero_copy_only=False), keep)


LONG = 70_000


@pytest.fixture(scope="module")
def long_table(tmp_path_factory) -> str:
    """One 70K-row fragment (one scan task longer than the numpy filter's limit) with deletions."""
    r = np.random.default_rng(11)
    p = str(tmp_path_factory.mktemp("del_gather_long") / "t.lance")
    t = pa.table({
        "id": np.arange(LONG, dtype=np.int64),
        "i": r.integers(-10**15, 10**15, LONG),
        "n": pa.array(r.integers(0, 200, LONG).astype(np.int32), mask=r.random(LONG) < 0.1),
        "f": r.random(LONG),
        "c": pa.array([f"cat_{x % 20}" for x in range(LONG)]),
        "s": pa.array([f"s{x * 7919 % 100_003}" for x in range(LONG)]),
    })
    lance.write_dataset(t, p, data_storage_version="2.2")
    lance.dataset(p).delete("id % 1013 = 3 or (id >= 40000 and id < 40100) or id = 69999")
    return p


def test_a_long_task_with_deletions_equals_pylance(long_table):
    want = lance.dataset(long_table).to_table()
    got = lance_duck.dataset(long_table).to_table()
    assert_tables_equal(got, want)
    for cols in (["n"], ["f", "c"], ["s", "i"]):
        assert_tables_equal(lance_duck.dataset(long_table).to_table(columns=cols), want.select(cols))


def test_sql_over_a_long_task_with_deletions_equals_pylance(long_table):
    import duckdb
    ref = duckdb.connect()
    ref.register("T", lance.dataset(long_table))
    for q in ("select count(*), sum(i), sum(n), count(n), avg(f), max(s) from {}",
              "select c, count(*), sum(n) from {} group by c order by c"):
        got = lance_duck.sql(q.format(f"'{long_table}'")).fetchall()
        want = ref.sql(q.format("T")).fetchall()
        assert len(got) == len(want), q
        for g, w in zip(got, want):    # (a float's sum depends on the order DuckDB's threads add in)
            assert len(g) == len(w) and all(a == pytest.approx(b, rel=1e-12) if isinstance(b, float) else a == b
                                            for a, b in zip(g, w)), (q, g, w)
