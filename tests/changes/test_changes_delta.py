"""``LanceDataset.delta()`` returns pylance 14.0.2's rows, columns, types and order (deleted ids
compared as sets: pylance's order is unspecified), and refuses what pylance refuses."""
from __future__ import annotations

import lance
import pytest

import lance_duck
from lance_duck import _state
from lance_duck.scan.interop import HandedOver
from lance_duck.errors import InvalidArgumentError, VersionNotFoundError

from .histories import LAST_VERSION


def _ranges():
    out = []
    for end in range(1, LAST_VERSION + 1):
        out += [(begin, end) for begin in range(0, end + 1)]
    return out


def _transactions(delta):
    names = {"ReserveFragments": "BaseOperation"}   # pylance's Python layer has no class for it
    return [(t.read_version, t.uuid, t.transaction_properties,
             names.get(type(t.operation).__name__, type(t.operation).__name__)) for t in delta.list_transactions()]


@pytest.mark.parametrize("opened", [LAST_VERSION, 6, 11])
def test_every_range_gives_pylances_inserted_and_updated_rows(history, opened):
    ours, theirs = lance_duck.dataset(history, version=opened), lance.dataset(history, version=opened)
    checked = 0
    for begin, end in _ranges():
        d, p = ours.delta(begin_version=begin, end_version=end), theirs.delta(begin_version=begin, end_version=end)
        for name in ("get_inserted_rows", "get_updated_rows"):
            got, want = getattr(d, name)().read_all(), getattr(p, name)().read_all()
            assert got.schema.equals(want.schema, check_metadata=True), (begin, end, name)
            assert got.equals(want), (begin, end, name)
            checked += got.num_rows
    assert checked > 100


def test_compared_against_orders_the_versions_like_pylance(stable_table):
    ours, theirs = lance_duck.dataset(stable_table, version=6), lance.dataset(stable_table, version=6)
    for v in range(0, LAST_VERSION + 1):
        d, p = ours.delta(compared_against=v), theirs.delta(compared_against=v)
        assert d.get_updated_rows().read_all().equals(p.get_updated_rows().read_all()), v
        assert d.get_inserted_rows().read_all().equals(p.get_inserted_rows().read_all()), v
        assert _transactions(d) == _transactions(p), v


def test_compared_against_wins_over_a_range_given_with_it(stable_table):
    d = lance_duck.dataset(stable_table).delta(3, begin_version=1, end_version=2)
    p = lance.dataset(stable_table).delta(3, begin_version=1, end_version=2)
    assert (d.begin_version, d.end_version) == (3, LAST_VERSION)
    assert _transactions(d) == _transactions(p)


def test_transactions_of_every_range_match_pylances(history):
    ours, theirs = lance_duck.dataset(history), lance.dataset(history)
    for begin, end in _ranges():
        assert _transactions(ours.delta(begin_version=begin, end_version=end)) == \
            _transactions(theirs.delta(begin_version=begin, end_version=end)), (begin, end)
    kinds = [x[3] for x in _transactions(ours.delta(begin_version=0, end_version=LAST_VERSION))]
    assert kinds == ["Overwrite", "Append", "Delete", "Update", "Update", "Merge", "BaseOperation", "Rewrite",
                     "CreateIndex", "Delete", "Restore", "Update", "Append"]


def test_deleted_row_ids_of_every_range_match_pylances(stable_table):
    ours, theirs = lance_duck.dataset(stable_table), lance.dataset(stable_table)
    nonempty = 0
    for begin, end in _ranges():
        got = ours.delta(begin_version=begin, end_version=end).get_deleted_row_ids().read_all()
        want = theirs.delta(begin_version=begin, end_version=end).get_deleted_row_ids().read_all()
        assert got.schema.equals(want.schema)
        assert got.column(0).to_pylist() == sorted(want.column(0).to_pylist()), (begin, end)
        nonempty += got.num_rows > 0
    assert nonempty > 20


def test_deleted_row_ids_stay_referenced_after_their_reader_ends(stable_table):
    """The ids wrap numpy memory: like every reader an engine pulls, the last batch is held past the
    stream's end (a DuckDB 1.x thread freeing it at connection teardown would need the GIL)."""
    reader = lance_duck.dataset(stable_table).delta(begin_version=1, end_version=LAST_VERSION).get_deleted_row_ids()
    got = reader.read_all()
    del reader
    assert got.num_rows > 0
    last = _state.slot("handed-over", HandedOver).latest()
    assert [b.column(0).buffers()[1].address for b in last] == [c.buffers()[1].address for c in got.column(0).chunks]


def test_deleted_row_ids_are_refused_without_stable_row_ids_like_pylance(plain_table):
    with pytest.raises(ValueError, match="version 2 does not use them"):
        lance.dataset(plain_table).delta(compared_against=2).get_deleted_row_ids()
    with pytest.raises(InvalidArgumentError, match="stable row ids, version 2 does not use them"):
        lance_duck.dataset(plain_table).delta(compared_against=2).get_deleted_row_ids()


def test_a_reversed_range_is_empty_but_its_deleted_ids_are_refused(stable_table):
    d = lance_duck.dataset(stable_table).delta(begin_version=5, end_version=3)
    assert d.get_inserted_rows().read_all().num_rows == 0 and d.list_transactions() == []
    with pytest.raises(InvalidArgumentError, match="begin version 5 is newer than end version 3"):
        d.get_deleted_row_ids()


@pytest.mark.parametrize("kwargs, message", [
    ({}, "Must specify either compared_against or both"),
    ({"begin_version": 2}, "Must specify both"),
    ({"end_version": 2}, "Must specify both"),
    ({"compared_against": -1}, "compared_against must be a version number"),
])
def test_bad_arguments_are_refused_where_pylance_refuses(stable_table, kwargs, message):
    if "compared_against" not in kwargs:
        with pytest.raises(ValueError):
            lance.dataset(stable_table).delta(**kwargs)
    with pytest.raises(InvalidArgumentError, match=message):
        lance_duck.dataset(stable_table).delta(**kwargs)


def test_a_range_past_the_last_version_names_the_missing_version(stable_table):
    with pytest.raises(ValueError, match="Can not find version 14"):
        lance.dataset(stable_table).delta(begin_version=5, end_version=20).list_transactions()
    with pytest.raises(VersionNotFoundError, match="Can not find version 14"):
        lance_duck.dataset(stable_table).delta(begin_version=5, end_version=20).list_transactions()
