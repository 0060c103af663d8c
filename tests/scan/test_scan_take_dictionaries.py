"""take across fragments whose dictionaries differ and hold a null entry (valid 2.0 files; legacy
tables share one dictionary per column)."""
from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_duck


def _table(indices, dictionary, start):
    arr = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(dictionary))
    return pa.table({"id": pa.array(range(start, start + len(indices)), pa.int64()), "c": arr})


@pytest.fixture(scope="module")
def table_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("dictnulls") / "t.lance")
    lance.write_dataset(_table([0, 1, 2, None, 1], ["a", None, "b"], 0), path,
                        data_storage_version="2.0")
    lance.write_dataset(_table([1, 0, 2, 2], ["x", "y", None], 5), path, mode="append",
                        data_storage_version="2.0")
    return path


@pytest.mark.parametrize("indices", [[0, 1, 5, 7, 3], [8, 1, 2, 6], [4, 4, 5], [7]])
def test_take_across_fragments_with_null_dictionary_entries_equals_pylance(table_path, indices):
    want = lance.dataset(table_path).take(indices)
    got = lance_duck.dataset(table_path).take(indices)
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()
    assert got.column("c").to_pylist().count(None) >= 1 or indices == [4, 4, 5]


def test_scan_keeps_every_value_of_null_dictionary_entries(table_path):
    want = lance.dataset(table_path).to_table()
    got = lance_duck.dataset(table_path).to_table()
    assert got.schema == want.schema and got.to_pylist() == want.to_pylist()
