"""s3:// with plain pylance-style options reads through pyarrow's S3 client (io/arrow_s3.py): which
options take that path, pylance's results through it, the requests it sends, its errors."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import ObjectStoreError

from ..scan.conftest import assert_tables_equal
from .conftest import BUCKET, REGION, lance

ROOT = os.path.dirname(os.path.dirname(lance_duck.__file__))


def _client(ds) -> str:
    return type(ds._snapshot.io.fs).__name__


@pytest.fixture(scope="module")
def arrow_table(pylance_options) -> str:
    """Four data files, deletions, a string column."""
    uri = f"s3://{BUCKET}/arrow-path.lance"
    n = 20_000
    rng = np.random.default_rng(21)
    lance.write_dataset(pa.table({"id": np.arange(n), "v": rng.random(n),
                                  "cat": pa.array(np.char.add("c", rng.integers(0, 9, n).astype(str)))}),
                        uri, storage_options=pylance_options, max_rows_per_file=5_000)
    lance.dataset(uri, storage_options=pylance_options).delete("id % 50 = 7")
    return uri


def test_plain_pylance_options_take_pyarrows_client(s3_table, pylance_options):
    assert _client(lance_duck.dataset(s3_table, storage_options=pylance_options)) == "ArrowS3"
    s3a = "s3a://" + s3_table.split("://", 1)[1]
    assert _client(lance_duck.dataset(s3a, storage_options=pylance_options)) == "ArrowS3"
    tuned = dict(pylance_options, client_max_retries="2", coalesce_gap_bytes="1000")   # lance_duck's own keys
    assert _client(lance_duck.dataset(s3_table, storage_options=tuned)) == "ArrowS3"


@pytest.mark.parametrize("change", [
    "fsspec arguments", "no region", "an fsspec key besides", "an endpoint with a path", "no secret",
])
def test_other_options_keep_s3fs(s3_table, pylance_options, fsspec_style_options, change):
    from lance_duck.io.fs import open_io
    endpoint = pylance_options["aws_endpoint"]
    opts = {
        "fsspec arguments": fsspec_style_options,
        "no region": {k: v for k, v in pylance_options.items() if k != "aws_region"},
        "an fsspec key besides": dict(pylance_options, use_listings_cache=False),
        "an endpoint with a path": dict(pylance_options, aws_endpoint=endpoint + "/store"),
        "no secret": {k: v for k, v in pylance_options.items() if k != "aws_secret_access_key"},
    }[change]
    io, _ = open_io(s3_table, opts)
    assert type(io.fs).__name__ == "S3FileSystem"
    assert type(open_io(s3_table, dict(pylance_options, aws_endpoint=endpoint + "/"))[0].fs).__name__ == "ArrowS3"
    if change in ("fsspec arguments", "no region", "an fsspec key besides"):
        ours = lance_duck.dataset(s3_table, storage_options=opts)
        theirs = lance.dataset(s3_table, storage_options=pylance_options)
        assert_tables_equal(ours.to_table(), theirs.to_table())
        assert [(v["version"], v["metadata"]) for v in ours.versions()] == \
            [(v["version"], v["metadata"]) for v in theirs.versions()]


def test_a_fresh_process_opens_and_scans_without_importing_s3fs(arrow_table, pylance_options):
    prog = (f"import json, sys, lance_duck\nds = lance_duck.dataset({arrow_table!r}, storage_options={pylance_options!r})\n"
            "t = ds.to_table(columns=['id', 'cat'], filter=\"cat = 'c3'\")\n"
            "print(json.dumps([ds.version, t.column('id').to_pylist(), "
            "sorted(m for m in ('s3fs', 'aiobotocore', 'botocore', 'aiohttp', 'fsspec') if m in sys.modules)]))")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=env, check=True, timeout=120)
    version, ids, loaded = json.loads(out.stdout.strip().splitlines()[-1])
    want = lance.dataset(arrow_table, storage_options=pylance_options).to_table(columns=["id"], filter="cat = 'c3'")
    assert version == 2
    assert ids == want.column("id").to_pylist()
    assert loaded == []


def test_a_pyarrow_built_without_s3_reads_through_s3fs(arrow_table, pylance_options):
    prog = ("import json, pyarrow.fs\n"
            "pyarrow.fs.__dict__.pop('S3FileSystem')     # as in a pyarrow built without S3\n"
            f"import lance_duck\nds = lance_duck.dataset({arrow_table!r}, storage_options={pylance_options!r})\n"
            "print(json.dumps([type(ds._snapshot.io.fs).__name__, ds.count_rows(\"cat = 'c3'\")]))")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=env, check=True, timeout=120)
    client, n = json.loads(out.stdout.strip().splitlines()[-1])
    assert client == "S3FileSystem"
    assert n == lance.dataset(arrow_table, storage_options=pylance_options).count_rows("cat = 'c3'")


def test_scans_filters_takes_and_versions_equal_pylances(arrow_table, s3_table, pylance_options):
    ours = lance_duck.dataset(arrow_table, storage_options=pylance_options)
    theirs = lance.dataset(arrow_table, storage_options=pylance_options)
    assert _client(ours) == "ArrowS3"
    assert_tables_equal(ours.to_table(), theirs.to_table())
    assert_tables_equal(ours.to_table(columns=["v", "cat"], filter="id >= 4990 AND id < 10020 AND cat != 'c1'"),
                        theirs.to_table(columns=["v", "cat"], filter="id >= 4990 AND id < 10020 AND cat != 'c1'"))
    rows = [0, 4_999, 5_000, 12_345, 19_000]
    assert_tables_equal(ours.take(rows, columns=["id", "cat"]), theirs.take(rows, columns=["id", "cat"]))
    assert ours.count_rows("v > 0.5") == theirs.count_rows("v > 0.5")
    history = lance_duck.dataset(s3_table, storage_options=pylance_options)
    want = lance.dataset(s3_table, storage_options=pylance_options)
    assert [v["version"] for v in history.versions()] == [v["version"] for v in want.versions()]
    for v in (1, 2, 3, "v2"):
        assert_tables_equal(history.checkout_version(v).to_table(), want.checkout_version(v).to_table())


def test_anonymous_requests_are_sent_unsigned_as_through_s3fs(arrow_table, pylance_options):
    """moto refuses unsigned requests to its (private) buckets: both clients see access denied."""
    anon = {"aws_skip_signature": "true", "aws_region": REGION, "aws_endpoint": pylance_options["aws_endpoint"],
            "allow_http": "true"}
    from lance_duck.io.fs import open_io
    assert type(open_io(arrow_table, anon)[0].fs).__name__ == "ArrowS3"
    s3fs_anon = {"anon": True, "endpoint_url": pylance_options["aws_endpoint"], "client_kwargs": {"region_name": REGION}}
    for opts in (anon, s3fs_anon):
        with pytest.raises(PermissionError, match=r"arrow-path\.lance/_versions"):
            lance_duck.dataset(arrow_table, storage_options=opts)


def test_opening_latest_lists_and_reads_the_manifest_once_opened(arrow_table, proxied_options, counting_proxy):
    ds = lance_duck.dataset(arrow_table, storage_options=proxied_options)
    stats = counting_proxy.reset()
    assert ds.version == 2
    # pyarrow opens an object with a HEAD (its size) before reading it
    assert dict(stats.requests) == {"LIST": 1, "HEAD": 1, "GET": 1}, stats.paths
    assert all(p.endswith(".manifest") for k, p, _ in stats.paths if k != "LIST")
    counting_proxy.reset()
    lance_duck.dataset(arrow_table, storage_options=proxied_options)
    assert dict(counting_proxy.reset().requests) == {"LIST": 1}       # the manifest from the process cache


def test_a_scan_opens_each_file_once_and_a_second_scan_sends_no_head(arrow_table, proxied_options,
                                                                     counting_proxy):
    counting_proxy.reset()
    want = lance.dataset(arrow_table, storage_options=proxied_options).to_table(columns=["v", "cat"])
    theirs = counting_proxy.reset()
    ds = lance_duck.dataset(arrow_table, storage_options=proxied_options)
    counting_proxy.reset()
    got = ds.to_table(columns=["v", "cat"])
    ours = counting_proxy.reset()
    assert_tables_equal(got, want)
    heads = [p for k, p, _ in ours.paths if k == "HEAD" and "/data/" in p]
    files = {p for k, p, _ in ours.paths if k == "GET" and "/data/" in p}
    assert len(files) == 4 and sorted(heads) == sorted(files), ours.paths     # one HEAD per data file
    assert ours.requests["GET"] <= theirs.total(), (ours.summary(), theirs.summary())
    lance_duck.clear_caches()       # the opened files go too: each is opened again, once
    counting_proxy.reset()
    assert_tables_equal(lance_duck.dataset(arrow_table, storage_options=proxied_options).to_table(columns=["v", "cat"]),
                        want)
    again = counting_proxy.reset()
    assert sorted(p for k, p, _ in again.paths if k == "HEAD" and "/data/" in p) == sorted(heads), again.paths
    ds2 = lance_duck.dataset(arrow_table, storage_options=proxied_options)
    counting_proxy.reset()
    ds2.to_table(columns=["v", "cat"])
    third = counting_proxy.reset()
    assert "HEAD" not in third.requests, third.paths      # opened files kept per store


def test_access_denied_when_opening_a_data_file_is_permission_error_naming_it(arrow_table, proxied_options,
                                                                             counting_proxy):
    lance_duck.clear_caches()
    ds = lance_duck.dataset(arrow_table, storage_options=proxied_options)
    counting_proxy.clear_faults()
    counting_proxy.reset()
    counting_proxy.fail("403", times=100, path="/data/", method="HEAD")
    counting_proxy.latency = 0.05       # tasks reading one file overlap while its HEAD is under way
    try:
        with pytest.raises(PermissionError, match=r"data/\w+\.lance"):
            ds.to_table()
        stats = counting_proxy.reset()
        assert not [p for k, p, _ in stats.paths if k == "GET" and "/data/" in p], stats.paths     # never retried
        heads = [p for k, p, _ in stats.paths if k == "HEAD" and "/data/" in p]
        assert heads and len(heads) == len(set(heads)), stats.paths     # each file asked once (files opened in parallel)
    finally:
        counting_proxy.latency = 0.0
        counting_proxy.clear_faults()


def test_tasks_opening_one_object_together_share_one_head_and_its_error(arrow_table, proxied_options,
                                                                        counting_proxy):
    from concurrent.futures import ThreadPoolExecutor
    from lance_duck.io.arrow_s3 import arrow_s3_store
    lance_duck.clear_caches()
    ds = lance_duck.dataset(arrow_table, storage_options=proxied_options)
    path = f"{arrow_table}/data/{ds._snapshot.fragments[0].files[0].path.rsplit('/', 1)[1]}"
    store = arrow_s3_store(path, proxied_options)
    assert store is not None
    counting_proxy.reset()
    counting_proxy.fail("403", times=100, path="/data/", method="HEAD")
    counting_proxy.latency = 0.05
    try:
        with ThreadPoolExecutor(8) as pool:
            outcomes = list(pool.map(lambda _: _outcome(lambda: store.size(path)), range(8)))
        assert all(isinstance(o, PermissionError) for o in outcomes), outcomes
        heads = [p for k, p, _ in counting_proxy.reset().paths if k == "HEAD"]
        assert len(heads) == 1, heads
        counting_proxy.clear_faults()
        with ThreadPoolExecutor(8) as pool:     # a failed opening is not remembered: asked again, it opens
            sizes = set(pool.map(lambda _: store.size(path), range(8)))
        assert len(sizes) == 1 and sizes.pop() > 0
        assert len([p for k, p, _ in counting_proxy.reset().paths if k == "HEAD"]) == 1
    finally:
        counting_proxy.latency = 0.0
        counting_proxy.clear_faults()


def _outcome(fn):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - the test compares outcomes
        return exc


def test_a_missing_data_file_is_file_not_found_naming_it(arrow_table, proxied_options, counting_proxy):
    lance_duck.clear_caches()
    ds = lance_duck.dataset(arrow_table, storage_options=proxied_options)
    counting_proxy.clear_faults()
    counting_proxy.fail("404", times=100, path="/data/", method="HEAD")
    try:
        with pytest.raises(FileNotFoundError, match=r"data/\w+\.lance"):
            ds.to_table(columns=["id"])
    finally:
        counting_proxy.clear_faults()


def test_a_head_that_keeps_failing_fails_after_bounded_retries_naming_the_object(arrow_table, proxied_options,
                                                                                 counting_proxy):
    lance_duck.clear_caches()
    ds = lance_duck.dataset(arrow_table, storage_options=dict(proxied_options, client_max_retries="2",
                                                              client_retry_timeout="5"))
    name = ds._snapshot.fragments[2].files[0].path.rsplit("/", 1)[1]
    counting_proxy.clear_faults()
    counting_proxy.reset()
    counting_proxy.fail("503", times=1000, path=name, method="HEAD")
    try:
        with pytest.raises(ObjectStoreError, match=name) as info:
            ds.to_table()
        assert "after 3 tries" in str(info.value)
        stats = counting_proxy.reset()
        assert sum(1 for k, p, _ in stats.paths if k == "HEAD" and name in p) == 3, stats.paths
    finally:
        counting_proxy.clear_faults()


def test_a_table_written_again_at_the_same_place_is_read_afresh(pylance_options):
    """Manifests of a table removed and written again have the same names: a file opened before
    (and kept) that is now larger is opened again, not read short."""
    import boto3
    uri = f"s3://{BUCKET}/arrow-rewritten.lance"
    lance.write_dataset(pa.table({"id": np.arange(10)}), uri, storage_options=pylance_options)
    assert [v["version"] for v in lance_duck.dataset(uri, storage_options=pylance_options).versions()] == [1]
    client = boto3.client("s3", endpoint_url=pylance_options["aws_endpoint"], aws_access_key_id="test",
                          aws_secret_access_key="test", region_name=REGION)
    for o in client.list_objects_v2(Bucket=BUCKET, Prefix="arrow-rewritten.lance/")["Contents"]:
        client.delete_object(Bucket=BUCKET, Key=o["Key"])
    wide = pa.table({"id": np.arange(10), **{f"c{i}": np.arange(10) * i for i in range(40)}})
    lance.write_dataset(wide, uri, storage_options=pylance_options)
    ours = lance_duck.dataset(uri, storage_options=pylance_options)
    theirs = lance.dataset(uri, storage_options=pylance_options)
    assert [(v["version"], v["metadata"]) for v in ours.versions()] == \
        [(v["version"], v["metadata"]) for v in theirs.versions()]
    assert_tables_equal(ours.to_table(), theirs.to_table())
