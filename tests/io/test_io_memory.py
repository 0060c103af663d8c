"""Memory-mapped data files: pages read while streaming are released, and never data still viewed.

Resident pages are measured from ``/proc/self/smaps`` (the kernel's count for each mapping of the
table's files), not from lance_duck's own bookkeeping.
"""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.io import fs as iofs

import lance  # a test dependency: missing, it must fail, not skip

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs Linux /proc/self/smaps")

MIB = 1 << 20


def mapped_resident(prefix: str) -> int:
    """Resident bytes of this process's mappings of files under ``prefix``."""
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(None, 5)
            if head and "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                inside = len(head) == 6 and head[5].strip().startswith(prefix)
            elif inside and line.startswith("Rss:"):
                total += int(line.split()[1]) * 1024
    return total


@pytest.fixture(scope="module")
def big_table(tmp_path_factory) -> str:
    """~48 MiB of incompressible columns in four fragments, with a delete."""
    path = str(tmp_path_factory.mktemp("memory") / "big.lance")
    n = 2_000_000
    rng = np.random.default_rng(7)
    t = pa.table({"id": np.arange(n, dtype=np.int64), "r": rng.integers(-(1 << 62), 1 << 62, n),
                  "f": rng.random(n), "s": pa.array(rng.integers(0, 1 << 40, n).astype(str))})
    ds = lance.write_dataset(t, path, max_rows_per_file=n // 4)
    ds.delete("id % 1000 = 3")
    return path


def data_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(os.path.join(path, "data")) for f in fs)


def test_streaming_scan_keeps_mapped_data_pages_within_the_budget(big_table, monkeypatch):
    budget = 4 * MIB
    # plus the reads of tasks in flight (64k-row tasks: ~1-2 MiB each) and pages that arrays of
    # batches in flight touch again after their release (measured: peak ~7 MiB)
    bound = budget + 12 * MIB
    assert data_bytes(big_table) > 3 * bound   # without releasing, residency would reach the table's size
    monkeypatch.setattr(iofs, "MAPPED_RESIDENT_BYTES", budget)
    prefix = os.path.realpath(big_table)
    ds = lance_duck.dataset(big_table)
    peak = rows = 0
    for batch in ds.scanner(readahead_bytes=budget, batch_size=65536).to_batches():
        rows += batch.num_rows
        peak = max(peak, mapped_resident(prefix))
    assert rows == lance.dataset(big_table).count_rows()
    assert 0 < peak <= bound, peak / MIB


def test_released_pages_still_hold_the_data_of_live_arrays(big_table, monkeypatch):
    # Release everything as soon as it is served: batches kept alive (zero-copy views into the
    # maps included) must still hold pylance's values.
    monkeypatch.setattr(iofs, "MAPPED_RESIDENT_BYTES", 0)
    batches = list(lance_duck.dataset(big_table).scanner(readahead_bytes=4 * MIB).to_batches())
    got = pa.Table.from_batches(batches)
    assert got.equals(lance.dataset(big_table).to_table())


def test_an_input_file_view_rereads_released_pages(big_table, monkeypatch):
    monkeypatch.setattr(iofs, "MAPPED_RESIDENT_BYTES", 1 * MIB)
    io, _ = iofs.open_io(big_table)
    name = sorted(os.listdir(os.path.join(big_table, "data")))[0]
    path = os.path.join(os.path.realpath(big_table), "data", name)
    f = io.open_input(path)
    first = f.read(0, 4 * MIB)
    want = open(path, "rb").read(8 * MIB)
    assert bytes(first) == want[:4 * MIB]        # 4 MiB resident, above the 1 MiB budget
    assert mapped_resident(path) >= 4 * MIB
    later = f.read_ranges([(4 * MIB, MIB), (6 * MIB, MIB)])   # the next read releases the first
    assert mapped_resident(path) < MIB
    assert [bytes(v) for v in later] == [want[4 * MIB:5 * MIB], want[6 * MIB:7 * MIB]]
    assert bytes(first) == want[:4 * MIB]        # the released view reads the file again
    f.close()
