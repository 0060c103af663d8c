"""Legacy (0.1 / 0.2) files on S3: the pages of a scan are fetched ahead, concurrently, in few requests."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401
import pytest

import lance_duck

from ..scan.conftest import assert_tables_equal
from .conftest import BUCKET, lance
from .test_io_s3_requests import _refetched_bytes

ROWS = 20_000


@pytest.fixture(scope="module")
def legacy_uri(pylance_options) -> str:
    """Two legacy (0.1) files of ten row groups each: numbers, bools, strings, lists."""
    uri = f"s3://{BUCKET}/legacy-prefetch.lance"
    rng = np.random.default_rng(3)
    t = pa.table({"id": np.arange(ROWS, dtype=np.int64), "v": rng.random(ROWS),
                  "flag": rng.random(ROWS) < 0.5,
                  "cat": pa.array(np.char.add("c", rng.integers(0, 50, ROWS).astype(str))),
                  "tags": pa.ListArray.from_arrays(np.arange(0, 2 * ROWS + 1, 2, dtype=np.int32),
                                                   np.arange(2 * ROWS, dtype=np.int64))})
    lance.write_dataset(t, uri, storage_options=pylance_options, data_storage_version="legacy",
                        max_rows_per_file=ROWS // 2, max_rows_per_group=1000)
    return uri


def test_a_legacy_scan_prefetches_its_pages_in_no_more_requests_than_pylance(
        legacy_uri, pylance_options, proxied_options, s3fs_proxied_options, counting_proxy):
    uri = legacy_uri
    assert lance.dataset(uri, storage_options=pylance_options).data_storage_version == "0.1"
    cols = ["id", "v", "flag", "cat"]
    counting_proxy.reset()
    want = lance.dataset(uri, storage_options=proxied_options).to_table(columns=cols)
    theirs = counting_proxy.reset()
    ds = lance_duck.dataset(uri, storage_options=s3fs_proxied_options)
    counting_proxy.reset()
    counting_proxy.latency = 0.03       # requests in flight together overlap whatever the machine's load
    try:
        got = ds.to_table(columns=cols)
    finally:
        counting_proxy.latency = 0.0
    ours = counting_proxy.reset()
    assert_tables_equal(got, want)
    assert "HEAD" not in ours.requests, ours.paths
    assert _refetched_bytes(ours.paths) == 0, ours.paths
    files = {p for _, p, _ in ours.paths if p.endswith(".lance")}
    assert len(files) == 2
    # per file: one tail read (footer, metadata, page table), then every page in at most two requests
    assert ours.requests["GET"] <= 3 * len(files), ours.paths
    assert ours.total() <= theirs.total(), (ours.summary(), theirs.summary())
    assert ours.peak_in_flight >= 2, ours.peak_in_flight


def test_a_filtered_legacy_scan_of_lists_and_strings_equals_pylance_on_s3(legacy_uri, pylance_options,
                                                                           proxied_options):
    uri = legacy_uri
    whole = lance.dataset(uri, storage_options=pylance_options).to_table()   # pylance filters legacy files slowly
    want = whole.filter(pa.compute.equal(pa.compute.bit_wise_and(whole["id"], 3), 1))
    got = lance_duck.dataset(uri, storage_options=proxied_options).to_table(filter="id % 4 = 1")
    assert_tables_equal(got, want)
