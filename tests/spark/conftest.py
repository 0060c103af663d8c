"""One local Spark session (local[2]) shared by the Spark tests, and pylance-written tables."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "table"))

try:
    import pyspark  # noqa: F401
except ImportError:  # a missing test dependency must fail, not skip
    raise RuntimeError("the Spark tests need pyspark: pip install -e '.[test]'") from None


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    from lance_duck.integrations.spark import register

    # Spark's Python workers must run the interpreter that has lance_duck installed.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (SparkSession.builder.master("local[2]").appName("lance_duck-tests")
               .config("spark.sql.python.filterPushdown.enabled", "true")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .getOrCreate())
    register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def history_table(tmp_path_factory):
    import lance_histories as H

    path = str(tmp_path_factory.mktemp("spark") / "hist.lance")
    H.make_history_table(path, "2.2", with_refs=True)
    return path


def _type_matrix(n: int):
    """Every Arrow type Lance stores, with nulls, extremes and negative sub-microsecond times."""
    import decimal

    import numpy as np
    import pyarrow as pa

    ids = np.arange(n)
    nulls = ids % 7 == 3
    ns = np.array([-1500, 1500, -1, 999, 10**18 + 123456789, -(10**18) - 987], dtype=np.int64)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "b": pa.array(ids % 3 == 0, mask=nulls),
        "i8": pa.array((ids % 256) - 128, pa.int8()),
        "i16": pa.array(ids - 1000, pa.int16()),
        "i32": pa.array(ids * -3, pa.int32(), mask=nulls),
        "u8": pa.array(255 - ids % 256, pa.uint8()),
        "u16": pa.array(65535 - ids, pa.uint16()),
        "u32": pa.array(4294967295 - ids * 1000, pa.uint32(), mask=nulls),
        "u64": pa.array(np.uint64(2**64 - 1) - ids.astype(np.uint64) * np.uint64(2**50), pa.uint64()),
        "f16": pa.array((ids / 8 - 30).astype(np.float16), pa.float16(), mask=nulls),
        "f32": pa.array((ids / 3).astype(np.float32)),
        "f64": pa.array(ids / 7.0, mask=nulls),
        "d128": pa.array([decimal.Decimal(int(i) * 1001 - 50_000) / 1000 for i in ids], pa.decimal128(10, 3)),
        "d256": pa.array([decimal.Decimal(f"{'-' if i % 2 else ''}{'9' * 30}{i:06d}.{i % 100:02d}") for i in ids],
                         pa.decimal256(38, 2)),
        "s": pa.array([None if m else f"s{i}" for i, m in zip(ids, nulls)]),
        "ls": pa.array([f"large-{i}" * (i % 4) for i in ids], pa.large_string()),
        "lb": pa.array([bytes([i % 256]) * (i % 5) for i in ids], pa.large_binary(), mask=nulls),
        "fsb": pa.array([int(i).to_bytes(4, "little") for i in ids], pa.binary(4)),
        "dict": pa.array([["red", "green", None, "blue"][i % 4] for i in ids]).dictionary_encode(),
        "date": pa.array((ids - 500).astype(np.int32), pa.date32()),
        "d64": pa.array((ids - 500) * 86_400_000, pa.date64()),
        "ts_tz": pa.array(ns[ids % 6] + ids * 10**9, pa.timestamp("ns", tz="America/New_York")),
        "ts_ntz": pa.array(ns[ids % 6] - ids * 10**9, pa.timestamp("ns"), mask=nulls),
        "ts_s": pa.array(ids * 86_399 - 10**9, pa.timestamp("s", tz="UTC")),
        "ts_ms_ntz": pa.array(ids * 123_456_789, pa.timestamp("ms")),
        "dur": pa.array(ns[ids % 6] + ids, pa.duration("ns")),
        "dur_s": pa.array(ids * 3600 - 7, pa.duration("s")),
        "t64": pa.array(ids * 1_000_003 % 86_400_000_000, pa.time64("us")),
        "t32": pa.array((ids * 1013 % 86_400_000).astype(np.int32), pa.time32("ms"), mask=nulls),
        "nul": pa.nulls(n),
        "ll": pa.array([None if m else list(range(i % 4)) for i, m in zip(ids, nulls)], pa.large_list(pa.int32())),
        "fsl": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(n * 3, dtype=np.float32)), 3),
        "lst": pa.array([[f"x{i}", None] if i % 2 else [] for i in ids], pa.list_(pa.large_string())),
        "m": pa.array([None if m else [(f"k{i}", int(i)), ("z", None)] for i, m in zip(ids, nulls)],
                      pa.map_(pa.string(), pa.uint16())),
        "st": pa.array([{"a": int(i), "u": int(i) % 200, "l": [int(i), None], "ts": int(ns[i % 6])}
                        for i in ids],
                       pa.struct([("a", pa.int64()), ("u", pa.uint8()), ("l", pa.list_(pa.int64())),
                                  ("ts", pa.timestamp("ns"))])),
    })


@pytest.fixture(scope="session")
def types_table(tmp_path_factory):
    import lance

    path = str(tmp_path_factory.mktemp("spark") / "types.lance")
    ds = lance.write_dataset(_type_matrix(1500), path, max_rows_per_file=600, data_storage_version="2.2")
    ds.delete("id % 50 = 7")
    return path


@pytest.fixture(scope="session")
def wide_decimal_table(tmp_path_factory):
    import decimal

    import lance
    import pyarrow as pa

    path = str(tmp_path_factory.mktemp("spark") / "wide.lance")
    lance.write_dataset(pa.table({"id": pa.array([1, 2], pa.int64()),
                                  "big": pa.array([decimal.Decimal("1" * 39 + ".5")] * 2, pa.decimal256(40, 1))}),
                        path, data_storage_version="2.2")
    return path


@pytest.fixture(scope="session")
def small_fragments_table(tmp_path_factory):
    """20 fragments of 100 rows, a few rows deleted."""
    import lance
    import numpy as np
    import pyarrow as pa

    path = str(tmp_path_factory.mktemp("spark") / "small.lance")
    ids = np.arange(2000)
    t = pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array(ids / 3), "s": pa.array([f"r{i}" for i in ids])})
    ds = lance.write_dataset(t, path, max_rows_per_file=100, data_storage_version="2.2")
    ds.delete("id % 37 = 0")
    return path


@pytest.fixture(scope="session")
def one_fragment_table(tmp_path_factory):
    """One fragment of 200,000 rows."""
    import lance
    import numpy as np
    import pyarrow as pa

    path = str(tmp_path_factory.mktemp("spark") / "one.lance")
    ids = np.arange(200_000)
    lance.write_dataset(pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array(ids * 0.5)}), path,
                        max_rows_per_file=1_000_000, data_storage_version="2.2")
    return path
