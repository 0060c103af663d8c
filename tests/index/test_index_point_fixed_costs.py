"""Per-query fixed costs of a point lookup cut without changing answers: BTREE page bounds
bisected for one ``=`` (equal to comparing every page), projections of column-name lists kept
per snapshot (the same object for the same request, errors still raised every time)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import InvalidArgumentError
from lance_duck.index.scalar import Bounds
from lance_duck.predicate.pruning import ColumnPredicate


def _eq(v) -> tuple:
    return (ColumnPredicate(("v",), "==", pa.scalar(v)),)


def _every_page(mn: np.ndarray, mx: np.ndarray, x: int) -> np.ndarray:
    return np.flatnonzero((mn <= x) & (mx >= x))


@pytest.mark.parametrize("dtype", [pa.int64(), pa.int32(), pa.uint16()])
def test_bisected_page_bounds_equal_comparing_every_page(dtype):
    # sorted pages, a value repeated across several pages, gaps between pages
    mn = np.array([0, 10, 10, 10, 25, 40, 41, 100], np.int64)
    mx = np.array([9, 10, 10, 20, 30, 40, 90, 100], np.int64)
    b = Bounds(pa.array(mn, dtype), pa.array(mx, dtype), pa.array(np.zeros(8, np.int64)))
    assert b._sorted()
    for x in [-5, 0, 5, 9, 10, 11, 20, 21, 24, 25, 40, 41, 95, 100, 101, 30000]:
        if x < 0 and dtype == pa.uint16():
            continue
        got = b.may_match([_eq(x)])
        assert np.array_equal(got, _every_page(mn, mx, x)), (dtype, x)


def test_unsorted_bounds_are_compared_page_by_page():
    mn = np.array([50, 0, 20], np.int64)      # zones in row order, not value order
    mx = np.array([60, 70, 30], np.int64)
    b = Bounds(pa.array(mn), pa.array(mx), pa.array(np.zeros(3, np.int64)))
    assert not b._sorted()
    for x in (0, 25, 55, 65, 80):
        assert np.array_equal(b.may_match([_eq(x)]), _every_page(mn, mx, x)), x


def test_a_null_literal_matches_no_page():
    b = Bounds(pa.array([0, 10]), pa.array([9, 19]), pa.array([0, 0]))
    assert b.may_match([(ColumnPredicate(("v",), "==", pa.scalar(None, pa.int64())),)]).size == 0


def test_projections_of_name_lists_are_kept_per_snapshot():
    ds = lance_duck.dataset("sql_examples/data/sample.lance")
    a = ds.scanner(columns=["order_id", "amount"])._projection
    assert ds.scanner(columns=("order_id", "amount"))._projection is a
    assert ds.scanner(columns=["amount", "order_id"])._projection is not a
    assert ds.scanner(columns=["order_id", "amount"], with_row_id=True)._projection is not a
    assert ds.scanner()._projection is ds.scanner(columns=None)._projection
    other = lance_duck.dataset("sql_examples/data/sample.lance", version=1)
    assert other.scanner(columns=["order_id", "amount"])._projection is not a
    for _ in range(2):
        with pytest.raises(InvalidArgumentError, match="nope"):
            ds.scanner(columns=["order_id", "nope"])
    t = ds.to_table(columns=["order_id", "amount"], filter="order_id < 3")
    assert t.schema.names == ["order_id", "amount"] and t.num_rows == 3


def test_small_batches_are_sized_by_their_buffers_never_below_nbytes():
    from lance_duck.scan.execution import SMALL_BATCH_BYTES, batch_bytes
    t = lance_duck.dataset("sql_examples/data/sample.lance").to_table().combine_chunks()
    for n in (1, 7, 300):
        b = t.slice(100, n).to_batches()[0]          # a slice of big buffers: sized exactly
        assert b.get_total_buffer_size() > SMALL_BATCH_BYTES and batch_bytes(b) == b.nbytes
        small = pa.Table.from_pylist(b.to_pylist(), schema=b.schema).to_batches()[0]
        assert small.get_total_buffer_size() <= SMALL_BATCH_BYTES
        assert SMALL_BATCH_BYTES >= batch_bytes(small) >= small.nbytes > 0
    assert batch_bytes(None) == 0


def test_file_layer_errors_still_name_the_file_and_fields(tmp_path):
    """read_fields builds its error context only on failure: damage still names file and fields."""
    from lance_duck.errors import CorruptFileError
    from lance_duck.file.base import DataFileReader

    class Broken(DataFileReader):
        def __init__(self, exc):
            self.ref = type("Ref", (), {"path": "/x/data/f.lance"})()
            self.num_rows = 3
            self.exc = exc

        def _read_fields(self, fields, rows, keep_dictionary):
            raise self.exc

    field = type("F", (), {"name": "amount"})()
    with pytest.raises(CorruptFileError, match=r"/x/data/f.lance: data file is damaged \(fields \['amount'\]\)"):
        Broken(IndexError("boom")).read_fields([field])
    with pytest.raises(CorruptFileError, match=r"^/x/data/f.lance \(fields \['amount'\]\): bad"):
        Broken(CorruptFileError("bad")).read_fields([field])
    with pytest.raises(FileNotFoundError):
        Broken(FileNotFoundError("gone")).read_fields([field])
    with pytest.raises(KeyError):
        Broken(KeyError("k")).read_fields([field])


@pytest.mark.parametrize("dtype", [pa.int8(), pa.int32(), pa.int64(), pa.uint8(), pa.uint64()])
def test_few_row_integer_recheck_equals_the_numpy_comparison(dtype, monkeypatch):
    from lance_duck.index import btree
    rng = np.random.default_rng(4)
    cases = [(ColumnPredicate(("v",), op, lit),) for op in ("==", "<", "<=", ">", ">=")
             for lit in (pa.scalar(50), pa.scalar(-1), pa.scalar(300), pa.scalar(None, pa.int64()),
                         pa.scalar(5, pa.int8()), pa.scalar(2.5))]
    cases += [(ColumnPredicate(("v",), "in", pa.array([1, 50, None])), ColumnPredicate(("v",), "==", pa.scalar(7))),
              (ColumnPredicate(("v",), "in", pa.array([3, 1000])),), (ColumnPredicate(("v",), "is_null", None),),
              (ColumnPredicate(("v",), "!=", pa.scalar(3)),)]
    for n in (1, 3, btree.FEW_ROWS):
        values = pa.array(rng.integers(0, 100, n), dtype)
        few = [btree.integer_mask(values, preds) for preds in cases]
        monkeypatch.setattr(btree, "FEW_ROWS", 0)
        for preds, got in zip(cases, few):
            want = btree.integer_mask(values, preds)
            assert (got is None and want is None) or np.array_equal(got, want), (dtype, n, preds)
        monkeypatch.undo()
