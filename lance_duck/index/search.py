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
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, Union

import numpy as np
import pyarrow as pa

from .. import trace
from ..errors import CorruptFileError, LanceDuckError
from ..predicate.bool_tree import AllOf, EitherOf, FilterTree
from ..predicate.pruning import AnyOf, ColumnPredicate, Conjunct
from . import bloom, index_segments, ngram, reuse_history
from .files import segment_file_path
from .lineage import later_fragments
from .metadata import IndexSegment
from .reuse import Remap
from .scalar import (
    EXACT_OPS, LABEL_OPS, BitmapIndex, BTreeIndex, LabelListIndex, Unsupported, ZoneMapIndex, sorted_unique,
)

if TYPE_CHECKING:
    from ..table.fragment import FragmentInfo
    from ..table.snapshot import Snapshot

log = logging.getLogger(__name__)

#: the predicates one search answers, each a tuple holding one predicate or the alternatives of an OR
Terms = Sequence[tuple[ColumnPredicate, ...]]
#: what a search gives: sorted unique uint64 ids, or {fragment id: int64 offsets} (zone maps, bloom
#: filters), or None (the index does not answer)
Hits = Union[np.ndarray, dict[int, np.ndarray], None]


class IndexReader(Protocol):
    """The reader of one index segment (BTREE, BITMAP, LABEL_LIST, ZONEMAP, BLOOMFILTER, NGRAM)."""

    #: what the file's values must be (set before the first search; None: unchecked)
    value_type: pa.DataType | None

    def search(self, terms: Terms, fragment_rows: dict[int, int]) -> Hits:
        """The rows that may pass ``terms``; ``fragment_rows`` gives the rows per fragment the
        segment may name."""
        ...

    def prewarm(self) -> None:
        """Read the whole segment into the index cache (``prewarm_index``)."""
        ...

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


def _field_ids(schema: Any) -> dict[tuple[str, ...], int]:
    """{path: field id} of every field (kept on the schema object, which is immutable)."""
    got: dict[tuple[str, ...], int] | None = schema.__dict__.get("_index_field_ids")
    if got is None:
        got = schema.__dict__["_index_field_ids"] = _walk_field_ids(schema)
    return got


def _walk_field_ids(schema: Any) -> dict[tuple[str, ...], int]:
    out: dict[tuple[str, ...], int] = {}

    def visit(fields: Iterable[Any], prefix: tuple[str, ...]) -> None:
        for f in fields:
            out[prefix + (f.name,)] = f.id
            visit(f.children, prefix + (f.name,))

    visit(schema.fields, ())
    return out


def _preds(conjunct: Conjunct) -> tuple[ColumnPredicate, ...]:
    return conjunct.preds if isinstance(conjunct, AnyOf) else (conjunct,)


def _usable_segments(snapshot: Snapshot, field_id: int, types: tuple[str, ...] = EXACT_TYPES) -> list[IndexSegment]:
    """The segments of one index of ``types`` on ``field_id`` (the first such index by name;
    worked out once per snapshot)."""
    return snapshot.derived(f"_usable_segments:{field_id}:{','.join(types)}",
                            lambda: _pick_segments(snapshot, field_id, types))


def _fragment_rows(snapshot: Snapshot) -> dict[int, int]:
    """{fragment id: physical rows} of a snapshot (made once, kept on it; not to be modified)."""
    return snapshot.derived("_fragment_rows", lambda: {f.id: f.physical_rows for f in snapshot.fragments})


def _pick_segments(snapshot: Snapshot, field_id: int, types: tuple[str, ...]) -> list[IndexSegment]:
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


class _SegmentPlan:
    """What one segment's searches need that depends only on the snapshot and the index (made
    once per snapshot): its type, the fragments of this version it answers for, whether its ids
    are stable row ids, its deferred-compaction remap, the rows per fragment it may name, and
    its reader (opened at the first search)."""

    __slots__ = ("seg", "index_type", "remap", "row_ids", "covered", "covered_sorted", "rows", "reader", "opened",
                 "broken")

    def __init__(self, seg: IndexSegment, remap: Remap | None, row_ids: bool,
                 version_fragments: frozenset[int], fragment_rows: dict[int, int]):
        self.seg = seg
        self.index_type = seg.index_type
        self.remap = remap
        self.row_ids = row_ids
        self.covered = (seg.fragment_ids if remap is None else remap.fragment_ids) & version_fragments
        self.covered_sorted = sorted(self.covered)
        self.rows = fragment_rows if remap is None else {**remap.old_rows, **fragment_rows}
        self.reader: IndexReader | None = None
        self.opened = False                 # the reader was looked for (None then: a file is not listed)
        self.broken: str | None = None      # why the segment is not used (damage found by a search)

    def covered_of(self, wanted: frozenset[int] | None) -> list[int]:
        """Sorted ids of the fragments of ``wanted`` (None: all of this version) it answers for."""
        if wanted is None:
            return self.covered_sorted
        return sorted(self.covered & wanted)

    def search(self, snapshot: Snapshot, terms: Terms) -> Hits:
        if not self.opened:
            self.reader = _open_reader(snapshot, self.seg, self.index_type)
            self.opened = True
        return None if self.reader is None else self.reader.search(terms, self.rows)


def _segment_plans(snapshot: Snapshot, field_id: int, types: tuple[str, ...]) -> list[_SegmentPlan]:
    """The :class:`_SegmentPlan` of each usable segment of the index of ``types`` on ``field_id``
    (segments no remap makes exact are left out), made once per snapshot."""
    memo: dict[tuple[int, tuple[str, ...]], list[_SegmentPlan]] = snapshot.derived("_segment_plans", dict)
    got = memo.get((field_id, types))
    if got is None:
        got = memo[(field_id, types)] = _make_plans(snapshot, field_id, types)
    return got


def _make_plans(snapshot: Snapshot, field_id: int, types: tuple[str, ...]) -> list[_SegmentPlan]:
    fragment_rows = _fragment_rows(snapshot)
    version_fragments = frozenset(fragment_rows)
    out = []
    for seg in _usable_segments(snapshot, field_id, types):
        remap = _remap(snapshot, seg)
        row_ids = snapshot.has_stable_row_ids and (seg.index_type, seg.index_version) not in _ADDRESS_IDS
        if remap is not None and snapshot.has_stable_row_ids and not row_ids:
            continue        # addresses through a deferred compaction of a stable table: none seen, scan
        plan = _SegmentPlan(seg, remap, row_ids, version_fragments, fragment_rows)
        lie = later_fragments(snapshot, seg)
        if lie is not None:
            plan.broken = f"index {seg.name!r} segment {seg.uuid} not used: {lie}"
            log.warning("%s", plan.broken)
        out.append(plan)
    return out


def _btree(io: Any, snapshot: Snapshot, seg: IndexSegment, sizes: dict[str, int]) -> IndexReader | None:
    if "page_lookup.lance" not in sizes or "page_data.lance" not in sizes:
        return None
    return BTreeIndex(io, segment_file_path(snapshot, seg, "page_lookup.lance"),
                      segment_file_path(snapshot, seg, "page_data.lance"), sizes)


def _one_file(name: str, reader: Callable[[Any, str, int | None], IndexReader]) -> _Opener:
    """The opener of a reader of one file ``name``, taking (io, path, size)."""
    def open_one(io: Any, snapshot: Snapshot, seg: IndexSegment, sizes: dict[str, int]) -> IndexReader | None:
        return reader(io, segment_file_path(snapshot, seg, name), sizes[name] or None) if name in sizes else None
    return open_one


_Opener = Callable[[Any, "Snapshot", IndexSegment, "dict[str, int]"], Union[IndexReader, None]]
#: index type -> what opens its reader (None when a file it needs is not listed)
_OPENERS: dict[str, _Opener] = {
    "BTree": _btree,
    "BloomFilter": _one_file(bloom.FILE_NAME, bloom.BloomFilterIndex),
    "NGram": _one_file(ngram.FILE_NAME, ngram.NGramIndex),
    "ZoneMap": _one_file("zonemap.lance", ZoneMapIndex),
    "LabelList": _one_file("bitmap_page_lookup.lance", LabelListIndex),
    "Bitmap": _one_file("bitmap_page_lookup.lance", BitmapIndex),
}


def _open_reader(snapshot: Snapshot, seg: IndexSegment, index_type: str) -> IndexReader | None:
    """The reader of one segment, None when a file it needs is not listed (no index)."""
    out = _OPENERS[index_type](snapshot.io, snapshot, seg, dict(seg.files))
    if out is None:
        return None
    field = snapshot.schema.by_id.get(seg.fields[0]) if seg.fields else None
    if field is not None:
        t = field.arrow_type
        if index_type == "LabelList":
            t = t.value_type if pa.types.is_list(t) or pa.types.is_large_list(t) else None
        out.value_type = t        # what the file's values must be (a twin's files swapped in are not)
    return out


class RowIdMap:
    """Stable row id -> row address over the live rows of a version (built once per snapshot:
    :func:`row_id_map`)."""

    def __init__(self, fragments: Sequence[FragmentInfo]):
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

    def lookup(self, row_ids: np.ndarray, missing: int | np.uint64) -> np.ndarray:
        """Per row id (aligned), its live row's address; ``missing`` where no live row has it."""
        if not len(self.ids):
            return np.full(len(row_ids), missing, dtype=np.uint64)
        pos = np.minimum(np.searchsorted(self.ids, row_ids), len(self.ids) - 1)
        out: np.ndarray = np.where(self.ids[pos] == row_ids, self.addrs[pos], missing)
        return out

    def addresses(self, row_ids: np.ndarray) -> np.ndarray:
        """The sorted unique addresses of the live rows among ``row_ids``."""
        if len(self.ids) == 0 or len(row_ids) == 0:
            return np.empty(0, dtype=np.uint64)
        pos = np.searchsorted(self.ids, row_ids)
        pos = np.minimum(pos, len(self.ids) - 1)
        found = self.ids[pos] == row_ids
        return sorted_unique(self.addrs[pos[found]])


def row_id_map(snapshot: Snapshot) -> RowIdMap:
    """The :class:`RowIdMap` of a snapshot with stable row ids (made once, kept on it)."""
    return snapshot.derived("_row_id_map", lambda: RowIdMap(snapshot.fragments))


def _split_by_fragment(addrs: np.ndarray, covered: list[int]) -> dict[int, np.ndarray]:
    """{fragment id: sorted int64 offsets} for every covered fragment (empty when no hit)."""
    if len(addrs) <= FEW_IDS:              # (a point lookup: Python ints, no numpy passes)
        out = {fid: _EMPTY_OFFSETS for fid in covered}
        got: dict[int, list[int]] = {}
        for a in addrs.tolist():
            got.setdefault(a >> 32, []).append(a & 0xFFFFFFFF)
        for fid, offs in got.items():
            if fid in out:
                out[fid] = np.array(offs, np.int64)
        return out
    frag = (addrs >> np.uint64(32)).astype(np.int64)
    offs = (addrs & _LOW).astype(np.int64)
    fids = list(covered)
    if frag[0] == frag[-1]:                # (one fragment)
        return {fid: offs if fid == frag[0] else offs[:0] for fid in fids}
    bounds = np.searchsorted(frag, np.array(fids + [f + 1 for f in fids], np.int64)).tolist()
    k = len(fids)
    return {fid: offs[bounds[i]:bounds[k + i]] for i, fid in enumerate(fids)}


#: ids split per fragment as Python ints up to this many
FEW_IDS = 8
_EMPTY_OFFSETS = np.empty(0, np.int64)
_EMPTY_OFFSETS.flags.writeable = False


def _remap(snapshot: Snapshot, seg: IndexSegment) -> Remap | None:
    """The segment through the deferred compactions (index.reuse), None when there were none."""
    hist = reuse_history(snapshot)
    remap = Remap(seg.fragment_ids, seg.dataset_version, hist) if hist else None
    return remap if remap is not None and remap.old_rows else None


def _moved(remap: Remap, offsets: dict[int, np.ndarray], covered: list[int]) -> dict[int, np.ndarray]:
    """Per-fragment offsets of the stored fragments -> those of this version's fragments."""
    parts = [offs.astype(np.uint64) | (np.uint64(fid) << np.uint64(32)) for fid, offs in offsets.items()]
    addrs = np.sort(np.concatenate(parts)) if parts else np.empty(0, np.uint64)
    return _split_by_fragment(remap.addresses(addrs), covered)


def _column_selections(snapshot: Snapshot, plans: list[_SegmentPlan], terms: Terms, wanted: frozenset[int] | None,
                       sources: dict[int, str] | None = None) -> dict[int, np.ndarray]:
    """{fragment id: sorted int64 offsets} of the rows the segments ``plans`` select for
    ``terms`` in the fragments they cover (of ``wanted``; None: all of this version). A segment
    whose files are missing, unreadable or fail a consistency check answers nothing (its
    fragments are scanned): logged, and traced as ``index:unused``. ``sources`` (when given)
    gets the index file(s) each fragment's selection came from."""
    out: dict[int, np.ndarray] = {}
    for plan in plans:
        covered = plan.covered_of(wanted)
        if not covered:
            continue
        if plan.broken is None:
            try:
                got = _plan_selections(snapshot, plan, terms, covered, wanted)
                out.update(got)
                if sources is not None:
                    sources.update(dict.fromkeys(got, _files_of(plan)))
                continue
            except Unsupported:
                return {}
            except (LanceDuckError, FileNotFoundError, PermissionError, OSError) as exc:
                plan.broken = f"index {plan.seg.name!r} segment {plan.seg.uuid} not used: {exc}"
                log.warning("%s", plan.broken)
        trace.record("index:unused", plan.broken)
    return out


def _plan_selections(snapshot: Snapshot, plan: _SegmentPlan, terms: Terms, covered: list[int],
                     wanted: frozenset[int] | None) -> dict[int, np.ndarray]:
    """One segment's selections (see :func:`_column_selections`)."""
    ids = plan.search(snapshot, terms)
    if ids is None:
        return {}
    remap = plan.remap
    if isinstance(ids, dict):              # zone map: offsets per fragment already
        if remap is not None:
            ids = _moved(remap, ids, covered)
        return {fid: offs for fid, offs in ids.items()
                if fid in plan.covered and (wanted is None or fid in wanted)}
    if plan.row_ids:
        ids = row_id_map(snapshot).addresses(ids)
    elif remap is not None:
        ids = remap.addresses(ids)
    fragment_rows = plan.rows
    out = {}
    for fid, offs in _split_by_fragment(ids, covered).items():
        if len(offs) and int(offs[-1]) >= fragment_rows[fid]:
            if remap is None and not plan.row_ids:     # a row address the fragment never had
                raise CorruptFileError(f"{_files_of(plan)}: index names row {int(offs[-1])} of fragment "
                                       f"{fid}, which has {fragment_rows[fid]} rows")
            offs = offs[offs < fragment_rows[fid]]     # a stale id past the fragment's end
        out[fid] = offs
    return out


def _files_of(plan: _SegmentPlan) -> str:
    """The path(s) of the files a segment's reader reads."""
    r = plan.reader
    paths = [getattr(r, a) for a in ("lookup_path", "data_path", "path") if isinstance(getattr(r, a, None), str)]
    return " / ".join(paths) or plan.seg.uuid


def _wanted(snapshot: Snapshot, fragments: Sequence[FragmentInfo]) -> frozenset[int] | None:
    """The ids of the scan's ``fragments``, None when they are all of this version's."""
    every = snapshot.fragments
    if len(fragments) == len(every) and all(a is b for a, b in zip(fragments, every)):
        return None
    return frozenset(f.id for f in fragments)


def _by_field(snapshot: Snapshot, conjuncts: Iterable[Conjunct]) -> tuple[dict[int, list[tuple[ColumnPredicate, ...]]], int]:
    """Conjuncts an index may answer, grouped by field id (``id >= a AND id <= b`` is one range
    search), and how many conjuncts that leaves out."""
    ids_by_path = _field_ids(snapshot.schema)
    by_field: dict[int, list[tuple[ColumnPredicate, ...]]] = {}
    left = 0
    for c in conjuncts:
        fid = ids_by_path.get(tuple(c.path))
        ops = {p.op for p in _preds(c)}
        if fid is not None and (ops <= EXACT_OPS or ops <= LABEL_OPS or ops <= ngram.TEXT_OPS):
            by_field.setdefault(fid, []).append(_preds(c))
        else:
            left += 1
    return by_field, left


def _exact_types(terms: Terms) -> tuple[str, ...]:
    """Index types that answer ``terms`` exactly (list-membership terms: LABEL_LIST; substring
    terms: none)."""
    ops = {p.op for preds in terms for p in preds}
    if ops & ngram.TEXT_OPS:
        return ()
    return LABEL_TYPES if ops & LABEL_OPS else EXACT_TYPES


def _at_most_types(terms: Terms) -> list[tuple[str, ...]]:
    """Index types that answer ``terms`` with candidates, in the order to try them."""
    ops = {p.op for preds in terms for p in preds}
    if ops <= ngram.TEXT_OPS:
        return [TEXT_TYPES]
    if ops <= EXACT_OPS:
        return [BLOOM_TYPES, ZONE_TYPES] if ops <= bloom.BLOOM_OPS else [ZONE_TYPES]
    return []


def count_from_indices(snapshot: Snapshot, conjuncts: Sequence[Conjunct], fragments: Sequence[FragmentInfo]) -> int | None:
    """Rows passing ``conjuncts`` (the *whole* filter) counted from exact indices alone, or None
    unless every conjunct is answered by a BTREE / BITMAP segment on every fragment."""
    got = count_answered(snapshot, AllOf(tuple(conjuncts)), fragments)
    return None if got is None or got[1] else got[0]


def count_answered(snapshot: Snapshot, tree: FilterTree,
                   fragments: Sequence[FragmentInfo]) -> tuple[int, list[FragmentInfo]] | None:
    """(rows passing ``tree`` -- the *whole* filter: per-column conjuncts, ANDs and ORs of them
    (``predicate.bool_tree``) -- in the fragments where exact indices
    (BTREE, BITMAP, LABEL_LIST) answer every leaf, deletions subtracted; the other fragments of
    ``fragments``, to count by scanning), or None when no fragment is answered so."""
    if not snapshot.scalar_indices_usable or not index_segments(snapshot) or reuse_history(snapshot) is None:
        return None
    wanted = _wanted(snapshot, fragments)
    sets = _tree_sets(snapshot, tree, wanted)
    if not sets:
        return None
    total, rest = 0, []
    for f in fragments:
        offs = sets.get(f.id)
        if offs is None:
            rest.append(f)
            continue
        if len(offs) and f.num_deletions():
            d = f.deleted_offsets()
            pos = np.minimum(np.searchsorted(d, offs), len(d) - 1)
            offs = offs[d[pos] != offs]
        total += len(offs)
    return total, rest


def _tree_sets(snapshot: Snapshot, node: FilterTree, wanted: frozenset[int] | None) -> dict[int, np.ndarray]:
    """{fragment id: sorted unique int64 offsets of the rows (deleted ones included) where ``node``
    holds} for the fragments where exact indices answer every leaf of it."""
    if isinstance(node, EitherOf):    # each part alone (one column's OR is already one leaf)
        return _combine([_tree_sets(snapshot, p, wanted) for p in node.parts], _union_sorted)
    parts = node.parts if isinstance(node, AllOf) else (node,)
    leaves = [p for p in parts if not isinstance(p, (AllOf, EitherOf))]
    by_field, left = _by_field(snapshot, leaves)
    if left or not parts:
        return {}
    groups = [_exact_sets(snapshot, fid, terms, wanted) for fid, terms in by_field.items()]
    groups += [_tree_sets(snapshot, p, wanted) for p in parts if isinstance(p, (AllOf, EitherOf))]
    return _combine(groups, lambda x, y: np.intersect1d(x, y, assume_unique=True))


def _exact_sets(snapshot: Snapshot, field_id: int, terms: Terms, wanted: frozenset[int] | None,
                sources: dict[int, str] | None = None) -> dict[int, np.ndarray]:
    """The rows an exact index on ``field_id`` selects for ``terms``, per fragment it covers."""
    types = _exact_types(terms)
    plans = _segment_plans(snapshot, field_id, types) if types else []
    return _column_selections(snapshot, plans, terms, wanted, sources) if plans else {}


def _union_sorted(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The union of two sorted unique arrays, sorted unique (two sorted runs merged: no hashing)."""
    if not len(a) or not len(b):
        return b if not len(a) else a
    c = np.concatenate((a, b))
    c.sort(kind="stable")
    return c[np.concatenate(([True], c[1:] != c[:-1]))]


def _combine(groups: list[dict[int, np.ndarray]],
             op: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> dict[int, np.ndarray]:
    """``op`` folded over the offsets of the fragments every group answers."""
    if not groups or not all(groups):
        return {}
    out = dict(groups[0])
    for g in groups[1:]:
        out = {fid: op(offs, g[fid]) for fid, offs in out.items() if fid in g}
    return out


class IndexSelections(dict[int, np.ndarray]):
    """{fragment id: sorted int64 offsets}; ``candidates``: the fragments whose selection came
    (partly) from an "at most" index (BLOOMFILTER, ZONEMAP, NGRAM), where most rows may fail;
    ``exact``: {fragment id: its index files} for the fragments where exact indices answered
    every conjunct -- there each selected live row passes the conjuncts, so one that fails them
    proves an index file damaged (the scan raises ``CorruptFileError`` naming them)."""

    def __init__(self) -> None:
        super().__init__()
        self.candidates: set[int] = set()
        self.exact: dict[int, str] = {}


def plan_index_selections(snapshot: Snapshot, conjuncts: Sequence[Conjunct],
                          fragments: Sequence[FragmentInfo]) -> dict[int, np.ndarray]:
    """Per-fragment row selections from the indices that answer ``conjuncts`` (an
    :class:`IndexSelections`)."""
    if not conjuncts or not snapshot.scalar_indices_usable or not index_segments(snapshot):
        return {}
    if reuse_history(snapshot) is None:       # a fragment-reuse index this reader cannot read
        return {}
    wanted = _wanted(snapshot, fragments)
    by_field, left = _by_field(snapshot, conjuncts)
    result = IndexSelections()
    exact: dict[int, list[str]] | None = {} if not left else None    # fragment -> files, per field
    for fid, terms in by_field.items():
        sources: dict[int, str] = {}
        sel = _exact_sets(snapshot, fid, terms, wanted, sources)
        if sel and exact is not None:
            for frag_id in sel:
                exact.setdefault(frag_id, []).append(sources.get(frag_id, "index"))
        if not sel:
            exact = None
            for types in _at_most_types(terms):
                plans = _segment_plans(snapshot, fid, types)
                sel = _column_selections(snapshot, plans, terms, wanted) if plans else {}
                if sel:
                    result.candidates.update(sel)
                    break
        for frag_id, offs in sel.items():
            prev = result.get(frag_id)
            result[frag_id] = offs if prev is None else np.intersect1d(prev, offs, assume_unique=True)
    if exact:
        result.exact = {f: " / ".join(files) for f, files in exact.items() if len(files) == len(by_field)}
    return result
