"""pylance's ``index_statistics(name)`` / ``stats.index_stats(name)`` for a vector index: the
manifest's coverage of the pinned version plus, per segment, what its files say (partitions,
centroids, k-means loss, the sub-index's parameters)."""
from __future__ import annotations

import json
import os
from typing import Any

from ..errors import InvalidArgumentError, UnsupportedFeatureError
from .vector import VECTOR_DETAILS

#: pylance's sub-index name per index type
_SUB_INDEX = {"IVF_FLAT": "FLAT", "IVF_PQ": "PQ", "IVF_SQ": "SQ", "IVF_RQ": "RQ"}


def vector_index_statistics(snapshot: Any, name: str) -> dict[str, Any]:
    """Statistics of the vector index ``name``, with pylance's keys and values.

    Args:
        snapshot: the pinned version.
        name: the index name (``describe_indices()``).

    Returns:
        ``{index_type, name, num_indices, num_segments, indices, segments, num_indexed_fragments,
        num_indexed_rows, num_unindexed_fragments, num_unindexed_rows, num_indexed_rows_per_delta,
        updated_at_timestamp_ms}``; ``indices`` (= ``segments``) holds one dict per segment.

    Raises:
        InvalidArgumentError: no index of that name (also a ``ValueError``; pylance: ``KeyError``).
        UnsupportedFeatureError: a scalar or full-text index, or a vector index lance_duck cannot read.

    Example::

        vector_index_statistics(open_snapshot("t.lance"), "vec_idx")["num_indexed_rows"]
    """
    from ..index import index_segments
    from ..index.vector import open_vector_segment
    segs = [s for s in index_segments(snapshot) if s.name == name]
    if not segs:
        raise InvalidArgumentError(f"index {name!r} not found in version {snapshot.version}")
    if not segs[0].type_url.endswith(VECTOR_DETAILS):
        from .scalar_stats import SCALAR_STATS, scalar_segment_stats
        if segs[0].index_type not in SCALAR_STATS:
            raise UnsupportedFeatureError(f"index_statistics: {name!r} is a {segs[0].index_type} index; "
                                          "lance_duck gives statistics of vector indices and of "
                                          f"{', '.join(SCALAR_STATS)} ones")
        per_segment = [scalar_segment_stats(snapshot, s) for s in segs]
        return coverage_statistics(snapshot, segs, segs[0].index_type, name, per_segment)
    opened = [open_vector_segment(snapshot, s) for s in segs]
    per_segment = [_segment_stats(snapshot, s, seg) for s, seg in zip(segs, opened)]
    return coverage_statistics(snapshot, segs, opened[0].index_type, name, per_segment)


def coverage_statistics(snapshot: Any, segs: list[Any], index_type: str, name: str,
                        per_segment: list[dict[str, Any]]) -> dict[str, Any]:
    """pylance's statistics dict of an index: its type, name and segments' dicts, with the
    manifest's coverage of the pinned version (indexed / unindexed fragments and live rows)."""
    live = {f.id: f.count_rows() for f in snapshot.fragments}
    covered = set().union(*(s.fragment_ids for s in segs)) & set(live)
    per_delta = [sum(live[f] for f in s.fragment_ids if f in live) for s in segs]
    stamps = [s.created_at for s in segs if s.created_at is not None]
    return {
        "index_type": index_type,
        "name": name,
        "num_indices": len(segs),
        "num_segments": len(segs),
        "indices": per_segment,
        "segments": per_segment,
        "num_indexed_fragments": len(covered),
        "num_indexed_rows": sum(live[f] for f in covered),
        "num_unindexed_fragments": len(set(live) - covered),
        "num_unindexed_rows": sum(n for f, n in live.items() if f not in covered),
        "num_indexed_rows_per_delta": per_delta,
        "updated_at_timestamp_ms": int(max(stamps).timestamp() * 1000) if stamps else None,
    }


def _segment_stats(snapshot: Any, segment: Any, seg: Any) -> dict[str, Any]:
    from ..index.vector.ivf import _ivf
    ivf = _ivf(seg.index_file, False)
    return {
        "index_type": seg.index_type,
        "uuid": segment.uuid,
        "uri": _index_uri(snapshot, segment.uuid),
        "metric_type": seg.metric,
        "num_partitions": int(seg.num_partitions),
        "sub_index": _sub_index(seg),
        "partitions": [{"size": int(n)} for n in seg.lengths],
        "centroids": seg.centroids.tolist(),
        "loss": float(ivf.loss),
        "index_file_version": "V3",
    }


def _sub_index(seg: Any) -> dict[str, Any]:
    """The sub-index's parameters as pylance reports them: the HNSW graph's (first partition's)
    metadata, then the storage's, its type and metric."""
    out: dict[str, Any] = {}
    if "lance:hnsw" in seg.index_file.metadata:
        graphs = json.loads(seg.index_file.metadata["lance:hnsw"])
        out.update(json.loads(graphs[0]) if graphs else {})
    storage = json.loads(seg.aux_file.metadata.get("storage_metadata", "[]"))
    if storage:
        meta = json.loads(storage[0])
        for key in ("codebook_position", "codebook_tensor", "rotate_mat"):
            meta.pop(key, None)
        out.update(meta)
    out["index_type"] = "HNSW" if "HNSW" in seg.index_type else _SUB_INDEX.get(seg.index_type, seg.index_type)
    out["metric_type"] = seg.metric
    return out


def _index_uri(snapshot: Any, uuid: str) -> str:
    base = snapshot.uri
    if "://" not in base:
        base = os.path.abspath(base)
    return f"{base.rstrip('/')}/_indices/{uuid}/index.idx"
