"""Whole-column reads of values that already carry nulls when the leaf validity is applied
(lists with null rows and null items, 2.3 sparse pages with values taken under null slots):
the file readers equal pylance, and the validity helpers equal Arrow's own."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lance  # a test dependency: missing, it must fail, not skip
from lance_duck.file import open_data_file
from lance_duck.file.v2_1.values import _validity_of, with_validity
from lance_duck.table.snapshot import open_snapshot

N = 120_000


def _arrays(n: int) -> list[pa.Array]:
    rng = np.random.default_rng(5)
    nulls = rng.random(n) < 0.2
    ints = pa.array(np.arange(n, dtype=np.int32), mask=nulls)
    return [
        ints,
        pa.array(rng.random(n), mask=nulls),
        pa.array([None if k else f"s{i}" for i, k in enumerate(nulls)]),
        pa.array(rng.random(n) < 0.5, mask=nulls),
        pa.StructArray.from_arrays([ints], names=["a"], mask=pa.array(nulls)),
        pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32)), pa.array(np.arange(n)),
                                 mask=pa.array(nulls)),
        pa.FixedSizeListArray.from_arrays(pa.array(np.arange(2 * n)), 2, mask=pa.array(nulls)),
        pa.array(np.arange(n), mask=nulls).dictionary_encode(),
    ]


@pytest.mark.parametrize("kind", range(8))
@pytest.mark.parametrize("offset", [0, 3, 8, 13])
def test_validity_of_equals_arrow_is_valid(kind, offset):
    arr = _arrays(1000)[kind].slice(offset)
    assert arr.null_count
    want = arr.is_valid().to_numpy(zero_copy_only=False)
    np.testing.assert_array_equal(_validity_of(arr), want)


@pytest.mark.parametrize("offset", [0, 5, 16])
def test_with_validity_keeps_existing_nulls_and_adds_new_ones(offset):
    base = _arrays(1000)[0].slice(offset)
    extra = np.random.default_rng(1).random(len(base)) < 0.3
    got = with_validity(base, ~extra)
    want = pa.array(np.where(extra, 0, base.fill_null(0).to_numpy()), pa.int32(),
                    mask=extra | ~base.is_valid().to_numpy(zero_copy_only=False))
    assert got.equals(want)


def _list_table(n: int) -> pa.Table:
    rng = np.random.default_rng(9)
    lens = rng.integers(0, 9, n)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    items = pa.array(rng.integers(0, 1 << 16, int(offsets[-1])).astype(np.int32),
                     mask=rng.random(int(offsets[-1])) < 0.05)
    lst = pa.ListArray.from_arrays(pa.array(offsets), items, mask=pa.array(rng.random(n) < 0.05))
    st = pa.StructArray.from_arrays([pa.array(rng.random(n), mask=rng.random(n) < 0.1)], names=["x"],
                                    mask=pa.array(rng.random(n) < 0.05))
    return pa.table({"l": lst, "s": st})


@pytest.fixture(scope="module", params=["2.1", "2.2", "2.3"])
def list_path(request, tmp_path_factory) -> str:
    p = str(tmp_path_factory.mktemp(f"full_values_{request.param}") / "t.lance")
    t = _list_table(N)
    lance.write_dataset(pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=30_000)), p,
                        data_storage_version=request.param)
    return p


@pytest.mark.parametrize("column", ["l", "s"])
@pytest.mark.parametrize("rows", [None, range(0, N), range(29_990, 60_010), "sparse"])
def test_whole_and_ranged_reads_of_nullable_nested_columns_equal_pylance(list_path, column, rows):
    snap = open_snapshot(list_path)
    field = snap.schema.field(column)
    (frag,) = snap.fragments
    reader = open_data_file(snap.io, frag.files[0])
    want = lance.dataset(list_path).to_table(columns=[column]).column(0).combine_chunks()
    if rows == "sparse":
        rows = np.arange(7, N, 97, dtype=np.int64)
        want = want.take(pa.array(rows))
    elif rows is not None:
        want = want.slice(rows.start, len(rows))
    got = reader.read_field(field, rows)
    assert got.type == want.type
    assert got.equals(want)
