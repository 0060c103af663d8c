"""One IVF vector segment: centroids (index.idx), partition row ranges and codes (auxiliary.idx), probing.

Only the probed partitions' rows of ``auxiliary.idx`` are read (one row range per partition, decoded
payloads kept in the index cache), and for HNSW variants the probed partitions' graph rows of index.idx.
"""
from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any, Callable, cast

import numpy as np
import pyarrow as pa
from google.protobuf.message import DecodeError

from ... import trace
from ..._proto import index_pb2
from ...errors import CorruptFileError, InvalidArgumentError, UnsupportedFeatureError
from ..files import IndexFile, cached, segment_file_path
from ..metadata import IndexSegment
from .probes import initial_probes
from .rabitq import RQPayload, RQQuery, RQStorage
from .storage import (F32, FlatStorage, PQStorage, SQStorage, Storage, normalized, popcount_rows, storage_metadata,
                      tensor_array)

if TYPE_CHECKING:
    from ...table.snapshot import Snapshot

VECTOR_DETAILS = "lance.index.pb.VectorIndexDetails"
METRICS = {index_pb2.L2: "l2", index_pb2.Cosine: "cosine", index_pb2.Dot: "dot", index_pb2.Hamming: "hamming"}
IMPLEMENTED = ("IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_RQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ", "IVF_HNSW_SQ")
KNOWN = IMPLEMENTED


def _ivf(file: IndexFile, with_centroids: bool) -> index_pb2.IVF:
    meta = file.metadata
    try:
        pos = int(meta.get("lance:ivf", ""))
    except ValueError:
        raise CorruptFileError(f"{file.path}: schema metadata 'lance:ivf' = {meta.get('lance:ivf')!r} "
                               "is not a global buffer number") from None
    c = getattr(file.reader, "container")
    if not 0 < pos < len(c.global_buffers):
        raise CorruptFileError(f"{file.path}: IVF global buffer {pos} does not exist "
                               f"(file has {len(c.global_buffers)})")
    ivf = index_pb2.IVF()
    try:
        ivf.ParseFromString(bytes(c.global_buffer(pos)))
    except DecodeError as exc:
        raise CorruptFileError(f"{file.path}: IVF message is corrupt: {exc}") from None
    if with_centroids and not ivf.HasField("centroids_tensor"):
        raise CorruptFileError(f"{file.path}: IVF message has no centroids")
    return ivf


def _ranges(ivf: index_pb2.IVF, rows: int, path: str, what: str) -> tuple[np.ndarray, np.ndarray]:
    offs = np.asarray(ivf.offsets, dtype=np.int64)
    lens = np.asarray(ivf.lengths, dtype=np.int64)
    if len(offs) != len(lens):
        raise CorruptFileError(f"{path}: {len(offs)} partition offsets but {len(lens)} lengths")
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]]) if len(lens) else lens
    if not np.array_equal(offs, starts) or int(lens.sum()) != rows:
        raise CorruptFileError(f"{path}: partition {what} (offsets {offs.tolist()[:8]}..., lengths "
                               f"{lens.tolist()[:8]}...) do not tile the file's {rows} rows")
    return offs, lens


class IvfSegment:
    """An IVF_* vector segment (see :class:`lance_duck.index.vector.VectorSegment`)."""

    def __init__(self, snapshot: Snapshot, segment: IndexSegment, index_type: str, metric: str,
                 index_file: IndexFile, aux_file: IndexFile) -> None:
        self.uuid = segment.uuid
        self.name = segment.name
        self.index_type = index_type
        self.metric = metric
        self.fragment_ids = segment.fragment_ids
        self.index_file, self.aux_file = index_file, aux_file
        ipath, apath = index_file.path, aux_file.path
        ivf = _ivf(index_file, True)
        t = ivf.centroids_tensor
        centroids = tensor_array(t, ipath, "centroids tensor")
        if centroids.ndim != 2 or 0 in centroids.shape:
            raise CorruptFileError(f"{ipath}: centroids tensor of shape {list(t.shape)}, expected [partitions, dim]")
        if (metric == "hamming") != (centroids.dtype == np.uint8):
            raise CorruptFileError(f"{ipath}: {centroids.dtype} centroids for a {metric} index")
        p, dim = centroids.shape
        self.work = np.float64 if centroids.dtype == np.float64 else F32
        self.vector_type = centroids.dtype
        self.centroids = centroids if metric == "hamming" else centroids.astype(self.work)
        self.num_partitions, self.dim = p, dim
        aux_ivf = _ivf(aux_file, False)
        self.offsets, self.lengths = _ranges(aux_ivf, aux_file.num_rows, apath, "row ranges")
        if len(self.lengths) != p:
            raise CorruptFileError(f"{apath}: {len(self.lengths)} partitions, but {ipath} has {p} centroids")
        aux_metric = aux_file.metadata.get("distance_type")
        if aux_metric is not None and aux_metric != metric:
            raise CorruptFileError(f"{apath}: distance_type {aux_metric!r} but the index's is {metric!r}")
        self.storage = self._storage(aux_file)
        self.storage.vector_type = self.vector_type
        self.graph = None
        if "HNSW" in index_type:
            from .hnsw import HnswGraphs
            self.graph = HnswGraphs(index_file, _ranges(ivf, index_file.num_rows, ipath, "graph ranges"),
                                    self.lengths)

    def _storage(self, aux: IndexFile) -> Storage:
        kind = self.index_type.rsplit("_", 1)[-1]
        meta = storage_metadata(aux.metadata, aux.path)
        if kind == "FLAT":
            if meta.get("dim") != self.dim:
                raise CorruptFileError(f"{aux.path}: flat dimension {meta.get('dim')} is not the index's {self.dim}")
            flat = FlatStorage(self.metric, self.dim, aux.path, self.work)
            t = aux.field("flat").arrow_type
            values_ok = (pa.types.is_uint8(t.value_type) if self.metric == "hamming"
                         else pa.types.is_floating(t.value_type)) if pa.types.is_fixed_size_list(t) else False
            if not values_ok or t.list_size != self.dim:
                raise CorruptFileError(f"{aux.path}: column 'flat' is {t}, expected {self.dim} "
                                       f"{'uint8' if self.metric == 'hamming' else 'float'} values per row")
            flat.dtype = t.value_type.to_pandas_dtype()
            return flat
        if kind == "SQ":
            return SQStorage(self.metric, self.dim, aux.path, meta, self.work)
        if kind == "RQ":
            return RQStorage(self.metric, self.dim, aux.path, meta)
        pos = meta.get("codebook_position")
        c = getattr(aux.reader, "container")
        if not isinstance(pos, int) or not 0 < pos < len(c.global_buffers):
            raise CorruptFileError(f"{aux.path}: PQ codebook_position {pos!r} is not a global buffer of the file")
        cb = index_pb2.Tensor()
        try:
            cb.ParseFromString(bytes(c.global_buffer(pos)))
        except DecodeError as exc:
            raise CorruptFileError(f"{aux.path}: PQ codebook is corrupt: {exc}") from None
        return PQStorage(self.metric, self.dim, aux.path, meta, cb, self.work)

    # -- reading ---------------------------------------------------------------------------
    def partition(self, p: int) -> tuple[np.ndarray, object]:
        """(row ids, payload) of partition ``p`` (read once, then cached)."""
        def load() -> tuple[np.ndarray, object]:
            start, n = int(self.offsets[p]), int(self.lengths[p])
            names = ("_rowid",) + self.storage.columns
            arrays = self.aux_file.read(names, range(start, start + n))
            if any(len(a) != n for a in arrays):
                raise CorruptFileError(f"{self.aux_file.path}: partition {p} read {[len(a) for a in arrays]} "
                                       f"rows, expected {n}")
            if arrays[0].null_count:
                raise CorruptFileError(f"{self.aux_file.path}: partition {p} has null _rowid values")
            ids = arrays[0].to_numpy(zero_copy_only=False).astype(np.uint64, copy=False)
            trace.record("vector:read-partition", (self.aux_file.path, p, n))
            return ids, self.storage.decode(list(arrays[1:]), n)
        return cached(("vector-partition", self.aux_file.path, p), load)

    def prewarm(self) -> None:
        """Read every partition (and HNSW graph) into the index cache (``prewarm_index``)."""
        for p in range(self.num_partitions):
            self.partition(p)
            if self.graph is not None:
                self.graph.graph(p)

    # -- search ----------------------------------------------------------------------------
    def partition_order(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Partitions nearest first (ties by partition number) and their float32 centroid distances:
        squared L2 (of the normalized query for cosine), 1 - q.c for dot."""
        c = self.centroids
        if self.metric == "hamming":
            d = popcount_rows(c ^ q).astype(F32)
        elif self.metric == "dot":
            d = (self.work(1) - c @ q.astype(self.work)).astype(F32)
        else:
            qs = q.astype(self.work)
            qs = normalized(qs).astype(self.vector_type).astype(self.work) if self.metric == "cosine" else qs
            diff = c - qs
            if self.work is F32 and self.dim > LANES:
                d = lane_l2(diff)
            else:
                d = np.einsum("ij,ij->i", diff, diff).astype(F32)
        order = np.argsort(d, kind="stable")
        return order, d[order]

    def initial_probes(self, dists: np.ndarray, k: int, minimum: int, maximum: int | None) -> int:
        """How many partitions pylance 14.0.2 probes before its late search, for the user's ``k``
        (see probes.py)."""
        return initial_probes(dists, k, minimum, maximum, self.metric, True)

    def search(self, q: np.ndarray, k: int, *, minimum_nprobes: int, maximum_nprobes: int | None,
               ef: int | None, keep: Callable[[np.ndarray], Any] | None = None, refine_factor: int | None = None,
               distance_range: tuple[float | None, float | None] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """See :meth:`lance_duck.index.vector.VectorSegment.search`."""
        q = np.ascontiguousarray(q)
        if self.metric == "hamming":
            if q.dtype != np.uint8 and not (np.all(np.isfinite(q)) and np.all((q >= 0) & (q <= 255) & (q == np.round(q)))):
                raise InvalidArgumentError(f"index {self.name!r}: a hamming query holds bytes (0-255)")
            q = q.astype(np.uint8)
        else:   # the query in the vectors' own type first (pylance casts it to the column's type)
            q = q.astype(self.vector_type).astype(self.work)
        if q.shape != (self.dim,):
            raise InvalidArgumentError(f"index {self.name!r}: query of shape {q.shape} against a "
                                       f"{self.dim}-dimensional index")
        order, dists = self.partition_order(q)
        user_k = k if not refine_factor or refine_factor <= 1 else max(1, k // int(refine_factor))
        first = self.initial_probes(dists, user_k, int(minimum_nprobes), maximum_nprobes)
        last = self.num_partitions if maximum_nprobes is None else min(int(maximum_nprobes), self.num_partitions)
        last = max(first, last)
        qs = self.storage.query(q)
        bounds = None if distance_range is None or distance_range == (None, None) else (
            -np.inf if distance_range[0] is None else float(F32(distance_range[0])),
            np.inf if distance_range[1] is None else float(F32(distance_range[1])))
        ids_parts: list[np.ndarray] = []
        dist_parts: list[np.ndarray] = []
        kept = 0
        heap: list[tuple[float, int]] = []      # IVF_RQ: pylance's top-k heap, shared by the probed partitions
        for i, p in enumerate(order[:last]):
            if i >= first and kept >= k:
                break
            ids, dist = self._probe(int(p), qs, k, ef, keep, bounds, heap)
            ids_parts.append(ids)
            dist_parts.append(dist)
            kept += len(ids)
        if not ids_parts:
            return np.zeros(0, np.uint64), np.zeros(0, F32)
        return top_k(np.concatenate(ids_parts), np.concatenate(dist_parts), k)

    def _probe(self, p: int, qs: object, k: int, ef: int | None, keep: Callable[[np.ndarray], Any] | None,
               bounds: tuple[float, float] | None, heap: list[tuple[float, int]] | None = None) -> tuple[np.ndarray, np.ndarray]:
        ids, payload = self.partition(p)
        trace.record("vector:probe", (self.uuid, p))
        if not len(ids):
            return ids, np.zeros(0, F32)
        if isinstance(self.storage, RQStorage):     # the mask asked only of the rows its gate lets through
            return self.storage.gated(cast(RQQuery, qs), self.centroids[p], cast(RQPayload, payload), ids, keep, k, [] if heap is None else heap,
                                      bounds)
        mask = None if keep is None else self._mask(p, ids, keep)
        score = self.storage.scorer(qs, self.centroids[p], payload)
        if self.graph is not None:
            sel, dist = self.graph.search(p, score, len(ids), k, ef, mask, bounds)
            return ids[sel], dist
        dist = score(None).astype(F32, copy=False)
        if bounds is not None:     # [lower, upper), applied before the top-k as pylance does
            inside = (dist >= bounds[0]) & (dist < bounds[1])
            mask = inside if mask is None else mask & inside
        if mask is not None:
            return ids[mask], dist[mask]
        return ids, dist


    def _mask(self, p: int, ids: np.ndarray, keep: Callable[[np.ndarray], Any]) -> np.ndarray:
        """``keep`` of partition ``p``'s rows; kept in the index cache when ``keep`` has a ``key``
        (what its answer depends on besides the row ids: deletions, fragments, no prefilter)."""
        key = getattr(keep, "key", None)
        if key is None:
            return np.asarray(keep(ids), dtype=bool)
        return cached(("vector-keep", self.aux_file.path, p, key), lambda: np.asarray(keep(ids), dtype=bool))


#: float32 lanes of pylance's squared-L2 kernel for vectors of more than this many dimensions
LANES = 16


def lane_l2(diff: np.ndarray) -> np.ndarray:
    """Squared norms of the float32 rows of ``diff`` summed in pylance's order (vectors of more than
    :data:`LANES` dimensions): each of 16 lanes adds its squares chunk by chunk, the lanes are then
    added one after the other, after the squares of a remainder (dimensions past the last whole
    chunk) -- so near ties between centroids rank as pylance ranks them."""
    sq = diff * diff
    whole = sq.shape[1] // LANES * LANES
    lanes = sq[:, :LANES].copy()
    for j in range(LANES, whole, LANES):
        lanes += sq[:, j:j + LANES]
    total = np.zeros(len(sq), dtype=F32)
    for j in range(whole, sq.shape[1]):
        total += sq[:, j]
    lane_sum = np.zeros(len(sq), dtype=F32)
    for i in range(LANES):
        lane_sum += lanes[:, i]
    total += lane_sum
    return total


def top_k(ids: np.ndarray, dist: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` smallest by (distance, row id), sorted (NaN distances last)."""
    if len(ids) > k:
        kth = np.partition(dist, k - 1)[k - 1]
        sel = dist <= kth
        if np.isnan(kth):
            sel |= np.isnan(dist)
        ids, dist = ids[sel], dist[sel]
    order = np.lexsort((ids, dist))[:k]
    return ids[order], dist[order]


def open_ivf_segment(snapshot: Snapshot, segment: IndexSegment) -> IvfSegment:
    """Open the segment's two files and check what they say about each other."""
    if segment.type_url.rsplit("/", 1)[-1] != VECTOR_DETAILS:
        raise UnsupportedFeatureError(f"index {segment.name!r} of type {segment.type_url!r} is not a vector index")
    details = index_pb2.VectorIndexDetails()
    try:
        details.ParseFromString(segment.details)
    except DecodeError as exc:
        raise CorruptFileError(f"index {segment.name!r}: VectorIndexDetails are corrupt: {exc}") from None
    metric = METRICS.get(details.metric_type)
    sizes = dict(segment.files)
    for name in ("index.idx", "auxiliary.idx"):
        if segment.files and name not in sizes:
            raise CorruptFileError(f"index {segment.name!r}: segment {segment.uuid} lists no {name}")

    def make() -> IvfSegment:
        ipath = segment_file_path(snapshot, segment, "index.idx")
        index_file = IndexFile(snapshot.io, ipath, sizes.get("index.idx") or None)
        try:
            head = json.loads(index_file.metadata.get("lance:index", ""))
            index_type, dist_type = str(head["type"]), str(head["distance_type"])
        except (ValueError, KeyError, TypeError):
            raise CorruptFileError(f"{ipath}: schema metadata 'lance:index' = "
                                   f"{index_file.metadata.get('lance:index')!r} names no index type") from None
        if index_type not in IMPLEMENTED:
            known = "lance_duck does not read it yet" if index_type in KNOWN else "an unknown vector index type"
            raise UnsupportedFeatureError(f"index {segment.name!r}: {index_type} ({known}); "
                                          "search with use_index=False")
        expected = 2 if index_type == "IVF_RQ" else 1
        if segment.index_version != expected:
            raise UnsupportedFeatureError(f"index {segment.name!r}: {index_type} index version "
                                          f"{segment.index_version} (lance_duck reads version {expected}); "
                                          "search with use_index=False")
        if metric is None or dist_type != metric:
            raise CorruptFileError(f"{ipath}: distance_type {dist_type!r} but the manifest says "
                                   f"{metric or details.metric_type!r}")
        if metric == "hamming" and index_type not in ("IVF_FLAT", "IVF_HNSW_FLAT"):
            raise UnsupportedFeatureError(f"index {segment.name!r}: {index_type} with hamming distance; "
                                          "search with use_index=False")
        apath = segment_file_path(snapshot, segment, "auxiliary.idx")
        aux_file = IndexFile(snapshot.io, apath, sizes.get("auxiliary.idx") or None)
        return IvfSegment(snapshot, segment, index_type, metric, index_file, aux_file)

    core = cached(("vector-segment", segment_file_path(snapshot, segment, "index.idx")), make)
    if core.fragment_ids == segment.fragment_ids and core.name == segment.name:
        return core
    view = copy.copy(core)       # the same files and caches; this manifest's name and fragments
    view.fragment_ids, view.name = segment.fragment_ids, segment.name
    return view
