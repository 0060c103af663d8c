"""Fragments where exact indices (BTREE / BITMAP) answer every conjunct of the filter are read
without the filter's columns (``ScanTask.exact``, ``execution.index_answers_filter``).

Oracles: pylance with ``use_scalar_index=False`` and lance_duck with ``use_scalar_index=False``,
at every version of the histories of ``conftest.make_history`` (appends after the indices,
deletes, updates, delta segments, compaction; with and without stable row ids), with projections
that leave the filter's columns out -- the case where nothing re-checks the index's answer.
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

# (filter, columns read by the scan: the filter's columns are not among them)
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
# the index answers some conjuncts only, or only "at most": the filter is re-applied
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
    answered: list = []
    read: list = []
    run_answered = execution.ScanContext.run_answered
    read_fields = file_base.DataFileReader.read_fields

    def spy_answered(self, task):
        answered.append(task.fragment.id)
        return run_answered(self, task)

    def spy_read(self, fields, rows=None, keep_dictionary=False):
        read.extend(f.name for f in fields)
        return read_fields(self, fields, rows, keep_dictionary)

    monkeypatch.setattr(execution.ScanContext, "run_answered", spy_answered)
    monkeypatch.setattr(file_base.DataFileReader, "read_fields", spy_read)
    return answered, read


@pytest.mark.parametrize("flt,cols", ANSWERED[:4])
def test_answered_filters_read_no_filter_column_on_indexed_fragments(history_plain, monkeypatch, flt, cols):
    ds = lance_duck.dataset(history_plain)                  # latest: some fragments not indexed
    sc = ds.scanner(columns=cols, filter=flt)
    sel = plan_index_selections(ds._snapshot, sc._filter.conjuncts, ds._snapshot.fragments)
    assert sel.exact and sel.exact <= set(sel) and not sel.candidates
    answered, read = _spy(monkeypatch)
    got = sc.to_table()
    assert set(answered) == {f for f in sel.exact if len(sel[f])}
    unindexed = [f for f in ds._snapshot.fragments if f.id not in sel]
    assert unindexed, "the history leaves fragments outside every index"
    filter_cols = set(sc._filter.columns) - set(cols)
    # the filter's columns are read only for the fragments no index covers
    assert read.count(next(iter(filter_cols))) <= len(unindexed)
    assert got.equals(lance.dataset(history_plain).to_table(columns=cols, filter=flt, use_scalar_index=False))


@pytest.mark.parametrize("flt,cols", NOT_ANSWERED)
def test_partly_answered_filters_are_re_applied(history_plain, monkeypatch, flt, cols):
    ds = lance_duck.dataset(history_plain)
    sc = ds.scanner(columns=cols, filter=flt)
    answered, _ = _spy(monkeypatch)
    sc.to_table()
    assert answered == []


def test_scan_without_scalar_index_never_takes_the_answered_path(history_plain, monkeypatch):
    answered, _ = _spy(monkeypatch)
    lance_duck.dataset(history_plain).to_table(columns=["id"], filter="cat = 'c3'", use_scalar_index=False)
    assert answered == []


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


def test_pyarrow_expression_filters_are_answered_too(history_plain, monkeypatch):
    ds = lance_duck.dataset(history_plain)
    answered, _ = _spy(monkeypatch)
    got = ds.to_table(columns=["amount"], filter=pc.field("cat") == "c4")
    assert answered
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
    answered, read = _spy(monkeypatch)
    got = ds.to_table(columns=cols, filter=flt)
    assert answered and not {"cat", "id"} & set(read)
    if flt == "cat = 'c3'":
        assert len(answered) >= 2                     # one fragment, several tasks
    plain = ds.to_table(columns=cols, filter=flt, use_scalar_index=False)
    ref = lance.dataset(one_big_fragment).to_table(columns=cols, filter=flt, use_scalar_index=False)
    assert got.equals(plain)
    assert got.equals(ref)
