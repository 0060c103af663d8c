"""Random access by logical row position (after deletions), like pylance's ``take``."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgumentError, RowIndexError
from .execution import ScanContext
from .projection import Projection, resolve_projection

if TYPE_CHECKING:
    from ..table.fragment import FragmentInfo
    from ..table.snapshot import Snapshot


def logical_to_physical(fragment: FragmentInfo, local: np.ndarray) -> np.ndarray:
    """Physical offsets of sorted logical positions within one fragment."""
    if not fragment.num_deletions():
        return local
    d = fragment.deleted_offsets().astype(np.int64)
    # live rows before the i-th deleted row: d[i] - i; each position passes that many deletions
    passed = np.searchsorted(d - np.arange(len(d)), local, side="right")
    return local + passed


def take_rows(snapshot: Snapshot, fragments: Sequence[FragmentInfo], indices: Any, columns: Any = None,
              base_filter: Any = None,
              child_order: str = "schema") -> pa.Table:
    """Rows at logical positions of ``fragments``. Nested names (``"s.a"``) give pruned structs
    as pylance's take does: top-level columns in the order named, struct children in schema
    order (``child_order="schema"``, dataset take) or in the order named (fragment take)."""
    if base_filter is not None:
        raise InvalidArgumentError("take() on a filtered dataset is not supported; take from the unfiltered one")
    if columns is None:        # (every column: the projection is made once per snapshot)
        proj = snapshot.derived("_take_every_column",
                                lambda: resolve_projection(None, snapshot.read_schema, snapshot.schema))
    else:
        proj = resolve_projection(columns, snapshot.read_schema, snapshot.schema)
    if isinstance(indices, range) and indices.step == 1 and indices.start >= 0 and proj.is_plain:
        total = sum(f.count_rows() for f in fragments)
        if indices.stop <= total:
            return _take_run(snapshot, fragments, indices, proj)
    if any(o.path for o in proj.outputs):
        trees = _prune_trees(proj)
        whole = _take(snapshot, fragments, indices, resolve_projection(list(trees), snapshot.read_schema,
                                                                       snapshot.schema))
        cols = [_prune(whole.column(name), node, child_order) for name, node in trees.items()]
        return pa.Table.from_arrays(cols, names=list(trees))
    return _take(snapshot, fragments, indices, proj)


class _Node:
    """Which part of a struct a take keeps: the whole of it, and/or children by index."""

    def __init__(self) -> None:
        self.whole = False
        self.kids: dict[int, "_Node"] = {}


def _prune_trees(proj: Projection) -> dict[str, _Node]:
    trees: dict[str, _Node] = {}
    for o in proj.outputs:
        node = trees.setdefault(o.source, _Node())
        for i in o.path:
            node = node.kids.setdefault(i, _Node())
        node.whole = True
    return trees


def _prune(arr: Any, node: _Node, order: str, whole: bool = False) -> Any:
    """``arr`` with only the struct children ``node`` keeps (struct validity preserved)."""
    whole = whole or node.whole
    if isinstance(arr, pa.ChunkedArray):
        chunks = [_prune(c, node, order, whole) for c in arr.chunks]
        return pa.chunked_array(chunks, type=chunks[0].type if chunks else None) if chunks else arr
    if not pa.types.is_struct(arr.type) or (whole and (order == "schema" or not node.kids)):
        return arr
    idx = list(node.kids)
    if whole:
        idx += [i for i in range(arr.type.num_fields) if i not in node.kids]
    if order == "schema":
        idx.sort()
    kids = [_prune(arr.field(i), node.kids.get(i) or _Node(), order, whole) for i in idx]
    fields = [arr.type.field(i).with_type(k.type) for i, k in zip(idx, kids)]
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays(kids, fields=fields, mask=mask)


def _take(snapshot: Snapshot, fragments: Sequence[FragmentInfo], indices: Any, proj: Projection) -> pa.Table:
    try:
        raw = indices.to_numpy(zero_copy_only=False) if isinstance(indices, (pa.Array, pa.ChunkedArray)) \
            else np.asarray(indices)
    except (TypeError, ValueError, pa.ArrowException) as e:
        raise InvalidArgumentError(f"take: indices must be a list of integers ({e})") from None
    if raw.size and raw.dtype.kind not in "iu":
        raise InvalidArgumentError(f"take: indices must be integers, not {raw.dtype} ({indices!r:.80})")
    idx = raw.astype(np.int64).reshape(-1)
    counts = np.array([f.count_rows() for f in fragments], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)])
    total = int(starts[-1])
    if len(idx) and (idx.min() < -total or idx.max() >= total):
        raise RowIndexError(f"take: index out of range for {total} rows (largest position {total - 1})")
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
    if len(batches) > 1:
        table = _dictionary_nulls_as_index_nulls(table)
    if not len(idx):
        return table.slice(0, 0)
    if done == len(idx) and bool((pos[1:] > pos[:-1]).all()):
        return table        # increasing positions, no repeats: the rows are in the order asked
    return table.take(pa.array(pos))


def _take_run(snapshot: Snapshot, fragments: Sequence[FragmentInfo], rows: range, proj: Projection) -> pa.Table:
    """:func:`_take` of consecutive in-bounds positions (a ``range``, step 1): each fragment's
    share located with Python ints, already in order, nothing to reorder or deduplicate."""
    ctx = ScanContext(snapshot, proj, None)
    batches: list[pa.RecordBatch] = []
    base = 0
    for frag in fragments:
        if base >= rows.stop:
            break
        n = frag.count_rows()
        lo, hi = max(rows.start, base), min(rows.stop, base + n)
        if lo < hi:
            phys = logical_to_physical(frag, np.arange(lo - base, hi - base, dtype=np.int64))
            batches.append(ctx.assemble(ctx.read_columns(frag, proj.sources, phys), len(phys)))
        base += n
    table = pa.Table.from_batches(batches, schema=proj.schema)
    return _dictionary_nulls_as_index_nulls(table) if len(batches) > 1 else table


def _dictionary_nulls_as_index_nulls(table: pa.Table) -> pa.Table:
    """Dictionary columns whose dictionaries hold a null, rewritten so the null is in the indices:
    Arrow cannot unify such dictionaries across fragments (``Table.take`` needs it); the values
    read are unchanged (pylance's take returns them the same way)."""
    for i, col in enumerate(table.columns):
        if pa.types.is_dictionary(col.type) and any(c.dictionary.null_count for c in col.chunks):
            table = table.set_column(i, table.field(i), pa.chunked_array(
                [_move_nulls_to_indices(c) for c in col.chunks], type=col.type))
    return table


def _move_nulls_to_indices(arr: pa.DictionaryArray) -> pa.DictionaryArray:
    d = arr.dictionary
    if not d.null_count:
        return arr
    valid = np.asarray(d.is_valid())
    new_pos = np.cumsum(valid) - 1                       # old dictionary position -> new one
    mapping = pa.array(new_pos.astype(arr.indices.type.to_pandas_dtype()), mask=~valid)
    indices = mapping.take(arr.indices)                  # null where the value was a null entry
    return pa.DictionaryArray.from_arrays(indices, d.filter(pa.array(valid)))
