"""Reader for Lance file format 2.0 (footer version 0.3 or 2.0).

Every field owns columns in depth-first order: a struct has a header column followed by its
children's columns, a list has an offsets column followed by its item's columns, a packed
struct or a blob is a single column. Pages of one column cover consecutive rows; only the
pages that overlap the row selection are fetched (all of a column's pages in one request)
and decoded.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Sequence, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError, Message

from ..._proto import encodings_v2_0_pb2 as enc_pb
from ..._proto import file2_pb2
from ...encodings._buf import join_adjacent
from ...errors import CorruptFileError, UnsupportedFeatureError
from ...io.fs import InputFile
from ...schema import LanceField
from ..base import DataFileReader, DataFileRef, RowSelection, normalize_selection
from ..container import V2Container
from . import page as pg
from .selection import LocalSelection, ranges_from_bounds, sel_len, split
from .shared import Buffers, SharedPages

M = TypeVar("M", bound=Message)

BLOB_TYPE = pa.struct([pa.field("position", pa.uint64()), pa.field("size", pa.uint64())])


@dataclass
class _Page:
    buffers: list[tuple[int, int]]
    length: int
    encoding: enc_pb.ArrayEncoding


@dataclass
class _Column:
    index: int
    kind: str                 # column encoding: "values" or "blob"
    pages: list[_Page]
    starts: np.ndarray        # row start of every page, plus the total

    @property
    def num_rows(self) -> int:
        return int(self.starts[-1])

    def page_kind(self) -> str | None:
        return self.pages[0].encoding.WhichOneof("array_encoding") if self.pages else None


def _unpack_any(enc: file2_pb2.Encoding, msg: M, what: str) -> M | None:
    loc = enc.WhichOneof("location")
    if loc is None or loc == "none":
        return None
    if loc == "indirect":
        raise UnsupportedFeatureError(f"{what}: indirect (deferred) encodings are not supported")
    a = any_pb2.Any()
    try:
        a.ParseFromString(enc.direct.encoding)
        expected = msg.DESCRIPTOR.full_name
        if not a.type_url.endswith("/" + expected) and a.type_url != expected:
            raise UnsupportedFeatureError(f"{what}: unexpected encoding message {a.type_url!r} "
                                          f"(expected {expected})")
        msg.ParseFromString(a.value)
    except UnsupportedFeatureError:
        raise
    except DecodeError as exc:
        raise CorruptFileError(f"{what}: encoding is corrupt: {exc}") from exc
    return msg


class V20FileReader(DataFileReader):
    """Decodes fields of one 2.0 data file."""

    def __init__(self, file: InputFile, ref: DataFileRef, tail: bytes | memoryview) -> None:
        self.file = file
        self.ref = ref
        self.container = V2Container.open(file, tail)
        self.num_rows = self.container.num_rows
        self._cols: dict[int, _Column] = {}
        self._local = threading.local()   # the scan reads one cached reader from several threads
        self._shared: SharedPages[tuple[int, int]] = SharedPages()      # pages spanning several read tasks, fetched once

    @property
    def _prefetched(self) -> dict[tuple[int, int], Buffers]:
        """Page buffers fetched for the current read_fields call, (column, page) -> buffers (per thread)."""
        d = getattr(self._local, "pages", None)
        if d is None:
            d = self._local.pages = {}
        return d

    # -- metadata ---------------------------------------------------------------------------
    def _column(self, index: int) -> _Column:
        col = self._cols.get(index)
        if col is not None:
            return col
        cm = self.container.column(index)
        where = f"{self.ref.path}: column {index}"
        kind = "values"
        ce = _unpack_any(cm.encoding, enc_pb.ColumnEncoding(), where) if cm.HasField("encoding") else None
        if ce is not None:
            kind = ce.WhichOneof("column_encoding") or "values"
            if kind == "zone_index":
                raise UnsupportedFeatureError(f"{where}: zone-index column encodings are not supported")
        pages = []
        size = self.file.size
        for i, p in enumerate(cm.pages):
            if len(p.buffer_offsets) != len(p.buffer_sizes):
                raise CorruptFileError(f"{where} page {i}: buffer offsets and sizes disagree")
            bufs = list(zip(p.buffer_offsets, p.buffer_sizes))
            for off, ln in bufs:
                if off + ln > size:
                    raise CorruptFileError(f"{where} page {i}: buffer [{off}, {off + ln}) is outside the file")
            enc = _unpack_any(p.encoding, enc_pb.ArrayEncoding(), f"{where} page {i}")
            if enc is None:
                raise CorruptFileError(f"{where} page {i}: page has no encoding")
            pages.append(_Page(bufs, int(p.length), enc))
        starts = np.zeros(len(pages) + 1, dtype=np.int64)
        np.cumsum([p.length for p in pages], out=starts[1:])
        col = _Column(index, kind, pages, starts)
        self._cols[index] = col
        return col

    def _column_of(self, field: LanceField) -> int | None:
        return self.ref.column_of(field.id)

    # -- public -----------------------------------------------------------------------------
    def _read_fields(self, fields: Sequence[LanceField], rows: RowSelection = None, keep_dictionary: bool = False) -> list[pa.Array]:
        """Several fields; the pages of all their columns (down to list items) are fetched at once."""
        cols = []
        for field in fields:
            c = self._column_of(field)
            if c is None:
                raise CorruptFileError(f"{self.ref.path}: field {field.name!r} (id {field.id}) has no column "
                                       "in this file")
            cols.append(c)
        for field, c in zip(fields, cols):
            if self._column(c).num_rows != self.num_rows:
                raise CorruptFileError(f"{self.ref.path}: column {c} ({field.name!r}) has pages for "
                                       f"{self._column(c).num_rows} rows, the file holds {self.num_rows}")
        sel = normalize_selection(rows, self.num_rows)
        try:
            self._prefetch([(f, c) for f, c in zip(fields, cols)], sel)
            return [self._read(f, c, sel) for f, c in zip(fields, cols)]
        finally:
            self._prefetched.clear()

    def prefetch_fields(self, fields: Sequence[LanceField]) -> None:
        """Object stores: start fetching every page of ``fields`` (down to struct children; list items
        wait for their offsets), all columns together (io/prefetch.py)."""
        if self.file.io.is_local:
            return
        wanted: list[tuple[int, int, int | None]] = []
        whole = normalize_selection(None, self.num_rows)
        for field in fields:
            c = self._column_of(field)
            if c is not None:
                self._plan(field, c, whole, wanted)
        pages = dict.fromkeys((c, p) for c, p, _ in wanted)
        self.file.prefetch([b for c, p in pages for b in self._cols[c].pages[p].buffers])

    # -- I/O planning -------------------------------------------------------------------------
    def _plan(self, field: LanceField, c: int, sel: LocalSelection, out: list[tuple[int, int, int | None]]) -> None:
        """(column, page, rows) a read of ``field`` with ``sel`` needs, down to list items; ``rows``
        is None for a page read whole, else how many of its rows ``sel`` reads."""
        col = self._column(c)
        out.extend((c, p, None if local is None else len(local)) for p, local in split(col.starts, sel))
        if col.kind == "blob" or field.is_list or not field.is_struct or col.page_kind() == "packed_struct":
            return
        for i, ch in enumerate(field.children):
            self._plan(ch, self._child_column(c, field, i), sel, out)

    def _prefetch(self, targets: list[tuple[LanceField, int]], sel: LocalSelection) -> None:
        """Fetch the pages a read needs at once; pages read only in part go through the shared
        pages, so that the read tasks after this one do not fetch them again."""
        wanted: list[tuple[int, int, int | None]] = []
        for field, c in targets:
            self._plan(field, c, sel, wanted)
        whole: dict[tuple[int, int], None] = {}
        partial: dict[tuple[int, int], int] = {}
        for c, p, rows in wanted:
            if (c, p) in self._prefetched:
                continue
            if rows is None:
                whole[(c, p)] = None
            else:
                partial[(c, p)] = max(partial.get((c, p), 0), rows)
        rest = [k for k in whole if k not in partial]

        def load(keys: list[tuple[int, int]]) -> dict[tuple[int, int], Buffers]:
            # the first fetch of shared pages takes the whole pages along, in the same requests
            got = self._load(keys + rest)
            rest.clear()
            return got

        if partial:
            shared = [(k, rows, self._cols[k[0]].pages[k[1]].length) for k, rows in partial.items()]
            self._prefetched.update(self._shared.get(shared, load))
        self._prefetched.update(self._load(rest))

    def _load(self, keys: list[tuple[int, int]]) -> dict[tuple[int, int], Buffers]:
        """Buffers of (column, page) pages, all in one read_ranges call."""
        if not keys:
            return {}
        data = self.file.read_ranges([b for c, p in keys for b in self._cols[c].pages[p].buffers])
        out: dict[tuple[int, int], Buffers] = {}
        i = 0
        for c, p in keys:
            k = len(self._cols[c].pages[p].buffers)
            out[(c, p)] = data[i:i + k]
            i += k
        return out

    def _fetch(self, col: _Column, page_ids: list[int]) -> list[Buffers]:
        self._prefetched.update(self._load([(col.index, p) for p in page_ids
                                            if (col.index, p) not in self._prefetched]))
        return [self._prefetched[(col.index, p)] for p in page_ids]

    def _read(self, field: LanceField, c: int, sel: LocalSelection) -> pa.Array:
        col = self._column(c)
        if col.kind == "blob":
            return self._read_values(col, sel, BLOB_TYPE)
        kind = col.page_kind()
        if field.is_list:
            return self._read_list(field, col, sel)
        if field.is_struct and kind != "packed_struct":
            return self._read_struct(field, col, sel)
        if field.logical_type == "map":
            raise UnsupportedFeatureError(f"{self.ref.path}: map field {field.name!r} in a 2.0 file")
        return self._read_values(col, sel, field.arrow_type)

    def _read_values(self, col: _Column, sel: LocalSelection, target: pa.DataType) -> pa.Array:
        parts = list(split(col.starts, sel))
        bufs = self._fetch(col, [p for p, _ in parts])
        out = []
        for (p, local), pbufs in zip(parts, bufs):
            page = col.pages[p]
            ctx = pg.PageContext(pbufs, f"{self.ref.path}: column {col.index} page {p}")
            out.append(pg.decode_rows(page.encoding, page.length, target, ctx, local))
        return concat(out, target)

    def _child_column(self, parent_col: int, field: LanceField, index: int) -> int:
        child = field.children[index]
        c = self._column_of(child)
        if c is not None:
            return c
        # not listed in the data file: columns follow depth-first
        c = parent_col + 1
        for prev in field.children[:index]:
            c += _width(prev)
        return c

    def _read_struct(self, field: LanceField, col: _Column, sel: LocalSelection) -> pa.Array:
        kind = col.page_kind()
        if kind not in (None, "struct"):
            raise CorruptFileError(f"{self.ref.path}: struct field {field.name!r} has a {kind} header column")
        n = sel_len(sel, col.num_rows)
        children = [self._read(ch, self._child_column(col.index, field, i), sel)
                    for i, ch in enumerate(field.children)]
        for ch, arr in zip(field.children, children):
            if len(arr) != n:
                raise CorruptFileError(f"{self.ref.path}: struct child {ch.name!r} has {len(arr)} rows, "
                                       f"expected {n}")
        target = field.arrow_type
        if not children:
            return pa.array([{}] * n, type=target)
        # blob children come back as their descriptions, marked as pylance marks them
        fields = [f if f.type == a.type else
                  pa.field(f.name, a.type, f.nullable, metadata={"lance-encoding:blob": "true"})
                  for f, a in zip(target, children)]
        return pa.StructArray.from_arrays(children, fields=fields)

    def _read_list(self, field: LanceField, col: _Column, sel: LocalSelection) -> pa.Array:
        target = field.arrow_type
        where = f"{self.ref.path}: column {col.index}"
        ks = []
        for i, offsets_page in enumerate(col.pages):
            kind = offsets_page.encoding.WhichOneof("array_encoding")
            if kind != "list":
                raise CorruptFileError(f"{where} page {i}: list field {field.name!r} has a {kind} offsets page")
            ks.append(int(offsets_page.encoding.list.num_items))
        bases = np.zeros(len(ks) + 1, dtype=np.int64)
        np.cumsum(ks, out=bases[1:])
        parts = list(split(col.starts, sel))
        bufs = self._fetch(col, [p for p, _ in parts])
        pages: list[tuple[int, LocalSelection, np.ndarray, np.ndarray | None]] = []
        for (p, local), pbufs in zip(parts, bufs):
            page = col.pages[p]
            lst = page.encoding.list
            ctx = pg.PageContext(pbufs, f"{where} page {p}")
            o = pg.decode_uints(lst.offsets, page.length, ctx)
            adj = int(lst.null_offset_adjustment)
            end = o.astype(np.int64)
            valid = None
            if adj:
                valid = o.astype(np.uint64, copy=False) < np.uint64(adj)
                np.subtract(end, adj, out=end, where=~valid)
            if len(end) and (end[0] < 0 or end[-1] > ks[p] or (end[1:] < end[:-1]).any()):
                raise CorruptFileError(f"{ctx.where}: list offsets are not increasing within {ks[p]} items")
            pages.append((p, local, end, valid))
        if pages and all(local is None and (not len(end) or int(end[-1]) == ks[p]) for p, local, end, _ in pages):
            # whole pages using all their items: the items are read whole and the offsets are the
            # pages' end offsets shifted by the items of the pages before (no spans to join)
            odt = np.int64 if pa.types.is_large_list(target) else np.int32
            n = sum(len(end) for _, _, end, _ in pages)
            offsets = np.empty(n + 1, odt)
            offsets[0] = 0
            at = 1
            for p, _, end, _ in pages:
                np.add(end, bases[p], out=offsets[at: at + len(end)], casting="unsafe")
                at += len(end)
            valids = [np.ones(len(end), bool) if v is None else v for _, _, end, v in pages]
            whole_valid = None if all(v is None for *_, v in pages) else np.concatenate(valids)
            items = self._list_items(field, col, range(0, int(offsets[-1])), bases, where)
            return build_list(target, None, whole_valid, items, f"{where}: list field {field.name!r}", offsets)
        starts_l, ends_l, valid_l = [], [], []
        for p, local, end, v in pages:
            valid = np.ones(len(end), dtype=bool) if v is None else v
            start = np.empty_like(end)
            start[:1] = 0
            start[1:] = end[:-1]
            if local is not None:
                idx = np.arange(local.start, local.stop) if isinstance(local, range) else local
                start, end, valid = start[idx], end[idx], valid[idx]
            starts_l.append(start + bases[p])
            ends_l.append(end + bases[p])
            valid_l.append(valid)
        starts = np.concatenate(starts_l) if starts_l else np.zeros(0, np.int64)
        ends = np.concatenate(ends_l) if ends_l else np.zeros(0, np.int64)
        valid = np.concatenate(valid_l) if valid_l else np.zeros(0, bool)
        item_sel, lengths = ranges_from_bounds(starts, ends)
        items = self._list_items(field, col, item_sel, bases, where)
        return build_list(target, lengths, valid, items, f"{where}: list field {field.name!r}")

    def _list_items(self, field: LanceField, col: _Column, item_sel: range | np.ndarray, bases: np.ndarray,
                    where: str) -> pa.Array:
        """The items ``item_sel`` of a list field's item column."""
        child = field.children[0]
        cc = self._column_of(child)
        if cc is None:
            cc = col.index + 1
        items_col = self._column(cc)
        if items_col.num_rows != int(bases[-1]):
            raise CorruptFileError(f"{where}: list items column has {items_col.num_rows} rows, "
                                   f"offsets announce {int(bases[-1])}")
        self._prefetch([(child, cc)], item_sel)
        return self._read(child, cc, item_sel)


def build_list(target: pa.DataType, lengths: np.ndarray | None, valid: np.ndarray | None, items: pa.Array,
               what: str = "list", offsets: np.ndarray | None = None) -> pa.Array:
    """A list / large_list array from per-row item counts (or its ``offsets`` from 0, of the
    target's offset width), validity and the items."""
    odt = np.int64 if pa.types.is_large_list(target) else np.int32
    if offsets is None:
        assert lengths is not None
        offsets = np.zeros(len(lengths) + 1, dtype=odt)
        np.cumsum(lengths, out=offsets[1:])
    if int(offsets[-1]) != len(items):
        raise CorruptFileError(f"{what}: lists hold {int(offsets[-1])} items, {len(items)} decoded")
    vbuf = None
    if valid is not None and len(valid) and not valid.all():
        vbuf = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(target, len(offsets) - 1, [vbuf, pa.py_buffer(offsets)], children=[items])


def _width(field: LanceField) -> int:
    """Number of 2.0 columns a field occupies."""
    if field.is_packed_struct or field.is_blob:
        return 1
    return 1 + sum(_width(c) for c in field.children)


def concat(arrays: list[pa.Array], target: pa.DataType) -> pa.Array:
    """Concatenate decoded pieces; dictionary pieces keep every piece's dictionary (as pylance)."""
    if len(arrays) == 1:
        return arrays[0]
    if not arrays:
        return empty(target)
    if pa.types.is_dictionary(target):
        return concat_dictionaries(arrays)
    joined = join_adjacent(arrays)   # plain pages back to back in a mapped file: no copy
    return joined if joined is not None else pa.concat_arrays(arrays)


def concat_dictionaries(arrays: list[pa.DictionaryArray]) -> pa.DictionaryArray:
    """Concatenate dictionary arrays: dictionaries back to back, keys shifted (no unification)."""
    dicts = [a.dictionary for a in arrays]
    shifts = np.cumsum([0] + [len(d) for d in dicts[:-1]])
    idx_type = arrays[0].type.index_type
    keys = [pc.add(a.indices.cast(pa.int64()), int(s)) for a, s in zip(arrays, shifts)]
    return pa.DictionaryArray.from_arrays(pa.concat_arrays(keys).cast(idx_type), pa.concat_arrays(dicts))


def empty(target: pa.DataType) -> pa.Array:
    if isinstance(target, pa.ExtensionType):
        return pa.ExtensionArray.from_storage(target, empty(target.storage_type))
    return pa.array([], type=target)
