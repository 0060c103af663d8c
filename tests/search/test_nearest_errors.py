"""Bad nearest= keys and values are refused by name when the scanner is made, before any read."""
from __future__ import annotations

import shutil

import lance
import numpy as np
import pytest

import lance_duck
from lance_duck.errors import InvalidArgumentError, UnsupportedFeatureError

from .conftest import DIM, assert_same

Q = np.ones(DIM, np.float32)


@pytest.fixture(scope="module")
def no_data(vector_table, tmp_path_factory) -> str:
    """The table with every data file removed: anything read would raise FileNotFoundError."""
    path = tmp_path_factory.mktemp("nodata") / "t.lance"
    shutil.copytree(vector_table, path)
    shutil.rmtree(path / "data")
    return str(path)


@pytest.mark.parametrize("spec,named", [
    ({"column": "vec", "q": Q, "bogus": 1}, "bogus"),
    ({"column": "vec"}, "'q'"),
    ({"q": Q}, "'column'"),
    ({"column": "nope", "q": Q}, "'column'"),
    ({"column": "id", "q": Q}, "'column'"),
    ({"column": "name", "q": Q}, "'column'"),
    ({"column": "vec", "q": Q[:3]}, "'q'"),
    ({"column": "vec", "q": np.full(DIM, np.nan, np.float32)}, "'q'"),
    ({"column": "vec", "q": "abc"}, "'q'"),
    ({"column": "vec", "q": np.ones((2, 2, DIM))}, "'q'"),
    ({"column": "vec", "q": Q, "k": 0}, "'k'"),
    ({"column": "vec", "q": Q, "k": -3}, "'k'"),
    ({"column": "vec", "q": Q, "k": 1.5}, "'k'"),
    ({"column": "vec", "q": Q, "metric": "manhattan"}, "'metric'"),
    ({"column": "vec", "q": Q, "metric": "hamming"}, "'metric'"),
    ({"column": "bits", "q": np.ones(8), "metric": "l2"}, "'metric'"),
    ({"column": "bits", "q": np.full(8, 300)}, "'q'"),
    ({"column": "vec", "q": Q, "nprobes": 0}, "'nprobes'"),
    ({"column": "vec", "q": Q, "minimum_nprobes": 5, "maximum_nprobes": 2}, "'minimum_nprobes'"),
    ({"column": "vec", "q": Q, "refine_factor": 0}, "'refine_factor'"),
    ({"column": "vec", "q": Q, "ef": 0}, "'ef'"),
    ({"column": "vec", "q": Q, "use_index": "yes"}, "'use_index'"),
    ({"column": "vec", "q": Q, "distance_range": (1.0,)}, "'distance_range'"),
    ({"column": "vec", "q": Q, "approx_mode": "x"}, "'approx_mode'"),
    ({"column": "vec", "q": Q, "search_effort": 2.0}, "'search_effort'"),
])
def test_bad_nearest_is_refused_naming_the_key_before_any_read(no_data, spec, named):
    ds = lance_duck.dataset(no_data)
    with pytest.raises(InvalidArgumentError, match=named):
        ds.scanner(columns=["id"], nearest=spec)
    with pytest.raises(InvalidArgumentError, match=named):
        ds.to_table(nearest=spec)


def test_pylance_refuses_the_same_inputs(vector_table):
    ds = lance.dataset(vector_table)
    for spec in ({"column": "vec", "q": Q[:3]}, {"column": "vec", "q": Q, "k": 0}, {"column": "id", "q": Q},
                 {"column": "vec", "q": Q, "metric": "manhattan"}, {"column": "vec", "q": Q, "bogus": 1}):
        with pytest.raises((ValueError, TypeError)):
            ds.to_table(nearest=spec)


def test_nearest_must_be_a_dict(vector_table):
    with pytest.raises(InvalidArgumentError, match="nearest"):
        lance_duck.dataset(vector_table).scanner(nearest="vec")


def test_a_good_query_on_the_damaged_copy_fails_only_when_read(no_data):
    sc = lance_duck.dataset(no_data).scanner(columns=["id"], nearest={"column": "vec", "q": Q})
    with pytest.raises(FileNotFoundError):
        sc.to_table()


def test_an_index_lance_duck_cannot_read_is_refused_naming_use_index(indexed_table):
    ds = lance_duck.dataset(indexed_table)
    nearest = {"column": "vec", "q": Q, "k": 3}
    try:
        got = ds.to_table(columns=["id"], nearest=nearest)
    except UnsupportedFeatureError as exc:      # until lance_duck reads this index type
        assert "use_index" in str(exc) and "vec_idx" in str(exc)
    else:
        assert_same(got, lance.dataset(indexed_table).to_table(columns=["id"], nearest=nearest))
    exact = {**nearest, "use_index": False}
    assert_same(ds.to_table(columns=["id"], nearest=exact),
                lance.dataset(indexed_table).to_table(columns=["id"], nearest=exact))
