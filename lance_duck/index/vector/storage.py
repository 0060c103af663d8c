"""The quantized vectors of ``auxiliary.idx``: FLAT, PQ and SQ storages, their per-partition decoding and the
distances pylance reports for them (``_distance`` before any refine).

Verified arithmetic (../shared/format/vector-and-fts-indices.md §3): cosine works on the normalized query;
PQ scores residuals (query minus the partition's centroid) for l2 and cosine (a squared L2, also for cosine)
and the raw query for dot; SQ quantizes the query too for l2 / cosine and dequantizes the codes for dot.
"""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from ...errors import CorruptFileError, UnsupportedFeatureError
from ..._proto import index_pb2

F32 = np.float32


def fsl_matrix(arr: pa.Array, width: int, dtype, path: str, column: str) -> np.ndarray:
    """A fixed-size-list column as a (rows, width) numpy matrix of ``dtype`` (no nulls allowed)."""
    if not pa.types.is_fixed_size_list(arr.type) or arr.type.list_size != width:
        raise CorruptFileError(f"{path}: column {column!r} is {arr.type}, expected {width} values per row")
    if arr.null_count:
        raise CorruptFileError(f"{path}: column {column!r} has null rows")
    values = arr.flatten().to_numpy(zero_copy_only=False)
    if len(values) != len(arr) * width:
        raise CorruptFileError(f"{path}: column {column!r} has {len(values)} values for {len(arr)} rows")
    return values.reshape(len(arr), width).astype(dtype, copy=False)


def storage_metadata(meta: dict[str, str], path: str) -> dict:
    """The inner JSON of ``storage_metadata`` (a JSON list holding one JSON string)."""
    raw = meta.get("storage_metadata")
    if raw is None:
        raise CorruptFileError(f"{path}: no storage_metadata in the schema metadata")
    try:
        outer = json.loads(raw)
        inner = json.loads(outer[0]) if isinstance(outer, list) and outer else None
    except (ValueError, TypeError) as exc:
        raise CorruptFileError(f"{path}: storage_metadata is not JSON: {exc}") from None
    if not isinstance(inner, dict):
        raise CorruptFileError(f"{path}: storage_metadata is not a list of one JSON object")
    return inner


def _int(d: dict, key: str, path: str) -> int:
    v = d.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise CorruptFileError(f"{path}: storage_metadata {key!r} = {v!r} is not a count")
    return v


def normalized(q: np.ndarray) -> np.ndarray:
    n = np.sqrt(np.dot(q, q))
    return q if n == 0 else (q / n).astype(F32)


class Storage:
    """One storage kind: the aux columns it reads, partition decoding and distances."""

    columns: tuple[str, ...] = ()
    dtype: object = None      # FLAT: the stored vectors' numpy type

    def __init__(self, metric: str, dim: int, path: str):
        self.metric = metric
        self.dim = dim
        self.path = path

    def decode(self, arrays: list[pa.Array], n: int) -> object:
        """The partition's payload from its aux columns (``n`` rows)."""
        raise NotImplementedError

    def query(self, q: np.ndarray) -> object:
        """Per-query state shared by every partition."""
        return normalized(q) if self.metric == "cosine" else q

    def distances(self, qs, centroid: np.ndarray, payload) -> np.ndarray:
        """float32 distances of every row of a partition."""
        raise NotImplementedError


class FlatStorage(Storage):
    columns = ("flat",)

    def decode(self, arrays, n):
        return fsl_matrix(arrays[0], self.dim, F32, self.path, "flat")

    def distances(self, qs, centroid, x):
        if self.metric == "l2":
            d = x - qs
            return np.einsum("ij,ij->i", d, d)
        return (F32(1) - x @ qs).astype(F32)      # cosine (x stored normalized) and dot


class PQStorage(Storage):
    columns = ("__pq_code",)

    def __init__(self, metric, dim, path, meta: dict, codebook: index_pb2.Tensor):
        super().__init__(metric, dim, path)
        nbits = _int(meta, "nbits", path)
        m = _int(meta, "num_sub_vectors", path)
        if nbits != 8:
            raise UnsupportedFeatureError(f"{path}: IVF_PQ with {nbits}-bit codes (only 8-bit codes are read)")
        if _int(meta, "dimension", path) != dim or m == 0 or dim % m:
            raise CorruptFileError(f"{path}: PQ of {m} sub-vectors over dimension {meta.get('dimension')} "
                                   f"does not fit the index's dimension {dim}")
        self.m, self.sub = m, dim // m
        self.transposed = bool(meta.get("transposed", False))
        if codebook.data_type != index_pb2.Tensor.FLOAT32 or len(codebook.data) != 256 * dim * 4:
            raise CorruptFileError(f"{path}: PQ codebook has {len(codebook.data)} bytes of type "
                                   f"{codebook.data_type}, expected {256 * dim} float32")
        # laid out [m][256][dim/m] whatever the tensor's shape says
        self.codebook = np.frombuffer(codebook.data, dtype="<f4").reshape(m, 256, self.sub)
        if metric == "dot":
            self.codebook_norms = None
        else:
            self.codebook_norms = np.einsum("sck,sck->sc", self.codebook, self.codebook)

    def decode(self, arrays, n):
        arr = arrays[0]
        if not pa.types.is_fixed_size_list(arr.type) or arr.type.list_size != self.m:
            raise CorruptFileError(f"{self.path}: column '__pq_code' is {arr.type}, expected {self.m} codes per row")
        codes = arr.flatten().to_numpy(zero_copy_only=False)
        if len(codes) != n * self.m:
            raise CorruptFileError(f"{self.path}: '__pq_code' has {len(codes)} codes for {n} rows")
        # transposed: all of sub-vector 0's codes for the partition, then sub-vector 1's ...
        return codes.reshape(self.m, n) if self.transposed else codes.reshape(n, self.m).T.copy()

    def table(self, qs, centroid) -> np.ndarray:
        """(m, 256) lookup table of the query against every sub-codeword."""
        if self.metric == "dot":
            return np.einsum("sck,sk->sc", self.codebook, qs.reshape(self.m, self.sub))
        r = (qs - centroid).astype(F32).reshape(self.m, 1, self.sub)
        d = self.codebook - r
        return np.einsum("sck,sck->sc", d, d)

    def distances(self, qs, centroid, codes):
        lut = self.table(qs, centroid)
        total = np.zeros(codes.shape[1], dtype=F32)
        for s in range(self.m):                 # m gathers, summed in sub-vector order
            total += lut[s, codes[s]]
        return (F32(1) - total).astype(F32) if self.metric == "dot" else total


class SQStorage(Storage):
    columns = ("__sq_code",)

    def __init__(self, metric, dim, path, meta: dict):
        super().__init__(metric, dim, path)
        bits = _int(meta, "num_bits", path)
        if bits != 8:
            raise UnsupportedFeatureError(f"{path}: IVF_SQ with {bits}-bit codes (only 8-bit codes are read)")
        if _int(meta, "dim", path) != dim:
            raise CorruptFileError(f"{path}: SQ dimension {meta.get('dim')} is not the index's {dim}")
        b = meta.get("bounds") or {}
        try:
            lo, hi = float(b["start"]), float(b["end"])   # type: ignore[index]
        except (TypeError, KeyError, ValueError):
            raise CorruptFileError(f"{path}: SQ bounds {b!r} are not a start/end pair") from None
        if not (np.isfinite(lo) and np.isfinite(hi) and hi >= lo):
            raise CorruptFileError(f"{path}: SQ bounds [{lo}, {hi}] are not a finite range")
        self.lo, self.hi = F32(lo), F32(hi)
        self.step = F32((self.hi - self.lo) / F32(255))

    def decode(self, arrays, n):
        return fsl_matrix(arrays[0], self.dim, np.uint8, self.path, "__sq_code")

    def query(self, q):
        qs = super().query(q)
        if self.metric == "dot":
            return qs
        if self.step == 0:
            return np.zeros(self.dim, dtype=np.int32)
        return np.clip(np.floor((qs - self.lo) / self.step), 0, 255).astype(np.int32)

    def distances(self, qs, centroid, codes):
        if self.metric == "dot":
            x = self.lo + codes.astype(F32) * self.step
            return (F32(1) - x @ qs).astype(F32)
        d = codes.astype(np.int32) - qs
        return (np.einsum("ij,ij->i", d, d).astype(F32) * (self.step * self.step)).astype(F32)
