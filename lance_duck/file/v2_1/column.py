"""One leaf column: which pages a row selection touches, their decoders, and merging pages."""
from __future__ import annotations

from bisect import bisect_right
import functools
from dataclasses import dataclass
from typing import Any, Callable, Sequence, Union, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf.message import DecodeError

from ... import trace
from ..._proto import encodings_v2_1_pb2 as pb
from ..._proto import file2_pb2
from ...encodings._buf import join_adjacent
from ...encodings._threads import map_parts
from ...errors import CorruptFileError, UnsupportedFeatureError
from . import direct_lists, repdef
from . import values as values_mod
from .direct_lists import DirectList
from . import _kernels
from .layouts.fullzip import FullZipPage
from .layouts.kinds import LayoutPage, layout_page
from .layouts.miniblock import MiniBlockPage, batch_key, decode_batch
from .layouts.sparse23 import SparsePage
from .page import Buf, Local, PageContext, PageData
from .point import PointPage
from .planar23 import PLANAR_LAYOUT_URL, IndexedLayout, SparseLayout, planar_to_page_layout

PAGE_LAYOUT_URL = "/lance.encodings21.PageLayout"
MAX_BATCH_ITEMS = 1 << 22   # bounds the per-batch temporaries (index arrays are int64 per value)
PARALLEL_PAGE_ROWS = 1 << 16  # selections at least this long decode their pages concurrently
#: pages handed on unjoined (``LeafPlan.decode_chunks``) average at least this many rows: the join
#: of larger ones is a copy through RAM, shorter ones would reach the engine as many small batches
PAGE_CHUNK_MIN_ROWS = 1 << 16

#: a page's layout: a 2.1 PageLayout message, or 2.3's sparse structure / indexed values
PageLayout = Union[pb.PageLayout, SparseLayout, IndexedLayout]
#: a lean read of one page: decode (its fetched bytes -> entries), the byte ranges it needs, and the
#: page's rows it reads (positions or a run; one row for a point read)
LeanPart = tuple[Callable[[Sequence[Buf]], PageData], list[tuple[int, int]], Union[np.ndarray, range, int]]
#: what LeafPlan.decode runs: pages decoded as one batch [(page index, page, data)], or one page
_Job = Union[list[tuple[int, MiniBlockPage, Sequence[Buf]]], tuple["SparsePage | LayoutPage", Sequence[Buf], Local],
             tuple[MiniBlockPage, Sequence[Buf], Local, np.ndarray]]

def page_layout(page: file2_pb2.ColumnMetadata.Page, what: str) -> PageLayout:
    """The PageLayout message of a page (encodings21, used by 2.1 and 2.2; 2.3 pages translated)."""
    from google.protobuf import any_pb2
    kind = page.encoding.WhichOneof("location")
    if kind != "direct":
        raise UnsupportedFeatureError(f"{what}: page encoding stored as {kind!r} is not supported")
    anyv = any_pb2.Any()
    try:
        anyv.ParseFromString(page.encoding.direct.encoding)
    except DecodeError as exc:
        raise CorruptFileError(f"{what}: page encoding is corrupt: {exc}") from exc
    if anyv.type_url.rsplit("/", 1)[-1] == PLANAR_LAYOUT_URL:  # file format 2.3
        return planar_to_page_layout(anyv.value, what, int(page.length))
    if anyv.type_url.rsplit("/", 1)[-1] != PAGE_LAYOUT_URL[1:]:
        raise UnsupportedFeatureError(f"{what}: page encoding {anyv.type_url!r} is not supported "
                                      "(expected lance.encodings21.PageLayout)")
    layout = pb.PageLayout()
    try:
        layout.ParseFromString(anyv.value)
    except DecodeError as exc:
        raise CorruptFileError(f"{what}: page layout is corrupt: {exc}") from exc
    return layout


def make_page(ctx: PageContext, page: file2_pb2.ColumnMetadata.Page, layout: PageLayout | None = None
              ) -> SparsePage | LayoutPage:
    layout = layout if layout is not None else page_layout(page, ctx.what)
    if isinstance(layout, SparseLayout):  # file format 2.3
        return SparsePage(ctx, page, layout)
    return layout_page(ctx, page, layout)


@dataclass
class LeafData:
    """All selected entries of one leaf column (pages merged)."""
    values: pa.Array
    rep: np.ndarray | None
    defs: np.ndarray | None
    layers: list[int]
    num_rows: int
    lists: DirectList | None = None   # the one list layer as offsets (rep and defs then None)


class ColumnPages:
    """What every read of one column of a file needs, worked out once: the pages' row counts and
    first rows, their parsed layouts, and the metadata state of pages that can keep it (mini-block
    chunk tables, decoded dictionaries). Readers of a cached file share it (``container.derived``)."""

    #: page metadata of at most this many bytes is kept (larger is fetched again per read)
    MAX_META_BYTES = 1 << 20

    def __init__(self, cm: file2_pb2.ColumnMetadata, charge: Callable[[int], None] | None = None) -> None:
        self.source = cm
        self.pages = list(cm.pages)
        self.lengths = np.array([int(p.length) for p in self.pages], np.int64)
        self.starts = np.cumsum(self.lengths) - self.lengths
        self.total = int(self.lengths.sum())
        self.edges = np.append(self.starts, self.total)
        self.layouts: dict[int, PageLayout] = {}
        self.meta: dict[int, dict[str, Any]] = {}
        self.lean: dict[tuple[pa.DataType, pa.DataType | None, bool], LeanColumn] = {}   # (arrow type, dict type, keep) -> lean reader
        self._charge = charge or (lambda n: None)

    def layout(self, i: int, what: str) -> PageLayout:
        lay = self.layouts.get(i)
        if lay is None:
            lay = self.layouts[i] = page_layout(self.pages[i], what)
            self._charge(512)
        return lay

    def keep_meta(self, i: int, page: MiniBlockPage, bufs: list[bytes]) -> None:
        """Remember page ``i``'s metadata state after ``page.set_meta(bufs)`` (bufs owned bytes)."""
        state = page.meta_state()
        if state is not None:
            self.meta[i] = state
            self._charge(3 * sum(len(b) for b in bufs) + 32 * len(getattr(page, "counts", ())) + 256)


    def lean_column(self, what: str, arrow_type: pa.DataType, dict_type: pa.DataType | None, minor: int,
                    keep_dictionary: bool) -> LeanColumn:
        """The column's :class:`LeanColumn` for one leaf type (made once, shared)."""
        key = (arrow_type, dict_type, keep_dictionary)
        lc = self.lean.get(key)
        if lc is None:
            lc = self.lean[key] = LeanColumn(self, what, arrow_type, dict_type, minor, keep_dictionary)
            self._charge(256)
        return lc


class LeanColumn:
    """Reads of a few rows of one leaf column whose pages are mini-block pages without
    repetition levels (``path:lean-rows``): the page objects are made once with the metadata
    the column keeps and shared by every such read of the file (their lean methods change
    nothing), so a read is: rows -> pages -> chunks -> byte ranges, then one decode per page."""

    def __init__(self, column: ColumnPages, what: str, arrow_type: pa.DataType, dict_type: pa.DataType | None, minor: int,
                 keep_dictionary: bool) -> None:
        self.column = column
        self.what = what
        self.arrow_type = dict_type if dict_type is not None else arrow_type
        self._ctx = (arrow_type, dict_type, minor, keep_dictionary)
        self._edges: list[int] | None = None     # first row of every page, as Python ints
        self._pages: dict[int, MiniBlockPage | None] = {}
        self._points: dict[int, PointPage | None] = {}

    def _page(self, i: int) -> MiniBlockPage | None:
        """Page ``i`` ready for lean reads, or None (another layout, repetition levels, or its
        metadata not kept yet: the general path reads it and keeps the metadata)."""
        if i in self._pages:
            return self._pages[i]
        cp = self.column
        state = cp.meta.get(i)
        if state is None:
            return None
        ctx = PageContext(f"{self.what} page {i}", *self._ctx)
        page = make_page(ctx, cp.pages[i], cp.layout(i, ctx.what))
        lean = page if isinstance(page, MiniBlockPage) and not page.has_rep else None
        if lean is not None:
            lean.restore_meta(state)
            cp._charge(512)
        self._pages[i] = lean
        return lean

    def _point(self, i: int) -> PointPage | None:
        """Page ``i``'s one-row reader (:mod:`.point`), or None (its encoding is not read there)."""
        if i in self._points:
            return self._points[i]
        page = self._page(i)
        if page is None:
            return None                  # (not kept yet: asked again on a later read)
        pp = self._points[i] = PointPage.of(page)
        return pp

    def _plan_point(self, row: int) -> list[LeanPart] | None:
        """:meth:`plan` of one row through :class:`~.point.PointPage` (None: not read so)."""
        cp = self.column
        edges = self._edges
        if edges is None:
            edges = self._edges = cp.starts.tolist()
        i = bisect_right(edges, row) - 1
        pp = self._point(i)
        if pp is None:
            return None
        local = row - edges[i]
        chunk, runs, ranges = pp.lean_plan(local)
        return [(functools.partial(pp.lean_decode, c=chunk, _runs=runs, row=local), ranges, local)]

    def plan(self, rows: np.ndarray | range) -> list[LeanPart] | None:
        """[(decode of a page's part, its byte ranges, its local rows)] for sorted in-bounds ``rows`` (a
        contiguous run may be a ``range``: each page then gets a local range, located by its two
        ends), or None when a page they touch cannot be read lean. One row goes through the
        page's :class:`~.point.PointPage` when its encoding is read there."""
        if len(rows) == 1:
            parts = self._plan_point(int(rows[0]))
            if parts is not None:
                return parts
        cp = self.column
        groups: list[tuple[int, np.ndarray | range]]
        if len(cp.pages) == 1:
            groups = [(0, rows)]
        elif not isinstance(rows, range) and (one := self._one_page(int(rows[0]), int(rows[-1]))) is not None:
            groups = [(one, rows - int(cp.starts[one]) if one else rows)]   # (sorted: both ends in one page)
        elif isinstance(rows, range):
            first, last = (np.searchsorted(cp.edges, [rows.start, rows.stop - 1], side="right") - 1).tolist()
            groups = []
            for i in range(first, last + 1):
                s = int(cp.starts[i])
                part = range(max(rows.start, s) - s, min(rows.stop, int(cp.edges[i + 1])) - s)
                if len(part):                  # (an empty page between the two ends)
                    groups.append((i, part))
        else:
            pid = np.searchsorted(cp.edges, rows, side="right") - 1
            cut = np.flatnonzero(pid[1:] != pid[:-1]) + 1
            groups = [(int(pid[a]), rows[a:b] - cp.starts[pid[a]])
                      for a, b in zip([0, *cut.tolist()], [*cut.tolist(), rows.size])]
        out: list[LeanPart] = []
        for i, local in groups:
            page = self._page(i)
            if page is None:
                return None
            sel, runs, ranges = page.lean_plan(local)
            out.append((functools.partial(page.lean_decode, sel=sel, runs=runs, local=local), ranges, local))
        return out

    def _one_page(self, first: int, last: int) -> int | None:
        """The page holding both rows ``first`` and ``last`` (by bisection), or None."""
        edges = self._edges
        if edges is None:
            edges = self._edges = self.column.starts.tolist()
        i = bisect_right(edges, first) - 1
        return i if i == bisect_right(edges, last) - 1 else None

    @staticmethod
    def ranges(parts: list[LeanPart]) -> list[tuple[int, int]]:
        return [r for _, ranges, _ in parts for r in ranges]

    def decode(self, parts: list[LeanPart], bufs: Sequence[Buf]) -> LeafData:
        """The selected entries from the fetched bytes of :meth:`ranges` (in order)."""
        pages = []
        k = 0
        for decode, ranges, _ in parts:
            pages.append(decode(bufs[k: k + len(ranges)]))
            k += len(ranges)
        if len(pages) == 1:
            pd = pages[0]
            return LeafData(pd.values, None, pd.defs, pd.layers, pd.num_rows)
        return merge_pages(pages, self.arrow_type, self.what)


class LeafPlan:
    """The pages of one column that a selection touches, with per-page local row selections."""

    def __init__(self, cm: file2_pb2.ColumnMetadata, col: int, path: str, arrow_type: pa.DataType,
                 dict_type: pa.DataType | None, minor: int, sel: np.ndarray | range | None,
                 keep_dictionary: bool = False, column: ColumnPages | None = None,
                 dead: np.ndarray | None = None) -> None:
        """``column``: the column's shared :class:`ColumnPages` (made from ``cm`` when None).
        ``dead``: sorted positions in the range ``sel`` (None: the whole column) of rows to leave
        out; when every page touched is a mini-block page without repetition levels, each decodes
        its rows but those (``live_rows`` then counts the rows kept), else it is ignored
        (``live_rows`` None)."""
        self.what = f"{path} column {col}"
        self.column = cp = column if column is not None else ColumnPages(cm)
        pages, lengths, starts, total = cp.pages, cp.lengths, cp.starts, cp.total
        self.total_rows = total
        picks: list[tuple[int, np.ndarray | range | None]] = []
        if sel is None:
            picks = [(i, None) for i in range(len(pages))]
        elif isinstance(sel, range):
            a, b = sel.start, sel.stop
            if a < 0 or b > total:
                raise CorruptFileError(f"{self.what}: rows [{a}, {b}) outside the column's {total} rows")
            for i in np.flatnonzero((starts < b) & (starts + lengths > a)).tolist():
                s, n = int(starts[i]), int(lengths[i])
                lo, hi = max(a, s) - s, min(b, s + n) - s
                picks.append((i, None if (lo == 0 and hi == n) else range(lo, hi)))
        else:
            rows = np.asarray(sel, np.int64)
            if rows.size and (rows[0] < 0 or rows[-1] >= total):
                raise CorruptFileError(f"{self.what}: row {int(rows[-1])} outside the column's {total} rows")
            if len(pages) == 1:
                if rows.size:
                    picks.append((0, None if rows.size == total else rows))
            else:
                bounds = np.searchsorted(rows, cp.edges)  # one search per page
                for i in np.flatnonzero(bounds[1:] > bounds[:-1]).tolist():
                    local = rows[bounds[i]: bounds[i + 1]] - starts[i]
                    picks.append((i, None if local.size == lengths[i] else local))
        self.pages: list[tuple[SparsePage | LayoutPage, Local]] = []
        self._fresh: list[int] = []       # page numbers whose metadata this read fetches
        self._dead: list[np.ndarray | None] = []   # per page: local rows of ``local`` left out
        self.live_rows: int | None = None
        for i, local in picks:
            ctx = PageContext(f"{self.what} page {i}", arrow_type, dict_type, minor, keep_dictionary)
            page = make_page(ctx, pages[i], cp.layout(i, ctx.what))
            state = cp.meta.get(i)
            if state is not None and isinstance(page, MiniBlockPage):   # (the pages that keep a state)
                page.restore_meta(state)
            if isinstance(local, range) and not getattr(page, "SLICES_RANGES", False):
                local = np.arange(local.start, local.stop, dtype=np.int64)
            self.pages.append((page, local))
            self._fresh.append(-1 if state is not None else i)
            self._dead.append(None)
        self.arrow_type = dict_type if dict_type is not None else arrow_type
        if dead is not None and not isinstance(sel, np.ndarray) and _live_pages([p for p, _ in self.pages]):
            self._apply_dead(dead, 0 if sel is None else sel.start, [i for i, _ in picks],
                             total if sel is None else len(sel))

    def _apply_dead(self, dead: np.ndarray, first: int, numbers: list[int], rows: int) -> None:
        """Each page's dead local rows (pages with no live row are dropped): the mini-block decode
        then leaves them out (:meth:`MiniBlockPage.decode_live`)."""
        starts, lengths = self.column.starts, self.column.lengths
        pages: list[tuple[SparsePage | LayoutPage, Local]] = []
        fresh: list[int] = []
        deads: list[np.ndarray | None] = []
        for (p, local), fr, i in zip(self.pages, self._fresh, numbers):
            assert not isinstance(local, np.ndarray)     # a range's pages (mini-block: SLICES_RANGES)
            lo, hi = (0, int(lengths[i])) if local is None else (local.start, local.stop)
            at = int(starts[i]) - first
            a, b = np.searchsorted(dead, [at + lo, at + hi]).tolist()
            if b - a == hi - lo:
                continue                  # every row of the page's part is dead
            pages.append((p, local))
            fresh.append(fr)
            deads.append(dead[a:b] - at if b > a else None)
        self.pages, self._fresh, self._dead = pages, fresh, deads
        self.live_rows = rows - dead.size
        trace.record("path:live-pages", len(pages))

    # phase 1 / 2 / 3 (the reader batches the I/O of all leaves)
    def meta_ranges(self) -> list[tuple[int, int]]:
        return [r for (p, _), i in zip(self.pages, self._fresh) if i >= 0 for r in p.meta_ranges()]

    def set_meta(self, bufs: Sequence[Buf]) -> None:
        k0 = 0
        for (p, _), i in zip(self.pages, self._fresh):
            if i < 0:
                continue                  # metadata state restored from the column's cache
            k = len(p.meta_ranges())
            mine = bufs[k0: k0 + k]
            k0 += k
            if isinstance(p, MiniBlockPage) and sum(len(b) for b in mine) <= ColumnPages.MAX_META_BYTES:
                owned = [bytes(b) for b in mine]        # owned: the cache must not pin a memory map
                p.set_meta(owned)
                self.column.keep_meta(i, p, owned)
            else:
                p.set_meta(mine)

    def data_ranges(self) -> list[tuple[int, int]]:
        self._counts: list[int] = []
        out: list[tuple[int, int]] = []
        for p, local in self.pages:
            r = p.data_ranges(local) if isinstance(p, MiniBlockPage) else p.data_ranges(_positions(local))
            self._counts.append(len(r))
            out.extend(r)
        return out

    def decode(self, bufs: Sequence[Buf]) -> LeafData:
        return self._decode_jobs(self._jobs(bufs))

    def decode_chunks(self, bufs: Sequence[Buf]) -> list[LeafData]:
        """The selected rows as consecutive parts, for a reader that hands a top-level field back
        as a chunked column: the values of a fixed-width leaf (numbers, fixed-size lists of them)
        whose touched pages are mini-block pages, not all with a dictionary, come one part per
        decoding job (a page, or pages decoded as one batch), not joined into one array (a copy of
        every value the engine can do without: DuckDB takes a chunked column batch by batch) when
        they average :data:`PAGE_CHUNK_MIN_ROWS`; a page dictionary's values are taken into plain
        values, as :func:`merge_pages` does for such mixed pages. Any other leaf, or a single
        job, as :meth:`decode`'s one part."""
        jobs = self._jobs(bufs)
        rows = sum(_selected_rows(p, local) for p, local in self.pages)
        if len(jobs) < 2 or rows < PAGE_CHUNK_MIN_ROWS * len(jobs) or values_mod.fixed_row_bytes(
                self.arrow_type) is None or not all(isinstance(p, MiniBlockPage) for p, _ in self.pages) or all(
                cast(MiniBlockPage, p).has_dict for p, _ in self.pages):
            return [self._decode_jobs(jobs)]
        trace.record("path:page-chunks", len(jobs))
        if rows >= PARALLEL_PAGE_ROWS:
            decoded = map_parts(self._run, jobs)
        else:
            decoded = [self._run(job) for job in jobs]
        parts = [merge_pages([pd], self.arrow_type, self.what) for pd in decoded]
        if not pa.types.is_dictionary(self.arrow_type) and any(pa.types.is_dictionary(p.values.type) for p in parts):
            trace.record("path:mixed-dictionary-pages", len(parts))
            for part in parts:           # (indices checked in range when they were made: no re-check)
                v = part.values
                if pa.types.is_dictionary(v.type):
                    part.values = pc.take(v.dictionary, v.indices, boundscheck=False)
        return parts

    def _decode_jobs(self, jobs: list[_Job]) -> LeafData:
        rows = sum(_selected_rows(p, local) for p, local in self.pages)
        parallel = len(jobs) > 1 and rows >= PARALLEL_PAGE_ROWS
        if len(jobs) > 1 and all(isinstance(j, tuple) and len(j) == 3 and isinstance(j[0], SparsePage)
                                 and j[0].rows_only and j[2] is None for j in jobs):
            leaf = self._expand_sparse(cast("list[tuple[SparsePage, Sequence[Buf], Local]]", jobs), parallel)
            if leaf is not None:
                return leaf
        if len(jobs) > 1:
            leaf = self._fsst_pages(jobs, parallel)
            if leaf is not None:
                return leaf
        if parallel:
            decoded = map_parts(self._run, jobs)     # independent pages on the kernel pool
        else:
            decoded = [self._run(job) for job in jobs]
        return merge_pages(decoded, self.arrow_type, self.what)

    def decode_parts(self, bufs: Sequence[Buf]) -> list[LeafData] | None:
        """The selected rows as consecutive parts, one per page (or batch of pages decoded as one),
        each merged on its own: a page dictionary stays that page's (no unification of the pages'
        dictionaries, no concatenation of their indices), for a count that evaluates a filter once
        per dictionary. None when no page has a dictionary (:meth:`decode` then gives one part)."""
        if not any(isinstance(p, MiniBlockPage) and p.has_dict for p, _ in self.pages):
            return None
        jobs = self._jobs(bufs)
        rows = sum(_selected_rows(p, local) for p, local in self.pages)
        if len(jobs) > 1 and rows >= PARALLEL_PAGE_ROWS:
            decoded = map_parts(self._run, jobs)
        else:
            decoded = [self._run(job) for job in jobs]
        return [merge_pages([pd], self.arrow_type, self.what) for pd in decoded]

    def _jobs(self, bufs: Sequence[Buf]) -> list[_Job]:
        """The pages' decoding jobs, in page order: consecutive mini-block pages that decode as one
        batch grouped, a page with dead rows alone (see :meth:`_run`)."""
        jobs: list[_Job] = []   # a group [(page index, page, data)], or (page, data, local)
        i = 0
        group: list[tuple[int, MiniBlockPage, Sequence[Buf]]] = []   # consecutive pages decoded as one batch
        key = None
        items = 0
        for j, ((p, local), k, dead) in enumerate(zip(self.pages, self._counts, self._dead)):
            data = bufs[i: i + k]
            i += k
            if dead is not None:
                if group:
                    jobs.append(group)
                    group, items = [], 0
                assert isinstance(p, MiniBlockPage)   # (_apply_dead's condition)
                jobs.append((p, data, local, dead))
                continue
            mb = p if isinstance(p, MiniBlockPage) else None
            pk = None if mb is None else batch_key(mb, data, local)
            n = int(mb.lay.num_items) if mb is not None and pk is not None else 0
            if group and (pk is None or pk != key or items + n > MAX_BATCH_ITEMS):
                jobs.append(group)
                group, items = [], 0
            if mb is not None and pk is not None:
                group.append((j, mb, data))
                key = pk
                items += n
                continue
            jobs.append((p, data, local))
        if group:
            jobs.append(group)
        return jobs

    def _expand_sparse(self, jobs: list[tuple[SparsePage, Sequence[Buf], Local]], parallel: bool) -> LeafData | None:
        """Whole 2.3 pages of a nullable fixed-width leaf (values of the valid rows only): the
        values of every page scattered once into the column's output (no take per page and no
        concatenation after it); None when the values are not fixed-width bytes throughout."""
        if values_mod.fixed_row_bytes(self.arrow_type) is None:
            return None

        def one(job: tuple[SparsePage, Sequence[Buf], Local]) -> tuple[pa.Array, np.ndarray, np.ndarray]:
            return job[0].compact(job[1])
        parts = map_parts(one, jobs) if parallel else [one(j) for j in jobs]
        values = values_mod.expand_valid([(v, valid) for v, valid, _ in parts], self.arrow_type)
        if values is None:
            return None
        trace.record("path:sparse-expand", len(jobs))
        layers = repdef.merge_layers([j[0].layers for j in jobs], self.what)
        return LeafData(values, None, np.concatenate([d for _, _, d in parts]), layers, len(values))

    def _fsst_pages(self, jobs: list[_Job], parallel: bool) -> LeafData | None:
        """Whole pages of FSST strings, one per row (full-zip long strings, mini-block short ones):
        every page's compressed strings decoded together into the column's one output
        (``fsst.decompress_many``) instead of page by page and joined after; None when the pages
        are not all such pages or the field wants other values than plain strings."""
        pages: list[tuple[FullZipPage | MiniBlockPage, Sequence[Buf], bytes]] = []
        for job in jobs:
            if isinstance(job, list) and len(job) == 1:          # a mini-block page alone in its batch
                page: object = job[0][1]
                bufs = job[0][2]
            elif isinstance(job, tuple) and len(job) == 3 and job[2] is None:
                page, bufs = job[0], job[1]
            else:
                return None
            if type(page) is not FullZipPage and type(page) is not MiniBlockPage:
                return None
            sym = page.fsst_symbols()
            if sym is None:
                return None
            pages.append((page, bufs, sym))
        t = self.arrow_type     # (an extension type keeps the page by page path)
        large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        if not (large or pa.types.is_string(t) or pa.types.is_binary(t)):
            return None

        def unzip(page: tuple[FullZipPage | MiniBlockPage, Sequence[Buf], bytes]
                  ) -> tuple[np.ndarray | None, values_mod.VarBin]:
            return page[0].fsst_strings(page[1])
        unzipped = map_parts(unzip, pages) if parallel else [unzip(p) for p in pages]
        trace.record("path:fsst-pages", len(pages))
        offs, data = _kernels.fsst_decompress_many(
            [(sym, comp.offsets, comp.data) for (_, _, sym), (_, comp) in zip(pages, unzipped)], int32_offsets=not large)
        values = values_mod.to_arrow(values_mod.VarBin(offs, data), self.arrow_type)
        # levels as merge_pages joins them: renumbered for the pages' merged layers (a page
        # without nulls may have none), zeros for a page without levels beside pages with them
        layers = repdef.merge_layers([p.layers for p, _, _ in pages], self.what)
        rows = [p.rows for p, _, _ in pages]
        defs = [repdef.remap_def(d, p.layers, layers, n) for (p, _, _), (d, _), n in zip(pages, unzipped, rows)]
        joined = None
        if any(d is not None for d in defs):
            joined = np.concatenate([d if d is not None else np.zeros(n, np.uint16) for d, n in zip(defs, rows)])
        return LeafData(values, None, joined, layers, sum(rows))

    def _run(self, job: _Job) -> PageData:
        if isinstance(job, list):
            return self._decode_group(job)
        if len(job) == 4:             # a page's rows but its dead ones (see _apply_dead)
            mb, data, local, dead = job
            assert not isinstance(local, np.ndarray)
            pd = mb.decode_live(data, local, dead)
            want = _selected_rows(mb, local) - dead.size
            if _rows_of(pd) != want:
                raise CorruptFileError(f"{mb.what}: decoded {_rows_of(pd)} rows, {want} live rows selected")
            return pd
        p, data, local = job
        pd = p.decode(data, local) if isinstance(p, MiniBlockPage) else p.decode(data, _positions(local))
        want = _selected_rows(p, local)
        if _rows_of(pd) != want:
            raise CorruptFileError(f"{p.what}: decoded {_rows_of(pd)} rows, the page declares {want}")
        return pd

    def _decode_group(self, group: list[tuple[int, MiniBlockPage, Sequence[Buf]]]) -> PageData:
        trace.record("path:page-group", (group[0][0], group[-1][0]))
        if len(group) == 1:
            _, p, data = group[0]
            pd = p.decode(data, None)
            if _rows_of(pd) != p.rows:
                raise CorruptFileError(f"{p.what}: decoded {_rows_of(pd)} rows, the page declares {p.rows}")
            return pd
        what = f"{self.what} pages {group[0][0]}-{group[-1][0]}"
        return decode_batch([p for _, p, _ in group], [d for _, _, d in group], what)


def _live_pages(pages: list[SparsePage | LayoutPage]) -> bool:
    """Whether deleted rows are best left out page by page: mini-block pages without repetition
    levels, at least one of flat values (their live runs are copied: no filter after), the others
    kept as dictionaries (decoded one by one anyway). Pages that decode as one batch (bit-packed,
    strings) are filtered once after it instead."""
    flat = False
    for p in pages:
        if not isinstance(p, MiniBlockPage) or p.has_rep:
            return False
        if p.has_dict:
            if p.ctx.dict_type is None and not p.ctx.keep_dictionary:
                return False
        elif p.flat_values():
            flat = True
        else:
            return False
    return flat


def merge_pages(pages: list[PageData], arrow_type: pa.DataType, what: str) -> LeafData:
    if not pages:
        return LeafData(pa.array([], arrow_type), None, None, [repdef.NULLABLE_ITEM], 0)
    layers = repdef.merge_layers([p.layers for p in pages], what)
    lists = direct_lists.merge(pages, layers, what)   # pages given as list offsets (2.3 sparse)
    any_rep = lists is None and any(p.rep is not None for p in pages)
    any_def = lists is None and any(p.defs is not None for p in pages)
    reps: list[np.ndarray] = []
    defs: list[np.ndarray] = []
    for p in pages:
        n_entries = p.rep.size if p.rep is not None else p.defs.size if p.defs is not None else len(p.values)
        if any_rep:
            if p.rep is None:
                if repdef.num_lists(layers):
                    raise CorruptFileError(f"{what}: a page of a list column has no repetition levels")
            # a page without levels outside lists: every entry starts a row (level 0)
            reps.append(p.rep if p.rep is not None else np.zeros(n_entries, np.uint16))
        if any_def:
            d = repdef.remap_def(p.defs, p.layers, layers, n_entries)
            defs.append(d if d is not None else np.zeros(n_entries, np.uint16))
    vals = [p.values for p in pages]
    if len(vals) > 1 and not pa.types.is_dictionary(arrow_type) and any(pa.types.is_dictionary(v.type) for v in vals):
        # pages kept as dictionaries: one DictionaryArray when every page is one, else plain values
        if all(pa.types.is_dictionary(v.type) for v in vals):
            vals = pa.chunked_array(vals).unify_dictionaries().chunks
        else:
            # (a DictionaryArray's indices were checked in range when it was made: no re-check)
            trace.record("path:mixed-dictionary-pages", len(vals))
            vals = [pc.take(v.dictionary, v.indices, boundscheck=False) if pa.types.is_dictionary(v.type) else v
                    for v in vals]
    values = vals[0] if len(vals) == 1 else join_adjacent(vals)
    if values is None:        # (else plain pages back to back in a mapped file, joined without a copy)
        values = pa.concat_arrays(vals)
    if lists is not None:
        return LeafData(values, None, None, layers, sum(p.num_rows for p in pages), lists)
    return LeafData(values,
                    (reps[0] if len(reps) == 1 else np.concatenate(reps)) if any_rep else None,
                    (defs[0] if len(defs) == 1 else np.concatenate(defs)) if any_def else None,
                    layers, sum(p.num_rows for p in pages))


def _positions(local: Local) -> np.ndarray | None:
    """``local`` as positions (a range is given only to pages that slice ranges, see LeafPlan)."""
    return np.arange(local.start, local.stop, dtype=np.int64) if isinstance(local, range) else local


def _selected_rows(page: SparsePage | LayoutPage, local: Local) -> int:
    """Rows of ``page`` a local selection (in page entries) covers; None = every row."""
    return page.rows if local is None else len(local) // getattr(page, "row_unit", 1)


def _rows_of(pd: PageData) -> int:
    """Rows actually present in decoded entries."""
    if pd.lists is not None:
        return pd.lists.rows
    if pd.rep is not None:
        return int(np.count_nonzero(pd.rep == repdef.num_lists(pd.layers)))
    if pd.defs is not None:
        return int(pd.defs.size)
    return len(pd.values)
