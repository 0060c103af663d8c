"""``lance_duck.hybrid_search``: a vector search and a full-text search of one version, mixed as
DuckDB's Lance extension's ``lance_hybrid_search`` mixes them (:mod:`lance_duck.search.hybrid`)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgumentError
from ..search.hybrid import combine
from .filters import ROW_ADDR, ROW_ID
from .nearest import fetch_rows
from .projection import resolve_projection

HYBRID = "_hybrid_score"


def hybrid_search(uri_or_dataset: Any, vector_column: str, vector: Any, text_column: str, query: str, *,
                  k: int = 10, alpha: float = 0.5, oversample_factor: int = 4, nprobs: int | None = None,
                  refine_factor: int | None = None, prefilter: bool = False, use_index: bool = True,
                  filter: Any = None, version: int | str | None = None, asof: Any = None,
                  branch: str | None = None, columns: list[str] | None = None) -> pa.Table:
    """The ``k`` best rows of a vector search and a full-text search mixed: the table's columns,
    then ``_hybrid_score``, ``_distance`` and ``_score`` (null where a side did not find the row).

    Both searches take ``k * oversample_factor`` rows; each side is min-max normalised to [0, 1]
    (distances turned into similarities; a side whose min equals its max scores 0.5; a row a side
    did not find gets 0 from it); ``_hybrid_score = alpha * vector + (1 - alpha) * text`` (alpha
    clamped to [0, 1]), best first.

    Args:
        uri_or_dataset: a table uri or a :class:`LanceDataset`.
        vector_column: the vector search's column (``nearest`` column).
        vector: the query vector.
        text_column: the full-text search's column.
        query: the full-text match query.
        k: rows returned (10).
        alpha: weight of the vector side (0.5; clamped to [0, 1]).
        oversample_factor: each search takes ``k * oversample_factor`` rows (4).
        nprobs: the vector search's ``nprobes``.
        refine_factor: the vector search's ``refine_factor``.
        prefilter: apply ``filter`` before both searches (else to their rows).
        use_index: the vector search uses its index (else flat).
        filter: a filter both searches take.
        version: the version searched (with a uri).
        asof: the version current at this time (with a uri).
        branch: the branch searched (with a uri).
        columns: the table's columns returned, in this order (default all); only the ``k`` rows
            kept are read.

    Returns:
        A pyarrow Table: the columns, ``_hybrid_score``, ``_distance`` and ``_score``, best first.

    Example:
        >>> import lance_duck
        >>> t = lance_duck.hybrid_search("docs.lance", "emb", [0.1, 0.2], "text", "quick fox", k=5)  # doctest: +SKIP
    """
    from .dataset import LanceDataset, dataset
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise InvalidArgumentError(f"hybrid search: k must be a positive integer, got {k!r}")
    if isinstance(oversample_factor, bool) or not isinstance(oversample_factor, int) or oversample_factor <= 0:
        raise InvalidArgumentError(f"hybrid search: oversample_factor must be a positive integer, "
                                   f"got {oversample_factor!r}")
    ds = uri_or_dataset if isinstance(uri_or_dataset, LanceDataset) else \
        dataset(uri_or_dataset, version=version, asof=asof, branch=branch)
    names = [f.name for f in ds.schema]
    if columns is not None:
        if not isinstance(columns, (list, tuple)) or not all(isinstance(c, str) for c in columns):
            raise InvalidArgumentError(f"hybrid search: columns must be a list of column names, got {columns!r}")
        unknown = [c for c in columns if c not in names]
        if unknown:
            raise InvalidArgumentError(f"hybrid search: unknown column(s) {unknown} (the table has {names})")
        names = list(columns)
    n = k * oversample_factor
    nearest: dict[str, Any] = {"column": vector_column, "q": vector, "k": n, "use_index": bool(use_index)}
    if nprobs is not None:
        nearest["nprobes"] = nprobs
    if refine_factor is not None:
        nearest["refine_factor"] = refine_factor
    # both searches return only row ids, addresses and scores; the table's columns are then read
    # for the k rows kept (not for the 2 * k * oversample_factor candidates)
    vec = ds.to_table(columns=[], nearest=nearest, with_row_id=True, with_row_address=True, filter=filter,
                      prefilter=prefilter)
    txt = ds.to_table(columns=[], full_text_query={"query": query, "columns": [text_column]}, limit=n,
                      with_row_id=True, with_row_address=True, filter=filter, prefilter=prefilter)
    vid = vec.column(ROW_ID).to_numpy()
    tid = txt.column(ROW_ID).to_numpy()
    ids, hybrid = combine(vid, vec.column("_distance").to_numpy(zero_copy_only=False), tid,
                          txt.column("_score").to_numpy(zero_copy_only=False), alpha, k)
    rows = _rows_of(ds, names, np.concatenate([vid, tid]),
                    np.concatenate([vec.column(ROW_ADDR).to_numpy(), txt.column(ROW_ADDR).to_numpy()]), ids)

    def side(t: pa.Table, side_ids: np.ndarray, col: str) -> pa.Array:
        pos = {int(r): i for i, r in enumerate(side_ids)}
        vals = t.column(col).to_pylist()
        return pa.array([vals[pos[int(r)]] if int(r) in pos else None for r in ids], pa.float32())

    out = rows.append_column(pa.field(HYBRID, pa.float32()), pa.array(hybrid, pa.float32()))
    out = out.append_column(pa.field("_distance", pa.float32()), side(vec, vid, "_distance"))
    return out.append_column(pa.field("_score", pa.float32()), side(txt, tid, "_score"))


def _rows_of(ds: Any, names: list[str], cand_ids: np.ndarray, cand_addrs: np.ndarray, ids: np.ndarray) -> pa.Table:
    """Columns ``names`` of the rows ``ids`` (row ids among ``cand_ids``, whose addresses are
    ``cand_addrs``), in the order of ``ids``."""
    snap = ds._snapshot
    order = np.argsort(cand_ids, kind="stable")
    addrs = cand_addrs[order[np.searchsorted(cand_ids, ids, sorter=order)]].astype(np.uint64)
    projection = resolve_projection(names + [ROW_ADDR], snap.read_schema, snap.schema)
    table = fetch_rows(snap, {f.id: f for f in snap.fragments}, addrs, projection, None)
    got = table.column(ROW_ADDR).to_numpy()
    pos = np.searchsorted(got, addrs)        # fetch_rows returns address order
    return table.take(pa.array(pos, pa.int64())).select(names)
