"""pylance's ``nearest={...}`` scan option, parsed and checked against the schema before any read.

Keys (pylance 14.0.2's, all but ``column`` and ``q`` optional): ``column``, ``q`` (a vector, or a
2-D array of them for a batch search), ``k`` (10), ``metric`` (``l2``/``euclidean``, ``cosine``,
``dot``, ``hamming``; default: the index's, else l2 -- hamming for uint8 vectors), ``nprobes``
(sets both bounds), ``minimum_nprobes`` (1), ``maximum_nprobes`` (all), ``refine_factor``,
``use_index`` (True), ``ef``, ``distance_range`` ((lower inclusive, upper exclusive), either None),
and ``query_parallelism``, ``approx_mode``, ``search_effort`` (checked, not needed to read).
Every refusal is an :class:`InvalidArgumentError` naming the key.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgumentError, UnsupportedFeatureError
from .distance import ALIASES

DEFAULT_K = 10
KEYS = frozenset({"column", "q", "k", "metric", "nprobes", "minimum_nprobes", "maximum_nprobes", "refine_factor",
                  "use_index", "ef", "query_parallelism", "approx_mode", "distance_range", "search_effort"})
_FLOATS = {pa.float16(): np.float16, pa.float32(): np.float32, pa.float64(): np.float64}


@dataclass(frozen=True)
class NearestQuery:
    """A checked vector search: what to compare, how many rows, how to use the index."""

    column: str                       # the vector column (as named in the schema)
    dim: int
    value_type: np.dtype              # the stored vectors' element type (float16/32/64, uint8)
    queries: np.ndarray               # (m, dim): float32, or uint8 for hamming
    batch: bool                       # q was 2-D: results carry a leading ``query_index``
    k: int
    metric: str | None                # as asked (canonical name); None = the index's, else the default
    minimum_nprobes: int
    maximum_nprobes: int | None
    refine_factor: int | None
    use_index: bool
    ef: int | None
    distance_range: tuple[float | None, float | None] | None

    @property
    def default_metric(self) -> str:
        """The metric without an index: hamming for uint8 vectors, else l2."""
        return "hamming" if self.value_type == np.uint8 else "l2"


def parse_nearest(spec: Any, schema: pa.Schema) -> NearestQuery:
    """Check a ``nearest`` dict against ``schema`` (the dataset's Arrow schema); reads no data.

    Args:
        spec: pylance's ``nearest`` dict (keys in the module docstring).
        schema: the pinned version's Arrow schema.

    Returns:
        A :class:`NearestQuery`.

    Raises:
        InvalidArgumentError: an unknown key, a missing ``column``/``q``, a column that is not a
            vector, a query of the wrong dimension or with NaN, k <= 0, and the other bad values (named).

    Example:
        >>> import pyarrow as pa
        >>> s = pa.schema([pa.field("v", pa.list_(pa.float32(), 2))])
        >>> parse_nearest({"column": "v", "q": [1, 2], "k": 3}, s).k
        3
    """
    if not isinstance(spec, dict):
        raise InvalidArgumentError(f"nearest must be a dict of pylance's keys, got {type(spec).__name__}")
    unknown = sorted(set(map(str, spec)) - KEYS)
    if unknown:
        raise InvalidArgumentError(f"nearest: unknown key(s) {', '.join(map(repr, unknown))} "
                                   f"(known: {', '.join(sorted(KEYS))})")
    for key in ("column", "q"):
        if spec.get(key) is None:
            raise InvalidArgumentError(f"nearest: {key!r} is required")
    column = spec["column"]
    if not isinstance(column, str):
        raise InvalidArgumentError(f"nearest: 'column' must be a column name, got {column!r}")
    dim, value_type = _vector_column(column, schema)
    metric = _metric(spec.get("metric"), value_type)
    queries, batch = _queries(spec["q"], dim, value_type, metric)
    k = _int(spec, "k", minimum=1, default=None, message="must be > 0") or DEFAULT_K
    nprobes = _int(spec, "nprobes", minimum=1, default=None, message="must be > 0")
    lo = _int(spec, "minimum_nprobes", minimum=0, default=None, message="must be >= 0")
    hi = _int(spec, "maximum_nprobes", minimum=0, default=None, message="must be >= 0")
    if lo is not None and hi is not None and lo > hi:
        raise InvalidArgumentError(f"nearest: 'minimum_nprobes' ({lo}) must be <= 'maximum_nprobes' ({hi})")
    if nprobes is not None:
        lo = nprobes if lo is None else lo
        hi = nprobes if hi is None else hi
    refine = _int(spec, "refine_factor", minimum=1, default=None, message="must be 1 or more")
    ef = _int(spec, "ef", minimum=1, default=None, message="must be > 0")
    use_index = spec.get("use_index", True)
    if not isinstance(use_index, (bool, np.bool_)):
        raise InvalidArgumentError(f"nearest: 'use_index' must be True or False, got {use_index!r}")
    _int(spec, "query_parallelism", minimum=-1, default=None, message="must be >= -1")
    mode = spec.get("approx_mode", "normal")
    if mode not in ("fast", "normal", "accurate"):
        raise InvalidArgumentError(f"nearest: 'approx_mode' must be 'fast', 'normal' or 'accurate', got {mode!r}")
    effort = spec.get("search_effort")
    if effort is not None and not (isinstance(effort, numbers.Real) and math.isfinite(float(effort))
                                   and 0 <= float(effort) <= 1):
        raise InvalidArgumentError(f"nearest: 'search_effort' must be finite and in [0, 1], got {effort!r}")
    return NearestQuery(column=column, dim=dim, value_type=value_type, queries=queries, batch=batch, k=k,
                        metric=metric, minimum_nprobes=1 if lo is None else max(lo, 1), maximum_nprobes=hi,
                        refine_factor=refine, use_index=bool(use_index), ef=ef,
                        distance_range=_range(spec.get("distance_range")))


def _vector_column(column: str, schema: pa.Schema) -> tuple[int, np.dtype]:
    idx = schema.get_field_index(column)
    if idx < 0:
        raise InvalidArgumentError(f"nearest: 'column' {column!r} is not in the dataset (columns: {schema.names})")
    typ = schema.field(idx).type
    if isinstance(typ, pa.ExtensionType):
        typ = typ.storage_type
    if pa.types.is_list(typ) and pa.types.is_fixed_size_list(typ.value_type):
        raise UnsupportedFeatureError(f"nearest: 'column' {column!r} is a multivector column ({typ}); "
                                      "multivector search is not supported")
    if not pa.types.is_fixed_size_list(typ):
        raise InvalidArgumentError(f"nearest: 'column' {column!r} must be a vector (fixed-size list), got {typ}")
    value = typ.value_type
    if value in _FLOATS:
        return typ.list_size, np.dtype(_FLOATS[value])
    if value == pa.uint8():
        return typ.list_size, np.dtype(np.uint8)
    raise InvalidArgumentError(f"nearest: 'column' {column!r} holds {value} vectors; "
                               "float16/float32/float64 or uint8 (hamming) vectors can be searched")


def _metric(raw: Any, value_type: np.dtype) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or raw.lower() not in ALIASES:
        raise InvalidArgumentError(f"nearest: 'metric' {raw!r} is not supported (l2, euclidean, cosine, dot, hamming)")
    metric = ALIASES[raw.lower()]
    if (metric == "hamming") != (value_type == np.uint8):
        raise InvalidArgumentError(f"nearest: 'metric' {metric} does not support {value_type} vectors"
                                   + (" (uint8 vectors are searched with hamming)" if value_type == np.uint8 else ""))
    return metric


def _queries(raw: Any, dim: int, value_type: np.dtype, metric: str | None) -> tuple[np.ndarray, bool]:
    if isinstance(raw, pa.Scalar):
        raw = raw.as_py()
    if isinstance(raw, (pa.Array, pa.ChunkedArray)):
        raw = raw.to_numpy(zero_copy_only=False)
    if isinstance(raw, (str, bytes)):
        raise InvalidArgumentError(f"nearest: 'q' must be a vector of numbers, got {type(raw).__name__}")
    try:
        q = np.asarray(raw)
    except (ValueError, TypeError) as exc:
        raise InvalidArgumentError(f"nearest: 'q' is not a vector or a 2-D array of vectors ({exc})") from None
    if q.dtype == object or not (np.issubdtype(q.dtype, np.number) or q.dtype == np.bool_):
        raise InvalidArgumentError(f"nearest: 'q' must hold numbers, got {q.dtype} values")
    if q.ndim not in (1, 2) or q.size == 0:
        raise InvalidArgumentError(f"nearest: 'q' must be a vector or a 2-D array of vectors, got shape {q.shape}")
    if q.shape[-1] != dim:
        raise InvalidArgumentError(f"nearest: 'q' has {q.shape[-1]} dimensions, the column has {dim}")
    if np.issubdtype(q.dtype, np.floating) and np.isnan(q).any():
        raise InvalidArgumentError("nearest: 'q' holds NaN")
    batch = q.ndim == 2
    q = q.reshape(-1, dim)
    if value_type == np.uint8:
        if np.issubdtype(q.dtype, np.floating) and not (np.isfinite(q).all() and (q == np.round(q)).all()):
            raise InvalidArgumentError("nearest: 'q' must hold integers 0..255 for a uint8 (hamming) column")
        if q.min() < 0 or q.max() > 255:
            raise InvalidArgumentError("nearest: 'q' must hold integers 0..255 for a uint8 (hamming) column")
        return np.ascontiguousarray(q.astype(np.uint8)), batch
    q = q.astype(np.float32)      # pylance takes the query as float32
    if value_type == np.float16:
        q = q.astype(np.float16).astype(np.float32)   # ... and as the column's type
    return np.ascontiguousarray(q), batch


def _int(spec: dict[str, Any], key: str, *, minimum: int, default: int | None, message: str) -> int | None:
    v = spec.get(key)
    if v is None:
        return default
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        raise InvalidArgumentError(f"nearest: {key!r} must be an integer, got {v!r}")
    if int(v) < minimum:
        raise InvalidArgumentError(f"nearest: {key!r} {message}, got {v}")
    return int(v)


def _range(raw: Any) -> tuple[float | None, float | None] | None:
    if raw is None:
        return None
    if not isinstance(raw, (tuple, list)) or len(raw) != 2:
        raise InvalidArgumentError(f"nearest: 'distance_range' must be a (lower, upper) pair, got {raw!r}")
    out = []
    for b in raw:
        if b is not None and (not isinstance(b, numbers.Real) or isinstance(b, bool) or math.isnan(b)):
            raise InvalidArgumentError(f"nearest: 'distance_range' bounds must be numbers or None, got {raw!r}")
        out.append(None if b is None else float(b))
    return out[0], out[1]
