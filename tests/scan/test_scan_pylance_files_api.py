"""pylance 14.0.2's file inventories, IVF models, index statistics, prewarming and MemWAL details,
against pylance on pylance-written tables."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lance
import lance_duck
from lance_duck.errors import UnsupportedFeatureError


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """Several versions: data, a deletion, BTREE / BITMAP / LABEL_LIST / ZONEMAP / BLOOMFILTER /
    NGRAM / INVERTED scalar indices, an IVF_PQ vector index, then an append (unindexed rows)."""
    root = tmp_path_factory.mktemp("files")
    n = 600
    rng = np.random.default_rng(7)
    t = pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"word{i % 7} xyz{i % 3}" for i in range(n)],
                  "cat": [f"c{i % 5}" for i in range(n)], "tags": [[f"t{i % 4}", f"u{i % 2}"] for i in range(n)],
                  "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8, dtype=np.float32)), 8),
                  "f": [None if i % 9 == 0 else i * 0.25 for i in range(n)], "z": pa.array(range(n), pa.int32()),
                  "b": pa.array(range(n), pa.int32()), "txt": [f"hello world{i % 11} again" for i in range(n)],
                  "d": pa.array([None] * n, pa.int32())})
    path = str(root / "t.lance")
    ds = lance.write_dataset(t, path, max_rows_per_file=200)
    ds.delete("id < 5")
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    ds.create_scalar_index("tags", "LABEL_LIST")
    ds.create_scalar_index("f", "BTREE")
    ds.create_scalar_index("d", "BTREE")
    ds.create_scalar_index("z", "ZONEMAP")
    ds.create_scalar_index("b", "BLOOMFILTER")
    ds.create_scalar_index("s", "NGRAM")
    ds.create_scalar_index("txt", "INVERTED")
    ds.create_index("v", "IVF_PQ", num_partitions=2, num_sub_vectors=2)
    ds.create_index("v", "IVF_FLAT", num_partitions=2, name="v_flat")
    lance.write_dataset(t.slice(0, 50), path, mode="append")
    return path


@pytest.fixture(scope="module")
def pair(indexed):
    return lance_duck.dataset(indexed), lance.dataset(indexed)


def _rows(table: pa.Table) -> list[tuple]:
    return sorted(tuple(str(v) for v in r.values()) for r in table.to_pylist())


def test_all_files_equal_pylance_as_sorted_sets(pair):
    mine, theirs = (d.all_files() for d in pair)
    assert mine.schema == theirs.schema
    a, b = mine.read_all(), theirs.read_all()
    assert a.num_rows == b.num_rows > 10
    assert _rows(a) == _rows(b)


def test_tracked_files_equal_pylance_as_sets(pair):
    for kwargs in ({}, {"min_version": 3}, {"min_version": 99}):
        mine, theirs = (d.tracked_files(**kwargs) for d in pair)
        assert mine.schema == theirs.schema
        a, b = mine.read_all(), theirs.read_all()
        assert _rows(a) == _rows(b), kwargs
    kinds = set(pair[0].tracked_files().read_all().column("type").to_pylist())
    assert kinds == {"manifest", "transaction file", "data file", "deletion file", "index file"}


def test_tracked_files_reports_progress_per_manifest(pair):
    seen = []
    pair[0].tracked_files(progress=lambda done, total: seen.append((done, total))).read_all()
    total = len(pair[1].versions())
    assert seen == [(i, total) for i in range(1, total + 1)]


def test_mem_wal_index_details_none_without_one_and_refused_with_one(pair, tmp_path):
    assert pair[0].mem_wal_index_details() is None and pair[1].mem_wal_index_details() is None
    path = str(tmp_path / "w.lance")
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), path).initialize_mem_wal()
    assert lance.dataset(path).mem_wal_index_details() is not None
    with pytest.raises(UnsupportedFeatureError, match="MemWAL"):
        lance_duck.dataset(path).mem_wal_index_details()


def test_from_pydantic_model_is_refused_as_a_writer(pair):
    with pytest.raises(UnsupportedFeatureError, match=r"from_pydantic_model\(\).*reader"):
        pair[0].from_pydantic_model(object())


@pytest.mark.parametrize("name", ["v_idx", "v_flat"])
def test_get_ivf_model_equals_pylance(pair, name):
    mine, theirs = (d.get_ivf_model(name) for d in pair)
    assert type(mine.centroids) is type(theirs.centroids)
    assert mine.centroids.type == theirs.centroids.type
    assert mine.centroids.equals(theirs.centroids)
    # pylance's get_ivf_model object has only ``centroids``; its Python ``IvfModel`` adds these two
    assert mine.distance_type == pair[1].stats.index_stats(name)["indices"][0]["metric_type"]
    assert mine.num_partitions == len(theirs.centroids) == 2


def test_centroids_by_name_and_by_column_equal_pylance(pair):
    mine, theirs = pair
    assert mine.centroids(index_name="v_flat").equals(theirs.centroids(index_name="v_flat"))
    assert mine.centroids(column="v").equals(theirs.centroids(column="v"))


def test_centroids_and_ivf_model_errors_are_value_errors_like_pylance(pair):
    mine, theirs = pair
    for call in (lambda d: d.centroids(), lambda d: d.get_ivf_model("nope"), lambda d: d.get_ivf_model("id_idx")):
        with pytest.raises(ValueError):
            call(theirs)
        with pytest.raises(ValueError):
            call(mine)
    with pytest.raises(KeyError):
        theirs.centroids(column="id")
    with pytest.raises(ValueError, match="No IVF index for column 'id'"):
        mine.centroids(column="id")


@pytest.fixture
def index_reads(monkeypatch):
    """Counts the index files opened and read (lance_duck's IndexFile) during a test."""
    from lance_duck.index import files
    counts = {"open": 0, "read": 0}
    real_open, real_read = files.IndexFile._open, files.IndexFile.read

    def counting_open(self, *a, **k):
        counts["open"] += 1
        return real_open(self, *a, **k)

    def counting_read(self, *a, **k):
        counts["read"] += 1
        return real_read(self, *a, **k)

    monkeypatch.setattr(files.IndexFile, "_open", counting_open)
    monkeypatch.setattr(files.IndexFile, "read", counting_read)
    return counts


SEARCHES = (
    lambda ds: ds.to_table(filter="id = 321", columns=["id"]),
    lambda ds: ds.to_table(filter="cat = 'c3'", columns=["id"]),
    lambda ds: ds.to_table(nearest={"column": "v", "q": np.full(8, 0.5, dtype=np.float32), "k": 5}, columns=["id"]),
    lambda ds: ds.to_table(full_text_query={"query": "world3", "columns": ["txt"]}, columns=["id"]),
)


def test_prewarm_index_makes_later_searches_read_no_index_bytes(pair, index_reads):
    mine, theirs = pair
    cold = []
    for search in SEARCHES:                 # each search reads its index when the cache is cold
        lance_duck.clear_caches()
        index_reads.update(open=0, read=0)
        cold.append(search(lance_duck.dataset(mine.uri)))
        assert index_reads["read"] > 0
    lance_duck.clear_caches()
    ds = lance_duck.dataset(mine.uri)
    for name in ("id_idx", "f_idx", "cat_idx", "tags_idx", "z_idx", "b_idx", "s_idx", "txt_idx", "v_idx", "v_flat"):
        assert ds.prewarm_index(name) is theirs.prewarm_index(name) is None
    index_reads.update(open=0, read=0)
    warm = [search(lance_duck.dataset(mine.uri)) for search in SEARCHES]
    assert index_reads == {"open": 0, "read": 0}
    for a, b, search in zip(cold, warm, SEARCHES):
        assert a.equals(b)
        ours, ref = a.sort_by("id"), search(theirs).sort_by("id")
        # pylance's own float32 distances vary in the last place from run to run
        for name in ours.column_names:
            if name == "_distance":
                np.testing.assert_allclose(ours[name].to_numpy(), ref[name].to_numpy(), rtol=1e-6)
            else:
                assert ours[name].equals(ref[name]), name


def test_prewarm_index_of_some_segments_and_unknown_names(pair):
    mine, theirs = pair
    uuid = mine.describe_indices()[0].segments[0].uuid
    name = mine.describe_indices()[0].name
    assert mine.prewarm_index(name, index_segments=[uuid]) is None
    with pytest.raises(RuntimeError, match="index not found"):
        theirs.prewarm_index("nope")
    with pytest.raises(ValueError, match="index not found: name=nope"):
        mine.prewarm_index("nope")
    assert mine.prewarm_index("txt_idx", with_position=True) is None
    with pytest.raises(ValueError, match="not segments"):
        mine.prewarm_index(name, index_segments=["00000000-0000-0000-0000-000000000000"])


SCALAR_INDICES = ["id_idx", "f_idx", "d_idx", "cat_idx", "tags_idx", "z_idx", "b_idx", "s_idx", "txt_idx"]


@pytest.mark.parametrize("name", SCALAR_INDICES)
def test_scalar_and_inverted_index_statistics_equal_pylance(pair, name):
    mine, theirs = pair
    got = mine.index_statistics(name)
    assert got == theirs.index_statistics(name) == mine.stats.index_stats(name)
    assert got["num_unindexed_rows"] == 50


def test_btree_statistics_print_values_as_pylance(pair):
    stats = {n: pair[0].index_statistics(n)["indices"][0] for n in ("id_idx", "f_idx", "d_idx")}
    assert pair[0].index_statistics("s_idx")["indices"][0]["num_ngrams"] > 0
    assert stats["id_idx"]["min"] == "5" and stats["f_idx"]["min"] == "NULL" and stats["d_idx"]["min"] == "N/A"
