"""``full_text_query=`` on a scan: the unindexed rows' texts read through the scan's own tasks
for :mod:`lance_duck.search.fts`, and the result rows (columns, ``_score``, ``_rowid`` /
``_rowaddr``; prefilter or post-filter; offset / limit) in pylance's order.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import numpy as np
import pyarrow as pa

from .filters import ROW_ADDR
from .nearest import result_rows
from .projection import Projection, resolve_projection

if TYPE_CHECKING:
    from ..table.fragment import FragmentInfo
    from .scanner import LanceScanner

# The score column's name (lance_duck.search.fts.SCORE; that module is imported only by a search)
SCORE = "_score"


def _texts(scanner: LanceScanner, fragments: list[FragmentInfo], column: str,
           ) -> Iterator[tuple[np.ndarray, list[str | None]]]:
    """Live rows' texts of unindexed ``fragments`` that the search covers (a prefilter's rows only:
    pylance's flat search then takes its statistics from those rows)."""
    sub = scanner._copy(fragments=fragments, limit=None, offset=None)
    sub._nearest = None
    sub._fts = None
    sub._filter = scanner._search_filter
    sub._projection = resolve_projection([column, ROW_ADDR], scanner._snapshot.read_schema,
                                         scanner._snapshot.schema)
    for b in sub._batches():
        yield b.column(1).to_numpy().astype(np.uint64, copy=False), b.column(0).to_pylist()


def _allowed(scanner: LanceScanner) -> np.ndarray:
    """Sorted addresses of the scanned rows the search covers (passing the search filter)."""
    sub = scanner._copy(limit=None, offset=None)
    sub._nearest = None
    sub._fts = None
    sub._filter = scanner._search_filter
    sub._projection = resolve_projection([ROW_ADDR], scanner._snapshot.read_schema, scanner._snapshot.schema)
    parts = [b.column(0).to_numpy().astype(np.uint64, copy=False) for b in sub._batches()]
    return np.sort(np.concatenate(parts)) if parts else np.empty(0, np.uint64)


def run_fts(scanner: LanceScanner, full_text_query: Any, *, prefilter: bool, limit: int | None,
            offset: int) -> pa.Table:
    """The rows of a ``full_text_query`` scan, best first, after ``offset`` / ``limit``."""
    from ..search.fts import Hits, Searcher, query_of, ranked

    snap = scanner._snapshot
    scanned = {f.id: f for f in scanner._fragments}
    pre = scanner._search_filter is not None
    searcher = Searcher(snap, lambda frags, col: _texts(scanner, [f for f in frags if f.id in scanned], col))
    # the best limit + offset are enough unless rows are dropped after the search (a prefilter, a
    # scan of some fragments only); a post-filter applies to those best rows, as pylance's
    k = None if limit is None or pre or len(scanned) < len(snap.fragments) else limit + offset
    hits = searcher.evaluate(query_of(full_text_query, searcher), k)
    if len(scanned) < len(snap.fragments):
        frag = (hits.addrs >> np.uint64(32)).astype(np.int64)
        keep = np.isin(frag, np.fromiter(scanned, dtype=np.int64, count=len(scanned)))
        hits = Hits(hits.addrs[keep], hits.scores[keep])
    if pre:
        keep = np.isin(hits.addrs, _allowed(scanner))
        hits = Hits(hits.addrs[keep], hits.scores[keep])
    addrs, scores = ranked(hits, None if limit is None else limit + offset)
    cols, fields, present = result_rows(scanner, scanned, addrs)
    at = scanner._score_at
    if at is not None:
        cols.insert(at, pa.chunked_array([pa.array(scores[present], pa.float32())]))
        fields.insert(at, pa.field(SCORE, pa.float32()))
    table = pa.Table.from_arrays(cols, schema=pa.schema(fields, metadata=scanner._projection.schema.metadata))
    table = table.slice(offset)
    return table if limit is None else table.slice(0, limit)


def fts_schema(projection: Projection, score_at: int | None) -> pa.Schema:
    """The schema of a ``full_text_query`` scan's rows (``_score`` at ``score_at``)."""
    fields = [o.field for o in projection.outputs]
    if score_at is not None:
        fields.insert(score_at, pa.field(SCORE, pa.float32()))
    return pa.schema(fields, metadata=projection.schema.metadata)
