"""pyarrow subclass mechanics, pickling, laziness, bounded read-ahead, parallel == sequential."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pytest

import lance
from .conftest import STORAGE_VERSIONS, assert_tables_equal
from lance_duck.errors import InvalidArgumentError, LanceDuckError
from lance_duck.scan import LanceDataset, LanceFragment, LanceScanner, dataset
from lance_duck.trace import decode_trace

# static constructors that build plain pyarrow objects and never touch our native state
_SAFE = {"_scan_options", "from_batches", "from_paths"}


@pytest.mark.parametrize("ours,base", [(LanceDataset, pads.FileSystemDataset), (LanceScanner, pads.Scanner),
                                       (LanceFragment, pads.Fragment)])
def test_every_inherited_pyarrow_method_is_overridden(ours, base):
    """Every pyarrow method is ours: the dataset's native state is a placeholder that refuses scans,
    the scanner's is never initialised, and the fragment only mirrors pyarrow's Fragment API."""
    missing = []
    for name in dir(base):
        if name.startswith("__") and name != "__reduce__" or name in _SAFE:
            continue
        owner = next((c for c in ours.__mro__ if name in c.__dict__), None)
        if owner is None or owner.__module__.startswith("pyarrow"):
            missing.append(name)
    assert missing == []


def test_fragment_is_not_a_pyarrow_fragment_so_pyarrow_cannot_dereference_it():
    assert not issubclass(LanceFragment, pads.Fragment)
    assert issubclass(LanceDataset, pads.Dataset)


def test_pyarrow_dataset_methods_work(table_path):
    ds = dataset(table_path)
    ref_ds = lance.dataset(table_path)
    ref = ref_ds.to_table()
    assert isinstance(ds, pads.Dataset)
    assert ds.partition_expression.equals(pc.scalar(True))
    flt = ds.filter(pc.field("id") < 50)
    assert isinstance(flt, LanceDataset)
    assert_tables_equal(flt.to_table(columns=["id"], filter=pc.field("id") > 40),
                        ref_ds.to_table(columns=["id"], filter="id < 50 AND id > 40"))
    assert flt.count_rows() == ref_ds.count_rows(filter="id < 50")
    assert ds.sort_by([("id", "descending")]).to_table(columns=["id"]).column(0).to_pylist() == \
        sorted(ref.column("id").to_pylist(), reverse=True)
    with pytest.raises(LanceDuckError):
        ds.replace_schema(ds.schema)
    assert [f.fragment_id for f in ds._get_fragments()] == [f.fragment_id for f in ds.get_fragments()]
    assert LanceScanner.from_dataset(ds, columns=["id"]).to_table().num_rows == ref.num_rows


def test_bad_arguments_raise_clear_errors(table_path):
    ds = dataset(table_path)
    with pytest.raises(InvalidArgumentError, match="nope"):
        ds.to_table(columns=["nope"])
    with pytest.raises(InvalidArgumentError, match="zz"):
        ds.to_table(columns=["s.zz"])
    with pytest.raises(InvalidArgumentError):
        ds.to_table(filter=pc.field("missing") > 1)
    with pytest.raises(InvalidArgumentError):
        ds.to_table(limit=-1)
    with pytest.raises(LanceDuckError, match="nearest"):
        ds.scanner(nearest={"column": "x"})


def test_pickle_is_small_and_pins_the_version_across_processes(tmp_path):
    p = str(tmp_path / "p.lance")
    t = pa.table({"id": np.arange(100)})
    lance.write_dataset(t, p, data_storage_version=STORAGE_VERSIONS[0])
    ds = dataset(p)
    blob = pickle.dumps(ds.filter(pc.field("id") >= 10))
    assert len(blob) < 2000
    lance.write_dataset(t, p, mode="append")          # a newer version must not leak in
    code = ("import pickle,sys; ds = pickle.loads(sys.stdin.buffer.read()); "
            "print(ds.version, ds.count_rows(), ds.to_table().num_rows)")
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    out = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, env=env, check=True)
    assert out.stdout.split() == [b"1", b"90", b"90"]
    frag = pickle.loads(pickle.dumps(ds.get_fragments()[0]))
    assert frag.count_rows() == 100


@pytest.fixture(scope="module")
def many_fragments(tmp_path_factory) -> str:
    p = str(tmp_path_factory.mktemp("scan_lazy") / "m.lance")
    t = pa.table({"id": np.arange(8 * 300), "v": np.random.default_rng(0).random(8 * 300)})
    lance.write_dataset(t, p, max_rows_per_file=300, data_storage_version=STORAGE_VERSIONS[0])
    return p


@pytest.fixture
def opened():
    """The data files the test opens (``file:open`` events of the decode trace)."""
    with decode_trace() as trace:
        yield trace


def test_join_and_sort_materialise_through_pyarrow(many_fragments):
    ds = dataset(many_fragments)
    small = pads.dataset(pa.table({"id": pa.array([0, 1, 2, 3, 4, 7, 5000], pa.int64()), "k": list("abcdefg")}))
    joined = ds.join(small, "id", join_type="inner").to_table()
    assert sorted(joined.column("id").to_pylist()) == [0, 1, 2, 3, 4, 7]


def test_first_batch_opens_only_the_first_fragment(many_fragments, opened):
    ds = dataset(many_fragments)
    first_files = {f.path for f in ds._snapshot.fragments[0].files}
    it = ds.to_batches()
    b = next(it)
    it.close()
    assert b.num_rows == 300 and set(opened.values("file:open")) == first_files


def test_duckdb_limit_stops_reading_early(many_fragments, opened):
    ds = dataset(many_fragments)
    c = duckdb.connect()
    c.execute("set threads=1")
    assert len(c.sql("select * from ds limit 3").fetchall()) == 3
    assert 0 < len(set(opened.values("file:open"))) <= 3                  # of 8 fragments


def test_limit_without_filter_plans_only_needed_fragments(many_fragments, opened):
    ds = dataset(many_fragments)
    got = ds.to_table(limit=10, offset=620)
    assert got.column("id").to_pylist() == list(range(620, 630))
    assert len(set(opened.values("file:open"))) == 1                      # fragment 2 only


def test_readahead_holds_at_most_its_budget(tmp_path):
    p = str(tmp_path / "big.lance")
    n = 400_000
    t = pa.table({"a": np.arange(n), "b": np.random.default_rng(1).random(n)})
    lance.write_dataset(t, p, max_rows_per_file=100_000, data_storage_version=STORAGE_VERSIONS[0])
    budget = 300_000                                  # the table decodes to > 10x this
    sc = dataset(p).scanner(batch_size=8192, readahead_bytes=budget)
    total = rows = 0
    for b in sc.to_batches():
        total += b.nbytes
        rows += b.num_rows
    assert rows == n and total > 10 * budget
    assert sc.stats.peak_bytes <= budget
    assert sc.stats.max_inflight >= 1


def test_default_scan_streams_within_its_budget(tmp_path):
    """Default task sizes (no batch_size): a table > 10x the budget streams within it, in order
    (a string column: several tasks in flight; fixed-width-only scans: tests/scan/test_readahead_choice.py)."""
    p = str(tmp_path / "big_default.lance")
    n = 4_000_000
    t = pa.table({"a": np.arange(n), "b": np.random.default_rng(2).random(n),
                  "s": pa.array(np.arange(n) % 97).cast(pa.string())})
    lance.write_dataset(t, p, max_rows_per_file=1_500_000, data_storage_version=STORAGE_VERSIONS[0])
    budget = 6 * 1024 * 1024                          # 64 MB decoded in total
    sc = dataset(p).scanner(readahead_bytes=budget)
    total = 0
    expect = 0
    for b in sc.to_batches():
        total += b.nbytes
        a = b.column("a").to_numpy()
        assert a[0] == expect and (np.diff(a) == 1).all()
        expect = int(a[-1]) + 1
    assert expect == n and total > 10 * budget
    assert sc.stats.peak_bytes <= budget
    assert sc.stats.max_inflight >= 2                 # it did read ahead


def test_parallel_readahead_equals_sequential(table_path):
    ds = dataset(table_path)
    f = "id % 3 = 1"  # a filter every third row passes, so batches interleave kept and dropped rows
    want = lance.dataset(table_path).to_table(filter=f)
    assert 0 < want.num_rows < ds.count_rows()
    seq = ds.scanner(filter=f, batch_size=100, batch_readahead=0).to_table()
    par = ds.scanner(filter=f, batch_size=100, batch_readahead=4).to_table()
    assert_tables_equal(seq, want)
    assert_tables_equal(par, want)
