"""Full-zip pages: per entry ``[control word][value]`` for wide values.

Buffer 0 = zipped entries, buffer 1 = repetition index (row start byte offsets, rows+1 entries,
width chosen from the buffer size) when values are variable-width or repeated. Only the rows
selected are fetched; entries are parsed for all rows at once (a loop over the k-th entry of
every row, not over rows).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .... import trace
from ...._proto import encodings_v2_1_pb2 as pb
from ....errors import CorruptFileError, UnsupportedFeatureError
from .. import repdef
from ..compression import decode_per_value, encoding_kind
from ..gather import gather_bytes, read_uint
from ..page import Buf, PageContext, PageData, PageMeta
from ..values import Fixed, VarBin
from .common import PageBase, finish_values, u8


def _runs(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Contiguous runs of sorted rows: (first rows, run lengths)."""
    if rows.size == 0:
        return rows[:0], rows[:0]
    brk = np.flatnonzero(np.diff(rows) != 1) + 1
    a = np.concatenate(([0], brk))
    b = np.concatenate((brk, [rows.size]))
    return rows[a], b - a


class FullZipPage(PageBase[pb.FullZipLayout]):
    def __init__(self, ctx: PageContext, page: PageMeta, layout: pb.FullZipLayout) -> None:
        super().__init__(ctx, page, layout)
        self.bits_rep = int(layout.bits_rep)
        self.bits_def = int(layout.bits_def)
        t = self.bits_rep + self.bits_def
        self.cw = 0 if t == 0 else 1 if t <= 8 else 2 if t <= 16 else 4 if t <= 32 else -1
        if self.cw < 0:
            raise UnsupportedFeatureError(f"{self.what}: full-zip control word of {t} bits")
        kind = layout.WhichOneof("details")
        if kind == "bits_per_value":
            bpv = int(layout.bits_per_value)
            if bpv % 8:
                raise UnsupportedFeatureError(f"{self.what}: full-zip values of {bpv} bits")
            self.vb, self.lb = bpv // 8, 0
        elif kind == "bits_per_offset":
            bpo = int(layout.bits_per_offset)
            if bpo not in (32, 64):
                raise UnsupportedFeatureError(f"{self.what}: full-zip lengths of {bpo} bits")
            self.vb, self.lb = 0, bpo // 8
        else:
            raise CorruptFileError(f"{self.what}: full-zip layout without a value width")
        self.has_index = len(self.bufs) >= 2
        if not self.bufs:
            raise CorruptFileError(f"{self.what}: full-zip page without buffers")
        if (self.bits_rep or self.lb) and not self.has_index:
            raise CorruptFileError(f"{self.what}: full-zip page needs a repetition index")
        trace.record("layout:fullzip:" + ("var" if self.lb else "fixed") + (":rep" if self.bits_rep else "")
                 + (":def" if self.bits_def else ""))

    def meta_ranges(self) -> list[tuple[int, int]]:
        return [self.bufs[1]] if self.has_index else []

    def set_meta(self, bufs: Sequence[Buf]) -> None:
        self.index = None
        if self.has_index:
            raw = u8(bufs[0])
            n = self.rows + 1
            if raw.size % n:
                raise CorruptFileError(f"{self.what}: repetition index of {raw.size} bytes for {self.rows} rows")
            w = raw.size // n
            if w not in (1, 2, 4, 8):
                raise CorruptFileError(f"{self.what}: repetition index entries of {w} bytes")
            idx = np.ascontiguousarray(raw).view({1: "u1", 2: "<u2", 4: "<u4", 8: "<u8"}[w]).astype(np.int64)
            if idx.size and (np.diff(idx) < 0).any() or idx[-1] > self.bufs[0][1]:
                raise CorruptFileError(f"{self.what}: repetition index is not increasing or leaves the page")
            self.index = idx

    def _row_spans(self, local: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        if local is None and self.index is not None:
            return self.index[:-1], self.index[1:]    # every row: views of the index
        rows = np.arange(self.rows, dtype=np.int64) if local is None else local
        if self.index is not None:
            return self.index[rows], self.index[rows + 1]
        stride = self.cw + self.vb
        if self.rows * stride != self.bufs[0][1]:
            raise CorruptFileError(f"{self.what}: full-zip data of {self.bufs[0][1]} bytes for "
                                   f"{self.rows} rows of {stride} bytes")
        starts = rows * stride
        return starts, starts + stride

    def data_ranges(self, local: np.ndarray | None) -> list[tuple[int, int]]:
        base, size = self.bufs[0]
        if local is None:
            self.pieces = None
            return [(base, size)]
        first, n = _runs(local)
        s, _ = self._row_spans(first)
        _, e = self._row_spans(first + n - 1)
        self.pieces = (s, e)
        return [(base + int(a), int(b - a)) for a, b in zip(s.tolist(), e.tolist())]

    def decode(self, data: Sequence[Buf], local: np.ndarray | None) -> PageData:
        rep, defs, raw, nrows = self._unzip(data, local)
        n_vals = raw.n
        dec = decode_per_value(self.lay.value_compression, raw, n_vals, self.what)
        values = finish_values(self.ctx, dec, n_vals)
        return PageData(values, rep, defs, self.layers, nrows)

    def fsst_symbols(self) -> bytes | None:
        """The FSST symbol table when the page holds FSST-compressed strings (``Variable`` values)
        of a plain string / binary field, one entry per row (no repetition), else None: such
        pages' compressed strings (:meth:`fsst_strings`) can be decoded together, into one output."""
        enc = self.lay.value_compression
        if self.bits_rep or not self.lb or self.ctx.dict_type is not None or encoding_kind(enc) != "fsst":
            return None
        if encoding_kind(enc.fsst.values) != "variable":
            return None
        return bytes(enc.fsst.symbol_table)

    def fsst_strings(self, data: Sequence[Buf]) -> tuple[np.ndarray | None, VarBin]:
        """Every row's definition level (None: no levels) and the compressed strings of a whole
        page whose :meth:`fsst_symbols` is not None (one per visible entry, in order)."""
        _, defs, raw, _ = self._unzip(data, None)
        assert isinstance(raw, VarBin)   # (a page with lengths: see fsst_symbols)
        trace.record("fz:fsst")          # (as decode_per_value records them)
        trace.record("fz:variable")
        return defs, raw

    def _unzip(self, data: Sequence[Buf], local: np.ndarray | None
               ) -> tuple[np.ndarray | None, np.ndarray | None, VarBin | Fixed, int]:
        """(repetition levels, definition levels, the visible entries' values as stored, rows)."""
        buf = u8(data[0]) if len(data) == 1 else np.concatenate([u8(d) for d in data])
        starts, ends = self._row_spans(local)
        if self.pieces is not None:
            # rebase row spans onto the concatenated pieces
            ps, pe = self.pieces
            plen = pe - ps
            pbase = np.cumsum(plen) - plen
            k = np.searchsorted(ps, starts, side="right") - 1
            shift = pbase[k] - ps[k]
            starts, ends = starts + shift, ends + shift
        nrows = starts.size
        max_vis = repdef.max_visible_def(self.layers)
        if self.bits_rep == 0:
            ent_start = starts
            ent_row_end = ends
            rep = None
            defs = self._row_defs(buf, ent_start) if self.cw else None
        else:
            ent_start, rep, defs, ent_row_end = self._walk_entries(buf, starts, ends)
        # entries all visible and valid (no definition levels, or none above 0: a page without
        # nulls) take no masks and no compaction of the entry arrays
        visible: np.ndarray | None = None
        valid: np.ndarray | None = None
        if defs is not None and defs.any():
            visible = defs <= max_vis
            valid = visible & (defs == 0)
        vstart = (ent_start if visible is None else ent_start[visible]) + self.cw
        if self.lb:
            if valid is None or visible is None:
                ln = read_uint(buf, vstart, self.lb, self.what)
                dstart = vstart + self.lb
                row_end = ent_row_end
            else:
                has = valid[visible]
                ln = np.zeros(vstart.size, np.int64)
                ln[has] = read_uint(buf, vstart[has], self.lb, self.what)
                dstart = vstart + np.where(has, self.lb, 0)
                row_end = ent_row_end[visible]
            if (dstart + ln > row_end).any():
                raise CorruptFileError(f"{self.what}: full-zip value overruns its row")
            body = gather_bytes(buf, dstart, ln, self.what)
            raw: VarBin | Fixed = VarBin(np.concatenate(([0], np.cumsum(ln))), body)
        else:
            if (vstart + self.vb > (ent_row_end if visible is None else ent_row_end[visible])).any():
                raise CorruptFileError(f"{self.what}: full-zip value overruns its row")
            body = gather_bytes(buf, vstart, np.full(vstart.size, self.vb, np.int64), self.what)
            raw = Fixed(body, self.vb * 8, int(vstart.size))
        return rep, defs, raw, nrows

    def _row_defs(self, buf: np.ndarray, at: np.ndarray) -> np.ndarray:
        """The definition level in the control word at ``at`` of every row (no repetition)."""
        mask = (1 << self.bits_def) - 1
        if self.cw == 1:    # (one byte: a plain gather, no word assembly)
            if at.size and (int(at.min()) < 0 or int(at.max()) >= buf.size):
                raise CorruptFileError(f"{self.what}: field lies outside its buffer")
            levels: np.ndarray = (buf[at] & np.uint8(mask)).astype(np.uint16)
        else:
            levels = (read_uint(buf, at, self.cw, self.what) & mask).astype(np.uint16)
        return levels

    def _walk_entries(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray]:
        """Entries of every row: a loop over entry k of all rows at once."""
        max_vis = repdef.max_visible_def(self.layers)
        dmask = (1 << self.bits_def) - 1
        pos = starts.copy()
        active = np.flatnonzero(pos < ends)
        if active.size != starts.size:
            raise CorruptFileError(f"{self.what}: a row without entries")
        e_start, e_rep, e_def, e_row = [], [], [], []
        guard = 0
        while active.size:
            guard += 1
            if guard > int((ends - starts).max()) + 1:
                raise CorruptFileError(f"{self.what}: full-zip entries do not advance")
            p = pos[active]
            ctrl = read_uint(buf, p, self.cw, self.what)
            r = ctrl >> self.bits_def
            d = ctrl & dmask
            vis = d <= max_vis
            adv = np.full(p.size, self.cw, np.int64)
            if self.lb:
                has = vis & (d == 0)
                ln = np.zeros(p.size, np.int64)
                ln[has] = read_uint(buf, p[has] + self.cw, self.lb, self.what)
                adv += np.where(has, self.lb + ln, 0)
            else:
                adv += np.where(vis, self.vb, 0)
            e_start.append(p)
            e_rep.append(r)
            e_def.append(d)
            e_row.append(active)
            pos[active] = p + adv
            if (pos[active] > ends[active]).any():
                raise CorruptFileError(f"{self.what}: full-zip entry overruns its row")
            active = active[pos[active] < ends[active]]
        row = np.concatenate(e_row)
        order = np.argsort(row, kind="stable")   # entries in row order (stable keeps entry order)
        start = np.concatenate(e_start)[order]
        rep = np.concatenate(e_rep)[order].astype(np.uint16)
        defs = np.concatenate(e_def)[order].astype(np.uint16)
        row_end = ends[row[order]]
        max_rep = repdef.num_lists(self.layers)
        first = np.concatenate(([True], row[order][1:] != row[order][:-1]))
        if (rep[first] != max_rep).any():
            raise CorruptFileError(f"{self.what}: a row does not start with a new-row level")
        return start, rep, (defs if self.bits_def else None), row_end
