"""Reader for Lance data files of format 2.1 and 2.2.

``read_fields`` plans every leaf column a set of fields needs, then fetches in two batched
rounds (page metadata buffers -- chunk words, repetition indexes, dictionaries -- then the
chunk / row byte ranges the selection touches) and decodes.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa

from ..._proto import file2_pb2
from ...encodings._threads import map_parts
from ...errors import CorruptFileError, InvalidArgumentError, UnsupportedFeatureError
from ...io.fs import InputFile
from ...schema import LanceField
from ..base import DataFileReader, DataFileRef, RowSelection, normalize_selection
from ..container import V2Container
from ... import trace
from .assemble import Leaf, build, leaf_type, leaves, output_type
from .column import PARALLEL_PAGE_ROWS, ColumnPages, LeafData, LeafPlan, LeanColumn, LeanPart
from . import repdef
from .page import Buf
from .values import with_validity
from .layouts.miniblock import LEAN_RANGE_ROWS


V2_1_VERSIONS = ((2, 1), (2, 2), (2, 3))
_NULLABLE_LEAF = [repdef.NULLABLE_ITEM]
#: deleted rows denser than one per this many rows are filtered after decoding
DEAD_ROWS = 16


class V2FileReader(DataFileReader):
    """Decodes fields of one 2.1 / 2.2 data file into Arrow arrays identical to pylance's."""

    def __init__(self, file: InputFile, ref: DataFileRef, tail: bytes | memoryview | None,
                 container: V2Container | None = None) -> None:
        """``container``: the file's parsed metadata when already known (else parsed from ``tail``)."""
        self.file = file
        self.ref = ref
        if container is None:
            assert tail is not None, "a file's tail is needed to parse its container"
            container = V2Container.open(file, tail)
        self.container = container
        c = self.container
        if (c.major, c.minor) not in V2_1_VERSIONS:
            raise UnsupportedFeatureError(f"{file.path}: file format {c.major}.{c.minor} is not 2.1, 2.2 or 2.3")
        self.minor = c.minor
        self.num_rows = c.num_rows
        # (id(field), keep_dictionary) -> (field, column, its metadata, LeanColumn, output type)
        self._lean: dict[tuple[int, bool], tuple[LanceField, int, file2_pb2.ColumnMetadata, LeanColumn, pa.DataType]] = {}

    # -- public API --------------------------------------------------------------------------
    def _read_fields(self, fields: Sequence[LanceField], rows: RowSelection = None,
                     keep_dictionary: bool = False) -> list[pa.Array]:
        sel = self._normalize(rows, fields)
        if sel is not None and len(sel) == 0:
            return [pa.array([], output_type(f, self.minor)) for f in fields]
        if sel is not None and len(sel) <= LEAN_RANGE_ROWS:
            lean = self._read_lean(fields, sel, keep_dictionary)
            if lean is not None:
                rest = [f for f, a in zip(fields, lean) if a is None]
                if not rest:
                    return [a for a in lean if a is not None]
                # the other fields (lists, structs, pages not read lean) through the general path
                trace.record("path:lean-split", (len(fields) - len(rest), len(rest)))
                others = iter(self._read_general(rest, sel, keep_dictionary))
                return [a if a is not None else next(others) for a in lean]
        return self._read_general(fields, sel, keep_dictionary)

    def _read_live(self, fields: Sequence[LanceField], rows: range, keep_dictionary: bool,
                   dead: np.ndarray) -> list[pa.Array]:
        """Plain fields' mini-block pages decode only the live rows (their chunks' live runs are
        what the page's gather copies); other fields come back whole (filtered by the caller)."""
        if len(rows) <= LEAN_RANGE_ROWS or dead.size * DEAD_ROWS > len(rows):
            return self._read_fields(fields, rows, keep_dictionary)   # (filtered by the caller)
        sel = self._normalize(rows, fields)
        return self._read_general(fields, sel, keep_dictionary, dead)

    def _read_general(self, fields: Sequence[LanceField], sel: RowSelection, keep_dictionary: bool,
                      dead: np.ndarray | None = None) -> list[pa.Array]:
        """Any fields, any selection: per-leaf plans, two batched fetch rounds, then decoding.
        ``dead``: sorted positions in the range ``sel`` (or the whole file) of rows that plain
        fields may leave out (:meth:`_read_live`). A plain fixed-width field may come back as a
        ``ChunkedArray`` of its pages (:meth:`LeafPlan.decode_chunks`; ``read_fields`` joins it
        for a caller that did not ask for chunks)."""
        plans: list[list[LeafPlan]] = []
        parted: list[bool] = []      # per leaf: a plain field's, which may come back in parts
        for f in fields:
            fp = []
            keep = keep_dictionary and _dictionary_candidate(f, self.minor)
            for leaf in leaves(f, self.minor):
                col = self.ref.column_of(leaf.field.id)
                if col is None:
                    raise CorruptFileError(f"{self.file.path}: field {leaf.field.name!r} (id {leaf.field.id}) "
                                           "has no column in this data file")
                plain = not f.children and leaf.multiplier == 1
                fp.append(self._leaf_plan(leaf, col, sel, keep, dead if plain else None))
                parted.append(plain)
            plans.append(fp)
        flat = [p for fp in plans for p in fp]
        self._fetch_round(flat, "meta_ranges", "set_meta")
        data = self._fetch(flat, "data_ranges")
        rows = self.num_rows if sel is None else len(sel)
        jobs = list(zip(flat, parted, data))
        if len(flat) > 1 and rows >= PARALLEL_PAGE_ROWS:
            # several leaves of many rows (struct children, several columns): decoded side by
            # side on the kernel pool (their pages share it with them; inline on a scan's threads)
            trace.record("path:parallel-leaves", len(flat))
            every = map_parts(_decode_leaf, jobs)
        else:
            every = [_decode_leaf(j) for j in jobs]
        out = []
        i = 0
        for f, fp in zip(fields, plans):
            decoded = every[i: i + len(fp)]
            i += len(fp)
            n = self.num_rows if sel is None else len(sel)
            if len(fp) == 1 and fp[0].live_rows is not None:
                n = fp[0].live_rows        # the pages left the ``dead`` rows out
            if len(decoded) == 1 and len(decoded[0]) > 1:
                chunks = [build(f, iter([part]), self.minor, self.file.path)[0] for part in decoded[0]]
                out.append(self._checked(f, pa.chunked_array(chunks, type=chunks[0].type), n))
                continue
            arr, _ = build(f, iter([parts[0] for parts in decoded]), self.minor, self.file.path)
            out.append(self._checked(f, arr, n))
        return out

    def _read_field_parts(self, field: LanceField, rows: range) -> list[pa.Array] | None:
        """A plain field's pages decoded and built one by one (:meth:`LeafPlan.decode_parts`), when
        one has a dictionary and the range is not read lean; else None."""
        if len(rows) <= LEAN_RANGE_ROWS or not _dictionary_candidate(field, self.minor):
            return None
        found = list(leaves(field, self.minor))
        if len(found) != 1 or found[0].multiplier != 1:
            return None
        leaf = found[0]
        col = self.ref.column_of(leaf.field.id)
        if col is None:
            return None                  # (read_fields names the damage)
        sel = self._normalize(rows, [field])
        plan = self._leaf_plan(leaf, col, sel, True)
        self._fetch_round([plan], "meta_ranges", "set_meta")
        data = self._fetch([plan], "data_ranges")[0]
        parts = plan.decode_parts(data)
        if parts is None:
            parts = [plan.decode(data)]
        out = []
        for part in parts:
            arr, _ = build(field, iter([part]), self.minor, self.file.path)
            out.append(self._checked(field, arr, len(arr)))
        return out

    def _leaf_plan(self, leaf: Leaf, col: int, sel: RowSelection, keep: bool,
                   dead: np.ndarray | None = None) -> LeafPlan:
        """The decoding plan of ``leaf`` (stored in column ``col``) for the rows ``sel`` of the
        file, after checking that the column's pages hold the file's rows (times the leaf's
        entries per row)."""
        cm = self.container.column(col)
        plan = LeafPlan(cm, col, self.file.path, leaf.arrow_type, leaf.dict_type, self.minor,
                        _expand(sel, leaf.multiplier), keep, self._pages_of(col, cm), dead)
        if plan.total_rows != self.num_rows * leaf.multiplier:
            raise CorruptFileError(f"{self.file.path}: column {col} ({leaf.field.name!r}) has pages "
                                   f"for {plan.total_rows} rows, the file holds {self.num_rows}")
        return plan

    def _checked(self, f: LanceField, arr: pa.Array, n: int) -> pa.Array:
        """``arr`` after checking it holds ``n`` rows of the field's type (or a kept dictionary)."""
        if len(arr) != n:
            raise CorruptFileError(f"{self.file.path}: field {f.name!r} decoded {len(arr)} rows, expected {n}")
        want = output_type(f, self.minor)
        if pa.types.is_dictionary(arr.type) and not pa.types.is_dictionary(want) and arr.type.value_type == want:
            pass                                   # kept dictionary (keep_dictionary)
        elif arr.type != want and not pa.types.is_map(want):
            raise CorruptFileError(f"{self.file.path}: field {f.name!r} decoded as {arr.type}, expected {want}")
        return arr

    def _read_lean(self, fields: Sequence[LanceField], sel: np.ndarray | range, keep_dictionary: bool) -> list[pa.Array | None] | None:
        """A few rows of the plain (childless) fields whose touched pages all read lean (see
        :class:`LeanColumn`): every such column's byte ranges in one io call, no per-read plans.
        Per field: its array, or None when the field or a page of it does not qualify (the
        general path then reads it); None when no field qualifies."""
        reads: list[tuple[LanceField, LeanColumn, pa.DataType, list[LeanPart], list[tuple[int, int]]] | None] = []
        for f in fields:
            got = self._lean_field(f, keep_dictionary)
            parts = None if got is None else got[0].plan(sel)
            if got is None or parts is None:
                reads.append(None)
            else:
                reads.append((f, got[0], got[1], parts, LeanColumn.ranges(parts)))
        if all(r is None for r in reads):
            return None
        trace.record("path:lean-rows", len(sel))
        if isinstance(sel, range):
            trace.record("path:lean-range")
        got_bytes = self.file.read_ranges([r for read in reads if read is not None for r in read[4]])
        out: list[pa.Array | None] = []
        k = 0
        n = len(sel)
        for read in reads:
            if read is None:
                out.append(None)
                continue
            f, lc, want, parts, ranges = read
            leaf = lc.decode(parts, got_bytes[k: k + len(ranges)])
            k += len(ranges)
            if len(leaf.values) == n and leaf.values.type == want:
                if leaf.defs is None:
                    out.append(leaf.values)    # (the usual case: checked here, no rebuild)
                    continue
                if leaf.rep is None and leaf.lists is None and leaf.layers == _NULLABLE_LEAF:
                    out.append(with_validity(leaf.values, leaf.defs == 0))   # (build's validity of one nullable layer)
                    continue
            arr = leaf.values if leaf.defs is None else build(f, iter([leaf]), self.minor, self.file.path)[0]
            out.append(self._checked(f, arr, n))
        return out

    #: fields whose lean readers one reader keeps (beyond this the table is cleared)
    LEAN_FIELDS = 256

    def _lean_field(self, f: LanceField, keep_dictionary: bool) -> tuple[LeanColumn, pa.DataType] | None:
        """(the :class:`LeanColumn` of plain field ``f``, its output type), worked out once per
        field and reader; None when ``f`` has children or no column here (the general path)."""
        key = (id(f), keep_dictionary)
        lean = self._lean
        got = lean.get(key)
        if got is not None and got[0] is f and self.container.column(got[1]) is got[2]:
            return got[3], got[4]
        col = None if f.children else self.ref.column_of(f.id)
        if col is None:
            return None
        cm = self.container.column(col)
        cp = self._pages_of(col, cm)
        if cp.total != self.num_rows:
            return None                    # (the general path reports the damage)
        arrow_type, dict_type = leaf_type(f, self.minor)
        keep = keep_dictionary and _dictionary_candidate(f, self.minor)
        lc = cp.lean_column(f"{self.file.path} column {col}", arrow_type, dict_type, self.minor, keep)
        if len(lean) >= self.LEAN_FIELDS:
            lean.clear()
        lean[key] = (f, col, cm, lc, output_type(f, self.minor))
        return lc, lean[key][4]

    def prefetch_fields(self, fields: Sequence[LanceField]) -> None:
        if self.file.io.is_local:
            return
        ranges: list[tuple[int, int]] = []
        for f in fields:
            for leaf in leaves(f, self.minor):
                col = self.ref.column_of(leaf.field.id)
                if col is not None:
                    for page in self.container.column(col).pages:
                        ranges.extend(zip(page.buffer_offsets, page.buffer_sizes))
        self.file.prefetch([(int(o), int(n)) for o, n in ranges])

    # -- helpers -----------------------------------------------------------------------------
    def _pages_of(self, col: int, cm: file2_pb2.ColumnMetadata) -> ColumnPages:
        """The column's page table and kept page metadata (shared by readers of this file)."""
        c = self.container
        cp = c.derived(("pages", col), lambda: ColumnPages(cm, c.charge), 256 + 64 * len(cm.pages))
        return cp if cp.source is cm else ColumnPages(cm)   # (metadata replaced on this reader)

    def _check_row_count(self, fields: Sequence[LanceField]) -> None:
        """CorruptFileError when the first leaf column's pages disagree with the file's row count."""
        for f in fields:
            for leaf in leaves(f, self.minor):
                col = self.ref.column_of(leaf.field.id)
                if col is None:
                    continue
                total = sum(int(p.length) for p in self.container.column(col).pages)
                if total != self.num_rows * leaf.multiplier:
                    raise CorruptFileError(f"{self.file.path}: column {col} ({leaf.field.name!r}) has pages for "
                                           f"{total} rows, the file states {self.num_rows}")
                return

    def _normalize(self, rows: RowSelection, fields: Sequence[LanceField]) -> RowSelection:
        """``rows`` checked against the file's row count (None: every row); rows beyond it first
        check that count against the pages of ``fields`` (is the count itself damaged?)."""
        try:
            sel = normalize_selection(rows, self.num_rows, self.file.path)
        except InvalidArgumentError:
            self._check_row_count(fields)
            raise
        return None if isinstance(sel, range) and len(sel) == self.num_rows else sel

    def _fetch(self, plans: list[LeafPlan], method: str) -> list[Sequence[Buf]]:
        per: list[list[tuple[int, int]]] = [getattr(p, method)() for p in plans]
        flat = [r for rs in per for r in rs]
        got = self.file.read_ranges(flat) if flat else []
        out: list[Sequence[Buf]] = []
        i = 0
        for rs in per:
            out.append(got[i: i + len(rs)])
            i += len(rs)
        return out

    def _fetch_round(self, plans: list[LeafPlan], ranges: str, setter: str) -> None:
        for p, bufs in zip(plans, self._fetch(plans, ranges)):
            getattr(p, setter)(bufs)


def _dictionary_candidate(f: LanceField, minor: int) -> bool:
    """A plain (not nested, not dictionary-typed) string or binary field, or a fixed-width number,
    date or time field (a filter on a low-cardinality decimal such as TPC-H's ``l_discount`` is
    then evaluated once per distinct value, and values are taken only for the rows it keeps)."""
    if f.children:
        return False
    t = output_type(f, minor)
    if (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t)):
        return True
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
            or pa.types.is_temporal(t)):
        return False
    arrow_type, dict_type = leaf_type(f, minor)
    return dict_type is None and arrow_type == t


def _expand(sel: RowSelection, m: int) -> RowSelection:
    if m == 1 or sel is None:
        return sel
    if isinstance(sel, range):
        return range(sel.start * m, sel.stop * m)
    return (sel[:, None] * m + np.arange(m)).reshape(-1)


def _decode_leaf(job: tuple[LeafPlan, bool, Sequence[Buf]]) -> list[LeafData]:
    """A leaf's decoded parts: consecutive chunks when ``parts`` allows them
    (:meth:`LeafPlan.decode_chunks`), else one."""
    plan, parts, data = job
    return plan.decode_chunks(data) if parts else [plan.decode(data)]
