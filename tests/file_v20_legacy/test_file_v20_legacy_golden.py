"""Golden tables written by OLD pylance releases (tests/data/README.md): lance_duck must read from
them exactly what today's pylance 14.0.2 reads."""
from __future__ import annotations

import os

import numpy as np
import pytest

from .conftest import assert_same, load_table, read_all, read_column

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
GOLDEN = {
    "legacy_pylance_0_10_18": "0.1",
    "v2_0_pylance_0_20_0": "2.0",
}


@pytest.fixture(scope="module", params=sorted(GOLDEN))
def golden(request, lance_mod):
    path = os.path.abspath(os.path.join(DATA, request.param + ".lance"))
    ds = lance_mod.dataset(path)
    assert ds.data_storage_version == GOLDEN[request.param]
    return request.param, ds, load_table(path), ds.to_table()


def test_golden_table_columns_equal_pylance_14(golden):
    name, ds, snap, expected = golden
    assert len(snap.fragments) == 2
    assert set(expected.column_names) >= {"id", "name", "ints", "point", "vec"}
    for column in expected.column_names:
        assert_same(read_all(snap, column), expected[column], f"{name}/{column}")


def test_golden_table_row_selection_equals_take(golden):
    name, ds, snap, _ = golden
    n0, n1 = snap.fragments[0].physical_rows, snap.fragments[1].physical_rows
    sel = np.array([0, 31, 32, 33, 64, n0 - 1], dtype=np.int64)
    r = range(3, n1 - 2)
    for column in ds.schema.names:
        expected = ds.take(sel.tolist(), columns=[column])[column]
        assert_same(read_column(snap, column, 0, sel), expected, f"{name}/{column}")
        assert_same(read_column(snap, column, 1, r),
                    ds.take([n0 + i for i in r], columns=[column])[column], f"{name}/{column}")


def test_golden_legacy_dictionary_with_empty_value_and_null_keys(lance_mod):
    path = os.path.abspath(os.path.join(DATA, "legacy_pylance_0_10_18.lance"))
    snap, expected = load_table(path), lance_mod.dataset(path).to_table()
    assert snap.schema.field("dict").dictionary_length > 0  # values live in the manifest
    ours = read_all(snap, "dict")
    assert ours.to_pylist() == expected["dict"].to_pylist()
    assert None in ours.dictionary.to_pylist()  # the '' value reads back as null, as pylance
