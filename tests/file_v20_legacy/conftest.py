"""Fixtures and helpers for the 2.0 / legacy data-file reader tests.

Tables are written by pylance 14.0.2 (the oracle) and opened with lance_duck's table layer
(``open_snapshot``); the readers under test decode each column of each fragment.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lance_duck.file import open_data_file
from lance_duck.file.v2_0.reader import concat
from lance_duck.table.snapshot import Snapshot, open_snapshot


def load_table(root: str) -> Snapshot:
    return open_snapshot(str(root))


def reader_for(snap: Snapshot, name: str, frag_index: int):
    field = snap.schema.field(name)
    ref = snap.fragments[frag_index].file_for_field(field.id)
    assert ref is not None, f"no file holds {name}"
    return open_data_file(snap.io, ref), field


def read_column(snap: Snapshot, name: str, frag_index: int, rows=None) -> pa.Array:
    """One top-level column of one fragment, read by lance_duck."""
    reader, field = reader_for(snap, name, frag_index)
    return reader.read_field(field, rows)


def read_all(snap: Snapshot, name: str) -> pa.Array:
    parts = [read_column(snap, name, i) for i in range(len(snap.fragments))]
    return parts[0] if len(parts) == 1 else concat(parts, parts[0].type)


def assert_same(ours: pa.Array, theirs, name: str = "") -> None:
    """Equal type and values (row order included; NaN-aware; dictionaries compared logically)."""
    if isinstance(theirs, pa.ChunkedArray):
        theirs = theirs.combine_chunks() if not pa.types.is_dictionary(theirs.type) else theirs
    assert ours.type == (theirs.type), f"{name}: type {ours.type} != {theirs.type}"
    assert len(ours) == len(theirs), f"{name}: {len(ours)} rows != {len(theirs)}"
    if pa.types.is_dictionary(ours.type):
        assert ours.to_pylist() == theirs.to_pylist(), name
        return
    if ours.equals(theirs):
        return
    # NaN-aware fallback: same null positions and equal non-NaN values
    a, b = ours.to_pylist(), theirs.to_pylist()
    assert _nan_eq(a, b), f"{name}: values differ, first at {_first_diff(a, b)}"


def _nan_eq(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_nan_eq(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_nan_eq(a[k], b[k]) for k in a)
    return a == b


def _first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if not _nan_eq(x, y):
            return i, x, y
    return None


# -- the type matrix ---------------------------------------------------------------------------

def _mask(rng, n, p):
    if p <= 0:
        return None
    return rng.random(n) < p


def build_types(n: int, p: float, legacy: bool, seed: int = 7) -> pa.Table:
    """Every type a storage version can hold, with a fraction ``p`` of nulls where nulls are allowed."""
    rng = np.random.default_rng(seed)
    m = lambda: _mask(rng, n, p)  # noqa: E731
    ints = rng.integers(-1000, 1000, n)
    cols: dict[str, pa.Array] = {}
    for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64()):
        cols[f"i_{t}"] = pa.array(ints % 100 if t == pa.int8() else ints, t, mask=m())
    for t in (pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()):
        cols[f"u_{t}"] = pa.array(np.abs(ints) % 200, t, mask=m())
    cols["small_range_i64"] = pa.array(ints % 7, pa.int64(), mask=m())
    f = rng.normal(size=n)
    f[::17] = np.nan
    cols["f16"] = pa.array(f.astype(np.float16), pa.float16(), mask=m())
    cols["f32"] = pa.array(f.astype(np.float32), pa.float32(), mask=m())
    cols["f64"] = pa.array(f, pa.float64(), mask=m())
    cols["date32"] = pa.array(ints + 19000, pa.int32(), mask=m()).cast(pa.date32())
    cols["date64"] = pa.array((ints + 19000) * 86_400_000, pa.int64(), mask=m()).cast(pa.date64())
    cols["time32s"] = pa.array(np.abs(ints) * 30, pa.int32(), mask=m()).cast(pa.time32("s"))
    cols["time32ms"] = pa.array(np.abs(ints) * 3000, pa.int32(), mask=m()).cast(pa.time32("ms"))
    cols["time64us"] = pa.array(np.abs(ints) * 10**6, pa.int64(), mask=m()).cast(pa.time64("us"))
    cols["time64ns"] = pa.array(np.abs(ints) * 10**9, pa.int64(), mask=m()).cast(pa.time64("ns"))
    big = ints.astype(np.int64) * 10**12 + 1_700_000_000_000_000
    cols["ts_us"] = pa.array(big // 1000, pa.int64(), mask=m()).cast(pa.timestamp("us"))
    cols["ts_ns_tz"] = pa.array(big, pa.int64(), mask=m()).cast(pa.timestamp("ns", "America/New_York"))
    cols["ts_s_utc"] = pa.array(big // 10**9, pa.int64(), mask=m()).cast(pa.timestamp("s", "UTC"))
    cols["dur_ms"] = pa.array(ints, pa.int64(), mask=m()).cast(pa.duration("ms"))
    dec = [None if x is None else __import__("decimal").Decimal(int(x)) / 100 for x in
           pa.array(ints, mask=m()).to_pylist()]
    cols["dec128"] = pa.array(dec, pa.decimal128(12, 2))
    cols["dec256"] = pa.array(dec, pa.decimal256(40, 2))
    cols["fsb4"] = pa.array([int(x).to_bytes(4, "little", signed=True) for x in ints], pa.binary(4), mask=m())
    cols["bool"] = pa.array(ints % 3 == 0, pa.bool_(), mask=m())
    cols["null"] = pa.nulls(n)
    cols["all_null_i32"] = pa.nulls(n, pa.int32())
    cols["all_null_str"] = pa.nulls(n, pa.string())
    words = np.array([f"w{i}" * (1 + i % 4) for i in range(40)], dtype=object)
    cols["str_lowcard"] = pa.array(words[np.abs(ints) % 40], pa.string(), mask=m())
    cols["str_unique"] = pa.array([f"row-{i}-{'x' * (i % 9)}" for i in range(n)], pa.string(), mask=m())
    cols["str_empty"] = pa.array(["" if i % 3 else f"e{i}" for i in range(n)], pa.string(), mask=m())
    cols["large_str"] = pa.array([f"L{i}" * (i % 5) for i in range(n)], pa.large_string(), mask=m())
    cols["binary"] = pa.array([bytes([i % 251]) * (i % 6) for i in range(n)], pa.binary(), mask=m())
    cols["large_binary"] = pa.array([bytes([i % 7]) * (i % 3) for i in range(n)], pa.large_binary(), mask=m())
    cols["dict_str"] = pa.DictionaryArray.from_arrays(
        pa.array(np.abs(ints) % 5, pa.int32(), mask=m()), pa.array(["a", "bb", "ccc", "dddd", "e"]))
    cols["dict_int"] = pa.DictionaryArray.from_arrays(
        pa.array(np.abs(ints) % 3, pa.int8()), pa.array([10, 20, 30], pa.int64()))
    lens = np.abs(ints) % 5
    cols["list_i32"] = pa.array([list(range(k)) for k in lens], pa.list_(pa.int32()), mask=m())
    cols["list_str"] = pa.array([[f"s{j}" if j % 3 else None for j in range(k)] for k in lens],
                                pa.list_(pa.string()), mask=m())
    cols["list_list"] = pa.array([[[j] * j for j in range(k % 3)] for k in lens],
                                 pa.list_(pa.list_(pa.int64())), mask=m())
    cols["large_list_f64"] = pa.array([[float(j)] * k for j, k in enumerate(lens)],
                                      pa.large_list(pa.float64()), mask=m())
    cols["fsl_f32"] = pa.array([[float(i), float(-i), 0.5] for i in range(n)], pa.list_(pa.float32(), 3),
                               mask=m())
    cols["fsl_i64"] = pa.array([[i, i * 2] for i in range(n)], pa.list_(pa.int64(), 2))
    cols["struct"] = pa.StructArray.from_arrays(
        [pa.array(ints, pa.int32(), mask=m()), pa.array([f"n{i}" for i in range(n)], mask=m())],
        names=["a", "b"], mask=(pa.array(m()) if legacy and p > 0 else None))
    cols["list_struct"] = pa.array([[{"x": j, "y": f"y{j}"} for j in range(k)] for k in lens],
                                   pa.list_(pa.struct([("x", pa.int16()), ("y", pa.string())])), mask=m())
    cols["struct_list"] = pa.StructArray.from_arrays(
        [pa.array([list(range(k)) for k in lens], pa.list_(pa.int32()), mask=m()),
         pa.array(ints, pa.float64())], names=["l", "v"])
    return pa.table(cols)


TYPE_COLUMNS = build_types(10, 0.0, legacy=False).column_names


def take_cases(n: int, seed: int = 3):
    """Row selections exercised against one fragment of ``n`` rows: (name, selection)."""
    rng = np.random.default_rng(seed)
    return [
        ("range_mid", range(n // 3, n // 3 + n // 4)),
        ("range_empty", range(5, 5)),
        ("single", np.array([n - 1], dtype=np.int64)),
        ("sparse", np.sort(rng.choice(n, size=max(1, n // 20), replace=False)).astype(np.int64)),
        ("dense", np.sort(rng.choice(n, size=n // 2, replace=False)).astype(np.int64)),
        ("empty", np.zeros(0, dtype=np.int64)),
    ]


@pytest.fixture(scope="session")
def lance_mod():
    import lance
    return lance
