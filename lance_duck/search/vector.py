"""Vector search policy over one pinned version: which index, which fragments are searched flat,
what is masked, refine, and the merge -- with pylance 14.0.2's semantics.

The rows come from a :class:`VectorSource` (the scan layer implements it); index segments are
opened through :mod:`lance_duck.index.vector`. Per query:

1. With ``use_index`` and a vector index on the column whose metric is the one asked (or none asked),
   every segment covering a searched fragment returns its top ``k * refine_factor`` with a ``keep``
   mask (deleted rows, vanished fragments, a prefilter's allow-list); the fragments no segment covers
   are searched flat (exactly) unless ``fast_search``; a query without a usable index (or
   ``use_index=False``, or another metric) is searched flat over every fragment.
2. ANN candidates are merged by (distance, row id); ``refine_factor`` recomputes their exact
   distances on the stored vectors and keeps k -- so does a search that also reads unindexed
   fragments (pylance ranks that union on exact distances); then the flat results join and the
   best k remain.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..errors import UnsupportedFeatureError
from .distance import distances, prepare_rows
from .nearest import NearestQuery
from .topk import TopK, smallest

VECTOR_DETAILS = "VectorIndexDetails"

Keep = Callable[[np.ndarray], np.ndarray]


class VectorSource(Protocol):
    """What a vector search reads, implemented by the scan layer over one snapshot."""

    snapshot: Any

    @property
    def fragment_ids(self) -> Sequence[int]:
        """The fragments searched (scan order)."""
        ...

    def flat(self, fragment_ids: Sequence[int]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Blocks of (row ids uint64, vectors (n, dim)) of the rows searched in ``fragment_ids``
        (live, passing a prefilter), read within the scan's memory budget."""
        ...

    def vectors(self, row_ids: np.ndarray) -> np.ndarray:
        """The stored vectors (n, dim) of live rows, in the order of ``row_ids``."""
        ...

    def keep(self, covered: frozenset[int]) -> Keep:
        """A mask of the row ids an index segment covering the fragments ``covered`` may return:
        live rows that are still in one of those fragments (a row moved since, e.g. by an update
        under stable row ids, is searched where it is now) and searched (passing a prefilter)."""
        ...


@dataclass
class VectorPlan:
    """What a search did (for EXPLAIN and traces)."""

    metric: str
    index_name: str | None = None
    index_type: str | None = None
    segments: list[str] = field(default_factory=list)          # uuids searched
    flat_fragments: list[int] = field(default_factory=list)    # fragments searched exactly

    def describe(self) -> str:
        """One line: the index used (or none) and the fragments searched flat."""
        if self.index_name is None:
            return f"flat KNN (metric={self.metric}) over fragments {self.flat_fragments}"
        flat = f", flat KNN over unindexed fragments {self.flat_fragments}" if self.flat_fragments else ""
        return (f"index {self.index_name!r} ({self.index_type}, metric={self.metric}, "
                f"{len(self.segments)} segment(s)){flat}")


def vector_segments(snapshot: Any, column: str) -> list[Any]:
    """The manifest's segments of the first vector index on ``column`` (top-level name)."""
    from ..index import index_segments
    field_id = next((f.id for f in snapshot.schema.fields if f.name == column), None)
    segs = [s for s in index_segments(snapshot)
            if s.type_url.endswith(VECTOR_DETAILS) and s.fields == (field_id,)]
    if not segs:
        return []
    first = segs[0].name
    return [s for s in segs if s.name == first]


def plan_search(query: NearestQuery, source: VectorSource, fast_search: bool) -> tuple[VectorPlan, list[Any]]:
    """(the plan, the opened index segments) for ``query`` over ``source`` -- reads index
    metadata only. An index lance_duck cannot read raises UnsupportedFeatureError naming it."""
    live = list(source.fragment_ids)
    segs = vector_segments(source.snapshot, query.column) if query.use_index else []
    if not segs:
        if fast_search and query.use_index:
            return VectorPlan(query.metric or query.default_metric), []   # pylance: nothing indexed, nothing found
        return VectorPlan(query.metric or query.default_metric, flat_fragments=live), []
    from ..index.vector import open_vector_segment
    live_set = set(live)
    opened = []
    for s in segs:
        if not s.fragment_ids & live_set:
            continue
        try:
            opened.append(open_vector_segment(source.snapshot, s))
        except UnsupportedFeatureError as exc:
            raise UnsupportedFeatureError(f"{exc}; pass nearest={{..., 'use_index': False}} to search exactly "
                                          "without the index") from exc
    index_metric = opened[0].metric if opened else None
    if index_metric is not None and query.metric is not None and query.metric != index_metric:
        # pylance searches exactly when the metric asked is not the index's
        return VectorPlan(query.metric, flat_fragments=live), []
    covered = set().union(*(s.fragment_ids for s in segs))
    flat = [] if fast_search else [f for f in live if f not in covered]
    plan = VectorPlan(index_metric or query.metric or query.default_metric, index_name=segs[0].name,
                      index_type=opened[0].index_type if opened else segs[0].index_type,
                      segments=[s.uuid for s in opened], flat_fragments=flat)
    return plan, opened


def search(query: NearestQuery, source: VectorSource, *,
           fast_search: bool) -> tuple[VectorPlan, list[tuple[np.ndarray, np.ndarray]]]:
    """Run ``query``: (the plan, per query vector (row ids uint64, distances float32) sorted by
    (distance, row id), at most k each).

    Example::

        plan, results = search(parse_nearest(spec, schema), source, fast_search=False)
    """
    plan, opened = plan_search(query, source, fast_search)
    k, metric = query.k, plan.metric
    results = [(np.empty(0, np.uint64), np.empty(0, np.float32)) for _ in range(len(query.queries))]
    if opened:
        keeps = [source.keep(frozenset(seg.fragment_ids)) for seg in opened]
        rf = query.refine_factor or 1
        for i, q in enumerate(query.queries):
            qf = np.asarray(q, dtype=np.float32)
            got = [seg.search(qf, k * rf, minimum_nprobes=query.minimum_nprobes,
                              maximum_nprobes=query.maximum_nprobes, ef=query.ef, keep=keep,
                              refine_factor=query.refine_factor, distance_range=query.distance_range)
                   for seg, keep in zip(opened, keeps)]
            ids = np.concatenate([g[0] for g in got]).astype(np.uint64, copy=False)
            dist = np.concatenate([g[1] for g in got]).astype(np.float32, copy=False)
            if query.refine_factor is not None or plan.flat_fragments:
                # pylance re-scores ANN rows exactly when refining, and whenever unindexed
                # fragments are searched too (their union is ranked on exact distances)
                ids, dist = smallest(ids, dist, k * rf)
                dist = distances(q, source.vectors(ids), metric) if len(ids) else dist
            ids, dist = _in_range(ids, dist, query.distance_range)
            results[i] = smallest(ids, dist, k)
    if plan.flat_fragments:
        flat = flat_search(query, source, plan.flat_fragments, metric)
        results = [smallest(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]), k)
                   for a, b in zip(results, flat)]
    return plan, results


def flat_search(query: NearestQuery, source: VectorSource, fragment_ids: Sequence[int],
                metric: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Exact top-k of every query over ``fragment_ids``: one pass over the vectors, block by block."""
    tops = [TopK(query.k) for _ in range(len(query.queries))]
    for ids, vecs in source.flat(fragment_ids):
        if not len(ids):
            continue
        if metric == "l2" and query.distance_range is None and len(ids) > 4 * query.k:
            for j, (rows, exact) in enumerate(l2_candidates(query.queries, vecs, query.k, tops)):
                tops[j].push(ids[rows], exact)
            continue
        for q, top in zip(query.queries, tops):
            got_ids, got = _in_range(ids, distances(q, vecs, metric), query.distance_range)
            top.push(got_ids, got)
    return [t.result() for t in tops]


def l2_candidates(queries: np.ndarray, x: np.ndarray, k: int,
                  tops: Sequence[TopK]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Per query, (rows of ``x`` that may be among its k nearest, their exact l2 distances).

    The block is ranked with one matrix product (``|x|^2 - 2 x.q + |q|^2``); every row whose
    estimate is within the product's rounding bound of the k-th best (of this block, and of the
    query's top so far) has its distance computed exactly as ``sum((x - q)^2)``, so the distances and
    order are those of the exact formula.
    """
    x = prepare_rows(x, "l2")
    qs = queries.astype(x.dtype, copy=False)
    xn = np.einsum("ij,ij->i", x, x)
    qn = np.einsum("ij,ij->i", qs, qs)
    # einsum, not BLAS: OpenBLAS's threads on these thin products cost 100x their work when the
    # cores are busy (measured: 17.8 ms vs 0.14 ms for 16k x 128 at load 13 on 2 cores)
    dots = np.einsum("ij,kj->ik", x, qs)               # (n, m)
    unit = np.finfo(x.dtype).eps * 2 * (x.shape[1] + 4)     # a worst-case bound of the sums' rounding
    for j in range(len(qs)):
        est = xn - 2 * dots[:, j] + qn[j]
        slack = unit * (xn + qn[j]) + np.finfo(x.dtype).tiny
        kth = np.partition(est, k - 1)[k - 1]
        bound = kth + 2 * slack.max()
        worst = tops[j].worst()
        if worst is not None:
            bound = min(bound, float(worst) + 2 * slack.max())
        rows = np.flatnonzero(est - slack <= bound)
        yield rows, distances(queries[j], x[rows], "l2")


def _in_range(ids: np.ndarray, dist: np.ndarray,
              bounds: tuple[float | None, float | None] | None) -> tuple[np.ndarray, np.ndarray]:
    """Rows whose distance is in [lower, upper) (pylance's ``distance_range``)."""
    if bounds is None:
        return ids, dist
    ok = np.ones(len(dist), dtype=bool)
    if bounds[0] is not None:
        ok &= dist >= np.float32(bounds[0])
    if bounds[1] is not None:
        ok &= dist < np.float32(bounds[1])
    return ids[ok], dist[ok]
