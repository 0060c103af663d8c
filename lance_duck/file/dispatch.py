"""Open a data file with the reader for its format version (read from the file's footer)."""
from __future__ import annotations

import struct

from .. import trace
from ..errors import CorruptFileError, UnsupportedFeatureError
from ..io.fs import FileIO, InputFile
from .base import LOCAL_TAIL_BYTES, MAGIC, TAIL_BYTES, DataFileReader, DataFileRef, damage_guard
from .legacy.reader import LegacyFileReader
from .container import V2Container
from .v2_1.reader import V2_1_VERSIONS, V2FileReader
from .v2_0.reader import V20FileReader


def read_version(tail: bytes | memoryview, path: str) -> tuple[int, int]:
    """(major, minor) from the last 8 bytes of a Lance data file."""
    if len(tail) < 8 or bytes(tail[-4:]) != MAGIC:
        raise CorruptFileError(f"{path}: not a Lance data file (no LANC magic at the end)")
    major, minor = struct.unpack("<HH", bytes(tail[-8:-4]))
    return major, minor


def open_data_file(io: FileIO, ref: DataFileRef) -> DataFileReader:
    """Open a data file with the reader for its version (read from the file's footer)."""
    trace.record("file:open", ref.path)
    f = io.open_input(ref.path, ref.size)
    container = V2Container.cached(f, ref.size or (f.size if io.is_local else None))
    if container is not None and (container.major, container.minor) in V2_1_VERSIONS:
        with damage_guard(ref.path, "footer / metadata"):
            return V2FileReader(f, ref, None, container=container)
    tail = f.read_tail(LOCAL_TAIL_BYTES if io.is_local else TAIL_BYTES)
    major, minor = read_version(tail, ref.path)
    if len(tail) < TAIL_BYTES and (major, minor) not in V2_1_VERSIONS and len(tail) < f.size:
        tail = f.read_tail(TAIL_BYTES)     # legacy / 2.0 readers parse their metadata from the tail
    with damage_guard(ref.path, "footer / metadata"):
        return _open_version(f, ref, tail, major, minor)


def _open_version(f: InputFile, ref: DataFileRef, tail: bytes | memoryview, major: int, minor: int) -> DataFileReader:
    if (major, minor) in ((0, 1), (0, 2)):
        return LegacyFileReader(f, ref, tail)
    if (major, minor) in ((0, 3), (2, 0)):
        return V20FileReader(f, ref, tail)
    if (major, minor) in V2_1_VERSIONS:
        reader = V2FileReader(f, ref, tail)
        reader.container.remember()
        return reader
    raise UnsupportedFeatureError(
        f"{ref.path}: Lance file format version {major}.{minor} is not supported "
        "(readable: legacy 0.1/0.2, 2.0, 2.1, 2.2, 2.3)")
