"""nearest= without an index (or use_index=False): exact KNN equal to pylance's, option by option."""
from __future__ import annotations

import lance
import pytest

import lance_duck

from .conftest import assert_same, queries

Q = queries()


def both(path: str, **kw):
    return lance_duck.dataset(path).to_table(**kw), lance.dataset(path).to_table(**kw)


@pytest.mark.parametrize("column", ["vec", "v16", "v64"])
@pytest.mark.parametrize("metric", [None, "l2", "euclidean", "cosine", "dot"])
def test_flat_search_equals_pylance_per_metric_and_float_type(vector_table, column, metric):
    for q in Q:
        nearest = {"column": column, "q": q, "k": 7}
        if metric:
            nearest["metric"] = metric
        got, want = both(vector_table, columns=["id", "cat"], nearest=nearest)
        assert_same(got, want)


def test_ties_are_ordered_by_row_id_and_default_k_is_10(vector_table):
    got, want = both(vector_table, nearest={"column": "vec", "q": Q[0]})
    assert_same(got, want)
    assert got.num_rows == 10 and got["_distance"].to_numpy()[:5].max() == 0.0


def test_hamming_over_uint8_vectors(vector_table):
    q = lance.dataset(vector_table).take([1], columns=["bits"]).column(0)[0].values.to_numpy()
    for metric in (None, "hamming"):
        nearest = {"column": "bits", "q": q, "k": 9}
        if metric:
            nearest["metric"] = metric
        got, want = both(vector_table, columns=["id"], nearest=nearest)
        assert_same(got, want)


def test_null_vectors_never_match(vector_table):
    got, want = both(vector_table, columns=["id"], nearest={"column": "vnull", "q": Q[1], "k": 50})
    assert_same(got, want)


@pytest.mark.parametrize("columns", [None, ["id"], ["_distance", "id"], ["name", "_distance", "cat"], ["id", "_rowid"]])
@pytest.mark.parametrize("flags", [{}, {"with_row_id": True}, {"with_row_id": True, "with_row_address": True}])
def test_column_order_and_row_id_columns_as_pylance(vector_table, columns, flags):
    got, want = both(vector_table, columns=columns, nearest={"column": "vec", "q": Q[1], "k": 5}, **flags)
    assert_same(got, want)


def test_without_autoprojection_distance_only_when_named(vector_table):
    got, want = both(vector_table, columns=["id"], nearest={"column": "vec", "q": Q[1], "k": 5},
                     disable_scoring_autoprojection=True)
    assert_same(got, want)
    assert "_distance" not in got.column_names


@pytest.mark.parametrize("prefilter", [False, True])
@pytest.mark.parametrize("flt", ["cat = 2", "id > 1000 and name like 'n1%'", "cat = 99"])
def test_filter_before_or_after_the_top_k(vector_table, prefilter, flt):
    got, want = both(vector_table, columns=["id", "cat"], nearest={"column": "vec", "q": Q[2], "k": 12},
                     filter=flt, prefilter=prefilter)
    assert_same(got, want)


@pytest.mark.parametrize("limit,offset", [(3, None), (None, 4), (2, 3), (50, 9)])
def test_limit_and_offset_after_the_search(vector_table, limit, offset):
    got, want = both(vector_table, columns=["id"], nearest={"column": "vec", "q": Q[1], "k": 10},
                     filter="cat != 1", limit=limit, offset=offset)
    assert_same(got, want)


def test_batch_query_leads_with_query_index(vector_table):
    got, want = both(vector_table, columns=["id"], nearest={"column": "vec", "q": Q, "k": 4}, with_row_id=True)
    assert_same(got, want)
    assert got.schema.field("query_index").nullable is False


@pytest.mark.parametrize("bounds", [(3.0, 20.0), (None, 15.0), (10.0, None)])
def test_distance_range_applies_before_the_top_k(vector_table, bounds):
    got, want = both(vector_table, columns=["id"], nearest={"column": "vec", "q": Q[1], "k": 6,
                                                              "distance_range": bounds})
    assert_same(got, want)


def test_use_index_false_and_index_parameters_without_an_index(vector_table):
    nearest = {"column": "vec", "q": Q[2], "k": 5, "use_index": False, "nprobes": 3, "refine_factor": 2, "ef": 40}
    got, want = both(vector_table, columns=["id"], nearest=nearest)
    assert_same(got, want)


def test_fast_search_without_an_index_finds_nothing(vector_table):
    got, want = both(vector_table, columns=["id"], nearest={"column": "vec", "q": Q[2], "k": 5}, fast_search=True)
    assert_same(got, want)
    assert got.num_rows == 0


def test_k_beyond_the_table_returns_every_live_row(vector_table):
    got, want = both(vector_table, columns=["id"], nearest={"column": "vec", "q": Q[2], "k": 5000})
    assert_same(got, want)
    assert got.num_rows == lance.dataset(vector_table).count_rows()


def test_stable_row_ids_deletions_and_moved_rows(stable_table):
    for prefilter in (False, True):
        got, want = both(stable_table, columns=["id", "cat"], nearest={"column": "vec", "q": Q[0], "k": 15},
                         filter="cat >= 10", prefilter=prefilter, with_row_id=True)
        assert_same(got, want)
    got, want = both(stable_table, nearest={"column": "vec", "q": Q, "k": 6}, with_row_id=True, with_row_address=True)
    assert_same(got, want)


def test_time_travel_searches_the_pinned_version(vector_table):
    got = lance_duck.dataset(vector_table, version=1).to_table(columns=["id"], nearest={"column": "vec", "q": Q[0]})
    want = lance.dataset(vector_table, version=1).to_table(columns=["id"], nearest={"column": "vec", "q": Q[0]})
    assert_same(got, want)


def test_scanner_reader_batches_and_count_agree(vector_table):
    ds = lance_duck.dataset(vector_table)
    sc = ds.scanner(columns=["id"], nearest={"column": "vec", "q": Q[1], "k": 8}, offset=2)
    table = sc.to_table()
    assert sc.projected_schema == table.schema
    assert sc.to_reader().read_all().equals(table)
    assert sum(b.num_rows for b in ds.to_batches(columns=["id"], nearest={"column": "vec", "q": Q[1], "k": 8},
                                                 offset=2)) == 6
    assert sc.count_rows() == 6
    want = lance.dataset(vector_table).to_table(columns=["id"], nearest={"column": "vec", "q": Q[1], "k": 8}, offset=2)
    assert_same(table, want)


def test_flat_search_streams_within_a_small_read_ahead_budget(vector_table):
    ds = lance_duck.dataset(vector_table)
    sc = ds.scanner(columns=["id"], nearest={"column": "vec", "q": Q[1], "k": 5}, readahead_bytes=64 * 1024)
    want = lance.dataset(vector_table).to_table(columns=["id"], nearest={"column": "vec", "q": Q[1], "k": 5})
    assert_same(sc.to_table(), want)


def test_flat_search_decodes_at_most_two_tasks_ahead(vector_table):
    """A vector task is decoded twice over (the page's values, then without deleted rows): more
    than two in flight would only hold more memory."""
    from lance_duck.scan.nearest import FLAT_READAHEAD

    ds = lance_duck.dataset(vector_table)
    sc = ds.scanner(columns=["id"], nearest={"column": "vec", "q": Q[1], "k": 5, "use_index": False})
    want = lance.dataset(vector_table).to_table(columns=["id"], nearest={"column": "vec", "q": Q[1], "k": 5,
                                                                         "use_index": False})
    assert_same(sc.to_table(), want)
    assert FLAT_READAHEAD == 2 and 1 <= sc.stats.max_inflight <= FLAT_READAHEAD
    assert sc.stats.results >= len(ds.get_fragments())


def test_a_filtered_dataset_searches_only_its_rows(vector_table):
    ds = lance_duck.dataset(vector_table).filter("cat = 2")
    got = ds.to_table(columns=["id", "name"], nearest={"column": "vec", "q": Q[1], "k": 8})
    want = lance.dataset(vector_table).to_table(columns=["id", "name"], nearest={"column": "vec", "q": Q[1], "k": 8},
                                                filter="cat = 2", prefilter=True)
    assert_same(got, want)
    # the user's filter then post-filters those k rows
    got = ds.to_table(columns=["id", "name"], nearest={"column": "vec", "q": Q[1], "k": 8}, filter="id % 2 = 0")
    mask = [i % 2 == 0 for i in want["id"].to_pylist()]
    assert_same(got, want.filter(mask))
