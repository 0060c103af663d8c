"""Reader for legacy Lance data files (format 0.1 / 0.2).

Layout: pages written row group by row group; a dense page table of ``(position, length)``
i64 pairs indexed ``[field_id - lo][row_group]`` (``lo``/``hi`` = smallest/largest field id of
the DataFile); a ``Metadata`` protobuf (row-group offsets, page-table position) found through
the 16-byte footer ``i64 pos, u16 major, u16 minor, "LANC"``.

Legacy stores no validity: fixed-width nulls read back as their stored bytes, bools as False,
zero-length strings of *nullable* fields as null, null lists as their (usually empty) span,
struct nulls are lost. Reads are planned per nesting level: the byte ranges of every row group
a selection touches are fetched together.
"""
from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa
from google.protobuf.message import DecodeError

from ..._proto import file_pb2
from ...errors import CorruptFileError, InvalidArgumentError, UnsupportedFeatureError
from ...io.fs import InputFile
from ...schema import LanceField
from ..base import DataFileReader, DataFileRef, RowSelection, checked_utf8, normalize_selection
from ..v2_0.page import bit_width, fixed_array
from ..v2_0.reader import build_list, concat, empty
from ..v2_0.selection import LocalSelection, local_bounds, ranges_from_bounds, shift, split, take_local

FOOTER = struct.Struct("<qHH4s")


@dataclass
class _Seg:
    """Rows wanted from one row group of one field: ``local`` within the group's ``n`` rows."""
    batch: int
    local: LocalSelection
    n: int

    @property
    def bounds(self) -> tuple[int, int]:
        return local_bounds(self.local, self.n)

    def count(self) -> int:
        return self.n if self.local is None else len(self.local)


def _is_binary_like(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                or pa.types.is_large_binary(t))


class LegacyFileReader(DataFileReader):
    """Decodes fields of one legacy data file."""

    def __init__(self, file: InputFile, ref: DataFileRef, tail: bytes | memoryview) -> None:
        self.file = file
        self.ref = ref
        path = ref.path
        size = file.size
        if len(tail) < FOOTER.size:
            raise CorruptFileError(f"{path}: too small for a legacy Lance footer")
        meta_pos, _major, _minor, magic = FOOTER.unpack(bytes(tail[-FOOTER.size:]))
        if magic != b"LANC":
            raise CorruptFileError(f"{path}: bad magic {magic!r}")
        if not 0 <= meta_pos <= size - FOOTER.size - 4:
            raise CorruptFileError(f"{path}: metadata position {meta_pos} is outside the file")
        tail_start = size - len(tail)
        region = tail[meta_pos - tail_start:] if meta_pos >= tail_start else file.read(meta_pos, size - meta_pos)
        (mlen,) = struct.unpack("<I", bytes(region[:4]))
        if 4 + mlen > len(region) - FOOTER.size:
            raise CorruptFileError(f"{path}: metadata length {mlen} runs past the footer")
        meta = file_pb2.Metadata()
        try:
            meta.ParseFromString(bytes(region[4:4 + mlen]))
        except DecodeError as exc:
            raise CorruptFileError(f"{path}: file metadata is corrupt: {exc}") from exc
        offs = np.asarray(meta.batch_offsets, dtype=np.int64)
        if len(offs) == 0:
            offs = np.zeros(1, dtype=np.int64)
        if offs[0] != 0 or np.any(np.diff(offs) < 0):
            raise CorruptFileError(f"{path}: row-group offsets are not increasing from 0")
        self.starts = offs
        self.num_batches = len(offs) - 1
        self.num_rows = int(offs[-1])
        ids = [f for f in ref.fields if f >= 0]
        self.lo = ids[0] if ids else 0
        self.hi = max(ids) if ids else -1
        ncols = self.hi - self.lo + 1
        pt_len = ncols * self.num_batches * 16
        pt_pos = int(meta.page_table_position)
        if ncols > 0 and (pt_pos < 0 or pt_pos + pt_len > size):
            raise CorruptFileError(f"{path}: page table [{pt_pos}, {pt_pos + pt_len}) is outside the file")
        if ncols > 0 and self.num_batches:
            raw = region[pt_pos - meta_pos:pt_pos - meta_pos + pt_len] if pt_pos >= meta_pos \
                else file.read(pt_pos, pt_len)
            self.page_table = np.frombuffer(bytes(raw), dtype="<i8").reshape(ncols, self.num_batches, 2)
        else:
            self.page_table = np.zeros((max(ncols, 0), self.num_batches, 2), dtype=np.int64)

    # -- public -----------------------------------------------------------------------------
    def _read_fields(self, fields: Sequence[LanceField], rows: RowSelection = None, keep_dictionary: bool = False) -> list[pa.Array]:
        try:
            sel = normalize_selection(rows, self.num_rows)
        except InvalidArgumentError:
            if self.num_batches == 0:   # Lance writes no legacy file without a row group
                raise CorruptFileError(f"{self.ref.path}: the file's metadata lists no row groups") from None
            raise
        segs = [_Seg(b, local, int(self.starts[b + 1] - self.starts[b])) for b, local in split(self.starts, sel)]
        return [self._read(field, segs) for field in fields]

    def prefetch_fields(self, fields: Sequence[LanceField]) -> None:
        """Object stores: start fetching every row group's pages of ``fields`` (values, positions,
        and the string bytes the writer puts just before a string page's positions; list items wait
        for their positions), all fields together (io/prefetch.py)."""
        if self.file.io.is_local or not self.num_batches:
            return
        pages: list[tuple[int, int, bool]] = []       # (offset, length, string positions)
        for field in fields:
            self._plan(field, pages)
        known = sorted((o, o + n) for o, n, _ in pages)
        starts = np.unique(self.page_table[..., 0])   # every page of the file bounds the string bytes
        ranges: list[tuple[int, int]] = []
        for off, n, strings in pages:
            if strings:     # the string bytes lie after the page before (whatever its field)
                i = int(np.searchsorted(starts, off)) - 1
                lo = int(starts[i]) if i >= 0 else 0
                j = bisect.bisect_left(known, (off, off)) - 1
                if j >= 0 and known[j][1] <= off:
                    lo = max(lo, known[j][1])
                n += off - lo
                off = lo
            ranges.append((off, n))
        self.file.prefetch(ranges)

    # -- helpers ----------------------------------------------------------------------------
    def _plan(self, field: LanceField, out: list[tuple[int, int, bool]]) -> None:
        """(offset, length, string positions) of every row group's page a whole read of ``field``
        starts with (list items and string bytes come after them)."""
        if field.is_struct:
            for child in field.children:
                self._plan(child, out)
            return
        t = field.arrow_type
        strings = _is_binary_like(t)
        if field.is_list:
            bits = 64 if pa.types.is_large_list(t) else 32   # the page length counts positions
        elif strings:
            bits = 64
        elif pa.types.is_dictionary(t):
            bits = bit_width(t.index_type) or 0
        else:
            bits = bit_width(t) or 0
        if not bits or not self.lo <= field.id <= self.hi:
            return
        for pos, length in self.page_table[field.id - self.lo].tolist():
            if pos >= 0 and length > 0:
                out.append((pos, ((length + strings) * bits + 7) // 8, strings))

    def _page(self, field: LanceField, batch: int) -> tuple[int, int]:
        if not self.lo <= field.id <= self.hi:
            raise CorruptFileError(f"{self.ref.path}: field {field.name!r} (id {field.id}) is not in this file")
        pos, length = self.page_table[field.id - self.lo, batch]
        if pos < 0 or length < 0:
            raise CorruptFileError(f"{self.ref.path}: negative page table entry for field {field.name!r}")
        return int(pos), int(length)

    def _where(self, field: LanceField, batch: int) -> str:
        return f"{self.ref.path}: field {field.name!r} row group {batch}"

    def _read(self, field: LanceField, segs: list[_Seg]) -> pa.Array:
        t = field.arrow_type
        if field.is_struct:
            children = [self._read(c, segs) for c in field.children]
            if not children:
                return pa.array([{}] * sum(s.count() for s in segs), type=t)
            return pa.StructArray.from_arrays(children, fields=list(t))
        if field.is_list:
            return self._read_list(field, segs)
        if field.logical_type == "map":
            raise UnsupportedFeatureError(f"{self.ref.path}: map field {field.name!r} in a legacy file")
        if pa.types.is_null(t):
            return pa.nulls(sum(s.count() for s in segs))
        if _is_binary_like(t):
            return self._read_binary(field, segs)
        if pa.types.is_dictionary(t):
            if field.dictionary_values is None:
                raise CorruptFileError(f"{self.ref.path}: dictionary field {field.name!r} has no dictionary "
                                       "values (they come from the dataset manifest)")
            keys = self._read_fixed(field, segs, t.index_type)
            values = field.dictionary_values
            k = keys.to_numpy(zero_copy_only=False)
            if len(k) and (k.min() < 0 or k.max() >= len(values)):
                raise CorruptFileError(f"{self.ref.path}: dictionary key of {field.name!r} is outside its "
                                       f"{len(values)}-entry dictionary")
            return pa.DictionaryArray.from_arrays(keys, values)
        if bit_width(t) is not None:
            return self._read_fixed(field, segs, t)
        raise UnsupportedFeatureError(f"{self.ref.path}: field {field.name!r} of type {t} in a legacy file")

    def _pieces(self, field: LanceField, segs: list[_Seg], unit_bits: int, extra: int = 0,
                len_has_extra: bool = False) -> tuple[list[memoryview | bytes], list[tuple[int, int, int]]]:
        """Fetch, for every segment, the bytes of its row span (``unit_bits`` per row, ``extra`` rows more).

        The page-table length counts rows (plus ``extra`` when ``len_has_extra``).
        """
        ranges: list[tuple[int, int]] = []
        spans: list[tuple[int, int, int]] = []
        for s in segs:
            pos, length = self._page(field, s.batch)
            lo, hi = s.bounds
            rows = length - extra if len_has_extra else length
            if hi > rows:
                raise CorruptFileError(f"{self._where(field, s.batch)}: rows [{lo}, {hi}) outside a page of "
                                       f"{rows} rows")
            first_bit = lo * unit_bits
            last_bit = (hi + extra) * unit_bits
            b0, b1 = first_bit // 8, (last_bit + 7) // 8
            ranges.append((pos + b0, b1 - b0))
            spans.append((lo, hi, first_bit - 8 * b0))
        return self.file.read_ranges(ranges), spans

    def _read_fixed(self, field: LanceField, segs: list[_Seg], t: pa.DataType) -> pa.Array:
        bits = bit_width(t)
        if bits is None:
            raise UnsupportedFeatureError(f"{self.ref.path}: field {field.name!r} of type {t} in a legacy file")
        datas, spans = self._pieces(field, segs, bits)
        if bits == 1 or (pa.types.is_fixed_size_list(t) and bit_width(t.value_type) == 1):
            out = [take_local(_bool_span(t, d, bit_off, hi - lo), shift(s.local, lo))
                   for s, d, (lo, hi, bit_off) in zip(segs, datas, spans)]
            return concat(out, t) if out else empty(t)
        # byte-aligned: glue the spans together and gather every selected row with one take
        w = bits // 8
        counts = np.array([hi - lo for lo, hi, _ in spans], dtype=np.int64)
        base = np.concatenate(([0], np.cumsum(counts)[:-1])) if len(counts) else counts
        buf = _glue(datas)
        total = int(counts.sum())
        if len(buf) < total * w:
            raise CorruptFileError(f"{self.ref.path}: field {field.name!r}: pages are shorter than their rows")
        arr = fixed_array(t, total, buf, f"{self.ref.path}: field {field.name!r}")
        if _contiguous(segs):
            return arr
        idx = np.concatenate([
            (np.arange(len(range(*s.bounds)), dtype=np.int64) if not isinstance(s.local, np.ndarray)
             else s.local - lo) + b
            for s, (lo, _, _), b in zip(segs, spans, base)])
        return arr.take(pa.array(idx, type=pa.int64()))

    def _read_binary(self, field: LanceField, segs: list[_Seg]) -> pa.Array:
        t = field.arrow_type
        datas, spans = self._pieces(field, segs, 64, extra=1)
        positions = [np.frombuffer(bytes(d), dtype="<i8") for d in datas]
        size = self.file.size
        for s, p in zip(segs, positions):
            if len(p) and (p[0] < 0 or p[-1] > size or np.any(p[1:] < p[:-1])):
                raise CorruptFileError(f"{self._where(field, s.batch)}: string positions are corrupt")
        blobs = self.file.read_ranges([(int(p[0]), int(p[-1] - p[0])) for p in positions])
        large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        # one array over every fetched span (blobs back to back), then one take of the selection
        sizes = np.array([int(p[-1] - p[0]) for p in positions], dtype=np.int64)
        bases = np.concatenate(([0], np.cumsum(sizes)))
        total = int(bases[-1])
        if not large and total > (1 << 31) - 1:
            raise CorruptFileError(f"{self.ref.path}: field {field.name!r}: strings too large for {t}")
        offsets = np.concatenate([p[:-1] - p[0] + b for p, b in zip(positions, bases[:-1])] + [[total]])
        nrows = len(offsets) - 1
        vbuf = None
        if field.nullable:
            valid = offsets[1:] > offsets[:-1]
            if not valid.all():
                vbuf = pa.py_buffer(np.packbits(valid, bitorder="little"))
        data = _glue(blobs)
        arr = pa.Array.from_buffers(t, nrows, [vbuf, pa.py_buffer(offsets.astype(np.int64 if large else np.int32)),
                                               pa.py_buffer(data)])
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            # positions moved by damage can split a character (pylance refuses the page too)
            checked_utf8(arr, f"{self.ref.path}: field {field.name!r}")
        if _contiguous(segs):
            return arr
        row_base = np.concatenate(([0], np.cumsum([hi - lo for lo, hi, _ in spans])))
        idx = np.concatenate([
            (np.arange(hi - lo, dtype=np.int64) if not isinstance(s.local, np.ndarray) else s.local - lo) + b
            for s, (lo, hi, _), b in zip(segs, spans, row_base[:-1])])
        return arr.take(pa.array(idx, type=pa.int64()))

    def _read_list(self, field: LanceField, segs: list[_Seg]) -> pa.Array:
        t = field.arrow_type
        pbits = 64 if pa.types.is_large_list(t) else 32
        datas, spans = self._pieces(field, segs, pbits, extra=1, len_has_extra=True)
        if _contiguous(segs):
            return self._read_whole_lists(field, segs, datas, pbits)
        child_segs, lengths = [], []
        for s, data, (lo, hi, _) in zip(segs, datas, spans):
            p = np.frombuffer(bytes(data), dtype=f"<i{pbits // 8}").astype(np.int64)
            if len(p) and (p[0] < 0 or np.any(p[1:] < p[:-1])):
                raise CorruptFileError(f"{self._where(field, s.batch)}: list positions are not increasing")
            local = shift(s.local, lo)
            if local is None:
                starts, ends = p[:-1], p[1:]
            elif isinstance(local, range):
                starts, ends = p[local.start:local.stop], p[local.start + 1:local.stop + 1]
            else:
                starts, ends = p[:-1][local], p[1:][local]
            item_sel, ln = ranges_from_bounds(starts, ends)
            lengths.append(ln)
            n_items = int(p[-1]) if len(p) else 0
            child_segs.append(_Seg(s.batch, item_sel, max(n_items, local_bounds(item_sel, 0)[1]
                                                          if len(item_sel) else 0)))
        child_segs = [c for c in child_segs if c.count()]
        items = self._read(field.children[0], child_segs) if child_segs else empty(t.value_type)
        all_lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
        return build_list(t, all_lengths, None, items, f"{self.ref.path}: list field {field.name!r}")

    def _read_whole_lists(self, field: LanceField, segs: list[_Seg], datas: Sequence[memoryview | bytes], pbits: int) -> pa.Array:
        """Lists of contiguous row spans: one array of positions for every span, no per-row work."""
        t = field.arrow_type
        pos = np.frombuffer(_glue(datas), dtype=f"<i{pbits // 8}").astype(np.int64)
        counts = np.array([s.count() + 1 for s in segs], dtype=np.int64)  # rows + 1 positions each
        if len(pos) != int(counts.sum()):
            raise CorruptFileError(f"{self.ref.path}: field {field.name!r}: list positions are truncated")
        ends = np.cumsum(counts)
        firsts, lasts = pos[ends - counts], pos[ends - 1]
        step = np.diff(pos)
        step[ends[:-1] - 1] = 0  # the jump from one span's last position to the next span's first
        if (firsts < 0).any() or (step < 0).any():
            at = int(np.argmax(firsts < 0)) if (firsts < 0).any() else \
                int(np.searchsorted(ends, int(np.argmax(step < 0)), side="right"))
            bad = segs[at]
            raise CorruptFileError(f"{self._where(field, bad.batch)}: list positions are not increasing")
        lengths = np.delete(step, ends[:-1] - 1)
        child_segs = [_Seg(s.batch, range(a, b), b) for s, a, b in zip(segs, firsts.tolist(), lasts.tolist())
                      if b > a]
        items = self._read(field.children[0], child_segs) if child_segs else empty(t.value_type)
        return build_list(t, lengths, None, items, f"{self.ref.path}: list field {field.name!r}")


def _contiguous(segs: list[_Seg]) -> bool:
    """Whether every segment wants a whole run of rows (so its span is exactly its rows)."""
    return all(not isinstance(s.local, np.ndarray) for s in segs)


def _glue(parts: Sequence[memoryview | bytes]) -> np.ndarray | bytes | memoryview:
    """The byte pieces back to back (the piece itself when there is one)."""
    if len(parts) == 1:
        one: memoryview | bytes = parts[0]
        return one
    if not parts:
        return b""
    return np.concatenate([np.frombuffer(b, dtype=np.uint8) for b in parts])


def _bool_span(t: pa.DataType, data: memoryview | bytes, bit_off: int, count: int) -> pa.Array:
    """``count`` rows of bools (or FSL of bools) starting ``bit_off`` bits into ``data``."""
    per_row = t.list_size if pa.types.is_fixed_size_list(t) else 1
    bits = np.unpackbits(np.frombuffer(bytes(data), dtype=np.uint8), bitorder="little")
    vals = bits[bit_off:bit_off + count * per_row].astype(bool)
    if len(vals) != count * per_row:
        raise CorruptFileError("legacy bitmap page is too short")
    arr = pa.array(vals, type=pa.bool_())
    if per_row == 1:
        return arr
    return pa.FixedSizeListArray.from_arrays(arr, type=t)
