"""Store errors on the S3 endpoint (injected by the proxy): clear errors naming the object, bounded
retries where the store says retry, and never a partial or wrong result."""
from __future__ import annotations

import collections

import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import LanceDuckError, ObjectStoreError

from ..scan.conftest import assert_tables_equal
from .conftest import BUCKET, lance

# short backoff so that the tests wait little; retries bounded by the options
FAST = {"client_max_retries": "3", "client_retry_timeout": "5"}


@pytest.fixture(scope="module")
def fault_table(pylance_options) -> str:
    uri = f"s3://{BUCKET}/faults.lance"
    n = 30_000
    rng = np.random.default_rng(11)
    lance.write_dataset(pa.table({"id": np.arange(n), "v": rng.random(n),
                                  "s": pa.array(np.char.add("s", rng.integers(0, 50, n).astype(str)))}),
                        uri, storage_options=pylance_options, max_rows_per_file=10_000)
    lance.dataset(uri, storage_options=pylance_options).delete("id % 10 = 4")
    return uri


@pytest.fixture(scope="module")
def expected(fault_table, pylance_options) -> pa.Table:
    return lance.dataset(fault_table, storage_options=pylance_options).to_table()


@pytest.fixture
def faulty(proxied_options, counting_proxy):
    counting_proxy.clear_faults()
    yield dict(proxied_options, **FAST)
    counting_proxy.clear_faults()


@pytest.fixture
def faulty_s3fs(s3fs_proxied_options, counting_proxy):
    counting_proxy.clear_faults()
    yield dict(s3fs_proxied_options, **FAST)
    counting_proxy.clear_faults()


def _for(kind: str, faulty: dict, faulty_s3fs: dict) -> dict:
    """The options a fault is injected under: a body cut short under a Content-Length saying so
    ("truncate") is caught by s3fs's check of Content-Range; pyarrow's S3 client pads such a body
    with zeros (io/arrow_s3.py), so that fault is tested through s3fs only."""
    return faulty_s3fs if kind == "truncate" else faulty


def _gets(stats, part: str) -> int:
    return sum(1 for k, p, _ in stats.paths if k == "GET" and part in p)


def test_access_denied_on_a_data_file_is_permission_error_naming_it_without_retry(
        fault_table, faulty, counting_proxy):
    ds = lance_duck.dataset(fault_table, storage_options=faulty)
    counting_proxy.reset()
    counting_proxy.fail("403", times=100, path="/data/")
    with pytest.raises(PermissionError, match=r"data/\w+\.lance"):
        ds.to_table()
    stats = counting_proxy.reset()
    # one try per request that was sent (footers of the three files at most, each once, plus reads)
    files = {p for k, p, _ in stats.paths if "/data/" in p}
    assert _gets(stats, "/data/") <= 2 * len(files), stats.paths


def test_a_missing_manifest_is_file_not_found_naming_it(fault_table, faulty, counting_proxy):
    counting_proxy.fail("404", times=100, path=".manifest")
    with pytest.raises(FileNotFoundError, match=r"_versions/\d+\.manifest"):
        lance_duck.dataset(fault_table, storage_options=faulty)


def test_a_missing_data_file_is_file_not_found_naming_it(fault_table, faulty, counting_proxy):
    ds = lance_duck.dataset(fault_table, storage_options=faulty)
    counting_proxy.fail("404", times=100, path="/data/")
    with pytest.raises(FileNotFoundError, match=r"data/\w+\.lance"):
        ds.to_table(columns=["v"])


def _data_gets(stats) -> collections.Counter:
    return collections.Counter((p, r) for k, p, r in stats.paths if k == "GET" and "/data/" in p)


@pytest.mark.parametrize("kind", ["503", "reset", "truncate"])
def test_transient_faults_on_data_reads_are_retried_and_the_result_is_pylances(
        kind, fault_table, expected, faulty, faulty_s3fs, counting_proxy):
    faulty = _for(kind, faulty, faulty_s3fs)
    ds = lance_duck.dataset(fault_table, storage_options=faulty)
    counting_proxy.reset()
    counting_proxy.fail(kind, times=3, path="/data/")
    got = ds.to_table()
    stats = counting_proxy.reset()
    assert counting_proxy.pending_faults() == 0, "the faults were not all served"
    assert_tables_equal(got, expected)
    clean = lance_duck.dataset(fault_table, storage_options=faulty)
    lance_duck.clear_caches()
    counting_proxy.reset()
    clean.to_table()
    # every injected fault was served and survived; the retries read the same files, and at most one
    # request per fault more (read-ahead makes the exact ranges vary from run to run, so the clean run's
    # count is a bound, not an equality)
    faulty_gets, clean_gets = _data_gets(stats), _data_gets(counting_proxy.reset())
    assert {p for p, _ in faulty_gets} == {p for p, _ in clean_gets}
    files = len({p for p, _ in clean_gets})
    assert sum(faulty_gets.values()) <= sum(clean_gets.values()) + 3 + files, (faulty_gets, clean_gets)


@pytest.mark.parametrize("kind", ["503", "reset", "truncate"])
def test_transient_faults_on_metadata_are_retried(kind, fault_table, expected, faulty, faulty_s3fs, counting_proxy):
    faulty = _for(kind, faulty, faulty_s3fs)
    counting_proxy.fail(kind, times=1, path=".manifest")
    counting_proxy.fail(kind, times=1, path="/_deletions/")
    got = lance_duck.dataset(fault_table, storage_options=faulty).to_table()
    assert_tables_equal(got, expected)


@pytest.mark.parametrize("kind", ["503", "reset", "truncate"])
def test_a_fault_that_persists_fails_the_scan_after_bounded_retries_naming_the_object(
        kind, fault_table, faulty, faulty_s3fs, counting_proxy):
    faulty = _for(kind, faulty, faulty_s3fs)
    from lance_duck.file.container import METADATA_CACHE
    METADATA_CACHE.clear()      # the footers are read (not the parsed metadata of an earlier test)
    ds = lance_duck.dataset(fault_table, storage_options=faulty)
    path = ds._snapshot.fragments[1].files[0].path.rsplit("/", 1)[1]
    counting_proxy.reset()
    counting_proxy.fail(kind, times=1000, path=path)
    with pytest.raises(ObjectStoreError, match=path) as info:
        ds.to_table()
    assert isinstance(info.value, LanceDuckError) and "after 4 tries" in str(info.value)
    stats = counting_proxy.reset()
    # 1 + 3 retries of the footer prefetch, which the scan's page planner and its tasks wait for and
    # share: the file is not asked for again
    assert _gets(stats, path) == 4, stats.paths


def test_concurrent_readers_of_a_failing_footer_share_one_flight_of_retries(fault_table, faulty, counting_proxy):
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from lance_duck.file.base import TAIL_BYTES
    ds = lance_duck.dataset(fault_table, storage_options=faulty)
    ref = ds._snapshot.fragments[0].files[0]
    name = ref.path.rsplit("/", 1)[1]
    counting_proxy.reset()
    counting_proxy.fail("503", times=1000, path=name)
    ready = threading.Barrier(4)

    def open_footer(_):
        ready.wait()
        try:
            ds._snapshot.io.open_input(ref.path, ref.size).read_tail(TAIL_BYTES)
        except ObjectStoreError as exc:
            return str(exc)
        return "read"

    with ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(open_footer, range(4)))
    stats = counting_proxy.reset()
    assert all(name in o and "after 4 tries" in o for o in outcomes), outcomes
    assert _gets(stats, name) == 4, stats.paths


def test_a_stream_whose_later_file_keeps_failing_raises_instead_of_ending_short(fault_table, faulty, counting_proxy):
    ds = lance_duck.dataset(fault_table, storage_options=faulty)
    last = ds._snapshot.fragments[-1].files[0].path.rsplit("/", 1)[1]
    counting_proxy.fail("503", times=1000, path=last)
    rows = 0
    with pytest.raises(ObjectStoreError, match=last):
        for b in ds.to_batches(columns=["id"]):
            rows += b.num_rows
    assert rows < ds.count_rows()


def test_retry_options_are_checked_by_name(fault_table, pylance_options):
    from lance_duck.errors import InvalidArgumentError
    with pytest.raises(InvalidArgumentError, match="client_max_retries"):
        lance_duck.dataset(fault_table, storage_options=dict(pylance_options, client_max_retries="-1"))
    with pytest.raises(InvalidArgumentError, match="client_retry_timeout"):
        lance_duck.dataset(fault_table, storage_options=dict(pylance_options, client_retry_timeout="soon"))
