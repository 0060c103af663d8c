"""Tables with BLOOMFILTER and NGRAM indices (and no other index on those columns), written by pylance.

``make_history`` builds versions that make index coverage partial: the indices, an append
after them, deletes, an update (rows move), ``optimize_indices`` (delta segments), another
append, then compaction. Values are clustered so that a bloom filter keeps few 8192-row zones.
"""
from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa

ROWS_PER_FILE = 10_000
BASE_SECONDS = 1_704_067_200                   # 2024-01-01 00:00:00 UTC
WORDS = ["alpha", "Beta", "GAMMA", "delta-x", "épsilon", "zeta9", "eta"]
BLOOM_COLUMNS = ["k", "s", "i16", "u8", "f", "d", "ts"]


def rows(start: int, n: int) -> pa.Table:
    k = np.arange(start, start + n)
    f = k * 0.5 - 100.0
    f[k == 25_000] = -0.0                       # equal to 0.0 in SQL, other bytes for the hash
    return pa.table({
        "k": pa.array(k, pa.int64()),
        "s": pa.array([None if 12_000 <= i < 12_100 else f"s{i // 700}" for i in k], pa.string()),
        "i16": pa.array((k // 5) % 30_000 - 15_000, pa.int16()),
        "u8": pa.array((k // 200) % 256, pa.uint8()),
        "f": pa.array(f, pa.float64()),
        "d": pa.array(k // 100, pa.int32()).cast(pa.date32()),
        "ts": pa.array((k + BASE_SECONDS) * 1_000_000, pa.timestamp("us")),
        "txt": pa.array([None if i % 997 == 0 else f"Row {i} {WORDS[i % 7]} Café-{i % 13} #{i // 1000}"
                         for i in k], pa.string()),
        "payload": pa.array([f"{i:08d}" * 4 for i in k], pa.string()),
    })


def make_history(path: str, *, stable_row_ids: bool, storage: str) -> str:
    """Versions: 1 write, 2-9 indices, 10 append, 11 delete, 12 update, 13 optimize_indices,
    14 append, then compaction."""
    import lance

    warnings.simplefilter("ignore", DeprecationWarning)
    ds = lance.write_dataset(rows(0, 40_000), path, max_rows_per_file=ROWS_PER_FILE,
                             enable_stable_row_ids=stable_row_ids, data_storage_version=storage)
    for col in BLOOM_COLUMNS:
        ds.create_scalar_index(col, "BLOOMFILTER")
    ds.create_scalar_index("txt", "NGRAM")
    ds.insert(rows(40_000, 10_000))
    ds.delete("k % 11 = 3 OR (k >= 15000 AND k < 15500)")
    ds.update({"s": "'moved'", "txt": "'moved text'"}, "k % 101 = 7")
    ds.optimize.optimize_indices(num_indices_to_merge=0)
    lance.dataset(path).insert(rows(50_000, 5_000))
    lance.dataset(path).optimize.compact_files(target_rows_per_fragment=30_000)
    return path


def index_versions(path: str) -> list[int]:
    """Every version from the one with all indices on."""
    import lance

    return [v["version"] for v in lance.dataset(path).versions()][8:]
