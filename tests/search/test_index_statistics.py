"""index_statistics(name) of vector indices equals pylance's stats.index_stats(name)."""
from __future__ import annotations

import lance
import pytest

import lance_duck
from lance_duck.errors import InvalidArgumentError


def test_vector_index_statistics_equal_pylance(index_history):
    path, _ = index_history
    assert lance_duck.dataset(path).index_statistics("vec_idx") == lance.dataset(path).stats.index_stats("vec_idx")


def test_several_segments_and_unindexed_rows(segmented_table):
    got = lance_duck.dataset(segmented_table).index_statistics("vec_idx")
    assert got == lance.dataset(segmented_table).stats.index_stats("vec_idx")
    assert got["num_segments"] == 2 and got["num_unindexed_rows"] > 0


def test_an_older_version_counts_its_own_rows(segmented_table):
    v = lance.dataset(segmented_table).version - 2
    got = lance_duck.dataset(segmented_table, version=v).index_statistics("vec_idx")
    assert got == lance.dataset(segmented_table, version=v).stats.index_stats("vec_idx")


def test_unknown_indices_are_refused_by_name_and_scalar_ones_equal_pylance(index_history):
    path, _ = index_history
    ds = lance_duck.dataset(path)
    with pytest.raises(InvalidArgumentError, match="nope"):
        ds.index_statistics("nope")
    assert ds.index_statistics("cat_idx") == lance.dataset(path).stats.index_stats("cat_idx")
