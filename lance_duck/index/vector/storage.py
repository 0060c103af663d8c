"""The quantized vectors of ``auxiliary.idx``: FLAT, PQ and SQ storages, their per-partition decoding and the
distances pylance reports for them (``_distance`` before any refine).

Verified arithmetic (../shared/format/vector-and-fts-indices.md §3): cosine works on the normalized query;
PQ scores residuals (query minus the partition's centroid) for l2 and cosine (a squared L2, also for cosine)
and the raw query for dot; SQ quantizes the query too for l2 / cosine and dequantizes the codes for dot.
"""
from __future__ import annotations

import json
from typing import Any, Callable, cast

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...errors import CorruptFileError, UnsupportedFeatureError
from ..._proto import index_pb2

F32: type[np.floating[Any]] = np.float32
#: a partition's distances: rows (None: all) -> float32 distances
Scorer = Callable[["np.ndarray | None"], np.ndarray]
TENSOR_TYPES: dict[int, np.dtype] = {index_pb2.Tensor.FLOAT16: np.dtype("<f2"), index_pb2.Tensor.FLOAT32: np.dtype("<f4"),
                index_pb2.Tensor.FLOAT64: np.dtype("<f8"), index_pb2.Tensor.UINT8: np.dtype("u1")}


def tensor_array(t: index_pb2.Tensor, path: str, what: str) -> np.ndarray:
    """A Tensor message's data as a numpy array of its shape (no copy)."""
    dtype = TENSOR_TYPES.get(t.data_type)
    if dtype is None:
        raise UnsupportedFeatureError(f"{path}: {what} of tensor type {t.data_type} (bfloat16 or wider integers)")
    shape = tuple(int(d) for d in t.shape)
    if len(t.data) != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
        raise CorruptFileError(f"{path}: {what} has {len(t.data)} bytes for shape {list(shape)} of {dtype}")
    return np.frombuffer(t.data, dtype=dtype).reshape(shape)


def popcount_rows(a: np.ndarray) -> np.ndarray:
    """Set bits per row of a uint8 matrix."""
    out: np.ndarray = np.unpackbits(a, axis=1).sum(axis=1, dtype=np.int64)
    return out


def fsl_matrix(arr: pa.Array, width: int, dtype: npt.DTypeLike, path: str, column: str) -> np.ndarray:
    """A fixed-size-list column as a (rows, width) numpy matrix of ``dtype`` (no nulls allowed)."""
    if not pa.types.is_fixed_size_list(arr.type) or arr.type.list_size != width:
        raise CorruptFileError(f"{path}: column {column!r} is {arr.type}, expected {width} values per row")
    if arr.null_count:
        raise CorruptFileError(f"{path}: column {column!r} has null rows")
    values = arr.flatten().to_numpy(zero_copy_only=False)
    if len(values) != len(arr) * width:
        raise CorruptFileError(f"{path}: column {column!r} has {len(values)} values for {len(arr)} rows")
    out: np.ndarray = values.reshape(len(arr), width).astype(dtype, copy=False)
    return out


def storage_metadata(meta: dict[str, str], path: str) -> dict[str, Any]:
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


def _int(d: dict[str, Any], key: str, path: str) -> int:
    v = d.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise CorruptFileError(f"{path}: storage_metadata {key!r} = {v!r} is not a count")
    return v


def normalized(q: np.ndarray) -> np.ndarray:
    n = np.sqrt(np.dot(q, q))
    return q if n == 0 else (q / n).astype(q.dtype)


class Storage:
    """One storage kind: the aux columns it reads, partition decoding and distances."""

    columns: tuple[str, ...] = ()
    dtype: npt.DTypeLike | None = None      # FLAT: the stored vectors' numpy type

    def __init__(self, metric: str, dim: int, path: str, work: type[np.floating[Any]] = F32):
        self.metric = metric
        self.dim = dim
        self.path = path
        self.work = work      # the type distances are computed in (float64 for float64 vectors)
        self.vector_type = np.dtype(work)   # the indexed vectors' type (set by the segment)

    def decode(self, arrays: list[pa.Array], n: int) -> object:
        """The partition's payload from its aux columns (``n`` rows)."""
        raise NotImplementedError

    def query(self, q: np.ndarray) -> object:
        """Per-query state shared by every partition."""
        if self.metric == "hamming":
            return q
        q = q.astype(self.work)
        if self.metric == "cosine":     # normalized, then rounded to the vectors' type as pylance keeps it
            return normalized(q).astype(self.vector_type).astype(self.work)
        return q

    def distances(self, qs: Any, centroid: np.ndarray, payload: Any, rows: np.ndarray | None = None) -> np.ndarray:
        """float32 distances of a partition's rows (all, or those at positions ``rows``)."""
        raise NotImplementedError

    def scorer(self, qs: Any, centroid: np.ndarray, payload: Any) -> Scorer:
        """``rows -> distances`` for one partition and query (per-partition work such as PQ's table done once)."""
        return lambda rows: self.distances(qs, centroid, payload, rows)


class FlatStorage(Storage):
    columns = ("flat",)

    def decode(self, arrays: list[pa.Array], n: int) -> np.ndarray:
        return fsl_matrix(arrays[0], self.dim, self.dtype or F32, self.path, "flat")

    def distances(self, qs: Any, centroid: np.ndarray, x: Any, rows: np.ndarray | None = None) -> np.ndarray:
        out: np.ndarray
        if rows is not None:
            x = x[rows]
        if self.metric == "hamming":
            return popcount_rows(x ^ qs).astype(F32)
        x = x.astype(self.work, copy=False)
        if self.metric == "l2":
            d = x - qs
            out = np.einsum("ij,ij->i", d, d).astype(F32, copy=False)
            return out
        if self.metric == "cosine":   # x and q stored normalized; pylance still divides by both norms
            norms = np.sqrt(np.einsum("ij,ij->i", x, x)) * np.sqrt(qs @ qs)
            with np.errstate(invalid="ignore", divide="ignore"):
                out = (self.work(1) - (x @ qs) / norms).astype(F32)
            return out
        out = (self.work(1) - x @ qs).astype(F32)
        return out


class PQStorage(Storage):
    columns = ("__pq_code",)

    def __init__(self, metric: str, dim: int, path: str, meta: dict[str, Any], codebook: index_pb2.Tensor,
                 work: type[np.floating[Any]] = F32):
        super().__init__(metric, dim, path, work)
        nbits = _int(meta, "nbits", path)
        m = _int(meta, "num_sub_vectors", path)
        if nbits != 8:
            raise UnsupportedFeatureError(f"{path}: IVF_PQ with {nbits}-bit codes (only 8-bit codes are read)")
        if _int(meta, "dimension", path) != dim or m == 0 or dim % m:
            raise CorruptFileError(f"{path}: PQ of {m} sub-vectors over dimension {meta.get('dimension')} "
                                   f"does not fit the index's dimension {dim}")
        self.m, self.sub = m, dim // m
        self.transposed = bool(meta.get("transposed", False))
        book = tensor_array(codebook, path, "PQ codebook")
        if book.dtype.kind != "f" or book.size != 256 * dim:
            raise CorruptFileError(f"{path}: PQ codebook holds {book.size} values of {book.dtype}, "
                                   f"expected {256 * dim} floats")
        # laid out [m][256][dim/m] whatever the tensor's shape says
        self.codebook = book.reshape(m, 256, self.sub).astype(work)
        self.code_offsets = (np.arange(m, dtype=np.intp) * 256)[:, None]

    def decode(self, arrays: list[pa.Array], n: int) -> np.ndarray:
        arr = arrays[0]
        if not pa.types.is_fixed_size_list(arr.type) or arr.type.list_size != self.m:
            raise CorruptFileError(f"{self.path}: column '__pq_code' is {arr.type}, expected {self.m} codes per row")
        codes = arr.flatten().to_numpy(zero_copy_only=False)
        if len(codes) != n * self.m:
            raise CorruptFileError(f"{self.path}: '__pq_code' has {len(codes)} codes for {n} rows")
        # transposed: all of sub-vector 0's codes for the partition, then sub-vector 1's ...
        out: np.ndarray = codes.reshape(self.m, n) if self.transposed else codes.reshape(n, self.m).T.copy()
        return out

    def table(self, qs: np.ndarray, centroid: np.ndarray) -> np.ndarray:
        """(m, 256) lookup table of the query against every sub-codeword."""
        if self.metric == "dot":
            lut: np.ndarray = np.einsum("sck,sk->sc", self.codebook, qs.reshape(self.m, self.sub))
            return lut
        # the residual is kept in the vectors' own type (float16 residuals for float16 vectors)
        r = (qs - centroid).astype(self.vector_type).astype(self.work).reshape(self.m, 1, self.sub)
        d = self.codebook - r
        table: np.ndarray = np.einsum("sck,sck->sc", d, d)
        return table

    def scorer(self, qs: Any, centroid: np.ndarray, codes: Any) -> Scorer:
        lut = self.table(qs, centroid)
        return lambda rows: self._gather(lut, codes, rows)

    def distances(self, qs: Any, centroid: np.ndarray, codes: Any, rows: np.ndarray | None = None) -> np.ndarray:
        return self._gather(self.table(qs, centroid), codes, rows)

    def _gather(self, lut: np.ndarray, codes: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        if rows is not None:
            codes = codes[:, rows]
        # one gather from the flattened table; summed over sub-vectors in order (axis 0 reduces row by row)
        total = lut.ravel().take(codes + self.code_offsets).sum(axis=0, dtype=self.work)
        out: np.ndarray = (self.work(1) - total).astype(F32) if self.metric == "dot" else total.astype(F32, copy=False)
        return out


class SQStorage(Storage):
    columns = ("__sq_code",)

    def __init__(self, metric: str, dim: int, path: str, meta: dict[str, Any], work: type[np.floating[Any]] = F32):
        super().__init__(metric, dim, path, work)
        bits = _int(meta, "num_bits", path)
        if bits != 8:
            raise UnsupportedFeatureError(f"{path}: IVF_SQ with {bits}-bit codes (only 8-bit codes are read)")
        if _int(meta, "dim", path) != dim:
            raise CorruptFileError(f"{path}: SQ dimension {meta.get('dim')} is not the index's {dim}")
        b = meta.get("bounds") or {}
        try:
            lo, hi = float(b["start"]), float(b["end"])
        except (TypeError, KeyError, ValueError):
            raise CorruptFileError(f"{path}: SQ bounds {b!r} are not a start/end pair") from None
        if not (np.isfinite(lo) and np.isfinite(hi) and hi >= lo):
            raise CorruptFileError(f"{path}: SQ bounds [{lo}, {hi}] are not a finite range")
        self.lo, self.hi = work(lo), work(hi)
        self.step = work((self.hi - self.lo) / work(255))

    def decode(self, arrays: list[pa.Array], n: int) -> tuple[np.ndarray, np.ndarray]:
        codes = fsl_matrix(arrays[0], self.dim, np.uint8, self.path, "__sq_code")
        wide = codes.astype(np.int32)
        # codes, and their squared norms (exact integers in the type the l2 sums are done in)
        return codes, np.einsum("ij,ij->i", wide, wide).astype(self._wide())

    def _wide(self) -> type[np.floating[Any]]:
        # sum (q - c)^2 = |q|^2 - 2 q.c + |c|^2 over integers: exact in float32 while every partial value
        # stays below 2^24 (dim <= 129), in float64 otherwise
        return F32 if 2 * self.dim * 255 * 255 < (1 << 24) else np.float64

    def query(self, q: np.ndarray) -> object:
        qs = cast(np.ndarray, super().query(q))
        if self.metric == "dot":
            return qs
        if self.step == 0:
            return np.zeros(self.dim, dtype=np.int32)
        return np.clip(np.floor((qs - self.lo) / self.step), 0, 255).astype(np.int32)

    def scorer(self, qs: Any, centroid: np.ndarray, payload: Any) -> Scorer:
        if self.metric == "dot":
            return super().scorer(qs, centroid, payload)
        codes, norms = payload
        wide, work = self._wide(), self.work
        twice_q, scale = (2 * qs).astype(wide), self.step * self.step
        # |c|^2 + |q|^2 per row, then - 2 q.c: every step exact (integers below 2^24, or 2^53 in float64)
        base = norms + wide(int(qs @ qs))
        plain = wide is work and work is F32

        if plain:         # integer sums below 2^24: exact in float32 whatever the summation order
            def score_f32(rows: np.ndarray | None) -> np.ndarray:
                total: np.ndarray
                if rows is None:
                    total = base - codes @ twice_q
                else:       # take, then the cast and a BLAS dot: the cheapest steps for the walk's few rows
                    total = base.take(rows)
                    total -= np.dot(codes.take(rows, axis=0).astype(F32), twice_q)
                total *= scale
                return total
            # what the compiled walk (index/vector/_hnsw_numba.py) scores with, in the same steps
            setattr(score_f32, "sq_parts", (codes if codes.flags.c_contiguous else np.ascontiguousarray(codes),
                                            base, twice_q.astype(np.int32), scale))
            return score_f32

        def score(rows: np.ndarray | None) -> np.ndarray:
            total: np.ndarray
            c, total = (codes, base.copy()) if rows is None else (codes[rows], base[rows])
            total -= c.astype(wide) @ twice_q
            if not plain:
                total = total.astype(work)
            total *= scale
            out: np.ndarray = total if plain else total.astype(F32)
            return out
        return score

    def distances(self, qs: Any, centroid: np.ndarray, payload: Any, rows: np.ndarray | None = None) -> np.ndarray:
        if self.metric != "dot":
            return self.scorer(qs, centroid, payload)(rows)
        codes, _ = payload
        if rows is not None:
            codes = codes[rows]
        x = self.lo + codes.astype(self.work) * self.step
        out: np.ndarray = (self.work(1) - x @ qs).astype(F32)
        return out
