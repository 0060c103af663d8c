"""One data-file reader is shared by the scan's worker threads (the scan caches readers per
file): concurrent reads of different rows and fields return what sequential reads return.

(The 2.0 reader once kept the pages of the current call in one dict per reader, which a finishing
thread cleared under another: a rare ``KeyError`` seen in tests/scan's parallel read-ahead test.)"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pytest

from lance_duck.file import open_data_file
from lance_duck.table.snapshot import open_snapshot


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    import lance
    n = 20000
    t = pa.table({
        "i": pa.array(np.arange(n), pa.int64()),
        "s": pa.array([f"value-{i % 300}" for i in range(n)]),
        "l": pa.array([[i] * (i % 4) for i in range(n)], pa.list_(pa.int32())),
    })
    out = {}
    for version in ("legacy", "2.0", "2.1", "2.2", "2.3"):
        path = str(tmp_path_factory.mktemp("threads") / f"t_{version}.lance")
        kw = {"max_rows_per_group": 1000} if version == "legacy" else {"max_page_bytes": 8192}
        lance.write_dataset(t, path, data_storage_version=version, **kw)
        out[version] = path
    return out


@pytest.mark.parametrize("version", ["legacy", "2.0", "2.1", "2.2", "2.3"])
def test_one_reader_shared_by_threads_reads_like_sequential_reads(table, version):
    snap = open_snapshot(table[version])
    reader = open_data_file(snap.io, snap.fragments[0].files[0])
    fields = [snap.schema.field(n) for n in ("i", "s", "l")]
    starts = list(range(0, 19500, 331)) * 2
    expected = {s: reader.read_fields(fields, range(s, s + 400)) for s in set(starts)}

    def read(start):
        return reader.read_fields(fields, range(start, start + 400))
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(read, starts))
    for s, arrays in zip(starts, got):
        for f, a, e in zip(fields, arrays, expected[s]):
            assert a.equals(e), (version, f.name, s)
