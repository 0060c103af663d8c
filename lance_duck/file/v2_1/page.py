"""What every page decoder produces, and trimming decoded entries to selected rows."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence, Union

import numpy as np
import pyarrow as pa

from ...errors import CorruptFileError
from . import repdef
from .direct_lists import DirectList


#: bytes of a file as a read returns them (a memory map's view, a fetched or held request)
Buf = Union[bytes, memoryview, np.ndarray]
#: rows of a page a read selects: sorted positions, a contiguous run, or None (every row)
Local = Union[np.ndarray, range, None]


class PageMeta(Protocol):
    """A page's entry in the column metadata (``ColumnMetadata.Page``), or what stands for one."""

    @property
    def buffer_offsets(self) -> Sequence[int]: ...
    @property
    def buffer_sizes(self) -> Sequence[int]: ...
    @property
    def length(self) -> int: ...


@dataclass
class PageBuffers:
    """A :class:`PageMeta` made by a reader: the buffers of a page's values inside another page."""
    buffer_offsets: list[int]
    buffer_sizes: list[int]
    length: int


@dataclass
class PageData:
    """Decoded entries of (the selected rows of) one page."""
    values: pa.Array              # one element per value slot (visible entry)
    rep: np.ndarray | None        # u16 per level entry
    defs: np.ndarray | None       # u16 per level entry
    layers: list[int]
    num_rows: int
    lists: DirectList | None = None   # the one list layer as offsets (rep and defs then None)


@dataclass
class PageContext:
    """Everything a page decoder needs to know about its column and file."""
    what: str                     # "<path> column <i> page <j>" for messages
    arrow_type: pa.DataType       # the leaf's Arrow type (value type for dictionary fields)
    dict_type: pa.DataType | None  # the Arrow dictionary type when the field is dictionary-typed
    minor: int                    # file minor version (1 or 2)
    keep_dictionary: bool = False  # page dictionaries of a plain leaf stay a DictionaryArray


def entry_rows(rep: np.ndarray, max_rep: int, first_row: int) -> np.ndarray:
    """Row number of each level entry, given the row of the first entry."""
    starts = rep == max_rep
    r = np.cumsum(starts, dtype=np.int64) + (first_row - 1)
    if rep.size and not starts[0]:
        r += 1
    return r


def trim(values: pa.Array, rep: np.ndarray | None, defs: np.ndarray | None, layers: list[int], entry_row: np.ndarray | None,
         keep_rows: np.ndarray, what: str) -> tuple[pa.Array, np.ndarray | None, np.ndarray | None]:
    """Keep the entries (and their value slots) whose row is in ``keep_rows`` (sorted local rows).

    ``entry_row`` is the row of each entry (None = entry i is row i, no repetition).
    """
    if entry_row is None:
        idx = keep_rows
        if idx.size and int(idx[-1]) >= len(values):
            raise CorruptFileError(f"{what}: fewer values than rows")
        vals = values.take(pa.array(idx)) if idx.size != len(values) else values
        return vals, None if rep is None else rep[idx], None if defs is None else defs[idx]
    pos = np.searchsorted(keep_rows, entry_row)
    pos_c = np.minimum(pos, max(keep_rows.size - 1, 0))
    keep = (keep_rows[pos_c] == entry_row) if keep_rows.size else np.zeros(entry_row.size, bool)
    if defs is not None:
        visible = defs <= repdef.max_visible_def(layers)
    else:
        visible = np.ones(entry_row.size, bool)
    slot = np.cumsum(visible) - 1
    take = slot[keep & visible]
    if int(visible.sum()) != len(values):
        raise CorruptFileError(f"{what}: {len(values)} values for {int(visible.sum())} visible entries")
    vals = values if take.size == len(values) else values.take(pa.array(take))
    return vals, None if rep is None else rep[keep], None if defs is None else defs[keep]


class Page(Protocol):
    """What every page layout's reader offers (phases: metadata ranges, then data ranges, then decode)."""

    what: str
    rows: int

    def meta_ranges(self) -> list[tuple[int, int]]: ...
    def set_meta(self, bufs: Sequence[Buf]) -> None: ...
    def data_ranges(self, local: np.ndarray | None) -> list[tuple[int, int]]: ...
    def decode(self, data: Sequence[Buf], local: np.ndarray | None) -> PageData: ...
