"""Requests lance_duck sends to S3 (counted by a proxy in front of the local endpoint), next to pylance's."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

import lance_duck

from ..scan.conftest import assert_tables_equal
from .conftest import BUCKET, lance


def _write(uri: str, options: dict) -> None:
    n = 40_000
    rng = np.random.default_rng(5)
    t = pa.table({"id": np.arange(n), "v": rng.random(n),
                  "cat": pa.array(np.char.add("c", rng.integers(0, 9, n).astype(str)))})
    lance.write_dataset(t, uri, storage_options=options, max_rows_per_file=10_000)
    lance.dataset(uri, storage_options=options).delete("id % 100 = 7")


def test_opening_latest_lists_once_and_reads_one_manifest(s3_table, pylance_options, proxied_options,
                                                          counting_proxy):
    ds = lance_duck.dataset(s3_table, storage_options=proxied_options)
    stats = counting_proxy.reset()
    assert ds.version == 4
    assert dict(stats.requests) == {"LIST": 1, "GET": 1}, stats.paths
    assert stats.paths[1][1].endswith(".manifest")


def test_a_scan_issues_no_head_and_no_more_requests_than_pylance(pylance_options, proxied_options,
                                                               counting_proxy):
    uri = f"s3://{BUCKET}/requests.lance"
    _write(uri, pylance_options)
    counting_proxy.reset()
    want = lance.dataset(uri, storage_options=proxied_options).to_table(columns=["v", "cat"])
    theirs = counting_proxy.reset()
    got = lance_duck.dataset(uri, storage_options=proxied_options).to_table(columns=["v", "cat"])
    ours = counting_proxy.reset()
    assert_tables_equal(got, want)
    assert "HEAD" not in ours.requests, ours.paths
    # data files and deletion files: one tail read (footer + metadata) per data file, no second footer read
    tails = [p for k, p, r in ours.paths if p.endswith(".lance") and r and r.startswith("bytes=-")]
    assert len(tails) <= 4
    assert ours.total() <= theirs.total(), (ours.summary(), theirs.summary())


def test_a_second_query_on_the_same_version_reads_no_footer_again(pylance_options, proxied_options,
                                                                 counting_proxy):
    uri = f"s3://{BUCKET}/requests-second.lance"
    _write(uri, pylance_options)
    ds = lance_duck.dataset(uri, storage_options=proxied_options)
    counting_proxy.reset()
    first = ds.to_table(columns=["id"])
    one = counting_proxy.reset()
    again = lance_duck.dataset(uri, storage_options=proxied_options)
    counting_proxy.reset()
    second = again.to_table(columns=["id"])
    two = counting_proxy.reset()
    assert first.equals(second)
    assert_tables_equal(second, lance.dataset(uri, storage_options=pylance_options).to_table(columns=["id"]))
    data_reads = [p for k, p, r in two.paths if p.endswith(".lance")]
    assert len(data_reads) < len([p for k, p, r in one.paths if p.endswith(".lance")])
    # what is left are page reads of column id: no footer (tail) request
    assert not [r for k, p, r in two.paths if r and r.startswith("bytes=-")], two.paths


def test_a_point_take_touches_only_the_file_holding_the_row(pylance_options, proxied_options, counting_proxy):
    uri = f"s3://{BUCKET}/requests-take.lance"
    _write(uri, pylance_options)
    ds = lance_duck.dataset(uri, storage_options=proxied_options)
    counting_proxy.reset()
    got = ds.take([25_000], columns=["id", "v"])
    stats = counting_proxy.reset()
    assert got.column("id").to_pylist() == \
        lance.dataset(uri, storage_options=pylance_options).take([25_000], columns=["id"]).column("id").to_pylist()
    files = {p for k, p, r in stats.paths if p.endswith(".lance")}
    assert len(files) == 1, stats.paths
    assert "HEAD" not in stats.requests
