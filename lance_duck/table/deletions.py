"""Deletion files: which physical rows of a fragment are deleted.

``<base>/_deletions/{fragment_id}-{read_version}-{id}.arrow`` is an Arrow IPC file with one
``uint32`` column of offsets (unsorted, body often zstd-compressed); ``.bin`` is a 32-bit roaring
bitmap in the portable serialization.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ..errors import CorruptFileError, UnsupportedFeatureError
from .rowids import sorted_unique

if TYPE_CHECKING:
    from ..io.fs import FileIO

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
        _check_ipc_buffer_lengths(raw, path)
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
    except (pa.ArrowException, OSError, IndexError, ValueError, TypeError, OverflowError, MemoryError,
            struct.error) as exc:
        # pyarrow surfaces damaged IPC as ArrowInvalid/ArrowIndexError/ArrowKeyError, OSError (footer), and
        # UnicodeDecodeError (a ValueError) from garbled schema metadata.
        raise CorruptFileError(f"{path}: deletion file is not a valid Arrow IPC file "
                               f"({type(exc).__name__}: {exc})") from exc
    if values.size and values.min() < 0:
        raise CorruptFileError(f"{path}: deletion file holds negative row offsets")
    return sorted_unique(values)


def _check_ipc_buffer_lengths(raw: bytes, path: str) -> None:
    """Refuse compressed IPC buffers whose uncompressed-length prefix is negative but not -1.

    pyarrow takes any negative prefix for "stored uncompressed" and decodes the bytes as they
    are, where Lance (arrow-rs) refuses the file; a flipped prefix would delete other rows.
    """
    if not raw.startswith(b"ARROW1"):
        return  # pyarrow's own error names the problem
    start = 8
    while raw[start:start + 4] == b"\0\0\0\0":  # arrow-rs pads the magic to 64 bytes
        start += 8
    reader = pa.ipc.MessageReader.open_stream(pa.BufferReader(raw[start:]))
    while True:
        try:
            msg = reader.read_next_message()
        except StopIteration:
            return
        if msg is None:
            return
        if msg.type != "record batch" or msg.body is None:
            continue
        body = msg.body.to_pybytes()
        for off, length in _compressed_buffers(msg.metadata.to_pybytes()):
            if length >= 8 and 0 <= off and off + 8 <= len(body):
                (n,) = struct.unpack_from("<q", body, off)
                if n < -1:
                    raise CorruptFileError(f"{path}: deletion file buffer at body offset {off} declares "
                                           f"uncompressed length {n}")


def _compressed_buffers(fb: bytes) -> list[tuple[int, int]]:
    """(offset, length) of a RecordBatch message's buffers when it declares body compression.

    A minimal flatbuffer walk: Message.header (field 2) -> RecordBatch.buffers (field 2) and
    .compression (field 3); [] for anything else.
    """
    def field(tpos: int, index: int) -> int:
        vt = tpos - struct.unpack_from("<i", fb, tpos)[0]
        vt_len = struct.unpack_from("<H", fb, vt)[0]
        slot = 4 + 2 * index
        if slot + 2 > vt_len:
            return 0
        o = struct.unpack_from("<H", fb, vt + slot)[0]
        return tpos + o if o else 0

    def deref(at: int) -> int:
        (offset,) = struct.unpack_from("<I", fb, at)
        return at + int(offset)

    root = deref(0)
    hdr = field(root, 2)
    if not hdr:
        return []
    batch = deref(hdr)
    if not field(batch, 3):  # no BodyCompression: buffers hold their bytes as they are
        return []
    bufs = field(batch, 2)
    if not bufs:
        return []
    vec = deref(bufs)
    (count,) = struct.unpack_from("<I", fb, vec)
    return [struct.unpack_from("<qq", fb, vec + 4 + 16 * i) for i in range(count)]


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
                               f"({type(exc).__name__}: {exc})") from exc
    return values


def read_deletions(io: FileIO, info: DeletionFileInfo, max_rows: int | None = None) -> np.ndarray:
    """Read and decode a deletion file (FileNotFoundError names the path)."""
    return decode_deletions(bytes(io.read_immutable(info.path)), info.file_type, info.path, max_rows)
