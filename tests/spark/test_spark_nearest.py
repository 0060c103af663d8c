"""The Spark source's ``nearest`` option: the global top-k of the pinned version, equal to pylance's."""
from __future__ import annotations

import json

import lance
import numpy as np
import pyarrow as pa
import pytest


@pytest.fixture(scope="module")
def vec_table(tmp_path_factory) -> str:
    rng = np.random.default_rng(3)
    n, d = 3000, 8
    v = rng.standard_normal((n, d)).astype(np.float32)
    t = pa.table({"id": np.arange(n), "cat": (np.arange(n) % 4).astype(np.int32),
                  "vec": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), d)})
    path = str(tmp_path_factory.mktemp("spark_vec") / "v.lance")
    lance.write_dataset(t, path, max_rows_per_file=1000)
    lance.dataset(path).create_index("vec", "IVF_FLAT", num_partitions=4)
    lance.write_dataset(t.slice(0, 500), path, mode="append")   # unindexed, searched flat
    lance.dataset(path).delete("id % 9 = 0")
    return path


Q = [0.3, -1.0, 0.5, 0.2, 1.1, -0.4, 0.0, 0.9]


def read(spark, path, **options):
    r = spark.read.format("lance_duck")
    for k, v in options.items():
        r = r.option(k, v)
    return r.load(path)


@pytest.mark.parametrize("extra", [{}, {"nprobes": 2, "refine_factor": 2}, {"use_index": False, "metric": "cosine"}])
def test_nearest_option_is_pylance_top_k(spark, vec_table, extra):
    spec = {"column": "vec", "q": Q, "k": 7, **extra}
    df = read(spark, vec_table, nearest=json.dumps(spec), columns="id,cat")
    assert df.columns == ["id", "cat", "_distance"]
    assert df.rdd.getNumPartitions() == 1
    rows = df.collect()
    want = lance.dataset(vec_table).to_table(columns=["id", "cat"], nearest={**spec, "q": np.array(Q)})
    assert [r["id"] for r in rows] == want["id"].to_pylist()
    np.testing.assert_allclose([r["_distance"] for r in rows], want["_distance"].to_numpy(), rtol=1e-6)


def test_prefilter_version_and_spark_where(spark, vec_table):
    spec = json.dumps({"column": "vec", "q": Q, "k": 5})
    df = read(spark, vec_table, nearest=spec, columns="id", filter="cat = 1", prefilter="true", version="2")
    want = lance.dataset(vec_table, version=2).to_table(columns=["id"], nearest={"column": "vec", "q": np.array(Q),
                                                                                 "k": 5},
                                                       filter="cat = 1", prefilter=True)
    assert [r["id"] for r in df.collect()] == want["id"].to_pylist()
    # Spark's own WHERE is applied to the k rows found (pylance's post-filter)
    df = read(spark, vec_table, nearest=spec, columns="id,cat", pushFilters="true")
    got = [r["id"] for r in df.where("cat = 1").collect()]
    want = lance.dataset(vec_table).to_table(columns=["id"], nearest={"column": "vec", "q": np.array(Q), "k": 5},
                                             filter="cat = 1")
    assert got == want["id"].to_pylist()


def test_batch_query_has_query_index(spark, vec_table):
    spec = json.dumps({"column": "vec", "q": [Q, Q[::-1]], "k": 3})
    rows = read(spark, vec_table, nearest=spec, columns="id").collect()
    want = lance.dataset(vec_table).to_table(columns=["id"], nearest={"column": "vec", "q": np.array([Q, Q[::-1]]),
                                                                      "k": 3})
    assert [(r["query_index"], r["id"]) for r in rows] == list(zip(want["query_index"].to_pylist(),
                                                                     want["id"].to_pylist()))


@pytest.mark.parametrize("value,named", [("{not json", "nearest"), ('{"column": "vec", "q": [1, 2]}', "'q'"),
                                         ('{"column": "vec", "q": [1,2,3,4,5,6,7,8], "bogus": 1}', "bogus")])
def test_bad_nearest_fails_at_planning(spark, vec_table, value, named):
    with pytest.raises(Exception, match=named):
        read(spark, vec_table, nearest=value).schema
