"""Mini-block pages: chunk metadata words, chunk headers, levels, values, dictionary, rep index.

Buffers: 0 = chunk metadata words (u16 in 2.1, u32 when ``has_large_chunk``), 1 = chunks,
2 = dictionary (if any), last = repetition index (if ``repetition_index_depth > 0``).
Only the chunks holding selected rows are fetched and decoded; all chunks of a page are
decoded together (no per-chunk Python loop).
"""
from __future__ import annotations

import mmap
from bisect import bisect_right
from typing import Any, Hashable, Sequence, cast

import numpy as np
import pyarrow as pa

from .... import trace
from ...._proto import encodings_v2_1_pb2 as pb
from ....errors import CorruptFileError, UnsupportedFeatureError
from .. import repdef
from ..compression import (ChunkSet, decode_block, decode_block_batch, decode_miniblock,
                           decode_miniblock_runs, decode_miniblock_selected, levels_at)
from ..compression.common import encoding_kind
from ...base import keep_rows
from ..gather import read_header_words
from ..page import Buf, Local, PageContext, PageData, PageMeta, entry_rows, trim
from ..values import Fixed, Values, VarBin, as_fixed, to_arrow, uint_view
from .common import PageBase, apply_dictionary, finish_values, u8


#: selections of at most this many rows of a page locate their chunks row by row
TINY_ROWS = 256
#: a contiguous selection of at most this many rows (no repetition) decodes only its values
LEAN_RANGE_ROWS = 4096
#: chunk headers of at most this many chunks are parsed as Python ints (fewer numpy calls)
FEW_CHUNKS = 4


class MiniBlockPage(PageBase[pb.MiniBlockLayout]):
    SLICES_RANGES = True   # a contiguous local selection may be given as a ``range`` (sliced, no gather)

    # the metadata state (set_meta / restore_meta)
    sizes: np.ndarray
    starts: np.ndarray
    counts: np.ndarray
    chunk_rows: np.ndarray
    dict_raw: np.ndarray | None
    rep_index: np.ndarray | None
    _dict_vals: Values
    # this read's chunks (data_ranges)
    sel: np.ndarray
    runs: list[tuple[int, int]]
    levels_per_chunk: np.ndarray

    def __init__(self, ctx: PageContext, page: PageMeta, layout: pb.MiniBlockLayout) -> None:
        super().__init__(ctx, page, layout)
        self.page = page
        self.has_rep = layout.HasField("rep_compression")
        self.has_def = layout.HasField("def_compression")
        self.has_dict = layout.HasField("dictionary")
        self.depth = int(layout.repetition_index_depth)
        self.num_bufs = int(layout.num_buffers)
        self.large = bool(layout.has_large_chunk)
        nb = 2 + int(self.has_dict) + int(self.depth > 0)
        if len(self.bufs) < nb or len(page.buffer_sizes) != len(page.buffer_offsets):
            raise CorruptFileError(f"{self.what}: mini-block page has {len(page.buffer_offsets)} buffers, "
                                   f"expected {nb}")
        trace.record("layout:miniblock" + (":large" if self.large else ""))

    # -- I/O planning ------------------------------------------------------------------------
    def meta_ranges(self) -> list[tuple[int, int]]:
        r = [self.bufs[0]]
        if self.has_dict:
            r.append(self.bufs[2])
        if self.depth > 0:
            r.append(self.bufs[-1])
        return r

    def set_meta(self, bufs: Sequence[Buf]) -> None:
        words = u8(bufs[0])
        wb = 4 if self.large else 2
        if words.size % wb:
            raise CorruptFileError(f"{self.what}: chunk metadata of {words.size} bytes")
        w = np.ascontiguousarray(words).view("<u4" if self.large else "<u2").astype(np.int64)
        self.sizes = ((w >> 4) + 1) * 8
        self.starts = np.cumsum(self.sizes) - self.sizes
        counts = np.left_shift(1, w & 15).astype(np.int64)
        num_items = int(self.lay.num_items)
        if counts.size:
            counts[-1] = num_items - int(counts[:-1].sum())
        if counts.size and counts[-1] < 0 or (counts.size == 0 and num_items):
            raise CorruptFileError(f"{self.what}: chunk value counts exceed the page's {num_items} items")
        if counts.size and int(self.starts[-1] + self.sizes[-1]) > self.bufs[1][1]:
            raise CorruptFileError(f"{self.what}: chunks extend past their buffer")
        self.counts = counts
        self.chunk_rows = np.cumsum(counts) - counts
        i = 1
        self.dict_raw = None
        if self.has_dict:
            self.dict_raw = u8(bufs[i])
            i += 1
        self.rep_index = None
        if self.depth > 0:
            ri = u8(bufs[i])
            k = self.depth + 1
            if ri.size != 8 * k * counts.size:
                raise CorruptFileError(f"{self.what}: repetition index of {ri.size} bytes for {counts.size} chunks")
            self.rep_index = np.ascontiguousarray(ri).view("<u8").reshape(counts.size, k).astype(np.int64)

    #: what set_meta derives (plus the decoded dictionary): kept per file by the column cache
    META_STATE = ("sizes", "starts", "counts", "chunk_rows", "dict_raw", "rep_index")

    def meta_state(self) -> dict[str, Any]:
        """This page's metadata state (after set_meta), dictionary decoded, for :meth:`restore_meta`."""
        if self.has_dict:
            self._dictionary()
        state = {k: self.__dict__[k] for k in self.META_STATE}
        if self.has_dict:
            state["_dict_vals"] = self._dict_vals
            items: dict[pa.DataType, pa.Array] = {}       # Arrow items per type, shared by later reads
            state["_dict_items"] = self._dict_items = items
        return state

    def restore_meta(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _dictionary(self) -> Values:
        if not hasattr(self, "_dict_vals"):
            assert self.dict_raw is not None     # pages with a dictionary read it in set_meta
            nd = int(self.lay.num_dictionary_items)
            self._dict_vals = decode_block(self.lay.dictionary, self.dict_raw, nd, self.what + " dictionary")
        return self._dict_vals

    def _dictionary_items(self) -> pa.Array:
        """The dictionary as an Arrow array of the leaf type (kept with the column's metadata)."""
        cache: dict[pa.DataType, pa.Array] = self.__dict__.setdefault("_dict_items", {})
        items = cache.get(self.ctx.arrow_type)
        if items is None:
            items = cache[self.ctx.arrow_type] = to_arrow(self._dictionary(), self.ctx.arrow_type)
        return items

    def _chunks_for(self, local: np.ndarray | range | None) -> np.ndarray:
        n = self.counts.size
        if local is None or n == 0:
            return np.arange(n)
        if isinstance(local, range):
            # a contiguous run of rows lives in a contiguous run of chunks: locate its two ends
            if len(local) == 0:
                return np.arange(0)
            ends = np.array([local.start, local.stop - 1], np.int64)
            if not self.has_rep:
                a, b = (np.searchsorted(self._chunk_rows(), ends, side="right") - 1).tolist()
                return np.arange(max(a, 0), b + 1)
            if self.rep_index is None:
                return np.arange(n)
            first, last = self._row_chunks(ends)
            return np.arange(max(int(first[0]), 0), int(last[1]) + 1)
        if not self.has_rep:
            cstart = self._chunk_rows()
            if local.size <= TINY_ROWS:
                # both ends in one chunk (a few neighbouring rows): two bisections, no numpy call
                rows = self._chunk_row_list()
                c = bisect_right(rows, int(local[0])) - 1
                if c >= 0 and c == bisect_right(rows, int(local[-1])) - 1:
                    return np.array([c], np.int64)
                # a handful of rows: one search per row, then the distinct chunks (rows are sorted)
                ch = np.searchsorted(cstart, local, side="right") - 1
                return ch if ch.size < 2 else ch[np.flatnonzero(np.diff(ch, prepend=-1))]
            # one entry per row per value slot: chunk c holds rows [cstart, cstart + count);
            # it is needed when some selected row lies in it (one search per chunk, not per row)
            at = np.searchsorted(local, np.append(cstart, cstart[-1] + self.counts[-1]))
            return np.flatnonzero(at[1:] > at[:-1])
        if self.rep_index is None:
            return np.arange(n)
        first, last = self._row_chunks(local)
        need = np.zeros(n + 1, np.int64)
        np.add.at(need, np.maximum(first, 0), 1)
        np.add.at(need, last + 1, -1)
        return np.flatnonzero(np.cumsum(need[:-1]) > 0)

    def _chunk_rows(self) -> np.ndarray:
        """First row of every chunk (pages without repetition: one entry per row)."""
        return self.chunk_rows

    def _chunk_row_list(self) -> list[int]:
        """:meth:`_chunk_rows` as Python ints (made once per page object)."""
        got = self.__dict__.get("_chunk_row_ints")
        if got is None or got[0] is not self.chunk_rows:     # (made again when set_meta replaced the table)
            got = self.__dict__["_chunk_row_ints"] = (self.chunk_rows, self.chunk_rows.tolist())
        rows: list[int] = got[1]
        return rows

    def _row_chunks(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(chunk where each row starts, chunk where it finishes), from the repetition index."""
        n = self.counts.size
        assert self.rep_index is not None       # the callers checked
        fin, trailing = self.rep_index[:, 0], self.rep_index[:, -1]
        rows_before = np.cumsum(fin) - fin
        pre = np.concatenate(([False], trailing[:-1] > 0))
        started_before = rows_before + pre
        first = np.searchsorted(started_before, rows, side="right") - 1
        last = np.minimum(np.searchsorted(np.cumsum(fin), rows, side="right"), n - 1)
        return first, last

    def data_ranges(self, local: np.ndarray | range | None) -> list[tuple[int, int]]:
        self.sel = self._chunks_for(local)
        self.runs, ranges = self._chunk_runs(self.sel)
        return ranges

    def _chunk_runs(self, sel: np.ndarray) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """(runs of consecutive chunks ``[a, b)``, the byte range of each) for the chunks ``sel``."""
        base = self.bufs[1][0]
        if sel.size == self.counts.size:
            return [(0, self.counts.size)], ([self.bufs[1]] if self.counts.size else [])
        if sel.size == 1:            # one chunk (a point lookup)
            c = int(sel[0])
            return [(c, c + 1)], [(base + int(self.starts[c]), int(self.sizes[c]))]
        if sel.size <= FEW_CHUNKS:   # a few chunks (a short run): grouped as Python ints
            runs: list[tuple[int, int]] = []
            for c in sel.tolist():
                if runs and runs[-1][1] == c:
                    runs[-1] = (runs[-1][0], c + 1)
                else:
                    runs.append((c, c + 1))
            starts, sizes = self.starts, self.sizes
            return runs, [(base + int(starts[a]), int(starts[b - 1] + sizes[b - 1] - starts[a])) for a, b in runs]
        # contiguous runs of selected chunks (vectorised: a scattered selection has thousands)
        brk = np.flatnonzero(np.diff(sel) != 1) + 1
        ra = sel[np.concatenate(([0], brk))]
        rb = sel[np.concatenate((brk - 1, [sel.size - 1]))] + 1
        off = self.starts[ra]
        length = self.starts[rb - 1] + self.sizes[rb - 1] - off
        runs = list(zip(ra.tolist(), rb.tolist()))
        return runs, list(zip((off + base).tolist(), length.tolist()))

    def _one_span(self, data: Sequence[Buf], sel: np.ndarray,
                  runs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray] | None:
        """The runs as one view of the local file's memory map they were sliced from, the unread
        gaps between them included, and each selected chunk's start in it: the scattered chunks of
        a selective read are then not copied (pages of the gaps are never touched). None unless
        every piece is a view of one memory map at its file position."""
        first, last = data[0], data[-1]
        if not isinstance(first, memoryview) or not isinstance(first.obj, mmap.mmap):
            return None
        obj = first.obj
        if not all(isinstance(d, memoryview) and d.obj is obj for d in data):
            return None
        whole = np.frombuffer(obj, np.uint8)
        at = whole.__array_interface__["data"][0]
        lo = self.bufs[1][0] + int(self.starts[runs[0][0]])
        b = runs[-1][1] - 1
        end = self.bufs[1][0] + int(self.starts[b] + self.sizes[b])
        if (np.frombuffer(first, np.uint8).__array_interface__["data"][0] - at != lo
                or np.frombuffer(last, np.uint8).__array_interface__["data"][0] - at + cast(memoryview, last).nbytes != end):
            return None
        return whole[lo:end], self.starts[sel] - (lo - self.bufs[1][0])

    def _chunk_buffer(self, data: Sequence[Buf], sel: np.ndarray, runs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
        """The fetched bytes of the chunks ``sel`` (one buffer) and where each chunk starts in it."""
        if len(data) == 1:
            buf = u8(data[0])
            return buf, (self.starts[sel] - self.starts[sel[0]] if sel.size else self.starts[:0])
        span = self._one_span(data, sel, runs)
        if span is not None:
            return span
        if any(isinstance(d, np.ndarray) for d in data):
            buf = np.concatenate([u8(d) for d in data])
        else:   # bytes / memoryviews: one join (numpy's concatenate converts each view slowly)
            buf = np.frombuffer(b"".join(cast("Sequence[bytes | memoryview]", data)), np.uint8)
        lens = np.fromiter((u8(d).size if isinstance(d, np.ndarray) else memoryview(d).nbytes for d in data),
                           np.int64, len(data))
        run_base = np.cumsum(lens) - lens
        run_first = self.starts[np.fromiter((a for a, _ in runs), np.int64, len(runs))]
        ridx = np.searchsorted(run_first, self.starts[sel], side="right") - 1
        return buf, self.starts[sel] - run_first[ridx] + run_base[ridx]

    # -- decoding ----------------------------------------------------------------------------
    def decode(self, data: Sequence[Buf], local: Local) -> PageData:
        sel = self.sel
        buf, starts = self._chunk_buffer(data, sel, self.runs)
        counts = self.counts[sel]
        sizes = self.sizes[sel]
        rep, defs, cs = self._parse_chunks(buf, starts, sizes, counts)
        if isinstance(local, range) and not self.has_rep and len(local) <= LEAN_RANGE_ROWS:
            # a short run of rows: its values alone (whole chunks are not unpacked)
            trace.record("path:lean-range")
            local = np.arange(local.start, local.stop, dtype=np.int64)
        if isinstance(local, np.ndarray) and not self.has_rep:
            pd = self._selected(cs, defs, self._value_positions(local, sel, counts))
            if pd is not None:
                return pd
        raw = decode_miniblock(self.lay.value_compression, cs, self.what)
        values = self._values(raw, int(counts.sum()))
        max_rep = repdef.num_lists(self.layers)
        if local is None:
            return PageData(values, rep, defs, self.layers, self.rows)
        if isinstance(local, range):
            return self._slice(values, rep, defs, local, sel, max_rep)
        if rep is None:                       # (no repetition levels: one entry per row)
            idx = self._value_positions(local, sel, counts)
            vals, rep, defs = trim(values, rep, defs, self.layers, None, idx, self.what)
            return PageData(vals, rep, defs, self.layers, local.size)
        first_row = self._first_row(rep, sel, max_rep)
        # entries of discontiguous runs: rows restart per run, so compute per run
        er = self._entry_rows(rep, max_rep, first_row, sel)
        vals, rep2, defs2 = trim(values, rep, defs, self.layers, er, local, self.what)
        return PageData(vals, rep2, defs2, self.layers, local.size)

    def fsst_symbols(self) -> bytes | None:
        """The FSST symbol table when the page holds FSST-compressed strings of a plain string /
        binary field, one entry per row (no repetition levels, no dictionary), else None: such
        pages' compressed strings (:meth:`fsst_strings`) can be decoded together, into one output."""
        enc = self.lay.value_compression
        if self.has_rep or self.has_dict or self.ctx.dict_type is not None or encoding_kind(enc) != "fsst":
            return None
        return bytes(enc.fsst.symbol_table)

    def fsst_strings(self, data: Sequence[Buf]) -> tuple[np.ndarray | None, VarBin]:
        """Every row's definition level (None: no levels) and the compressed strings of a whole
        page (``data_ranges(None)``) whose :meth:`fsst_symbols` is not None, one per entry."""
        sel = self.sel
        buf, starts = self._chunk_buffer(data, sel, self.runs)
        counts = self.counts[sel]
        _, defs, cs = self._parse_chunks(buf, starts, self.sizes[sel], counts)
        trace.record("mb:fsst")           # (as decode_miniblock records it)
        inner = decode_miniblock(self.lay.value_compression.fsst.values, cs, self.what)
        if not isinstance(inner, VarBin):
            raise CorruptFileError(f"{self.what}: FSST over non-variable values")
        if inner.n != int(counts.sum()):
            raise CorruptFileError(f"{self.what}: decoded {inner.n} values, the chunks hold {int(counts.sum())}")
        return defs, inner

    def flat_values(self) -> bool:
        """The values are flat whole-byte values (:meth:`decode_live` copies their live runs)."""
        enc = self.lay.value_compression
        return encoding_kind(enc) == "flat" and int(enc.flat.bits_per_value) % 8 == 0

    def decode_live(self, data: Sequence[Buf], local: range | None, dead: np.ndarray) -> PageData:
        """The rows of ``local`` (None: the page) but the sorted local rows ``dead`` (a page
        without repetition levels): flat values copy their live runs, other encodings decode
        the rows and leave the dead ones out."""
        lo, hi = (0, self.rows) if local is None else (local.start, local.stop)
        n = hi - lo - int(dead.size)
        enc = self.lay.value_compression
        if not self.has_dict and self.flat_values():
            sel = self.sel
            buf, starts = self._chunk_buffer(data, sel, self.runs)
            counts = self.counts[sel]
            _, defs, cs = self._parse_chunks(buf, starts, self.sizes[sel], counts)
            c0 = int(self._chunk_rows()[sel[0]]) if sel.size else 0
            raw = decode_miniblock_runs(enc, cs, lo - c0, hi - c0, dead - c0, self.what)
            if raw is not None:
                if defs is not None:
                    if defs.size < hi - c0:
                        raise CorruptFileError(f"{self.what}: fewer levels than rows")
                    defs = np.delete(defs[lo - c0: hi - c0], dead - lo)
                return PageData(self._values(raw, n), None, defs, self.layers, n)
        pd = self.decode(data, local)
        keep = np.ones(hi - lo, np.bool_)
        keep[dead - lo] = False
        return PageData(keep_rows(pd.values, keep), None, None if pd.defs is None else pd.defs[keep], self.layers, n)

    def _selected(self, cs: ChunkSet, defs: np.ndarray | None, idx: np.ndarray,
                  picked: bool = False) -> PageData | None:
        """The values at positions ``idx`` of the chunks ``cs`` (pages without repetition: one
        entry per row), letting the encoding skip work (only their values are read /
        decompressed; dictionary items only for them); None when it cannot. ``picked``: ``defs``
        are the levels at ``idx`` already."""
        raw = decode_miniblock_selected(self.lay.value_compression, cs, idx, self.what)
        if raw is None and self.has_dict:
            full = decode_miniblock(self.lay.value_compression, cs, self.what)
            if not hasattr(full, "indices"):
                ind = uint_view(as_fixed(full, self.what))[idx]
                raw = Fixed(ind, ind.dtype.itemsize * 8, idx.size)
        if raw is None:
            return None
        values = self._values(raw, idx.size)
        return PageData(values, None, defs if picked or defs is None else defs[idx], self.layers, idx.size)

    # -- lean reads of a few rows (file.v2_1.column.LeanColumn): shared page objects, no state --
    def lean_plan(self, local: np.ndarray | range) -> tuple[np.ndarray, list[tuple[int, int]], list[tuple[int, int]]]:
        """(chunks, runs of consecutive chunks, their byte ranges) holding the sorted local rows
        ``local`` (or a run of them) of a page without repetition levels; changes nothing on
        the page."""
        sel = self._chunks_for(local)
        runs, ranges = self._chunk_runs(sel)
        return sel, runs, ranges

    def lean_decode(self, data: Sequence[Buf], sel: np.ndarray, runs: list[tuple[int, int]],
                    local: np.ndarray | range) -> PageData:
        """The rows ``local`` from the fetched bytes ``data`` of :meth:`lean_plan`'s ranges."""
        buf, starts = self._chunk_buffer(data, sel, runs)
        counts = self.counts[sel]
        sizes = self.sizes[sel]
        if isinstance(local, range):          # one run of chunks: the rows' values are consecutive
            c0 = int(self.chunk_rows[sel[0]]) if sel.size else 0
            idx = np.arange(local.start - c0, local.stop - c0, dtype=np.int64)
        else:
            idx = self._value_positions(local, sel, counts, len(runs) == 1)
        # the definition levels of the rows alone (a chunk's are not all decoded for a few rows)
        _, defs, cs, _ = self._parse_chunk_set(buf, starts, sizes, counts, idx if self.has_def else None)
        pd = self._selected(cs, defs, idx, picked=True)
        if pd is not None:
            return pd
        if self.has_def:
            _, defs, cs, _ = self._parse_chunk_set(buf, starts, sizes, counts)   # (every level, for trim)
        values = self._values(decode_miniblock(self.lay.value_compression, cs, self.what), int(counts.sum()))
        vals, _, defs = trim(values, None, defs, self.layers, None, idx, self.what)
        return PageData(vals, None, defs, self.layers, idx.size)

    def _value_positions(self, local: np.ndarray, sel: np.ndarray, counts: np.ndarray,
                         one_run: bool | None = None) -> np.ndarray:
        """Positions of the rows ``local`` among the decoded values of the chunks ``sel``
        (pages without repetition: one value slot per row); ``one_run``: the chunks are
        consecutive (default: this read's runs say so)."""
        cstart = self._chunk_rows()[sel]
        if one_run if one_run is not None else len(self.runs) == 1:
            consecutive: np.ndarray = local - cstart[0]   # consecutive chunks: their values are consecutive rows
            return consecutive
        ch = np.searchsorted(cstart, local, side="right") - 1
        positions: np.ndarray = local - cstart[ch] + (np.cumsum(counts) - counts)[ch]
        return positions

    def _first_row(self, rep: np.ndarray, sel: np.ndarray, max_rep: int) -> int:
        """Row of the first level entry of the selected chunks (the continuing row, or the first
        row starting there)."""
        if self.rep_index is None:
            return 0
        fin, trailing = self.rep_index[:, 0], self.rep_index[:, -1]
        rows_before = np.cumsum(fin) - fin
        pre = int(sel[0] > 0 and trailing[sel[0] - 1] > 0)
        if not pre and rep.size and rep[0] != max_rep:
            raise CorruptFileError(f"{self.what}: chunk does not start a row but the index says it does")
        return int(rows_before[sel[0]])

    def _slice(self, values: pa.Array, rep: np.ndarray | None, defs: np.ndarray | None, local: range, sel: np.ndarray, max_rep: int) -> PageData:
        """The rows ``local`` of the decoded (contiguous) chunks ``sel``: zero-copy slices."""
        n = len(local)
        if rep is None:
            a = local.start - int(self._chunk_rows()[sel[0]])
            if a < 0 or a + n > len(values):
                raise CorruptFileError(f"{self.what}: fewer values than rows")
            return PageData(values.slice(a, n), None, None if defs is None else defs[a: a + n], self.layers, n)
        er = entry_rows(rep, max_rep, self._first_row(rep, sel, max_rep))
        a, b = np.searchsorted(er, [local.start, local.stop]).tolist()
        if defs is not None:
            visible = defs <= repdef.max_visible_def(self.layers)
            total = int(np.count_nonzero(visible))
            va = int(np.count_nonzero(visible[:a]))
            vb = va + int(np.count_nonzero(visible[a:b]))
        else:
            total, va, vb = rep.size, a, b
        if total != len(values):
            raise CorruptFileError(f"{self.what}: {len(values)} values for {total} visible entries")
        return PageData(values.slice(va, vb - va), rep[a:b], None if defs is None else defs[a:b], self.layers, n)

    def _entry_rows(self, rep: np.ndarray, max_rep: int, first_row: int, sel: np.ndarray) -> np.ndarray:
        if len(self.runs) == 1:
            return entry_rows(rep, max_rep, first_row)
        # per-run first rows; the level counts per chunk locate each run's entries
        assert self.rep_index is not None       # several runs of chunks: the page has an index
        fin = self.rep_index[:, 0]
        rows_before = np.cumsum(fin) - fin
        lv = self.levels_per_chunk
        out = np.empty(rep.size, np.int64)
        pos = 0
        ci = 0
        for a, b in self.runs:  # one iteration per run of chunks (not per chunk)
            k = b - a
            n = int(lv[ci: ci + k].sum())
            out[pos: pos + n] = entry_rows(rep[pos: pos + n], max_rep, int(rows_before[a]))
            pos += n
            ci += k
        return out

    def _parse_chunks(self, buf: np.ndarray, starts: np.ndarray, sizes: np.ndarray, counts: np.ndarray
                      ) -> tuple[np.ndarray | None, np.ndarray | None, ChunkSet]:
        rep, defs, cs, self.levels_per_chunk = self._parse_chunk_set(buf, starts, sizes, counts)
        return rep, defs, cs

    def _parse_chunk_set(self, buf: np.ndarray, starts: np.ndarray, sizes: np.ndarray, counts: np.ndarray,
                         at: np.ndarray | None = None
                         ) -> tuple[np.ndarray | None, np.ndarray | None, ChunkSet, np.ndarray]:
        """(rep levels, def levels, value buffers, level entries per chunk) of the chunks at
        ``starts`` in ``buf`` (changes nothing on the page: lean reads share page objects).
        ``at`` (pages without repetition levels): only the def levels at these positions."""
        lb = 4 if self.large else 2
        hdr = 2 + 2 * self.has_rep + 2 * self.has_def + lb * self.num_bufs
        hdr_pad = (hdr + 7) // 8 * 8
        if starts.size <= FEW_CHUNKS and not self.has_rep:
            return self._parse_few_chunks(buf, starts.tolist(), sizes.tolist(), counts, hdr, hdr_pad, at)
        if starts.size == 1:      # one chunk: checked with ints, its words in one view
            s0, n0 = int(starts[0]), int(sizes[0])
            if n0 < hdr_pad or s0 + n0 > buf.size:
                raise CorruptFileError(f"{self.what}: chunk smaller than its header")
            words = np.frombuffer(buf, "<u2", hdr // 2, s0).astype(np.int64)[:, None]
        else:
            if (sizes < hdr_pad).any() or (starts + sizes > buf.size).any():
                raise CorruptFileError(f"{self.what}: chunk smaller than its header")
            # the header's fields are u16 words (the buffer sizes u32 with large chunks): one gather
            words = read_header_words(buf, starts, hdr // 2, self.what)
        num_levels = words[0]
        col = 1
        rep_size = words[col] if self.has_rep else None
        col += self.has_rep
        def_size = words[col] if self.has_def else None
        col += self.has_def
        bsizes: list[np.ndarray] | np.ndarray
        if self.large:
            bsizes = [words[col + 2 * i] | (words[col + 2 * i + 1] << 16) for i in range(self.num_bufs)]
        else:
            bsizes = words[col: col + self.num_bufs]
        cur = starts + hdr_pad
        rep = defs = None
        n_levels = num_levels if self.has_rep else counts
        if rep_size is not None:
            # pitfall: u16 level counts may wrap; RLE-coded levels tell the truth (not observed)
            rep = decode_block_batch(self.lay.rep_compression, buf, cur, rep_size, n_levels, self.what)
            cur = cur + (rep_size + 7) // 8 * 8
        if def_size is not None:
            defs = decode_block_batch(self.lay.def_compression, buf, cur, def_size, n_levels, self.what)
            cur = cur + (def_size + 7) // 8 * 8
        vb = []
        for s in bsizes:
            vb.append((buf, cur, s))
            cur = cur + (s + 7) // 8 * 8
        if (cur > starts + sizes).any():
            raise CorruptFileError(f"{self.what}: chunk buffers overrun the chunk")
        if rep is not None:
            rep = rep.astype(np.uint16, copy=False)
        if defs is not None:
            defs = defs.astype(np.uint16, copy=False)
            if at is not None:
                defs = defs[at]       # (several chunks: all their levels, then the rows')
        return rep, defs, ChunkSet(counts, vb), n_levels

    def _parse_few_chunks(self, buf: np.ndarray, starts: list[int], sizes: list[int], counts: np.ndarray, hdr: int,
                          hdr_pad: int, at: np.ndarray | None = None
                          ) -> tuple[np.ndarray | None, np.ndarray | None, ChunkSet, np.ndarray]:
        """:meth:`_parse_chunk_set` of at most ``FEW_CHUNKS`` chunks without repetition levels (a
        point lookup, a short range): their headers read and checked as Python ints (one loop
        step per chunk), then one array per value buffer."""
        defs_at, defs_size = [], []
        vb_at: list[list[int]] = [[] for _ in range(self.num_bufs)]
        vb_size: list[list[int]] = [[] for _ in range(self.num_bufs)]
        for s0, n0 in zip(starts, sizes):
            if n0 < hdr_pad or s0 + n0 > buf.size:
                raise CorruptFileError(f"{self.what}: chunk smaller than its header")
            words = np.frombuffer(buf, "<u2", hdr // 2, s0).tolist()
            col = 1
            cur = s0 + hdr_pad
            if self.has_def:
                defs_at.append(cur)
                defs_size.append(words[1])
                cur += (words[1] + 7) // 8 * 8
                col = 2
            for i in range(self.num_bufs):
                if self.large:
                    size = words[col + 2 * i] | (words[col + 2 * i + 1] << 16)
                else:
                    size = words[col + i]
                vb_at[i].append(cur)
                vb_size[i].append(size)
                cur += (size + 7) // 8 * 8
            if cur > s0 + n0:
                raise CorruptFileError(f"{self.what}: chunk buffers overrun the chunk")
        defs = None
        if self.has_def:
            offs, lens = np.array(defs_at, np.int64), np.array(defs_size, np.int64)
            if at is None:
                defs = decode_block_batch(self.lay.def_compression, buf, offs, lens, counts, self.what)
            else:
                defs = levels_at(self.lay.def_compression, buf, offs, lens, counts, at, self.what)
            defs = defs.astype(np.uint16, copy=False)
        vb = [(buf, np.array(at, np.int64), np.array(sz, np.int64)) for at, sz in zip(vb_at, vb_size)]
        return None, defs, ChunkSet(counts, vb), counts

    def _values(self, raw: Values, n: int) -> pa.Array:
        if self.has_dict:
            trace.record("dictionary")
            return apply_dictionary(self.ctx, self._dictionary_items(),
                                    uint_view(as_fixed(raw, self.what)) if not hasattr(raw, "indices") else raw)
        return finish_values(self.ctx, raw, n)


def _batch_dictionaries(pages: list[MiniBlockPage], raw: Values, items: np.ndarray, what: str) -> pa.Array:
    """The values of pages with dictionaries of their own decoded as one batch: ``raw`` holds
    the indices of every page (``items[i]`` of page i, in order). One take from the pages'
    dictionaries concatenated (each page's indices shifted to its dictionary)."""
    trace.record("dictionary")
    dicts = [p._dictionary_items() for p in pages]
    if isinstance(raw, pa.Array):      # indices given as Arrow already: page by page
        trace.record("path:dictionary-batch", "pages")
        starts = (np.cumsum(items) - items).tolist()
        return pa.concat_arrays([apply_dictionary(p.ctx, d, raw.slice(a, n))
                                 for p, d, a, n in zip(pages, dicts, starts, items.tolist())])
    idx = uint_view(as_fixed(raw, what))
    if idx.size != int(items.sum()):
        raise CorruptFileError(f"{what}: {idx.size} dictionary indices for {int(items.sum())} values")
    sizes = np.array([len(d) for d in dicts], np.int64)
    full = np.flatnonzero(items > 0)
    if full.size:
        top = np.maximum.reduceat(idx, (np.cumsum(items) - items)[full])   # (empty pages left out)
        bad = np.flatnonzero(top.astype(np.int64) >= sizes[full])
        if bad.size:
            i = int(full[bad[0]])
            raise CorruptFileError(f"{pages[i].what}: dictionary index {int(top[bad[0]])} >= {int(sizes[i])} items")
    trace.record("path:dictionary-batch", "concatenated")
    shift = np.cumsum(sizes) - sizes
    wide = np.int32 if int(sizes.sum()) < (1 << 31) else np.int64
    keys = np.repeat(shift.astype(wide), items)
    np.add(keys, idx, out=keys, casting="unsafe")   # (indices checked below their dictionary)
    return pa.concat_arrays(dicts).take(pa.array(keys))


def _address(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def batch_key(page: object, data: Sequence[Buf], local: Local) -> tuple[Hashable, ...] | None:
    """Pages with equal keys decode as one batch (see :func:`decode_batch`); None = decode alone.

    A batch needs whole mini-block pages with identical encodings, whose chunk bytes all lie in
    one underlying buffer (an mmap or a coalesced read), so the chunks of every page are
    addressed in that buffer without copying. Pages with a dictionary of their own (2.2 writes
    one per page) batch when their values are plain (not kept as dictionaries): the indices of
    all pages are decoded together and taken from the pages' dictionaries at once.
    """
    if (not isinstance(page, MiniBlockPage) or local is not None or len(data) != 1
            or not isinstance(data[0], memoryview) or page.counts.size == 0
            or (page.has_dict and (page.ctx.dict_type is not None or page.ctx.keep_dictionary))):
        return None
    lay = page.lay
    return (id(data[0].obj), lay.value_compression.SerializeToString(), lay.rep_compression.SerializeToString(),
            lay.def_compression.SerializeToString(), tuple(page.layers), page.num_bufs, page.large,
            page.has_rep, page.has_def, page.has_dict)


def decode_batch(pages: list[MiniBlockPage], datas: list[Sequence[Buf]], what: str) -> PageData:
    """Decode whole pages with equal :func:`batch_key` in one pass over all their chunks."""
    p0 = pages[0]
    first = datas[0][0]
    assert isinstance(first, memoryview)     # batch_key groups views of one buffer only
    owner = np.frombuffer(first.obj, np.uint8)  # type: ignore[call-overload]  # any buffer exporter (numpy's stubs name a few)
    base = _address(owner)
    starts_of: list[np.ndarray] = []
    counts_of: list[np.ndarray] = []
    sizes_of: list[np.ndarray] = []
    chunks_per_page: list[int] = []
    for p, d in zip(pages, datas):
        off = _address(u8(d[0])) - base
        if off < 0 or off + len(d[0]) > owner.size:
            raise CorruptFileError(f"{p.what}: page data outside its buffer")
        starts_of.append(p.starts + off)
        counts_of.append(p.counts)
        sizes_of.append(p.sizes)
        chunks_per_page.append(p.counts.size)
    starts, counts, sizes = np.concatenate(starts_of), np.concatenate(counts_of), np.concatenate(sizes_of)
    rep, defs, cs = p0._parse_chunks(owner, starts, sizes, counts)
    raw = decode_miniblock(p0.lay.value_compression, cs, what)
    per_page = np.array(chunks_per_page, np.int64)
    first_chunk = np.cumsum(per_page) - per_page
    if p0.has_dict:
        values = _batch_dictionaries(pages, raw, np.add.reduceat(counts, first_chunk), what)
    else:
        values = p0._values(raw, int(counts.sum()))
    # every page must hold exactly the rows it declares
    if rep is not None:
        lv = p0.levels_per_chunk
        lv_first = (np.cumsum(lv) - lv)[first_chunk]
        is_start = rep == repdef.num_lists(p0.layers)
        bounds = np.append(lv_first, is_start.size).tolist()
        rows = np.array([np.count_nonzero(is_start[a:b]) for a, b in zip(bounds[:-1], bounds[1:])])
    else:
        rows = np.add.reduceat(counts, first_chunk)
    for p, r in zip(pages, rows.tolist()):
        if r != p.rows:
            raise CorruptFileError(f"{p.what}: decoded {r} rows, the page declares {p.rows}")
    return PageData(values, rep, defs, p0.layers, sum(p.rows for p in pages))


__all__ = ["MiniBlockPage", "UnsupportedFeatureError", "batch_key", "decode_batch"]
