"""2.0 pages spanning several read tasks are fetched once (local files and S3), results equal pylance's."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.file.base import TAIL_BYTES
from lance_duck.io.fs import InputFile

from ..scan.conftest import assert_tables_equal
from .conftest import BUCKET, lance

ROWS = 6000
TASK_ROWS = 500      # read tasks far smaller than a page: every string page spans several tasks


def _strings() -> pa.Table:
    rng = np.random.default_rng(11)
    words = np.array(["".join(chr(97 + int(x)) for x in rng.integers(0, 26, 700)) for _ in range(64)])
    s = np.char.add(words[rng.integers(0, 64, ROWS)], np.arange(ROWS).astype(str))
    return pa.table({"id": np.arange(ROWS, dtype=np.int64), "s": pa.array(s, pa.string())})


def _data_bytes(files: list[str]) -> int:
    return sum(os.path.getsize(f) for f in files)


@pytest.fixture
def counted_reads(monkeypatch) -> list[int]:
    """Bytes every InputFile.read_ranges call asks for (local files)."""
    sizes: list[int] = []
    real = InputFile.read_ranges

    def counting(self, ranges):
        sizes.append(sum(n for _, n in ranges))
        return real(self, ranges)

    monkeypatch.setattr(InputFile, "read_ranges", counting)
    return sizes


def test_a_full_scan_of_large_2_0_string_pages_reads_each_page_once_locally(tmp_path, counted_reads):
    uri = str(tmp_path / "strings.lance")
    lance.write_dataset(_strings(), uri, data_storage_version="2.0", max_rows_per_file=3000)
    files = [str(p) for p in (tmp_path / "strings.lance" / "data").iterdir()]
    lance_duck.dataset(uri).to_table(columns=["id"], batch_size=TASK_ROWS)   # footers and metadata cached
    counted_reads.clear()
    got = lance_duck.dataset(uri).to_table(batch_size=TASK_ROWS)
    assert_tables_equal(got, lance.dataset(uri).to_table())
    data = _data_bytes(files)
    assert ROWS // TASK_ROWS > 2 * len(files)
    # every page once, plus a metadata read of at most TAIL_BYTES and a few small reads per file
    assert sum(counted_reads) <= data + len(files) * (TAIL_BYTES + 1024), (sum(counted_reads), data)


def test_a_full_scan_of_large_2_0_string_pages_fetches_about_the_data_size_from_s3(
        tmp_path, pylance_options, proxied_options, counting_proxy):
    uri = f"s3://{BUCKET}/spanning-pages.lance"
    local = str(tmp_path / "spanning-pages.lance")
    for where, opts in ((uri, pylance_options), (local, None)):
        lance.write_dataset(_strings(), where, data_storage_version="2.0", max_rows_per_file=3000,
                            **({"storage_options": opts} if opts else {}))
    data = _data_bytes([str(p) for p in (tmp_path / "spanning-pages.lance" / "data").iterdir()])
    want = lance.dataset(uri, storage_options=pylance_options).to_table()
    ds = lance_duck.dataset(uri, storage_options=proxied_options)
    counting_proxy.reset()
    got = ds.to_table(batch_size=TASK_ROWS)
    fetched = counting_proxy.reset().bytes_out
    assert_tables_equal(got, want)
    assert fetched <= 1.1 * data, (fetched, data)
