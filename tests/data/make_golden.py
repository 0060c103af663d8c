"""Regenerate the golden tables in this folder with OLD pylance releases (see README.md).

Run with the interpreter of a throwaway venv holding the release, e.g.::

    /tmp/oldlance/bin/python tests/data/make_golden.py legacy_pylance_0_10_18
    /tmp/oldlance20/bin/python tests/data/make_golden.py v2_0_pylance_0_20_0

The data is deterministic (no random generator) so the tables can be rebuilt.
"""
import os
import shutil
import sys

import lance
import pyarrow as pa


def table(n: int, start: int) -> pa.Table:
    r = range(start, start + n)
    return pa.table({
        "id": pa.array(list(r), pa.int64()),
        "i32": pa.array([None if i % 7 == 0 else i * 3 - 50 for i in r], pa.int32()),
        "u8": pa.array([i % 256 for i in r], pa.uint8()),
        "f64": pa.array([None if i % 11 == 0 else i / 4 for i in r], pa.float64()),
        "f32": pa.array([float(i) * 0.5 for i in r], pa.float32()),
        "flag": pa.array([None if i % 5 == 0 else i % 3 == 0 for i in r], pa.bool_()),
        "name": pa.array([None if i % 6 == 0 else ("" if i % 13 == 0 else f"name-{i}") for i in r]),
        "cat": pa.array([["red", "green", "blue"][i % 3] for i in r]),
        "blob": pa.array([bytes([i % 256]) * (i % 4) for i in r], pa.binary()),
        "ts": pa.array([i * 1_000_000 for i in r], pa.timestamp("us")),
        "day": pa.array([i for i in r], pa.date32()),
        "ints": pa.array([None if i % 9 == 0 else list(range(i % 4)) for i in r], pa.list_(pa.int32())),
        "tags": pa.array([[f"t{i % 5}"] * (i % 3) for i in r], pa.list_(pa.string())),
        "vec": pa.array([[float(i), float(-i)] for i in r], pa.list_(pa.float32(), 2)),
        "point": pa.array([{"x": i, "y": f"p{i}"} for i in r],
                          pa.struct([("x", pa.int16()), ("y", pa.string())])),
        "dict": pa.DictionaryArray.from_arrays(
            pa.array([None if i % 10 == 0 else i % 3 for i in r], pa.int8()), pa.array(["lo", "", "hi"])),
    })


def main(name: str) -> None:
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".lance")
    shutil.rmtree(out, ignore_errors=True)
    t = table(140, 0)  # two fragments: 100 + 40 rows
    if name == "legacy_pylance_0_10_18":
        lance.write_dataset(t, out, max_rows_per_file=100, max_rows_per_group=32)
    elif name == "v2_0_pylance_0_20_0":
        lance.write_dataset(t, out, max_rows_per_file=100, data_storage_version="stable")
    else:
        raise SystemExit(f"unknown golden table {name}")
    print(name, lance.__version__, lance.dataset(out).count_rows())


if __name__ == "__main__":
    main(sys.argv[1])
