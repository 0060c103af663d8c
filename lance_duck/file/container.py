"""The container shared by Lance file formats 2.0, 2.1 and 2.2.

Layout (little-endian), read from the end::

    [data buffers][global buffers][column metadata blobs][CMO table][GBO table][footer 40 B]
    footer = u64 column_meta_start, u64 cmo_table, u64 gbo_table, u32 num_global_buffers,
             u32 num_columns, u16 major, u16 minor, "LANC"

Opening costs at most two reads: the tail (which usually holds all metadata) and, for files
with very large metadata, the metadata region.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from google.protobuf.message import DecodeError

from .._proto import file2_pb2, file_pb2
from ..errors import CorruptFileError
from ..io.fs import InputFile

FOOTER = struct.Struct("<QQQIIHH4s")  # 40 bytes


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
        cache = self._columns
        cm = cache.get(index)
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
            cache[index] = cm
        return cm

    @cached_property
    def _columns(self) -> dict[int, file2_pb2.ColumnMetadata]:
        return {}

    def global_buffer(self, index: int) -> bytes | memoryview:
        pos, size = self.global_buffers[index]
        return self._slice(pos, size)

    @cached_property
    def descriptor(self) -> file_pb2.FileDescriptor:
        """Global buffer 0: the file's own schema and row count."""
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
