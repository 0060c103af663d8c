"""The container shared by Lance file formats 2.0, 2.1 and 2.2.

Layout (little-endian), read from the end::

    [data buffers][global buffers][column metadata blobs][CMO table][GBO table][footer 40 B]
    footer = u64 column_meta_start, u64 cmo_table, u64 gbo_table, u32 num_global_buffers,
             u32 num_columns, u16 major, u16 minor, "LANC"

Opening costs at most two reads: the tail (which usually holds all metadata) and, for files
with very large metadata, the metadata region.

Data files are immutable, so what their metadata parses to is kept per process
(:data:`METADATA_CACHE`, keyed by filesystem, path and size, bounded in bytes): a file opened
again (the next query) reads no footer and parses no column metadata again.
"""
from __future__ import annotations

import dataclasses
import os
import struct
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Hashable, TypeVar, cast

import numpy as np
from google.protobuf.message import DecodeError

from .._proto import file2_pb2, file_pb2
from ..errors import CorruptFileError
from ..io.fs import InputFile
from .. import _state

FOOTER = struct.Struct("<QQQIIHH4s")  # 40 bytes
#: Parsed metadata of data files kept per process (bytes, estimated): the metadata region of each
#: file, its parsed column metadata and what readers derive from it (page tables, page metadata);
#: bounded by ``lance_duck.configure(file_metadata_cache_bytes=...)``.
METADATA_CACHE = _state.cache("file_metadata")


T = TypeVar("T")

@dataclass
class V2Container:
    """Footer, offset tables and (lazily parsed) column metadata of a 2.x file."""

    file: InputFile
    major: int
    minor: int
    num_columns: int
    column_meta: list[tuple[int, int]]     # (position, size) per column
    global_buffers: list[tuple[int, int]]  # (position, size) per global buffer
    _meta: bytes | memoryview               # bytes [meta_start, file end)
    _meta_start: int
    # parsed column metadata, the descriptor and readers' derived state (shared by the copies
    # of a cached container), and the METADATA_CACHE key that charges for it
    shared: dict[Hashable, Any] = field(default_factory=dict, repr=False, compare=False)
    cache_key: tuple[Hashable, ...] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def cached(cls, file: InputFile, size: int | None) -> "V2Container | None":
        """The cached container of ``file`` (same filesystem, path, size) bound to ``file``, or None."""
        if not size:
            return None
        hit = METADATA_CACHE.get(_identity(file, size))
        return None if hit is None else dataclasses.replace(hit, file=file)

    def remember(self) -> None:
        """Keep this container for later opens of the same file (its metadata copied out of any
        memory map, so the cache holds no mapping)."""
        key = _identity(self.file, self.file.size)
        core = dataclasses.replace(self, _meta=bytes(self._meta), cache_key=key)
        self.shared, self.cache_key = core.shared, key
        METADATA_CACHE.put(key, core, 4 * len(core._meta) + 1024)

    def derived(self, key: tuple[Hashable, ...], make: Callable[[], T], nbytes: int = 0) -> T:
        """``make()`` once per key for this file (kept with the cached metadata, charged ``nbytes``)."""
        hit = self.shared.get(key)
        if hit is None:
            hit = self.shared[key] = make()
            self.charge(nbytes)
        return cast(T, hit)           # made by a call with this key, so of its type

    def charge(self, nbytes: int) -> None:
        """Count ``nbytes`` more state kept with this file's cached metadata."""
        if self.cache_key is not None and nbytes:
            METADATA_CACHE.charge(self.cache_key, nbytes)

    @classmethod
    def open(cls, file: InputFile, tail: bytes | memoryview) -> "V2Container":
        size = file.size
        if len(tail) < FOOTER.size:
            raise CorruptFileError(f"{file.path}: file too small for a Lance footer ({size} bytes)")
        a, cmo, gbo, n_gb, n_col, major, minor, magic = FOOTER.unpack(bytes(tail[-FOOTER.size:]))
        if magic != b"LANC":
            raise CorruptFileError(f"{file.path}: bad magic {magic!r}")
        footer_pos = size - FOOTER.size
        if cmo + 16 * n_col > footer_pos or gbo + 16 * n_gb > footer_pos or a > footer_pos:
            raise CorruptFileError(f"{file.path}: footer offsets point outside the file")
        tail_start = size - len(tail)
        start = min(a, cmo, gbo)
        if start >= tail_start:
            meta = tail[start - tail_start:]
        else:
            meta = file.read(start, size - start)
        meta_start = start

        def table(pos: int, n: int) -> list[tuple[int, int]]:
            raw = np.frombuffer(meta, dtype="<u8", count=2 * n, offset=pos - meta_start) if n else np.zeros(0, "<u8")
            pairs = raw.reshape(-1, 2)
            return [(int(p), int(s)) for p, s in pairs]

        cols = table(cmo, n_col)
        gbs = table(gbo, n_gb)
        for p, s in cols + gbs:
            if p + s > size:
                raise CorruptFileError(f"{file.path}: metadata entry [{p}, {p + s}) is outside the file")
        return cls(file, major, minor, n_col, cols, gbs, meta, meta_start)

    def _slice(self, pos: int, size: int) -> bytes | memoryview:
        if pos >= self._meta_start:
            return self._meta[pos - self._meta_start: pos - self._meta_start + size]
        return self.file.read(pos, size)

    def column(self, index: int) -> file2_pb2.ColumnMetadata:
        """The ColumnMetadata protobuf of column ``index`` (parsed once)."""
        cm = self._columns.get(index)
        if cm is None:
            cm = self._columns[index] = self._parse_column(index)
        return cm

    def _parse_column(self, index: int) -> file2_pb2.ColumnMetadata:
        cache = self.shared
        cm = cache.get(("column", index))
        if cm is None:
            if not 0 <= index < self.num_columns:
                raise CorruptFileError(f"{self.file.path}: column {index} does not exist "
                                       f"(file has {self.num_columns})")
            pos, size = self.column_meta[index]
            cm = file2_pb2.ColumnMetadata()
            try:
                cm.ParseFromString(bytes(self._slice(pos, size)))
            except DecodeError as exc:
                raise CorruptFileError(f"{self.file.path}: column {index} metadata is corrupt: {exc}") from exc
            cache[("column", index)] = cm
        return cm

    @cached_property
    def _columns(self) -> dict[int, file2_pb2.ColumnMetadata]:
        return {}

    def global_buffer(self, index: int) -> bytes | memoryview:
        pos, size = self.global_buffers[index]
        return self._slice(pos, size)

    @property
    def descriptor(self) -> file_pb2.FileDescriptor:
        """Global buffer 0: the file's own schema and row count (parsed once)."""
        fd = self.shared.get("descriptor")
        if fd is None:
            fd = self.shared["descriptor"] = self._descriptor()
        return fd

    def _descriptor(self) -> file_pb2.FileDescriptor:
        fd = file_pb2.FileDescriptor()
        if not self.global_buffers:
            raise CorruptFileError(f"{self.file.path}: no global buffers (schema missing)")
        try:
            fd.ParseFromString(bytes(self.global_buffer(0)))
        except DecodeError as exc:
            raise CorruptFileError(f"{self.file.path}: file schema is corrupt: {exc}") from exc
        return fd

    @property
    def num_rows(self) -> int:
        return int(self.descriptor.length)


def _identity(file: InputFile, size: int) -> tuple[Hashable, ...]:
    """(filesystem, path, size) of an immutable data file; local files add their mtime, so a file
    rewritten in place (tests that damage copies) is never served stale metadata."""
    if file.io.is_local:
        try:
            return file.io.key, file.path, size, os.stat(file.path).st_mtime_ns
        except OSError:
            return file.io.key, file.path, size, None
    return file.io.key, file.path, size
