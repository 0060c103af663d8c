"""Requests lance_duck sends to S3 (counted by a proxy in front of the local endpoint), next to pylance's:
the request plan through s3fs (fsspec arguments). With pylance-style options alone lance_duck reads
through pyarrow's S3 client, which opens an object with a HEAD: test_io_s3_arrow.py pins that plan."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import InvalidArgumentError

from ..scan.conftest import assert_tables_equal
from .conftest import BUCKET, lance


def _write(uri: str, options: dict, version: str | None = None) -> None:
    n = 40_000
    rng = np.random.default_rng(5)
    t = pa.table({"id": np.arange(n), "v": rng.random(n),
                  "cat": pa.array(np.char.add("c", rng.integers(0, 9, n).astype(str)))})
    kw = {"data_storage_version": version} if version else {}
    lance.write_dataset(t, uri, storage_options=options, max_rows_per_file=10_000, **kw)
    lance.dataset(uri, storage_options=options).delete("id % 100 = 7")


def s3fs_options(endpoint: str) -> dict:
    """s3fs arguments for the test store at ``endpoint`` (the s3fs path)."""
    return {"key": "test", "secret": "test", "endpoint_url": endpoint, "client_kwargs": {"region_name": "us-east-1"}}


def _refetched_bytes(paths: list) -> int:
    spans: dict = {}
    for _, path, rng in paths:
        if path.endswith(".lance") and rng and rng.startswith("bytes=") and not rng.startswith("bytes=-"):
            a, b = rng[6:].split("-")
            spans.setdefault(path, []).append((int(a), int(b) + 1))
    twice = 0
    for ranges in spans.values():
        ranges.sort(key=lambda r: r[1])
        ranges.pop()    # the speculative tail read may cover the last pages too
        ranges.sort()
        for (a0, b0), (a1, b1) in zip(ranges, ranges[1:]):
            twice += max(0, min(b0, b1) - a1)
    return twice


def test_opening_latest_lists_once_and_reads_one_manifest(s3_table, pylance_options, proxied_options, s3fs_proxied_options,
                                                          counting_proxy):
    ds = lance_duck.dataset(s3_table, storage_options=s3fs_proxied_options)
    stats = counting_proxy.reset()
    assert ds.version == 4
    assert dict(stats.requests) == {"LIST": 1, "GET": 1}, stats.paths
    assert stats.paths[1][1].endswith(".manifest")


def test_a_scan_issues_no_head_and_no_more_requests_than_pylance(pylance_options, proxied_options, s3fs_proxied_options,
                                                               counting_proxy):
    uri = f"s3://{BUCKET}/requests.lance"
    _write(uri, pylance_options)
    counting_proxy.reset()
    want = lance.dataset(uri, storage_options=proxied_options).to_table(columns=["v", "cat"])
    theirs = counting_proxy.reset()
    got = lance_duck.dataset(uri, storage_options=s3fs_proxied_options).to_table(columns=["v", "cat"])
    ours = counting_proxy.reset()
    assert_tables_equal(got, want)
    assert "HEAD" not in ours.requests, ours.paths
    # beyond the one speculative tail read per data file, no byte is fetched twice
    assert _refetched_bytes(ours.paths) == 0, ours.paths
    assert ours.total() <= theirs.total(), (ours.summary(), theirs.summary())


def test_a_second_query_on_the_same_version_reads_no_footer_again(pylance_options, proxied_options, s3fs_proxied_options,
                                                                 counting_proxy):
    uri = f"s3://{BUCKET}/requests-second.lance"
    _write(uri, pylance_options)
    ds = lance_duck.dataset(uri, storage_options=s3fs_proxied_options)
    counting_proxy.reset()
    first = ds.to_table(columns=["id"])
    one = counting_proxy.reset()
    again = lance_duck.dataset(uri, storage_options=s3fs_proxied_options)
    counting_proxy.reset()
    second = again.to_table(columns=["id"])
    two = counting_proxy.reset()
    assert first.equals(second)
    assert_tables_equal(second, lance.dataset(uri, storage_options=pylance_options).to_table(columns=["id"]))
    files = {p for k, p, r in one.paths if p.endswith(".lance")}
    assert len(files) == 4
    # the second query reads data pages but none of the four footers (nor the page metadata: the
    # parsed metadata of immutable data files is cached per process)
    data_reads = [p for k, p, r in two.paths if p.endswith(".lance")]
    assert 0 < len(data_reads) <= len([p for k, p, r in one.paths if p.endswith(".lance")]) - len(files), two.paths


def test_a_point_take_touches_only_the_file_holding_the_row(pylance_options, proxied_options, s3fs_proxied_options, counting_proxy):
    uri = f"s3://{BUCKET}/requests-take.lance"
    _write(uri, pylance_options)
    ds = lance_duck.dataset(uri, storage_options=s3fs_proxied_options)
    counting_proxy.reset()
    got = ds.take([25_000], columns=["id", "v"])
    stats = counting_proxy.reset()
    assert got.column("id").to_pylist() == \
        lance.dataset(uri, storage_options=pylance_options).take([25_000], columns=["id"]).column("id").to_pylist()
    files = {p for k, p, r in stats.paths if p.endswith(".lance")}
    assert len(files) == 1, stats.paths
    assert "HEAD" not in stats.requests


def test_a_full_scan_fetches_the_footers_of_all_its_files_at_once(pylance_options, s3_endpoint):
    from .latency_proxy import LatencyProxy
    uri = f"s3://{BUCKET}/requests-prefetch.lance"
    _write(uri, pylance_options)
    lance_duck.clear_caches()
    host, port = s3_endpoint.rsplit("/", 1)[1].split(":")
    with LatencyProxy(host, int(port), latency=0.05) as slow:
        opts = dict(pylance_options, aws_endpoint=slow.url)
        ds = lance_duck.dataset(uri, storage_options=opts)
        slow.reset()
        got = ds.to_table(columns=["v"])
        stats = slow.reset()
    assert_tables_equal(got, lance.dataset(uri, storage_options=pylance_options).to_table(columns=["v"]))
    assert stats.peak_in_flight >= 4, stats.paths      # the four footers together
    assert _refetched_bytes(stats.paths) == 0, stats.paths


def test_coalesce_gap_option_decides_which_ranges_share_a_request(pylance_options, proxied_options,
                                                                 counting_proxy):
    uri = f"s3://{BUCKET}/requests-gap.lance"
    _write(uri, pylance_options)
    want = lance.dataset(uri, storage_options=pylance_options).to_table(columns=["id", "v", "cat"])
    counts = {}
    for gap in (0, 1 << 30):
        lance_duck.clear_caches()
        ds = lance_duck.dataset(uri, storage_options=dict(proxied_options, coalesce_gap_bytes=str(gap),
                                                          max_requests_in_flight="8"))
        counting_proxy.reset()
        assert_tables_equal(ds.to_table(columns=["id", "v", "cat"]), want)
        counts[gap] = counting_proxy.reset().total()
    assert counts[1 << 30] < counts[0], counts


def test_tuning_options_are_checked_by_name(pylance_options):
    from lance_duck.errors import InvalidArgumentError
    with pytest.raises(InvalidArgumentError, match="max_requests_in_flight"):
        lance_duck.dataset(f"s3://{BUCKET}/x.lance", storage_options=dict(pylance_options, max_requests_in_flight="0"))
    with pytest.raises(InvalidArgumentError, match="coalesce_gap_bytes"):
        lance_duck.dataset(f"s3://{BUCKET}/x.lance", storage_options=dict(pylance_options, coalesce_gap_bytes="x"))


def test_footer_of_a_file_of_unknown_size_is_one_suffix_get_without_head(s3_table, pylance_options,
                                                                        proxied_options, s3fs_proxied_options, counting_proxy):
    from lance_duck.io.fs import open_io
    ref = lance.dataset(s3_table, storage_options=pylance_options).get_fragments()[0].data_files()[0]
    io, root = open_io(s3_table, s3fs_proxied_options)
    path = io.join(root, "data", ref.path)
    counting_proxy.reset()
    tail = io.open_input(path).read_tail(64 * 1024)
    stats = counting_proxy.reset()
    assert bytes(tail[-4:]) == b"LANC"
    assert [(k, r) for k, _, r in stats.paths] == [("GET", "bytes=-65536")]
    whole = io.read_bytes(path)
    assert bytes(tail) == whole[-len(tail):]


def _data_reads(stats) -> list:
    """GETs of data files that are not footer (suffix or tail) reads."""
    return [(p, r) for k, p, r in stats.paths if k == "GET" and p.endswith(".lance") and "/data/" in p]


def test_a_second_open_of_the_same_version_issues_no_metadata_request(pylance_options, proxied_options, s3fs_proxied_options,
                                                                      counting_proxy):
    uri = f"s3://{BUCKET}/requests-reopen.lance"
    _write(uri, pylance_options)
    counting_proxy.reset()
    first = lance_duck.dataset(uri, storage_options=s3fs_proxied_options, version=1)
    one = counting_proxy.reset()
    again = lance_duck.dataset(uri, storage_options=s3fs_proxied_options, version=1)
    two = counting_proxy.reset()
    latest = lance_duck.dataset(uri, storage_options=s3fs_proxied_options)
    counting_proxy.reset()
    latest_again = lance_duck.dataset(uri, storage_options=s3fs_proxied_options)
    three = counting_proxy.reset()
    assert first.version == again.version == 1 and latest.version == latest_again.version == 2
    assert dict(one.requests) == {"GET": 1}, one.paths        # a given version: its manifest, no listing
    assert dict(two.requests) == {}, two.paths                 # cached, keyed by its immutable path
    assert dict(three.requests) == {"LIST": 1}, three.paths    # latest: the listing only
    assert_tables_equal(latest_again.to_table(), lance.dataset(uri, storage_options=pylance_options).to_table())
    assert_tables_equal(again.to_table(),
                        lance.dataset(uri, storage_options=pylance_options, version=1).to_table())


def test_the_pages_of_all_columns_of_a_file_are_fetched_together(pylance_options, proxied_options, s3fs_proxied_options,
                                                                 counting_proxy):
    uri = f"s3://{BUCKET}/requests-columns.lance"
    _write(uri, pylance_options)
    ds = lance_duck.dataset(uri, storage_options=s3fs_proxied_options)
    counting_proxy.reset()
    got = ds.to_table(columns=["id", "v", "cat"])
    stats = counting_proxy.reset()
    assert_tables_equal(got, lance.dataset(uri, storage_options=pylance_options).to_table(columns=["id", "v", "cat"]))
    reads = _data_reads(stats)
    files = {p for p, _ in reads}
    # each small file: its footer, then one request for the pages of all three columns
    assert len(files) == 4 and len(reads) <= 2 * len(files), reads


def test_large_spans_are_fetched_as_bounded_requests_in_flight_together(pylance_options, s3_endpoint):
    from .latency_proxy import LatencyProxy
    uri = f"s3://{BUCKET}/requests-split.lance"
    _write(uri, pylance_options)
    lance_duck.clear_caches()
    host, port = s3_endpoint.rsplit("/", 1)[1].split(":")
    with LatencyProxy(host, int(port), latency=0.05) as slow:
        opts = dict(pylance_options, aws_endpoint=slow.url, max_request_bytes="20000")
        ds = lance_duck.dataset(uri, storage_options=opts)
        slow.reset()
        got = ds.to_table(columns=["id", "v"])
        stats = slow.reset()
    assert_tables_equal(got, lance.dataset(uri, storage_options=pylance_options).to_table(columns=["id", "v"]))
    seen: set = set()
    spans = []
    for path, r in _data_reads(stats):
        if path in seen:
            spans.append(r)
        seen.add(path)          # a file's first read is its footer (the tail, 64 KiB)
    sizes = [int(b) - int(a) + 1 for a, b in (r[6:].split("-") for r in spans)]
    assert sizes and max(sizes) <= 20000, sizes
    assert stats.peak_in_flight >= 4, stats.paths
    assert _refetched_bytes(stats.paths) == 0, stats.paths


def test_a_filter_passing_rows_everywhere_prefetches_the_other_columns_too(pylance_options, proxied_options, s3fs_proxied_options,
                                                                         counting_proxy):
    uri = f"s3://{BUCKET}/requests-late.lance"
    _write(uri, pylance_options)
    ds = lance_duck.dataset(uri, storage_options=s3fs_proxied_options)
    counting_proxy.reset()
    got = ds.to_table(columns=["id", "v"], filter="cat = 'c3'")
    ours = counting_proxy.reset()
    want = lance.dataset(uri, storage_options=proxied_options).to_table(columns=["id", "v"], filter="cat = 'c3'")
    theirs = counting_proxy.reset()
    assert_tables_equal(got, want)
    assert ours.total() <= theirs.total(), (ours.summary(), theirs.summary())
    assert len(_data_reads(ours)) <= 3 * 4, _data_reads(ours)


def test_two_scans_of_the_same_files_at_once_both_return_pylances_rows(pylance_options, proxied_options, s3fs_proxied_options):
    uri = f"s3://{BUCKET}/requests-two-scans.lance"
    _write(uri, pylance_options)
    ds = lance_duck.dataset(uri, storage_options=s3fs_proxied_options)
    a = ds.to_batches(columns=["id", "v"], batch_size=5_000)
    b = ds.to_batches(columns=["id", "v"], batch_size=5_000)
    first_a = next(a)
    got_b = [next(b)]
    a.close()                       # the first scan ends early: its prefetched spans are dropped
    got_b.extend(b)
    want = lance.dataset(uri, storage_options=pylance_options).to_table(columns=["id", "v"])
    assert_tables_equal(pa.Table.from_batches(got_b), want)
    assert 0 < first_a.num_rows <= 5_000


@pytest.mark.parametrize("index_type", ["BTREE", "BITMAP", "ZONEMAP", "BLOOMFILTER"])
def test_a_second_indexed_query_reads_no_index_file_again(pylance_options, proxied_options, s3fs_proxied_options, counting_proxy,
                                                          index_type):
    uri = f"s3://{BUCKET}/requests-index-{index_type.lower()}.lance"
    _write(uri, pylance_options)
    column = "cat" if index_type in ("BITMAP", "BLOOMFILTER") else "id"
    lance.dataset(uri, storage_options=pylance_options).create_scalar_index(column, index_type)
    flt = "cat = 'c3'" if column == "cat" else "id >= 12000 AND id < 12050"
    want = lance.dataset(uri, storage_options=pylance_options).to_table(filter=flt, columns=["id", "v"])
    counting_proxy.reset()
    first = lance_duck.dataset(uri, storage_options=s3fs_proxied_options).to_table(filter=flt, columns=["id", "v"])
    one = counting_proxy.reset()
    second = lance_duck.dataset(uri, storage_options=s3fs_proxied_options).to_table(filter=flt, columns=["id", "v"])
    two = counting_proxy.reset()
    assert_tables_equal(first, want)
    assert_tables_equal(second, want)
    assert any("/_indices/" in p for _, p, _ in one.paths), one.paths     # the index was used
    assert not [p for _, p, _ in two.paths if "/_indices/" in p], two.paths


def test_concurrent_readers_of_one_footer_share_one_request(pylance_options, s3_endpoint):
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from lance_duck.file.base import TAIL_BYTES
    from .latency_proxy import LatencyProxy
    uri = f"s3://{BUCKET}/requests-single-flight.lance"
    _write(uri, pylance_options)
    host, port = s3_endpoint.rsplit("/", 1)[1].split(":")
    with LatencyProxy(host, int(port), latency=0.2) as slow:     # every request outlasts the threads' start
        lance_duck.clear_caches()
        ds = lance_duck.dataset(uri, storage_options=s3fs_options(slow.url))
        ref = ds._snapshot.fragments[0].files[0]
        slow.reset()
        ready = threading.Barrier(4)

        def tail(_):
            ready.wait()
            return bytes(ds._snapshot.io.open_input(ref.path, ref.size).read_tail(TAIL_BYTES))

        with ThreadPoolExecutor(4) as pool:
            tails = list(pool.map(tail, range(4)))
        stats = slow.reset()
    import boto3
    client = boto3.client("s3", endpoint_url=s3_endpoint, aws_access_key_id="test", aws_secret_access_key="test",
                          region_name="us-east-1")
    want = client.get_object(Bucket=BUCKET, Key=ref.path.split("/", 1)[1], Range=f"bytes=-{TAIL_BYTES}")["Body"].read()
    assert tails == [want] * 4
    assert [k for k, p, _ in stats.paths if p.endswith(ref.path.rsplit("/", 1)[1])] == ["GET"], stats.paths


def test_a_2_0_file_plans_the_pages_of_all_its_columns_ahead_in_one_request(pylance_options, proxied_options, s3fs_proxied_options,
                                                                           counting_proxy):
    uri = f"s3://{BUCKET}/requests-2-0.lance"
    _write(uri, pylance_options, "2.0")
    ds = lance_duck.dataset(uri, storage_options=s3fs_proxied_options)
    snap = ds._snapshot
    ref = snap.fragments[1].files[0]
    reader = snap.open_data_file(ref)
    assert (reader.container.major, reader.container.minor) in ((0, 3), (2, 0))
    fields = [f for f in snap.schema.fields if f.name in ("id", "v", "cat")]
    counting_proxy.reset()
    reader.prefetch_fields(fields)
    from lance_duck.file.base import TAIL_BYTES
    held = ref.size - TAIL_BYTES        # bytes from here on came with the footer
    outside = [(o, n) for i in range(reader.container.num_columns) for p in reader.container.column(i).pages
               for o, n in zip(p.buffer_offsets, p.buffer_sizes) if n and o < held]
    assert outside
    # every page buffer of the three columns not read with the footer, in one request
    assert snap.io.prefetcher.planned_bytes() == max(o + n for o, n in outside) - min(o for o, _ in outside)
    arrays = reader.read_fields(fields, None)
    stats = counting_proxy.reset()
    snap.io.prefetcher.forget([ref.path])
    assert len(_data_reads(stats)) == 1, stats.paths         # one request: the pages of all three columns
    want = lance.dataset(uri, storage_options=pylance_options).get_fragment(1).to_table(
        columns=["id", "v", "cat"], with_row_address=False)
    # the file's physical rows (deletions are the scan's business): compare the rows still live
    live = {r["id"] for r in want.to_pylist()}
    got = [(i, v, c) for i, v, c in zip(*(a.to_pylist() for a in arrays)) if i in live]
    assert got == [tuple(r.values()) for r in want.to_pylist()]


def test_metadata_cache_bytes_gives_one_table_its_own_caches_and_leaves_the_process_ones(
        pylance_options, proxied_options, s3fs_proxied_options, counting_proxy):
    """The `metadata_cache_bytes` storage option is the table's own: with 0 a second open of a version
    fetches its manifest again; it resizes nothing process-wide, so a table opened without it still
    reads the manifest from the process cache; with a positive value the table's own cache serves
    its checkouts."""
    uri = f"s3://{BUCKET}/requests-cache-bytes.lance"
    _write(uri, pylance_options)
    want = lance.dataset(uri, storage_options=pylance_options, version=1).to_table()
    before = lance_duck.configure()
    lance_duck.dataset(uri, storage_options=s3fs_proxied_options, version=1)     # fills the process caches
    off = dict(s3fs_proxied_options, metadata_cache_bytes="0")
    lance_duck.dataset(uri, storage_options=off, version=1)
    counting_proxy.reset()
    again = lance_duck.dataset(uri, storage_options=off, version=1)
    uncached = counting_proxy.reset()
    assert dict(uncached.requests) == {"GET": 1}, uncached.paths
    assert_tables_equal(again.to_table(), want)
    assert lance_duck.configure() == before
    counting_proxy.reset()
    shared = lance_duck.dataset(uri, storage_options=s3fs_proxied_options, version=1)
    st = counting_proxy.reset()
    assert dict(st.requests) == {}, st.paths                      # the process cache still has it
    assert_tables_equal(shared.to_table(), want)
    lance_duck.clear_caches()
    own = lance_duck.dataset(uri, storage_options=dict(s3fs_proxied_options, metadata_cache_bytes=str(1 << 20)),
                             version=1)
    counting_proxy.reset()
    assert_tables_equal(own.checkout_version(1).to_table(), want)
    own_stats = counting_proxy.reset()
    assert not [p for p in own_stats.paths if "_versions" in p], own_stats.paths   # the table's own cache
    counting_proxy.reset()
    lance_duck.dataset(uri, storage_options=s3fs_proxied_options, version=1)
    assert dict(counting_proxy.reset().requests) == {"GET": 1}            # not the process's


def test_metadata_cache_bytes_must_be_a_non_negative_integer(proxied_options, s3fs_proxied_options):
    with pytest.raises(InvalidArgumentError, match="metadata_cache_bytes"):
        lance_duck.dataset(f"s3://{BUCKET}/requests-cache-bytes.lance",
                           storage_options=dict(s3fs_proxied_options, metadata_cache_bytes="-1"))
