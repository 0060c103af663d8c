"""Search over a pinned snapshot: one module per search kind, each with no knowledge of how rows
are read (the scan layer hands it a source of rows).

- :mod:`.nearest` -- pylance's ``nearest={...}`` option: parsing and validation (no data read).
- :mod:`.distance` -- the metrics (l2, cosine, dot, hamming) as vectorised numpy kernels.
- :mod:`.topk` -- a streaming top-k ordered by (score, row id).
- :mod:`.vector` -- vector search policy: index segments, unindexed fragments searched flat,
  deletion / prefilter masks, refine, merge.
- :mod:`.fts` -- full-text search (BM25 over INVERTED index partitions, unindexed rows tokenized
  flat); :mod:`.query` -- its public query objects (``lance_duck.query``).

Layer: below ``scan`` (which runs a search and assembles its rows), above ``index`` (the index
segment readers).
"""
from __future__ import annotations

from .nearest import NearestQuery, parse_nearest

__all__ = ["NearestQuery", "parse_nearest"]
