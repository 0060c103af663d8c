"""pylance's blob readers on a dataset: ``read_blobs``, ``take_blobs``, ``read_blob_ranges``.

Scans return a blob column as its descriptions (where the bytes are); these methods fetch the bytes
the descriptions point at. Rows are chosen as pylance chooses them: by stable row ``ids``, by row
``addresses`` (``fragment_id << 32 | offset``) or by ``indices`` among the live rows, exactly one of
the three. Blob v1 (files 2.0 / 2.1) and blob v2 values stored inline in the data file (2.2) are
read; v2 values in sidecar files, external URIs or managed storage are refused by name.
"""
from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgumentError, LanceDuckError, UnsupportedFeatureError
from ..file.blob_types import is_blob_v2

if TYPE_CHECKING:
    from .dataset import LanceDataset

Selection = "Sequence[int] | pa.Array | np.ndarray | None"
SELECTORS = ("ids", "addresses", "indices")
_KINDS = {1: "a packed sidecar file", 2: "a dedicated sidecar file", 3: "an external URI", 4: "managed storage"}


class BlobFile(io.RawIOBase):
    """One blob's bytes as a read-only binary file (pylance's ``lance.BlobFile``), fetched on demand.

    ``read``, ``readall``, ``readinto``, ``seek``, ``tell``, ``size()`` and pylance's
    ``read_range(offset, length)`` / ``read_ranges([(offset, length), ...])``; a context manager.

    Examples:
        >>> import io, lance_duck
        >>> f = lance_duck.scan.blobs.BlobFile(None, "", 0, 0)
        >>> f.size(), f.read()
        (0, b'')
    """

    def __init__(self, fio: Any, path: str, position: int, size: int) -> None:
        super().__init__()
        self._io, self._path, self._position, self._size = fio, path, position, size
        self._cursor = 0

    def __repr__(self) -> str:
        return f"<BlobFile size={self._size}>"

    def size(self) -> int:
        """The blob's length in bytes."""
        return self._size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        self._check_open()
        return self._cursor

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._check_open()
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._cursor, io.SEEK_END: self._size}.get(whence)
        if base is None:
            raise InvalidArgumentError(f"BlobFile.seek: whence must be 0, 1 or 2, not {whence!r}")
        if base + offset < 0:
            raise InvalidArgumentError(f"BlobFile.seek: position {base + offset} is before the start")
        self._cursor = base + offset
        return self._cursor

    def _fetch(self, spans: Sequence[tuple[int, int]]) -> list[bytes]:
        want = [(self._path, self._position + o, self._position + o + n) for o, n in spans if n > 0]
        got = iter(bytes(b) for b in self._io.read_ranges_many(want)) if want else iter(())
        return [next(got) if n > 0 else b"" for _, n in spans]

    def read(self, size: int | None = -1) -> bytes:
        self._check_open()
        end = self._size if size is None or size < 0 else min(self._size, self._cursor + size)
        start = min(self._cursor, end)
        data = self._fetch([(start, end - start)])[0]
        self._cursor = max(self._cursor, end)
        return data

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(memoryview(buffer)))
        memoryview(buffer).cast("B")[:len(data)] = data
        return len(data)

    def read_range(self, offset: int, length: int) -> bytes:
        """``length`` bytes from ``offset`` (the cursor does not move)."""
        return self.read_ranges([(offset, length)])[0]

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """The bytes of each ``(offset, length)``, fetched together (the cursor does not move)."""
        self._check_open()
        spans = [_span(r, self._size, "BlobFile.read_ranges") for r in ranges]
        return self._fetch(spans)

    def _check_open(self) -> None:
        if self.closed:
            raise InvalidArgumentError("read of closed file (BlobFile)")


def _span(r: Any, size: int, what: str) -> tuple[int, int]:
    try:
        offset, length = (int(v) for v in r)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{what}: {r!r} is not an (offset, length) pair of integers") from None
    if offset < 0 or length < 0 or offset + length > size:
        raise InvalidArgumentError(f"{what}: range ({offset}, {length}) is outside the blob's {size} bytes")
    return offset, length


class BlobReadMixin:
    """The blob readers of :class:`lance_duck.LanceDataset` (pylance 14.0.2's signatures)."""

    def read_blobs(self, blob_column: str, ids: Any = None, addresses: Any = None, indices: Any = None, *,
                   io_buffer_size: int | None = None,
                   preserve_order: bool | None = None) -> list[tuple[int, bytes | None]]:
        """The bytes of a blob column at the chosen rows, as pylance's ``read_blobs``.

        Args:
            blob_column: a top-level blob column (``lance-encoding:blob`` or ``lance.blob.v2``).
            ids: stable row ids (row addresses when the table has no stable row ids).
            addresses: row addresses, ``fragment_id << 32 | offset``.
            indices: positions among the live rows (0 .. ``count_rows() - 1``).
            io_buffer_size: accepted for pylance's signature (a positive integer); reads are planned here.
            preserve_order: results always come in the order requested (pylance may reorder when False).

        Returns:
            One ``(row_address, bytes)`` per selected row; a null blob gives ``None``, an empty one ``b""``.

        Raises:
            InvalidArgumentError: not exactly one selector, an unknown or non-blob column, a row that is
                not there (deleted, out of range).
            UnsupportedFeatureError: blob v2 values outside the data file (sidecar, external, managed).

        Examples:
            >>> import lance_duck
            >>> ds = lance_duck.dataset(lance_duck.sample_path())
            >>> ds.read_blobs("status", indices=[0])
            Traceback (most recent call last):
            ...
            lance_duck.errors.InvalidArgumentError: read_blobs: column 'status' is not a blob column
        """
        _buffer(io_buffer_size, "io_buffer_size", "read_blobs")
        files = _blob_files(self, "read_blobs", blob_column, ids, addresses, indices)
        live = [f for _, f in files if f is not None and f.size()]
        got = iter(bytes(b) for b in self._snapshot.io.read_ranges_many(      # type: ignore[attr-defined]
            [(f._path, f._position, f._position + f.size()) for f in live]))
        return [(addr, None if f is None else next(got) if f.size() else b"") for addr, f in files]

    def take_blobs(self, blob_column: str, ids: Any = None, addresses: Any = None, indices: Any = None, *,
                   buffer_size: int = 524288) -> list[BlobFile | None]:
        """File-like handles on a blob column's values at the chosen rows, as pylance's ``take_blobs``.

        Args:
            blob_column: a top-level blob column.
            ids: stable row ids (row addresses when the table has no stable row ids).
            addresses: row addresses, ``fragment_id << 32 | offset``.
            indices: positions among the live rows.
            buffer_size: pylance's read-ahead size (a non-negative integer; reads here fetch what is asked).

        Returns:
            One :class:`BlobFile` per selected row, ``None`` where the blob is null.

        Raises:
            InvalidArgumentError: as :meth:`read_blobs`, or a negative ``buffer_size``.
            UnsupportedFeatureError: as :meth:`read_blobs`.

        Examples:
            >>> import lance_duck
            >>> ds = lance_duck.dataset(lance_duck.sample_path())
            >>> ds.take_blobs("status", indices=[])
            Traceback (most recent call last):
            ...
            lance_duck.errors.InvalidArgumentError: take_blobs: column 'status' is not a blob column
        """
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, (int, np.integer)) or buffer_size < 0:
            raise InvalidArgumentError(f"take_blobs: buffer_size must be a non-negative integer, not {buffer_size!r}")
        return [f for _, f in _blob_files(self, "take_blobs", blob_column, ids, addresses, indices)]

    def read_blob_ranges(self, blob_column: str, requests: Sequence[tuple[int, int, int]], *, selector: str,
                         io_buffer_size: int | None = None,
                         preserve_order: bool | None = None) -> list[tuple[int, int, bytes | None]]:
        """Byte ranges of blobs, as pylance's ``read_blob_ranges``.

        Args:
            blob_column: a top-level blob column.
            requests: ``(row, offset, length)`` triples; ``row`` is read as ``selector`` says.
            selector: ``"ids"``, ``"addresses"`` or ``"indices"``.
            io_buffer_size: accepted for pylance's signature (a positive integer).
            preserve_order: results always come in request order.

        Returns:
            One ``(request_index, row_address, bytes)`` per request; ``None`` for a null blob, ``b""``
            for an empty range.

        Raises:
            InvalidArgumentError: a bad selector or request, a range past the blob's end, rows as for
                :meth:`read_blobs`.
            UnsupportedFeatureError: as :meth:`read_blobs`.

        Examples:
            >>> import lance_duck
            >>> ds = lance_duck.dataset(lance_duck.sample_path())
            >>> ds.read_blob_ranges("status", [], selector="rows")
            Traceback (most recent call last):
            ...
            lance_duck.errors.InvalidArgumentError: read_blob_ranges: selector must be one of 'ids', 'addresses', 'indices', not 'rows'
        """
        what = "read_blob_ranges"
        if selector not in SELECTORS:
            raise InvalidArgumentError(
                f"{what}: selector must be one of 'ids', 'addresses', 'indices', not {selector!r}")
        _buffer(io_buffer_size, "io_buffer_size", what)
        if isinstance(requests, (str, bytes)) or not hasattr(requests, "__iter__"):
            raise InvalidArgumentError(f"{what}: requests must be a list of (row, offset, length), not {requests!r}")
        rows: list[int] = []
        spans: list[tuple[int, int]] = []
        for i, r in enumerate(requests):
            if not isinstance(r, (tuple, list)) or len(r) != 3:
                raise InvalidArgumentError(f"{what}: request {i} must be a (row, offset, length) triple, not {r!r}")
            row, offset, length = (_int(v, f"{what}: request {i}") for v in r)
            if offset < 0 or length < 0:
                raise InvalidArgumentError(f"{what}: request {i} has a negative offset or length: {r!r}")
            rows.append(row)
            spans.append((offset, length))
        files = _blob_files(self, what, blob_column, *[rows if s == selector else None for s in SELECTORS])
        out: list[tuple[int, int, bytes | None]] = []
        for i, ((addr, f), (offset, length)) in enumerate(zip(files, spans)):
            if f is None:
                out.append((i, addr, None))
                continue
            if offset + length > f.size():
                raise InvalidArgumentError(f"{what}: request {i} (row {rows[i]}): range end {offset + length} "
                                           f"exceeds the blob's size {f.size()}")
            out.append((i, addr, f.read_range(offset, length)))
        return out


def _blob_files(self: Any, what: str, blob_column: Any, ids: Any, addresses: Any,
                indices: Any) -> list[tuple[int, BlobFile | None]]:
    chosen = [(name, v) for name, v in zip(SELECTORS, (ids, addresses, indices)) if v is not None]
    if len(chosen) != 1:
        raise InvalidArgumentError(f"{what}: exactly one of ids, addresses or indices must be given")
    field = _blob_field(self, what, blob_column)
    kind, values = chosen[0]
    picked = _as_int64(values, f"{what}: {kind}")
    if kind == "indices" and picked.size and int(picked.max()) >= (live := self.count_rows()):
        raise InvalidArgumentError(f"{what}: index {int(picked.max())} is out of range for {live} live rows")
    positions = picked if kind == "indices" else _positions(self, what, kind, picked)
    got = self.take(positions, columns=[blob_column, "_rowaddr"])
    desc = got.column(0).combine_chunks()
    addrs = got.column(1).to_numpy()
    return _files(self, what, field, desc, addrs)


def _blob_field(ds: LanceDataset, what: str, name: Any) -> Any:
    if not isinstance(name, str):
        raise InvalidArgumentError(f"{what}: blob_column must be a column name, not {name!r}")
    for f in ds.lance_schema.fields:
        if f.name == name:
            if not (f.is_blob or is_blob_v2(f)):
                raise InvalidArgumentError(f"{what}: column {name!r} is not a blob column")
            return f
    raise InvalidArgumentError(f"{what}: no column {name!r} (columns: {[f.name for f in ds.lance_schema.fields]})")


def _int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise InvalidArgumentError(f"{what}: {v!r} is not an integer")
    return int(v)


def _buffer(v: Any, name: str, what: str) -> None:
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0):
        raise InvalidArgumentError(f"{what}: {name} must be a positive integer, not {v!r}")


def _as_int64(values: Any, what: str) -> np.ndarray:
    try:
        arr = values.to_numpy(zero_copy_only=False) if isinstance(values, (pa.Array, pa.ChunkedArray)) \
            else np.asarray(values)
    except (TypeError, ValueError, pa.ArrowException) as e:
        raise InvalidArgumentError(f"{what}: not a list of integers ({e})") from None
    if arr.ndim != 1 and arr.size:
        raise InvalidArgumentError(f"{what}: must be a flat list of integers")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{what}: {values!r} is not a list of integers")
    if arr.dtype.kind == "i" and (arr < 0).any():
        raise InvalidArgumentError(f"{what}: negative value {int(arr[arr < 0][0])}")
    if arr.dtype == np.uint64 and (arr > np.iinfo(np.int64).max).any():
        raise InvalidArgumentError(f"{what}: value {int(arr.max())} is out of range")
    return arr.astype(np.int64)


def _positions(ds: LanceDataset, what: str, kind: str, picked: np.ndarray) -> np.ndarray:
    """Live-row positions of row ids or addresses (reads only row ids / addresses, no data)."""
    col = "_rowid" if kind == "ids" else "_rowaddr"
    have = ds.scanner(columns=[], with_row_id=kind == "ids", with_row_address=kind == "addresses") \
        .to_table().column(col).to_numpy().astype(np.int64)
    order = np.argsort(have, kind="stable")
    at = np.searchsorted(have, picked, sorter=order)
    at = np.minimum(at, max(len(have) - 1, 0))
    found = have[order[at]] == picked if len(have) else np.zeros(len(picked), dtype=bool)
    if not found.all():
        missing = int(picked[~found][0])
        noun = "row id" if kind == "ids" else "row address"
        raise InvalidArgumentError(f"{what}: {noun} {missing} is not a live row of this version "
                                   "(deleted or never written)")
    return order[at]


def _files(ds: LanceDataset, what: str, field: Any, desc: pa.StructArray,
           addrs: np.ndarray) -> list[tuple[int, BlobFile | None]]:
    snap = ds._snapshot
    valid = np.asarray(desc.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    pos = desc.field("position").fill_null(0).to_numpy()
    size = desc.field("size").fill_null(0).to_numpy()
    kinds = desc.field("kind").fill_null(0).to_numpy() if desc.type.get_field_index("kind") >= 0 else None
    if kinds is None:       # blob v1 (2.0 files): size 0 at a non-zero position marks a null value
        valid &= ~((size == 0) & (pos != 0))
    if kinds is not None and (bad := kinds[valid & (kinds != 0)]).size:
        where = _KINDS.get(int(bad[0]), f"storage kind {int(bad[0])}")
        raise UnsupportedFeatureError(f"{what}: column {field.name!r} has blob values stored in {where}; "
                                      "lance_duck reads blob bytes stored inline in the data file only")
    paths: dict[int, str] = {}
    out: list[tuple[int, BlobFile | None]] = []
    for i, addr in enumerate(addrs.tolist()):       # one entry per requested row (the result list)
        if not valid[i]:
            out.append((addr, None))
            continue
        frag = addr >> 32
        if frag not in paths:
            ref = snap.fragment(frag).file_for_field(field.id)
            if ref is None:
                raise LanceDuckError(f"{what}: fragment {frag} has no data file for {field.name!r}")
            paths[frag] = ref.path
        out.append((addr, BlobFile(snap.io, paths[frag], int(pos[i]), int(size[i]))))
    return out
