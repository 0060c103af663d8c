"""Legacy (0.1) files on S3: a one-column read fetches that column's pages of every row group in
requests coalesced by the table's ``coalesce_gap_bytes`` and cut at its ``max_request_bytes``.

In a legacy file the row groups' pages of all columns follow each other, so one column's pages are
separated by the other columns' pages of the same row group: they are joined when that gap is at most
``coalesce_gap_bytes`` (the gap's bytes are then fetched too) and fetched one request each otherwise.
"""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

import lance_duck

from ..scan.conftest import assert_tables_equal
from .conftest import BUCKET, lance

ROWS = 20_000
GROUP = 1000            # rows per row group: ten row groups per file
PAD = 24                # bytes of the other column per row: about 32 KiB between two `id` pages


@pytest.fixture(scope="module")
def padded_uri(pylance_options) -> str:
    """Two legacy files of ten row groups: `id` (8 KB per row group) and `pad` (24 KB strings and
    8 KB of positions per row group, between two `id` pages)."""
    uri = f"s3://{BUCKET}/legacy-coalesce.lance"
    rng = np.random.default_rng(5)
    pad = pa.array([bytes(v) for v in rng.integers(0, 256, (ROWS, PAD), dtype=np.uint8)], pa.binary())
    t = pa.table({"id": np.arange(ROWS, dtype=np.int64), "pad": pad})
    lance.write_dataset(t, uri, storage_options=pylance_options, data_storage_version="legacy",
                        max_rows_per_file=ROWS // 2, max_rows_per_group=GROUP)
    return uri


def _page_gets(stats) -> list[tuple[str, int, int]]:
    """(file, start, end) of the GETs of data files after each file's footer read (its last bytes)."""
    gets = []
    for kind, path, rng in stats.paths:
        if kind == "GET" and path.endswith(".lance") and "/data/" in path:
            a, b = rng.removeprefix("bytes=").split("-")
            gets.append((path, int(a), int(b) + 1))
    footers = {p: max(e for q, _, e in gets if q == p) for p, _, _ in gets}
    return [(p, s, e) for p, s, e in gets if e != footers[p]]


READS = {
    "one column": dict(columns=["id"]),
    "one column, filtered": dict(columns=["id"], filter="id % 7 = 3"),
}


@pytest.mark.parametrize("read", list(READS))
@pytest.mark.parametrize("tuning", ["default", "gap below the other columns", "small requests"])
def test_a_legacy_one_column_read_coalesces_its_row_groups_pages_by_the_io_options(
        padded_uri, pylance_options, proxied_options, counting_proxy, read, tuning):
    options = dict(proxied_options)
    if tuning == "gap below the other columns":
        options["coalesce_gap_bytes"] = str(16 * 1024)
    elif tuning == "small requests":
        options["max_request_bytes"] = str(100_000)
    kwargs = READS[read]
    counting_proxy.reset()
    want = lance.dataset(padded_uri, storage_options=proxied_options).to_table(**kwargs)
    theirs = counting_proxy.reset()
    ds = lance_duck.dataset(padded_uri, storage_options=options)
    counting_proxy.reset()
    got = ds.to_table(**kwargs)
    ours = counting_proxy.reset()
    assert_tables_equal(got, want)
    gets = _page_gets(ours)
    files = {p for p, _, _ in gets}
    assert len(files) == 2, ours.paths
    per_file = [sum(p == f for p, _, _ in gets) for f in files]
    assert sum(e - s for _, s, e in gets) <= 2 * ROWS * (8 + PAD + 8), ours.paths      # no page twice
    if tuning == "default":
        # the 32 KB gaps are below the 64 KiB default: every page of a file in one request
        assert per_file == [1, 1], ours.paths
        assert ours.total() < theirs.total(), (ours.summary(), theirs.summary())
    elif tuning == "gap below the other columns":
        # one request per row group (the footer read holds the last row group or two)
        assert all(n >= ROWS // 2 // GROUP - 2 for n in per_file), ours.paths
    else:
        assert all(e - s <= 100_000 for _, s, e in gets), ours.paths
        for f, n in zip(files, per_file):
            span = max(e for p, _, e in gets if p == f) - min(s for p, s, _ in gets if p == f)
            assert 2 <= n <= math.ceil(span / 100_000) + 1, ours.paths
