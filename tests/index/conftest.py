"""Tables with scalar indices, written by pylance once per session, for the index tests.

``history`` builds one table per stable-row-id setting whose versions make index coverage
partial: indices built, rows appended after them, deleted, updated (rows move), a delta
segment from ``optimize_indices``, another append, then compaction.
"""
from __future__ import annotations

import warnings

import lance
import numpy as np
import pyarrow as pa
import pytest

ROWS_PER_FILE = 1500


def batch(start: int, n: int) -> pa.Table:
    i = np.arange(start, start + n)
    return pa.table({
        "id": pa.array(i, pa.int64()),
        "grp": pa.array([None if k % 9 == 0 else int(k % 40) for k in i], pa.int32()),
        "cat": pa.array([None if k % 11 == 0 else f"c{k % 7}" for k in i], pa.string()),
        "amount": pa.array(i * 0.25, pa.float64()),
        "seq": pa.array(i // 3, pa.int64()),
        "day": pa.array(i % 300, pa.int32()).cast(pa.date32()),
        "tags": pa.array([[f"t{k % 3}", f"u{k % 5}"] for k in i], pa.list_(pa.string())),
        "txt": pa.array([f"row {k} word{k % 17}" for k in i], pa.string()),
        "payload": pa.array([f"{k:08d}" * 8 for k in i], pa.string()),
    })


def create_indices(ds) -> None:
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("grp", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    ds.create_scalar_index("day", "BITMAP")
    ds.create_scalar_index("amount", "ZONEMAP")
    ds.create_scalar_index("seq", "ZONEMAP")
    ds.create_scalar_index("tags", "LABEL_LIST")
    ds.create_scalar_index("txt", "NGRAM")
    ds.create_scalar_index("id", "BLOOMFILTER", name="id_bloom")


def make_history(path: str, *, stable_row_ids: bool) -> str:
    """Versions: 1 write, 2-10 indices, 11 append, 12 delete, 13 update, 14 optimize_indices
    (delta segments), 15 append, 17 compaction."""
    warnings.simplefilter("ignore", DeprecationWarning)
    ds = lance.write_dataset(batch(0, 6000), path, max_rows_per_file=ROWS_PER_FILE,
                             enable_stable_row_ids=stable_row_ids, data_storage_version="2.2")
    create_indices(ds)
    ds.insert(batch(6000, 1500))
    ds.delete("id % 13 = 5 OR (id >= 3000 AND id < 3100)")
    ds.update({"cat": "'moved'", "grp": "7"}, "id % 97 = 3")
    ds.optimize.optimize_indices(num_indices_to_merge=0)
    ds = lance.dataset(path)
    ds.insert(batch(7500, 900))
    ds = lance.dataset(path)
    ds.optimize.compact_files(target_rows_per_fragment=4000)
    return path


@pytest.fixture(scope="session")
def history_plain(tmp_path_factory) -> str:
    return make_history(str(tmp_path_factory.mktemp("idx") / "plain.lance"), stable_row_ids=False)


@pytest.fixture(scope="session")
def history_stable(tmp_path_factory) -> str:
    return make_history(str(tmp_path_factory.mktemp("idx") / "stable.lance"), stable_row_ids=True)


@pytest.fixture(scope="session", params=["plain", "stable"])
def history(request) -> str:
    return request.getfixturevalue(f"history_{request.param}")


@pytest.fixture(scope="session")
def ngram_text_table(tmp_path_factory) -> str:
    """60k rows of ``bloom_ngram_tables.rows`` in two files, NGRAM index on ``txt``."""
    from .bloom_ngram_tables import rows
    path = str(tmp_path_factory.mktemp("ngram_text") / "t.lance")
    ds = lance.write_dataset(rows(0, 60_000), path, max_rows_per_file=30_000)
    ds.create_scalar_index("txt", "NGRAM")
    return path


def arrow_oracle(path: str):
    """A DuckDB connection over the Arrow table pylance reads from ``path``, copied into DuckDB's own
    storage as ``t`` (DuckDB 1.x pushes float comparisons into Arrow with Arrow's NaN meaning)."""
    import duckdb
    con = duckdb.connect()
    con.register("pylance_rows", lance.dataset(path).to_table())
    con.execute("CREATE TABLE t AS SELECT * FROM pylance_rows")
    con.unregister("pylance_rows")
    return con


@pytest.fixture(scope="session")
def ngram_text_oracle(ngram_text_table):
    """DuckDB over the Arrow table pylance reads from ``ngram_text_table`` (registered as ``t``)."""
    return arrow_oracle(ngram_text_table)
