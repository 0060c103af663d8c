"""A pylance-written table with a history, for the SQL front-end tests (once per session)."""
from __future__ import annotations

import time

import pyarrow as pa
import pytest


def _rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([None if i % 10 == 3 else f"n{i}" for i in ids]),
        "info": pa.array([{"score": i % 7, "city": ["oslo", "rome", "lima"][i % 3]} for i in ids],
                         pa.struct([("score", pa.int32()), ("city", pa.string())])),
    })


@pytest.fixture(scope="session")
def history(tmp_path_factory):
    """v1: 100 rows; v2: +50 rows; v3: delete id % 10 = 3 (tag 'cleaned'); v4: +20 rows."""
    import lance

    uri = str(tmp_path_factory.mktemp("sqlt") / "hist.lance")
    lance.write_dataset(_rows(0, 100), uri, max_rows_per_file=40)
    time.sleep(0.05)
    lance.write_dataset(_rows(100, 50), uri, mode="append")
    time.sleep(0.05)
    ds = lance.dataset(uri)
    ds.delete("id % 10 = 3")
    ds = lance.dataset(uri)
    ds.tags.create("cleaned", 3)
    time.sleep(0.05)
    lance.write_dataset(_rows(150, 20), uri, mode="append")
    return uri
