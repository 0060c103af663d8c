"""Filter conjuncts -> per-fragment row selections from scalar indices (BTREE, BITMAP, LABEL_LIST,
ZONEMAP, BLOOMFILTER, NGRAM).

``plan_index_selections(snapshot, conjuncts, fragments)`` returns ``{fragment id: sorted
unique int64 physical offsets}`` for the fragments that at least one usable index segment
covers; every other fragment is scanned normally. A selection is a superset of the rows
that pass the conjuncts it came from (exactly those rows, deleted ones included): the scan
still subtracts deletions and re-applies the complete filter.

Rules that keep it exact: a segment answers only for fragments in its ``fragment_bitmap``
that are in this version; the ids it stores are row addresses, or stable row ids mapped
through the live rows' row-id sequences (see ``_ADDRESS_IDS`` for which); an unknown type or
version, a predicate it cannot answer or a missing / unreadable file means "no index" for
that conjunct, never "no rows".
"""
from __future__ import annotations

import logging
from typing import Iterable, Sequence

import numpy as np

from ..errors import LanceDuckError
from . import bloom, index_segments, ngram, reuse_history
from .files import segment_file_path
from .metadata import IndexSegment
from .reuse import Remap
from .scalar import (
    EXACT_OPS, LABEL_OPS, BitmapIndex, BTreeIndex, LabelListIndex, Unsupported, ZoneMapIndex, sorted_unique,
)

log = logging.getLogger(__name__)

EXACT_TYPES = ("BTree", "Bitmap")
ZONE_TYPES = ("ZoneMap",)
LABEL_TYPES = ("LabelList",)
BLOOM_TYPES = ("BloomFilter",)
TEXT_TYPES = ("NGram",)
#: The index versions each type's reader understands (a type not listed: version 0 only).
_VERSIONS = {"LabelList": frozenset({1}), "BTree": frozenset({0, 1})}
_V0 = frozenset({0})
#: (type, version) of the segments whose ids are row addresses even on a table with stable row
#: ids (elsewhere ids are stable row ids there). pylance 14.0.2 writes the BTREE of a stable-row-id
#: table as version 1 holding ``fragment << 32 | offset`` (version 0 on other tables), re-written
#: for the new fragments at compaction; its other types keep version 0 with stable row ids.
_ADDRESS_IDS = frozenset({("BTree", 1)})
_LOW = np.uint64(0xFFFFFFFF)


def _field_ids(schema) -> dict[tuple[str, ...], int]:
    """{path: field id} of every field (kept on the schema object, which is immutable)."""
    got = schema.__dict__.get("_index_field_ids")
    if got is None:
        got = schema.__dict__["_index_field_ids"] = _walk_field_ids(schema)
    return got


def _walk_field_ids(schema) -> dict[tuple[str, ...], int]:
    out: dict[tuple[str, ...], int] = {}

    def visit(fields, prefix: tuple[str, ...]) -> None:
        for f in fields:
            out[prefix + (f.name,)] = f.id
            visit(f.children, prefix + (f.name,))

    visit(schema.fields, ())
    return out


def _preds(conjunct) -> tuple:
    return tuple(conjunct.preds) if hasattr(conjunct, "preds") else (conjunct,)


def _usable_segments(snapshot, field_id: int, types: tuple[str, ...] = EXACT_TYPES) -> list[IndexSegment]:
    """The segments of one index of ``types`` on ``field_id`` (the first such index by name;
    worked out once per snapshot)."""
    return snapshot.derived(f"_usable_segments:{field_id}:{','.join(types)}",
                            lambda: _pick_segments(snapshot, field_id, types))


def _fragment_rows(snapshot) -> dict[int, int]:
    """{fragment id: physical rows} of a snapshot (made once, kept on it; not to be modified)."""
    return snapshot.derived("_fragment_rows", lambda: {f.id: f.physical_rows for f in snapshot.fragments})


def _pick_segments(snapshot, field_id: int, types: tuple[str, ...]) -> list[IndexSegment]:
    by_name: dict[str, list[IndexSegment]] = {}
    for s in index_segments(snapshot):
        if s.fields == (field_id,) and s.index_type in types \
                and s.index_version in _VERSIONS.get(s.index_type, _V0):
            by_name.setdefault(s.name, []).append(s)
    if not by_name:
        return []
    # prefer a BTREE (page lookups read less for ranges), then the name order
    name = min(by_name, key=lambda n: (by_name[n][0].index_type != "BTree", n))
    return by_name[name]


def _search_segment(snapshot, seg: IndexSegment, terms, fragment_rows: dict[int, int]) -> np.ndarray | None:
    sizes = {n: s for n, s in seg.files}
    io = snapshot.io
    at_most = {"BloomFilter": (bloom.FILE_NAME, bloom.BloomFilterIndex),
               "NGram": (ngram.FILE_NAME, ngram.NGramIndex)}.get(seg.index_type)
    if at_most is not None:                   # index.bloom / index.ngram: candidates, re-filtered
        name, reader = at_most
        if name not in sizes:
            return None
        idx = reader(io, segment_file_path(snapshot, seg, name), sizes[name] or None)
        return idx.search(terms, fragment_rows)
    if seg.index_type == "BTree":
        if "page_lookup.lance" not in sizes or "page_data.lance" not in sizes:
            return None
        idx = snapshot.derived(f"_btree_reader:{seg.uuid}", lambda: BTreeIndex(
            io, segment_file_path(snapshot, seg, "page_lookup.lance"),
            segment_file_path(snapshot, seg, "page_data.lance"), sizes))
        return idx.search(terms)
    if seg.index_type == "ZoneMap":
        if "zonemap.lance" not in sizes:
            return None
        idx = ZoneMapIndex(io, segment_file_path(snapshot, seg, "zonemap.lance"), sizes["zonemap.lance"] or None)
        return idx.search(terms, fragment_rows)
    if "bitmap_page_lookup.lance" not in sizes:
        return None
    if seg.index_type == "LabelList":
        idx = LabelListIndex(io, segment_file_path(snapshot, seg, "bitmap_page_lookup.lance"),
                             sizes["bitmap_page_lookup.lance"] or None)
        return idx.search(terms, fragment_rows)
    idx = BitmapIndex(io, segment_file_path(snapshot, seg, "bitmap_page_lookup.lance"),
                      sizes["bitmap_page_lookup.lance"] or None)
    return idx.search(terms, fragment_rows)


class _RowIdMap:
    """Stable row id -> row address over the live rows of a version (built once per snapshot)."""

    def __init__(self, fragments: Sequence):
        ids, addrs = [], []
        for f in fragments:
            rid = f.row_ids()
            if rid is None:
                raise Unsupported(f"fragment {f.id} has no row-id sequence")
            offs = np.arange(f.physical_rows, dtype=np.uint64)
            if f.num_deletions():
                live = np.ones(f.physical_rows, dtype=bool)
                live[f.deleted_offsets()] = False
                rid, offs = rid[live], offs[live]
            ids.append(rid)
            addrs.append(offs | (np.uint64(f.id) << np.uint64(32)))
        ids_all = np.concatenate(ids) if ids else np.empty(0, np.uint64)
        addr_all = np.concatenate(addrs) if addrs else np.empty(0, np.uint64)
        order = np.argsort(ids_all, kind="stable")
        self.ids = ids_all[order]
        self.addrs = addr_all[order]

    def addresses(self, row_ids: np.ndarray) -> np.ndarray:
        if len(self.ids) == 0 or len(row_ids) == 0:
            return np.empty(0, dtype=np.uint64)
        pos = np.searchsorted(self.ids, row_ids)
        pos = np.minimum(pos, len(self.ids) - 1)
        found = self.ids[pos] == row_ids
        return sorted_unique(self.addrs[pos[found]])


def _row_id_map(snapshot) -> _RowIdMap:
    return snapshot.derived("_row_id_map", lambda: _RowIdMap(snapshot.fragments))


def _split_by_fragment(addrs: np.ndarray, covered: Iterable[int]) -> dict[int, np.ndarray]:
    """{fragment id: sorted int64 offsets} for every covered fragment (empty when no hit)."""
    frag = (addrs >> np.uint64(32)).astype(np.int64)
    offs = (addrs & _LOW).astype(np.int64)
    fids = list(covered)
    if not len(frag):
        return {fid: offs for fid in fids}
    if frag[0] == frag[-1]:                # (a point lookup: one fragment)
        return {fid: offs if fid == frag[0] else offs[:0] for fid in fids}
    bounds = np.searchsorted(frag, np.array(fids + [f + 1 for f in fids], np.int64)).tolist()
    k = len(fids)
    return {fid: offs[bounds[i]:bounds[k + i]] for i, fid in enumerate(fids)}


def _remap(snapshot, seg: IndexSegment) -> Remap | None:
    """The segment through the deferred compactions (index.reuse), None when there were none."""
    hist = reuse_history(snapshot)
    remap = Remap(seg.fragment_ids, seg.dataset_version, hist) if hist else None
    return remap if remap is not None and remap.old_rows else None


def _moved(remap: Remap, offsets: dict[int, np.ndarray], covered: list[int]) -> dict[int, np.ndarray]:
    """Per-fragment offsets of the stored fragments -> those of this version's fragments."""
    parts = [offs.astype(np.uint64) | (np.uint64(fid) << np.uint64(32)) for fid, offs in offsets.items()]
    addrs = np.sort(np.concatenate(parts)) if parts else np.empty(0, np.uint64)
    return _split_by_fragment(remap.addresses(addrs), covered)


def _column_selections(snapshot, segments, terms, fragment_ids: set[int],
                         fragment_rows: dict[int, int]) -> dict[int, np.ndarray]:
    out: dict[int, np.ndarray] = {}
    for seg in segments:
        remap = _remap(snapshot, seg)
        row_ids = snapshot.has_stable_row_ids and (seg.index_type, seg.index_version) not in _ADDRESS_IDS
        if remap is not None and snapshot.has_stable_row_ids and not row_ids:
            continue        # addresses through a deferred compaction of a stable table: none seen, scan
        covered = sorted((seg.fragment_ids if remap is None else remap.fragment_ids) & fragment_ids)
        if not covered:
            continue
        try:
            rows = fragment_rows if remap is None else {**remap.old_rows, **fragment_rows}
            ids = _search_segment(snapshot, seg, terms, rows)
        except Unsupported:
            return {}
        except (LanceDuckError, FileNotFoundError, PermissionError, OSError) as exc:
            log.debug("index %s segment %s not used: %s", seg.name, seg.uuid, exc)
            continue
        if ids is None:
            continue
        if isinstance(ids, dict):              # zone map: offsets per fragment already
            if remap is not None:
                ids = _moved(remap, ids, covered)
            out.update((fid, offs) for fid, offs in ids.items() if fid in covered)
            continue
        if row_ids:
            ids = _row_id_map(snapshot).addresses(ids)
        elif remap is not None:
            ids = remap.addresses(ids)
        for fid, offs in _split_by_fragment(ids, covered).items():
            n = fragment_rows[fid]
            if len(offs) and int(offs[-1]) >= n:
                offs = offs[offs < n]          # a stale id past the fragment's end
            out[fid] = offs
    return out


def _by_field(snapshot, conjuncts) -> tuple[dict[int, list[tuple]], int]:
    """Conjuncts an index may answer, grouped by field id (``id >= a AND id <= b`` is one range
    search), and how many conjuncts that leaves out."""
    ids_by_path = _field_ids(snapshot.schema)
    by_field: dict[int, list[tuple]] = {}
    left = 0
    for c in conjuncts:
        fid = ids_by_path.get(tuple(c.path))
        ops = {p.op for p in _preds(c)}
        if fid is not None and (ops <= EXACT_OPS or ops <= LABEL_OPS or ops <= ngram.TEXT_OPS):
            by_field.setdefault(fid, []).append(_preds(c))
        else:
            left += 1
    return by_field, left


def _exact_types(terms) -> tuple[str, ...]:
    """Index types that answer ``terms`` exactly (list-membership terms: LABEL_LIST; substring
    terms: none)."""
    ops = {p.op for preds in terms for p in preds}
    if ops & ngram.TEXT_OPS:
        return ()
    return LABEL_TYPES if ops & LABEL_OPS else EXACT_TYPES


def _at_most_types(terms) -> list[tuple[str, ...]]:
    """Index types that answer ``terms`` with candidates, in the order to try them."""
    ops = {p.op for preds in terms for p in preds}
    if ops <= ngram.TEXT_OPS:
        return [TEXT_TYPES]
    if ops <= EXACT_OPS:
        return [BLOOM_TYPES, ZONE_TYPES] if ops <= bloom.BLOOM_OPS else [ZONE_TYPES]
    return []


def count_from_indices(snapshot, conjuncts, fragments: Sequence) -> int | None:
    """Rows passing ``conjuncts`` (the *whole* filter) counted from exact indices alone, or None
    unless every conjunct is answered by a BTREE / BITMAP segment on every fragment."""
    if not conjuncts or not index_segments(snapshot) or reuse_history(snapshot) is None:
        return None
    by_field, left = _by_field(snapshot, conjuncts)
    if left or not by_field:
        return None
    fragment_rows = _fragment_rows(snapshot)
    wanted = {f.id for f in fragments}
    per_field = []
    for fid, terms in by_field.items():
        segments = _usable_segments(snapshot, fid, _exact_types(terms))
        if not segments:
            return None
        try:
            sel = _column_selections(snapshot, segments, terms, wanted, fragment_rows)
        except Unsupported:
            return None
        if not wanted <= set(sel):
            return None
        per_field.append(sel)
    total = 0
    for f in fragments:
        offs = per_field[0][f.id]
        for sel in per_field[1:]:
            offs = np.intersect1d(offs, sel[f.id], assume_unique=True)
        if len(offs) and f.num_deletions():
            d = f.deleted_offsets()
            pos = np.minimum(np.searchsorted(d, offs), len(d) - 1)
            offs = offs[d[pos] != offs]
        total += len(offs)
    return total


class IndexSelections(dict):
    """{fragment id: sorted int64 offsets}; ``candidates``: the fragments whose selection came
    (partly) from an "at most" index (BLOOMFILTER, ZONEMAP, NGRAM), where most rows may fail."""

    def __init__(self) -> None:
        super().__init__()
        self.candidates: set[int] = set()


def plan_index_selections(snapshot, conjuncts, fragments: Sequence) -> dict[int, np.ndarray]:
    """Per-fragment row selections from the indices that answer ``conjuncts`` (an
    :class:`IndexSelections`)."""
    if not conjuncts or not snapshot.scalar_indices_usable or not index_segments(snapshot):
        return {}
    if reuse_history(snapshot) is None:       # a fragment-reuse index this reader cannot read
        return {}
    fragment_rows = _fragment_rows(snapshot)
    wanted = {f.id for f in fragments}
    by_field, _ = _by_field(snapshot, conjuncts)
    result = IndexSelections()
    for fid, terms in by_field.items():
        sel = {}
        exact = _exact_types(terms)
        for types in [exact] + _at_most_types(terms):
            segments = _usable_segments(snapshot, fid, types) if types else []
            try:
                sel = _column_selections(snapshot, segments, terms, wanted, fragment_rows) if segments else {}
            except Unsupported:
                sel = {}
            if sel:
                if types != exact:
                    result.candidates.update(sel)
                break
        for frag_id, offs in sel.items():
            prev = result.get(frag_id)
            result[frag_id] = offs if prev is None else np.intersect1d(prev, offs, assume_unique=True)
    return result
