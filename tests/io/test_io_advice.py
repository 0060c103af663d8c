"""The ranges a reader asks for of a local memory map are advised MADV_WILLNEED (the kernel reads those
pages, so no cold fault reads its read-around window): a point lookup by an indexed id reads ahead only
its few pages of data and index files, a full scan reads ahead its columns whole, a repeated query
advises nothing again. Results stay equal to pylance's. Advice is observed through the ``io:advise``
events of :func:`lance_duck.trace.decode_trace`."""
from __future__ import annotations

import mmap
import os

import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.trace import decode_trace

lance = pytest.importorskip("lance")   # the reference writer is a test dependency (installed with .[test])

if not (hasattr(mmap.mmap, "madvise") and hasattr(mmap, "MADV_WILLNEED")):
    pytest.skip("mmap.madvise / MADV_WILLNEED are not available on this platform", allow_module_level=True)

ROWS = 40_000


@pytest.fixture(scope="module")
def indexed_table(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("advice") / "t.lance")
    rng = np.random.default_rng(3)
    table = pa.table({
        "id": pa.array(np.arange(ROWS, dtype=np.int64)),
        "amount": pa.array(rng.random(ROWS)),
        "note": pa.array([f"note {v}" for v in rng.integers(0, 1_000_000, ROWS)]),
    })
    lance.write_dataset(table, path, max_rows_per_file=10_000)
    lance.dataset(path).create_scalar_index("id", "BTREE")
    return path


def _advice(fn) -> tuple[object, dict[str, list]]:
    lance_duck.clear_caches()
    with decode_trace() as tr:
        result = fn()
    by_kind: dict[str, list] = {"willneed": []}
    for kind, path, n in tr.values("io:advise"):
        by_kind[kind].append((path, n))
    return result, by_kind


def _data_bytes(path: str) -> int:
    data = os.path.join(path, "data")
    return sum(os.path.getsize(os.path.join(data, n)) for n in os.listdir(data))


def test_a_point_lookup_reads_ahead_only_a_few_pages_of_data_and_index(indexed_table):
    ours, advice = _advice(lambda: lance_duck.dataset(indexed_table).to_table(filter="id = 23456"))
    assert ours.equals(lance.dataset(indexed_table).to_table(filter="id = 23456"))
    assert ours.num_rows == 1
    paths = {p for p, _ in advice["willneed"]}
    assert any("/data/" in p for p in paths) and any("/_indices/" in p for p in paths)
    data_ahead = sum(n for p, n in advice["willneed"] if "/data/" in p)
    assert data_ahead < _data_bytes(indexed_table) // 10, (data_ahead, _data_bytes(indexed_table))


def test_a_full_scan_reads_ahead_its_columns_whole(indexed_table):
    ours, advice = _advice(lambda: lance_duck.dataset(indexed_table).to_table())
    assert ours.equals(lance.dataset(indexed_table).to_table())
    data_ahead = sum(n for p, n in advice["willneed"] if "/data/" in p)
    assert data_ahead >= _data_bytes(indexed_table) // 2, (data_ahead, _data_bytes(indexed_table))


def test_sql_point_lookup_equals_pylance_and_is_advised(indexed_table):
    sql = f"select * from '{indexed_table}' where id in (7, 23456, 39999) order by id"
    ours, advice = _advice(lambda: lance_duck.sql(sql).to_arrow_table())
    want = lance.dataset(indexed_table).to_table(filter="id in (7, 23456, 39999)")
    assert ours.equals(want.sort_by("id"))
    assert advice["willneed"]
    # three rows in three of the four files: a few pages of each (pages are large next to these small files)
    assert sum(n for p, n in advice["willneed"] if "/data/" in p) < _data_bytes(indexed_table) // 4


def test_a_repeated_scan_advises_nothing_again(indexed_table):
    ds = lance_duck.dataset(indexed_table)
    first, advice = _advice(ds.to_table)
    assert advice["willneed"]
    with decode_trace() as tr:
        again = ds.to_table()
    assert again.equals(first) and tr.values("io:advise") == []
