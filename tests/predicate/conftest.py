"""Fixture tables for the predicate tests (written once per session with pylance)."""
from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pytest

N = 600


def _types_table() -> pa.Table:
    rng = np.random.default_rng(7)
    ids = np.arange(N, dtype=np.int64)

    def nulls(p: float) -> np.ndarray:
        return rng.random(N) < p

    x = rng.normal(0, 10, N).round(2)
    x[rng.random(N) < 0.05] = np.nan
    names = [None if i % 11 == 3 else f"{'abc' if i % 2 else 'xyz'}{i % 37}" for i in range(N)]
    names[5] = "it's"
    names[6] = "a%b"
    names[7] = "a_b\\c"
    names[8] = "Ünïcode"
    base = dt.datetime(2024, 1, 1)
    ts = [None if i % 13 == 0 else base + dt.timedelta(hours=7 * i, microseconds=i) for i in range(N)]
    dates = [None if i % 17 == 0 else dt.date(2024, 1, 1) + dt.timedelta(days=i % 400) for i in range(N)]
    decs = [None if i % 19 == 0 else decimal.Decimal(i * 7 % 2000) / 100 for i in range(N)]
    lists = []
    for i in range(N):
        if i % 23 == 0:
            lists.append(None)
        elif i % 29 == 0:
            lists.append([None, i % 7])
        else:
            lists.append([j for j in range(i % 5, i % 5 + i % 4)])
    structs = [None if i % 31 == 0 else {"a": None if i % 7 == 0 else i % 50, "b": f"b{i % 9}",
                                         "inner": {"c": i * 3}} for i in range(N)]
    return pa.table({
        "id": pa.array(ids),
        "i32": pa.array(np.where(nulls(0.1), None, rng.integers(-1000, 1000, N)).tolist(), pa.int32()),
        "u8": pa.array((ids % 256).astype(np.uint8)),
        "u64": pa.array((ids.astype(np.uint64) * np.uint64(1 << 40))),
        "x": pa.array(np.where(nulls(0.1), None, x).tolist(), pa.float64()),
        "f32": pa.array((ids % 10 - 5).astype(np.float32) / 2),
        "name": pa.array(names, pa.string()),
        "lname": pa.array(names, pa.large_string()),
        "flag": pa.array([None if i % 9 == 0 else bool(i % 3) for i in range(N)]),
        "ts": pa.array(ts, pa.timestamp("us")),
        "tstz": pa.array(ts, pa.timestamp("us")).cast(pa.timestamp("us", "UTC")),
        "tsny": pa.array(ts, pa.timestamp("us")).cast(pa.timestamp("us", "America/New_York")),
        "d": pa.array(dates, pa.date32()),
        "dec": pa.array(decs, pa.decimal128(10, 2)),
        "s": pa.array(structs, pa.struct([("a", pa.int32()), ("b", pa.string()),
                                          ("inner", pa.struct([("c", pa.int64())]))])),
        "l": pa.array(lists, pa.list_(pa.int32())),
        "tags": pa.array([[f"t{i % 3}", f"t{i % 5}"] if i % 10 else [] for i in range(N)],
                         pa.list_(pa.string())),
        "dur": pa.array((ids * 1000).tolist(), pa.duration("us")),
    })


@pytest.fixture(scope="session")
def types_table() -> pa.Table:
    return _types_table()


@pytest.fixture(scope="session")
def lance_types(tmp_path_factory, types_table):
    """A pylance dataset holding ``types_table`` (3 fragments of at most 250 rows, no deletions)."""
    import lance

    uri = str(tmp_path_factory.mktemp("pred") / "types.lance")
    lance.write_dataset(types_table, uri, max_rows_per_file=250)
    return lance.dataset(uri)
