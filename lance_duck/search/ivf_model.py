"""pylance's ``get_ivf_model(name)`` / ``centroids(index_name=, column=)``: a vector index's IVF
centroids and distance type, read from its first segment's ``index.idx``."""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgumentError, UnsupportedFeatureError
from .vector import VECTOR_DETAILS


class IvfModel:
    """A trained IVF model: pylance's ``get_ivf_model`` result (``centroids``), with the
    ``distance_type`` and ``num_partitions`` of pylance's Python ``lance.indices.IvfModel``.

    Attributes:
        centroids: one row per partition (``pa.FixedSizeListArray`` of the index's vector type).
        distance_type: the metric the index was trained with (``"l2"``, ``"cosine"``, ``"dot"``,
            ``"hamming"``).
    """

    def __init__(self, centroids: pa.FixedSizeListArray, distance_type: str) -> None:
        self.centroids = centroids
        self.distance_type = distance_type

    @property
    def num_partitions(self) -> int:
        """The number of partitions (centroids)."""
        return len(self.centroids)

    def __repr__(self) -> str:
        return f"IvfModel(num_partitions={self.num_partitions}, distance_type={self.distance_type!r})"


def get_ivf_model(snapshot: Any, index_name: str) -> IvfModel:
    """The IVF model of the vector index ``index_name`` (its first segment's, as pylance).

    Args:
        snapshot: the pinned version.
        index_name: a vector index's name (``describe_indices()``).

    Returns:
        An :class:`IvfModel`.

    Raises:
        InvalidArgumentError: no index of that name, or not a vector index (pylance: ``ValueError``).
        UnsupportedFeatureError: a vector index lance_duck cannot read (named).

    Example::

        get_ivf_model(lance_duck.dataset("t.lance")._snapshot, "vec_idx").num_partitions
    """
    from ..index import index_segments
    from ..index.vector import open_vector_segment
    segs = [s for s in index_segments(snapshot) if s.name == index_name]
    if not segs:
        raise InvalidArgumentError(f"index {index_name!r} not found in version {snapshot.version}")
    if not segs[0].type_url.endswith(VECTOR_DETAILS):
        raise InvalidArgumentError(f"index {index_name!r} is a {segs[0].index_type} index, not an IVF vector index")
    seg: Any = open_vector_segment(snapshot, segs[0])
    if getattr(seg, "centroids", None) is None:
        raise UnsupportedFeatureError(f"index {index_name!r}: a {seg.index_type} index has no IVF model")
    values = np.ascontiguousarray(seg.centroids, dtype=seg.vector_type)
    flat = pa.array(values.reshape(-1))
    return IvfModel(pa.FixedSizeListArray.from_arrays(flat, int(seg.dim)), str(seg.metric))


def default_ivf_index(snapshot: Any, column: str) -> str:
    """The name of the first IVF vector index on ``column`` (pylance's choice for ``centroids(column=)``).

    Raises:
        InvalidArgumentError: no IVF index on that column.
    """
    from ..index import describe_indices
    wanted = column.lower()
    for desc in describe_indices(snapshot):
        if desc.type_url.endswith(VECTOR_DETAILS) and any(f.lower() == wanted for f in desc.field_names):
            return str(desc.name)
    raise InvalidArgumentError(f"No IVF index for column {column!r}")
