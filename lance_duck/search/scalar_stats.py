"""pylance's per-segment ``index_statistics`` of scalar and full-text indices, from the segment's
files (BTREE page bounds, BITMAP / LABEL_LIST keys, ZONEMAP / BLOOMFILTER zones, NGRAM tokens,
INVERTED tokens, documents and tokenizer parameters)."""
from __future__ import annotations

import datetime
import json
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import CorruptFileError

#: the index types whose segment statistics lance_duck gives (pylance's type names)
SCALAR_STATS = ("BTree", "Bitmap", "LabelList", "ZoneMap", "BloomFilter", "NGram", "Inverted")


def display(value: Any, arrow_type: pa.DataType) -> str:
    """A value as pylance's statistics print it (Rust's ``Display``: ``NULL``, ``3`` for 3.0, no exponents)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if np.isnan(value):
            return "NaN"
        if np.isinf(value):
            return "inf" if value > 0 else "-inf"
        v = np.float32(value) if pa.types.is_float32(arrow_type) or pa.types.is_float16(arrow_type) else value
        return np.format_float_positional(v, trim="-")
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time)):
        return value.isoformat()
    return str(value)


def scalar_segment_stats(snapshot: Any, segment: Any) -> dict[str, Any]:
    """One segment's statistics dict, with pylance's keys for its index type.

    Args:
        snapshot: the pinned version.
        segment: an :class:`~lance_duck.index.metadata.IndexSegment` of a type in :data:`SCALAR_STATS`.

    Returns:
        BTree: ``{min, max, num_pages}``; Bitmap / LabelList: ``{num_bitmaps}``; ZoneMap:
        ``{num_zones, rows_per_zone}``; BloomFilter: ``{type, num_blocks, number_of_items,
        probability}``; NGram: ``{num_ngrams}``; Inverted: ``{params, num_tokens, num_docs}``.

    Example::

        scalar_segment_stats(ds._snapshot, index_segments(ds._snapshot)[0])["num_pages"]
    """
    from ..index.files import IndexFile, segment_file_path
    sizes = dict(segment.files)

    def open_file(name: str) -> IndexFile:
        return IndexFile(snapshot.io, segment_file_path(snapshot, segment, name), sizes.get(name) or None)

    kind = segment.index_type
    if kind == "BTree":
        f = open_file("page_lookup.lance")
        mn, mx = f.read(["min", "max"])
        if mn.null_count == len(mn) and mx.null_count == len(mx):
            low = high = "N/A"
        else:
            low, high = display(mn[0].as_py(), mn.type), display(mx[len(mx) - 1].as_py(), mx.type)
        return {"min": low, "max": high, "num_pages": f.num_rows}
    if kind in ("Bitmap", "LabelList"):
        return {"num_bitmaps": open_file("bitmap_page_lookup.lance").num_rows}
    if kind == "ZoneMap":
        f = open_file("zonemap.lance")
        return {"num_zones": f.num_rows, "rows_per_zone": _int(f, "rows_per_zone")}
    if kind == "BloomFilter":
        from ..index import bloom
        f = open_file(bloom.FILE_NAME)
        return {"type": "BloomFilter", "num_blocks": f.num_rows, "number_of_items": _int(f, "bloomfilter_item"),
                "probability": float(_meta(f, "bloomfilter_probability"))}
    if kind == "NGram":
        from ..index import ngram
        return {"num_ngrams": open_file(ngram.FILE_NAME).num_rows}
    # Inverted
    meta = open_file("metadata.lance")
    try:
        params = json.loads(_meta(meta, "params"))
        parts = [int(p) for p in json.loads(_meta(meta, "partitions"))]
    except (ValueError, TypeError) as exc:
        raise CorruptFileError(f"{meta.path}: metadata 'params' / 'partitions' are not JSON: {exc}") from None
    tokens = sum(open_file(f"part_{p}_invert.lance").num_rows for p in parts)
    docs = sum(open_file(f"part_{p}_docs.lance").num_rows for p in parts)
    return {"params": params, "num_tokens": tokens, "num_docs": docs}


def _meta(f: Any, key: str) -> str:
    value = f.metadata.get(key)
    if value is None:
        raise CorruptFileError(f"{f.path}: schema metadata has no {key!r}")
    return str(value)


def _int(f: Any, key: str) -> int:
    try:
        return int(_meta(f, key))
    except ValueError:
        raise CorruptFileError(f"{f.path}: schema metadata {key!r} = {f.metadata.get(key)!r} is not an integer") from None
