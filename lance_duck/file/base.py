"""The interface every data-file reader implements (the dispatch on file version is in ``file/dispatch.py``).

A reader decodes one *field* of the manifest schema (by field id, through the DataFile's
``fields`` / ``column_indices``) into an Arrow array equal to what pylance returns, for all
rows or for a selection of physical rows.

Row selections (``RowSelection``):

* ``None``: every row of the file;
* a ``range`` with step 1: a contiguous block of rows (readers decode only the pages/chunks
  that overlap it);
* a 1-D numpy integer array of **sorted, unique** physical row offsets.

The result always has exactly one element per selected row, in selection order.
"""
from __future__ import annotations

import struct
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Sequence, Union

import numpy as np
import pyarrow as pa

from ..errors import CorruptFileError, InvalidArgumentError, LanceDuckError
from ..schema import LanceField

RowSelection = Union[None, range, np.ndarray]

MAGIC = b"LANC"
# The tail read when opening a file: enough for the footer and, usually, all metadata.
TAIL_BYTES = 64 * 1024
# Local files (memory-mapped: a second read costs no round trip) read just the footer first;
# a 2.1+ file then reads exactly its metadata region, other formats the whole TAIL_BYTES.
LOCAL_TAIL_BYTES = 64


@dataclass(frozen=True)
class DataFileRef:
    """Where a data file is and which fields it holds (from the manifest's DataFile)."""

    path: str                          # full path inside the table's FileIO
    fields: tuple[int, ...]            # field ids; -2 = tombstone
    column_indices: tuple[int, ...]    # 2.x: column of each entry in ``fields``; empty for legacy
    major: int
    minor: int
    size: int | None = None            # file_size_bytes when known (0 -> unknown)

    def column_of(self, field_id: int) -> int | None:
        """Column index of a field id in a 2.x file (None if the file has no own column)."""
        try:
            pos = self.fields.index(field_id)
        except ValueError:
            return None
        if pos >= len(self.column_indices):
            return None
        c = self.column_indices[pos]
        return None if c < 0 else c


class DataFileReader(ABC):
    """Decodes fields of one data file into Arrow arrays.

    The public methods are the file layer's boundary: whatever a reader's decoding raises on
    damaged bytes (a pyarrow, numpy, struct or codec error) leaves as a ``CorruptFileError``
    naming the file and the fields, and every returned array has exactly one element per
    selected row (a stated count that disagrees with the decoded data is damage too).
    """

    ref: DataFileRef
    num_rows: int

    def read_field(self, field: LanceField, rows: RowSelection = None) -> pa.Array:
        """The field's values for the selected rows, typed as pylance returns them."""
        return self.read_fields([field], rows)[0]

    def read_fields(self, fields: Sequence[LanceField], rows: RowSelection = None,
                    keep_dictionary: bool = False, dead: np.ndarray | None = None,
                    chunked: bool = False) -> list[pa.Array]:
        """Several fields at once (implementations may fetch their byte ranges together).

        With ``keep_dictionary``, a top-level string, binary, number, date or time field stored with
        page dictionaries may come back as a ``DictionaryArray`` of its type (for filters evaluated
        per distinct value); readers without that ability return plain arrays. ``dead``: sorted
        positions in the range ``rows`` of rows to leave out (a task's deleted rows); 2.1+ readers
        skip them while decoding plain fields' flat pages, other arrays are filtered here. With
        ``chunked``, a field may come back as a ``ChunkedArray`` (a 2.1+ reader's pages of a
        fixed-width field, not joined); without it every field is one array.
        """
        if dead is not None and (not isinstance(rows, range) or (dead.size and (
                int(dead[0]) < 0 or int(dead[-1]) >= len(rows)))):
            raise InvalidArgumentError(f"{self.ref.path}: rows to leave out need a row range holding them")
        try:
            if dead is None or not isinstance(rows, range) or not dead.size:
                arrays = self._read_fields(fields, rows, keep_dictionary)
            else:
                arrays = self._read_live(fields, rows, keep_dictionary, dead)
        except Exception as exc:       # (what damage_guard does, the message made only on failure)
            named = _named_damage(exc, self.ref.path, f"fields {[f.name for f in fields]}")
            if named is None:
                raise
            raise named from exc
        if len(arrays) != len(fields):
            raise CorruptFileError(f"{self.ref.path}: {len(arrays)} arrays decoded for {len(fields)} fields")
        n = self.num_rows if rows is None else len(rows)
        kept = n if dead is None else n - int(dead.size)
        live: np.ndarray | None = None
        packed: pa.BooleanArray | None = None
        out = []
        for f, a in zip(fields, arrays):
            if not chunked:
                a = _one_array(a)
            if len(a) == n and kept != n:       # (a reader that kept every row of the range)
                assert dead is not None
                if len(a) <= NUMPY_FILTER_ROWS:
                    if live is None:
                        live = np.ones(n, np.bool_)
                        live[dead] = False
                    a = keep_rows(a, live, packed)
                else:
                    if packed is None:           # (one Arrow mask for every array filtered, made
                        packed = arrow_mask_without(n, dead)   # from the positions: no bool array)
                    a = a.filter(packed)
            elif len(a) != kept:
                raise CorruptFileError(f"{self.ref.path}: field {f.name!r} decoded {len(a)} rows, {kept} selected")
            out.append(a)
        return out

    def read_field_parts(self, field: LanceField, rows: range) -> list[pa.Array]:
        """The field's values for the row range ``rows`` (dictionaries kept, as ``read_fields``
        with ``keep_dictionary``) as consecutive arrays: a 2.1+ reader gives a field stored with
        page dictionaries page by page, each with its own page's dictionary (none unified across
        pages, no indices concatenated: a count evaluates its filter once per dictionary and
        counts each page's indices); other fields and readers, one array."""
        if not isinstance(rows, range):
            raise InvalidArgumentError(f"{self.ref.path}: read_field_parts needs a row range")
        try:
            parts = self._read_field_parts(field, rows)
        except Exception as exc:
            named = _named_damage(exc, self.ref.path, f"field {field.name!r}")
            if named is None:
                raise
            raise named from exc
        if parts is None:
            return self.read_fields([field], rows, keep_dictionary=True)
        got = sum(len(p) for p in parts)
        if got != len(rows):
            raise CorruptFileError(f"{self.ref.path}: field {field.name!r} decoded {got} rows, {len(rows)} selected")
        return parts

    def _read_field_parts(self, field: LanceField, rows: range) -> list[pa.Array] | None:
        """The parts of :meth:`read_field_parts`, or None: one array read by ``read_fields``."""
        return None

    def _read_live(self, fields: Sequence[LanceField], rows: range, keep_dictionary: bool,
                   dead: np.ndarray) -> list[pa.Array]:
        """:meth:`_read_fields` of the rows of ``rows`` but the positions ``dead``: an array may also
        hold every row of ``rows`` (:meth:`read_fields` then filters it)."""
        return self._read_fields(fields, rows, keep_dictionary)

    def prefetch_fields(self, fields: Sequence[LanceField]) -> None:
        """Start fetching every page of ``fields`` (a scan about to read them whole) from an object
        store, all columns' pages coalesced together; a reader that cannot plan this does nothing."""

    @abstractmethod
    def _read_fields(self, fields: Sequence[LanceField], rows: RowSelection,
                     keep_dictionary: bool) -> list[pa.Array]:
        """The decoding behind :meth:`read_fields` (no boundary checks)."""


# What decoding damaged bytes raises from Python, numpy and pyarrow (zstd / lz4 errors become
# CorruptFileError where the codecs are called, encodings/general.py); I/O errors (OSError, also
# pyarrow's ArrowIOError) and our own errors pass through.
_DAMAGE_ERRORS = (pa.ArrowException, ValueError, IndexError, struct.error, OverflowError,
                  ZeroDivisionError)


@contextmanager
def damage_guard(path: str, what: str = "") -> Iterator[None]:
    """Turn an exception of damaged bytes into ``CorruptFileError`` naming ``path`` (and ``what``).

    The last line of defence at the file layer's entry points: readers check the invariants
    they rely on where that is cheap, this converts what slips through.
    """
    try:
        yield
    except Exception as exc:
        named = _named_damage(exc, path, what)
        if named is None:
            raise
        raise named from exc


def _named_damage(exc: Exception, path: str, what: str) -> Exception | None:
    """The error :func:`damage_guard` raises for ``exc`` (None: ``exc`` itself, unchanged)."""
    where = f" ({what})" if what else ""
    if isinstance(exc, LanceDuckError):
        # a decoder deep down did not know the file: the same error, naming it
        return None if path in str(exc) else type(exc)(f"{path}{where}: {exc}")
    if isinstance(exc, OSError) or not isinstance(exc, _DAMAGE_ERRORS):
        return None
    return CorruptFileError(f"{path}: data file is damaged{where}: {type(exc).__name__}: {exc}")


#: arrays of at most this many rows of plain numbers are filtered in numpy (no Arrow mask made)
NUMPY_FILTER_ROWS = 32_768


def arrow_mask(mask: np.ndarray) -> pa.BooleanArray:
    """A numpy boolean mask as an Arrow one (its bits packed by numpy, not converted per value)."""
    from ..encodings.bitmap import bool_array   # (here: importing it with this module loads the decoders)
    return bool_array(mask, mask.size)


def arrow_mask_without(n: int, dead: np.ndarray) -> pa.BooleanArray:
    """The Arrow mask of ``n`` rows, true but at the sorted positions ``dead``: its bits are set
    byte-wise and cleared once per byte holding a dead row (no ``n``-entry boolean array, whose
    fresh pages cost more to fault in than the mask costs to make)."""
    bits = np.full((n + 7) // 8, 0xFF, np.uint8)
    if dead.size:
        d = np.asarray(dead, np.int64)
        byte = d >> 3
        bit = np.left_shift(np.uint8(1), (d & 7).astype(np.uint8))
        starts = np.flatnonzero(np.concatenate(([True], byte[1:] != byte[:-1])))
        bits[byte[starts]] &= ~np.bitwise_or.reduceat(bit, starts)
    return pa.BooleanArray.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bits)])


def _one_array(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``a`` as one array (:func:`lance_duck.encodings._buf.whole`, imported only for a chunked
    array: the encodings stay off the path that opens a dataset)."""
    if not isinstance(a, pa.ChunkedArray):
        return a
    from ..encodings._buf import whole
    return whole(a)


def keep_rows(a: pa.Array, mask: np.ndarray, packed: pa.BooleanArray | None = None) -> pa.Array:
    """The rows of ``a`` where the boolean ``mask`` is true (``packed``: the same mask as Arrow's)."""
    a = _one_array(a)
    t = a.type
    if len(a) <= NUMPY_FILTER_ROWS and not a.null_count and (pa.types.is_integer(t) or pa.types.is_floating(t)):
        vals = a.to_numpy(zero_copy_only=True)[mask]
        return pa.Array.from_buffers(t, vals.size, [None, pa.py_buffer(vals)])
    return a.filter(packed if packed is not None else arrow_mask(mask))


def checked_utf8(arr: pa.Array, what: str) -> pa.Array:
    """``arr`` (strings built from a file's raw bytes) after Arrow's full validation -- vectorised,
    UTF-8 included; CorruptFileError naming ``what`` when it fails (offsets moved by damage)."""
    try:
        arr.validate(full=True)
    except (pa.ArrowInvalid, ValueError) as exc:
        raise CorruptFileError(f"{what}: strings are not valid UTF-8 or their offsets are damaged ({exc})") from None
    return arr


def normalize_selection(rows: RowSelection, num_rows: int, what: str = "") -> RowSelection:
    """Validate a selection against ``num_rows``: None, a step-1 range, or a 1-D int64 array.

    Ranges with a step become offset arrays; out-of-bounds rows raise InvalidArgumentError.
    """
    where = f"{what}: " if what else ""
    if rows is None:
        return None
    if isinstance(rows, range):
        if rows.step != 1:
            rows = np.arange(rows.start, rows.stop, rows.step, dtype=np.int64)
        else:
            if rows.start < 0 or rows.stop > num_rows or rows.start > rows.stop:
                raise InvalidArgumentError(f"{where}row range {rows} is outside [0, {num_rows})")
            return rows
    arr = np.asarray(rows, dtype=np.int64)
    if arr.ndim != 1:
        raise InvalidArgumentError(f"{where}row selection must be one-dimensional")
    if len(arr) and (arr[0] < 0 or arr[-1] >= num_rows):
        raise InvalidArgumentError(f"{where}row offsets must lie in [0, {num_rows})")
    return arr
