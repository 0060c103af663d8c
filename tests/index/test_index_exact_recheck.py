"""Rows selected by exact indices (BTREE / BITMAP) that answer every conjunct of the filter still
have the complete filter re-applied (issue 12's exactness rule), also when the projection leaves
the filter's columns out.

Oracles: pylance with ``use_scalar_index=False`` and lance_duck with ``use_scalar_index=False``,
at every version of the histories of ``conftest.make_history`` (appends after the indices,
deletes, updates, delta segments, compaction; with and without stable row ids), with projections
that leave the filter's columns out.
"""
from __future__ import annotations

import duckdb
import lance
import pyarrow.compute as pc
import pytest

import lance_duck
from lance_duck.file import base as file_base
from lance_duck.index.search import plan_index_selections
from lance_duck.scan import execution

# (filter, projected columns: the filter's columns are not among them)
ANSWERED = [
    ("cat = 'c3'", ["id", "amount"]),
    ("cat = 'moved'", ["id"]),                       # rows moved by the update
    ("cat IS NULL", ["amount"]),
    ("cat IN ('c1', 'c2') AND grp IN (3, 4)", ["id", "txt"]),
    ("id >= 2990 AND id < 3200", ["cat", "amount"]),  # deleted rows inside the range
    ("id = 3050", ["amount"]),                       # a deleted row
    ("grp = 7", ["id"]),                              # updated rows get grp 7
    ("day = DATE '1970-02-01'", ["id", "cat"]),
    ("cat = 'nope'", ["id"]),
]
# the index answers some conjuncts only, or only "at most"
NOT_ANSWERED = [
    ("cat = 'c3' AND payload LIKE '%1%'", ["id"]),
    ("cat = 'c3' AND amount > 100", ["id"]),         # zone map: candidates
    ("seq = 700", ["id"]),
    ("id = 1234 OR txt = 'x'", ["amount"]),
]


def _versions(path: str) -> list[int]:
    return [v["version"] for v in lance.dataset(path).versions()][9:]


@pytest.mark.parametrize("flt,cols", ANSWERED + NOT_ANSWERED)
def test_projection_without_filter_columns_equals_unindexed_reads(history, flt, cols):
    for v in _versions(history):
        ours = lance_duck.dataset(history, version=v)
        got = ours.to_table(columns=cols, filter=flt)
        plain = ours.to_table(columns=cols, filter=flt, use_scalar_index=False)
        ref = lance.dataset(history, version=v).to_table(columns=cols, filter=flt, use_scalar_index=False)
        assert got.equals(plain), f"version {v}: {flt}"
        assert got.equals(ref), f"version {v}: {flt}"


def _spy(monkeypatch) -> tuple[list, list]:
    """Records the tasks whose index-selected rows had the filter re-applied, and the columns read."""
    rechecked: list = []
    read: list = []
    selected_mask = execution.ScanContext.selected_mask
    read_fields = file_base.DataFileReader.read_fields

    def spy_mask(self, fcols, n):
        rechecked.append(sorted(fcols))
        return selected_mask(self, fcols, n)

    def spy_read(self, fields, rows=None, keep_dictionary=False, **kwargs):
        read.extend(f.name for f in fields)
        return read_fields(self, fields, rows, keep_dictionary, **kwargs)

    monkeypatch.setattr(execution.ScanContext, "selected_mask", spy_mask)
    monkeypatch.setattr(file_base.DataFileReader, "read_fields", spy_read)
    return rechecked, read


@pytest.mark.parametrize("flt,cols", ANSWERED[:4])
def test_exact_index_selections_still_re_apply_the_complete_filter(history_plain, monkeypatch, flt, cols):
    ds = lance_duck.dataset(history_plain)                  # latest: some fragments not indexed
    sc = ds.scanner(columns=cols, filter=flt)
    sel = plan_index_selections(ds._snapshot, sc._filter.conjuncts, ds._snapshot.fragments)
    assert sel and not sel.candidates
    rechecked, read = _spy(monkeypatch)
    got = sc.to_table()
    filter_cols = sorted(set(sc._filter.columns))
    assert rechecked and all(r == filter_cols for r in rechecked)
    assert set(filter_cols) <= set(read)
    assert got.equals(lance.dataset(history_plain).to_table(columns=cols, filter=flt, use_scalar_index=False))


@pytest.mark.parametrize("sql", [
    "select count(*), sum(amount) from T where cat = 'c3'",
    "select id from T where cat in ('c1', 'c5') and grp = 5 order by id",
    "select amount from T where id between 2990 and 3200 order by amount",
])
def test_duckdb_over_answered_filters_equals_pylance_unindexed(history, sql):
    # (pylance's own indexed scan returns stale rows of the stable-row-id history: not an oracle)
    ours, theirs = duckdb.connect(), duckdb.connect()
    ours.register("T", lance_duck.dataset(history))
    theirs.register("T", lance.dataset(history).to_table(use_scalar_index=False))
    assert ours.sql(sql).fetchall() == theirs.sql(sql).fetchall()


def test_pyarrow_expression_filters_are_re_applied_too(history_plain, monkeypatch):
    ds = lance_duck.dataset(history_plain)
    rechecked, _ = _spy(monkeypatch)
    got = ds.to_table(columns=["amount"], filter=pc.field("cat") == "c4")
    assert rechecked
    ref = lance.dataset(history_plain).to_table(columns=["amount"], filter="cat = 'c4'", use_scalar_index=False)
    assert got.equals(ref)


@pytest.mark.parametrize("flt", ["cat = 'c3'", "id >= 2990 AND id < 3200"])
def test_answered_rows_carry_their_row_ids_and_addresses(history, flt):
    ds = lance_duck.dataset(history)
    for kw in ({"with_row_id": True}, {"with_row_address": True}):
        got = ds.scanner(columns=["amount"], filter=flt, **kw).to_table()
        plain = ds.scanner(columns=["amount"], filter=flt, use_scalar_index=False, **kw).to_table()
        assert got.equals(plain), kw
    ref = lance.dataset(history).to_table(columns=["amount"], filter=flt, with_row_id=True, use_scalar_index=False)
    assert ds.to_table(columns=["amount"], filter=flt, with_row_id=True).equals(ref)


def test_answered_scan_with_limit_and_offset_equals_unindexed(history_plain):
    ds = lance_duck.dataset(history_plain)
    for limit, offset in ((5, 0), (7, 300), (None, 900)):
        got = ds.to_table(columns=["id"], filter="cat = 'c2'", limit=limit, offset=offset)
        plain = ds.to_table(columns=["id"], filter="cat = 'c2'", limit=limit, offset=offset, use_scalar_index=False)
        assert got.equals(plain), (limit, offset)


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def one_big_fragment(request, tmp_path_factory) -> str:
    """300k rows in one fragment (selections span several ramp tasks), rows deleted after indexing."""
    from .conftest import batch
    path = str(tmp_path_factory.mktemp("exact") / f"big{request.param}.lance")
    ds = lance.write_dataset(batch(0, 300_000), path, max_rows_per_file=300_000,
                             data_storage_version=request.param)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    ds.delete("id % 10 = 3 OR (id >= 120000 AND id < 121000)")
    return path


@pytest.mark.parametrize("flt", ["cat = 'c3'", "cat IS NULL", "id >= 100000 AND id < 130000",
                                 "cat = 'c3' AND id >= 100000 AND id < 130000", "id IN (5, 120500, 299999)"])
@pytest.mark.parametrize("cols", [["amount"], ["seq", "txt"]])
def test_answered_selections_spanning_several_tasks_equal_unindexed_reads(one_big_fragment, monkeypatch, flt, cols):
    ds = lance_duck.dataset(one_big_fragment)
    rechecked, read = _spy(monkeypatch)
    got = ds.to_table(columns=cols, filter=flt)
    assert rechecked and set(rechecked[0]) <= set(read)
    if flt == "cat = 'c3'":
        assert len(rechecked) >= 2                    # one fragment, several tasks
    plain = ds.to_table(columns=cols, filter=flt, use_scalar_index=False)
    ref = lance.dataset(one_big_fragment).to_table(columns=cols, filter=flt, use_scalar_index=False)
    assert got.equals(plain)
    assert got.equals(ref)
