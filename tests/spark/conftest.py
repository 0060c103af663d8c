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


@pytest.fixture(scope="session")
def types_table(tmp_path_factory):
    import lance
    import numpy as np
    import pyarrow as pa

    n = 500
    ids = np.arange(n)
    t = pa.table({
        "id": pa.array(ids, pa.int64()),
        "u8": pa.array(ids % 200, pa.uint8()),
        "u32": pa.array(ids * 7, pa.uint32()),
        "u64": pa.array(ids * 2**40, pa.uint64()),
        "f16": pa.array((ids / 8).astype(np.float16), pa.float16()),
        "ls": pa.array([None if i % 11 == 0 else f"v{i}" for i in ids], pa.large_string()),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(n * 4, dtype=np.float32)), 4),
        "ts": pa.array(ids * 10**9, pa.timestamp("ns", tz="America/New_York")),
        "d64": pa.array(ids * 86_400_000, pa.date64()),
        "s": pa.StructArray.from_arrays([pa.array(ids % 9, pa.int32()), pa.array([f"b{i % 3}" for i in ids])],
                                        names=["a", "b"]),
    })
    path = str(tmp_path_factory.mktemp("spark") / "types.lance")
    lance.write_dataset(t, path, max_rows_per_file=200)
    return path
