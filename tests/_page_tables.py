"""A table whose fixed-width columns pylance writes as pages of different kinds (shared by the
reader's and the scan's tests of pages handed on as chunks)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa


def pages_of_mixed_kinds(n: int, seed: int) -> pa.Table:
    """``id`` (bit-packed pages), ``r`` (flat), ``x`` (flat, nullable), ``mixed`` (page dictionaries
    in its low-cardinality first half, plain pages in its random second half), ``s`` (strings)."""
    r = np.random.default_rng(seed)
    half = n // 2
    return pa.table({
        "id": np.arange(n, dtype=np.int64),
        "r": r.integers(-2**62, 2**62, n),
        "x": pa.array(r.standard_normal(n) * 1e300, mask=r.random(n) < 0.1),
        "mixed": np.concatenate([r.integers(0, 40, half) * 1_000_003,
                                 r.integers(-10**12, 10**12, n - half)]).astype(np.int64),
        "s": pa.array([f"s{k % 977}" for k in range(n)]),
    })


def write_small_pages(t: pa.Table, path: str, **kw: object) -> None:
    """``t`` written by pylance (2.2) in pages of 5,000 rows."""
    import lance
    lance.write_dataset(pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=5000)), path,
                        data_storage_version="2.2", data_cache_bytes=4096, **kw)
