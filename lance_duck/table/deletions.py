"""Deletion files: which physical rows of a fragment are deleted.

``<base>/_deletions/{fragment_id}-{read_version}-{id}.arrow`` is an Arrow IPC file with one
``uint32`` column of offsets (unsorted, body often zstd-compressed); ``.bin`` is a 32-bit roaring
bitmap in the portable serialization.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import CorruptFileError, UnsupportedFeatureError

ARROW_ARRAY = 0
BITMAP = 1
_EXT = {ARROW_ARRAY: "arrow", BITMAP: "bin"}


@dataclass(frozen=True)
class DeletionFileInfo:
    """A fragment's deletion file as the manifest describes it."""

    path: str               # full path inside the table's FileIO
    file_type: int          # 0 = Arrow array, 1 = roaring bitmap
    num_deleted_rows: int   # 0 = unknown (read the file)


def deletion_file_name(fragment_id: int, read_version: int, file_id: int, file_type: int) -> str:
    """Relative path of a deletion file under its base directory."""
    try:
        ext = _EXT[file_type]
    except KeyError:
        raise UnsupportedFeatureError(f"deletion file type {file_type} is not supported (0 = arrow, 1 = bitmap)")
    return f"_deletions/{fragment_id}-{read_version}-{file_id}.{ext}"


def decode_deletions(raw: bytes, file_type: int, path: str, max_rows: int | None = None) -> np.ndarray:
    """Sorted unique int64 physical offsets from a deletion file's bytes.

    ``max_rows``: the fragment's physical rows; a bitmap claiming more is refused before it
    is expanded (a damaged one can claim four billion rows).
    """
    if file_type == ARROW_ARRAY:
        return _decode_arrow(raw, path)
    if file_type == BITMAP:
        return _decode_bitmap(raw, path, max_rows)
    raise UnsupportedFeatureError(f"{path}: deletion file type {file_type} is not supported")


def _decode_arrow(raw: bytes, path: str) -> np.ndarray:
    try:
        reader = pa.ipc.open_file(pa.BufferReader(raw))
        if reader.num_record_batches == 0:
            raise CorruptFileError(f"{path}: deletion file holds no record batches")
        cols = []
        for i in range(reader.num_record_batches):
            batch = reader.get_batch(i)
            if batch.num_columns != 1:
                raise CorruptFileError(f"{path}: deletion file batch {i} has {batch.num_columns} columns, "
                                       "expected one column of row offsets")
            cols.append(batch.column(0))
        arr = pa.concat_arrays(cols)
        if not pa.types.is_integer(arr.type) or arr.null_count:
            raise CorruptFileError(f"{path}: deletion file holds {arr.type} values with {arr.null_count} nulls; "
                                   "expected non-null integer row offsets")
        arr.validate(full=True)
        values = arr.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    except CorruptFileError:
        raise
    except (pa.ArrowException, OSError, IndexError, ValueError, TypeError, OverflowError, MemoryError) as exc:
        # pyarrow surfaces damaged IPC as ArrowInvalid/ArrowIndexError/ArrowKeyError, OSError (footer), and
        # UnicodeDecodeError (a ValueError) from garbled schema metadata.
        raise CorruptFileError(f"{path}: deletion file is not a valid Arrow IPC file "
                               f"({type(exc).__name__}: {exc})") from None
    if values.size and values.min() < 0:
        raise CorruptFileError(f"{path}: deletion file holds negative row offsets")
    return np.unique(values)


def _decode_bitmap(raw: bytes, path: str, max_rows: int | None = None) -> np.ndarray:
    from pyroaring import BitMap

    try:
        bm = BitMap.deserialize(bytes(raw))
        if max_rows is not None and len(bm) and (len(bm) > max_rows or bm.max() >= max_rows):
            raise CorruptFileError(f"{path}: deletion bitmap holds {len(bm)} rows up to row {bm.max()}, "
                                   f"the fragment has {max_rows} rows")
        values = np.frombuffer(bm.to_array(), dtype=np.uint32).astype(np.int64)
    except CorruptFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - pyroaring raises ValueError / OverflowError / MemoryError on garbage
        raise CorruptFileError(f"{path}: deletion file is not a valid roaring bitmap "
                               f"({type(exc).__name__}: {exc})") from None
    return values


def read_deletions(io, info: DeletionFileInfo, max_rows: int | None = None) -> np.ndarray:
    """Read and decode a deletion file (FileNotFoundError names the path)."""
    return decode_deletions(bytes(io.read_bytes(info.path)), info.file_type, info.path, max_rows)
