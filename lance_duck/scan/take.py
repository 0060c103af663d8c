"""Random access by logical row position (after deletions), like pylance's ``take``."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgumentError
from .execution import ScanContext
from .projection import resolve_projection


def logical_to_physical(fragment, local: np.ndarray) -> np.ndarray:
    """Physical offsets of sorted logical positions within one fragment."""
    if not fragment.num_deletions():
        return local
    d = fragment.deleted_offsets().astype(np.int64)
    # live rows before the i-th deleted row: d[i] - i; each position passes that many deletions
    passed = np.searchsorted(d - np.arange(len(d)), local, side="right")
    return local + passed


def take_rows(snapshot, fragments: Sequence, indices, columns=None, base_filter=None) -> pa.Table:
    if base_filter is not None:
        raise InvalidArgumentError("take() on a filtered dataset is not supported; take from the unfiltered one")
    proj = resolve_projection(columns, snapshot.arrow_schema, snapshot.schema)
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    counts = np.array([f.count_rows() for f in fragments], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)])
    total = int(starts[-1])
    if len(idx) and (idx.min() < -total or idx.max() >= total):
        raise IndexError(f"take: index out of range for {total} rows")
    idx = np.where(idx < 0, idx + total, idx)
    which = np.searchsorted(starts, idx, side="right") - 1
    ctx = ScanContext(snapshot, proj, None)
    batches: list[pa.RecordBatch] = []
    pos = np.empty(len(idx), dtype=np.int64)
    done = 0
    for fi in np.unique(which):
        mask = which == fi
        local = idx[mask] - starts[fi]
        uniq, inverse = np.unique(local, return_inverse=True)
        frag = fragments[int(fi)]
        phys = logical_to_physical(frag, uniq)
        cols = ctx.read_columns(frag, proj.sources, phys)
        batches.append(ctx.assemble(cols, len(phys)))
        pos[mask] = done + inverse
        done += len(uniq)
    table = pa.Table.from_batches(batches, schema=proj.schema)
    return table.take(pa.array(pos)) if len(idx) else table.slice(0, 0)
