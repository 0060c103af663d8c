"""pylance's ``prewarm_index(name)``: read a named index's segments whole into the process's index
cache (``lance_duck.configure(index_cache_bytes=...)``), so later searches read no index bytes."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import InvalidArgumentError, UnsupportedFeatureError

#: scalar index types whose readers can prewarm
SCALAR_TYPES = ("BTree", "Bitmap", "LabelList", "ZoneMap", "BloomFilter", "NGram")


def prewarm_index(snapshot: Any, name: str, index_segments: Iterable[Any] | None = None,
                  with_position: bool = False) -> None:
    """Load every segment of the index ``name`` (or those of ``index_segments``) into the index cache.

    Args:
        snapshot: the pinned version.
        name: the index name (``describe_indices()``).
        index_segments: segment UUIDs (strings or ``uuid.UUID``) of that index; ``None``: all.
        with_position: an INVERTED index's positions too (phrase queries), when it keeps them.

    Raises:
        InvalidArgumentError: no index of that name, or a UUID that is not one of its segments.
        UnsupportedFeatureError: an index type lance_duck does not prewarm, named.

    Example::

        prewarm_index(lance_duck.dataset("t.lance")._snapshot, "id_idx")
    """
    from . import index_segments as all_segments
    from .search import _open_reader
    segs = [s for s in all_segments(snapshot) if s.name == name]
    if not segs:
        raise InvalidArgumentError(f"Lance index not found: name={name} (version {snapshot.version})")
    if index_segments is not None:
        wanted = {str(u) for u in index_segments}
        unknown = wanted - {s.uuid for s in segs}
        if unknown:
            raise InvalidArgumentError(f"prewarm_index: {sorted(unknown)} are not segments of index {name!r}")
        segs = [s for s in segs if s.uuid in wanted]
    for seg in segs:
        kind = seg.index_type
        if kind in SCALAR_TYPES:
            reader = _open_reader(snapshot, seg, kind)
            if reader is None:
                raise UnsupportedFeatureError(f"prewarm_index: segment {seg.uuid} of {name!r} lists no files "
                                              "lance_duck reads")
            reader.prewarm()
        elif kind == "Inverted":
            from .files import segment_file_path
            from .inverted.reader import InvertedSegment
            paths = {n: segment_file_path(snapshot, seg, n) for n, _ in seg.files}
            inverted = InvertedSegment(snapshot.io, paths, {n: (z or None) for n, z in seg.files})
            for part in inverted.partitions:
                part.prewarm(with_position)
        elif kind == "Vector":
            from .vector import open_vector_segment
            vseg: Any = open_vector_segment(snapshot, seg)
            if not hasattr(vseg, "prewarm"):
                raise UnsupportedFeatureError(f"prewarm_index: {name!r} is a {vseg.index_type} index, not prewarmed")
            vseg.prewarm()
        else:
            raise UnsupportedFeatureError(f"prewarm_index: {name!r} is a {kind} index; lance_duck prewarms "
                                          f"{', '.join(SCALAR_TYPES)}, INVERTED and vector indices")
