"""Index files: where they are (confined to ``_indices/<uuid>/``) and reading them whole or in part.

Every scalar index file is an ordinary Lance 2.x file that carries its own schema; the data
file readers decode it. Decoded columns are cached per (file path, column, selection kind)
in a process-wide LRU bounded in bytes, so repeated queries do not re-read index pages.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable, Hashable, Sequence, TypeVar, cast

import numpy as np
import pyarrow as pa

from .. import _state
from ..errors import CorruptFileError
from ..file import DataFileRef, open_data_file
from ..file.base import damage_guard
from ..schema import LanceField, schema_from_protos
from .metadata import IndexSegment

if TYPE_CHECKING:
    from ..file.base import RowSelection
    from ..io.fs import FileIO
    from ..table.snapshot import Snapshot

T = TypeVar("T")

INDICES_DIR = "_indices"


def segment_file_path(snapshot: Snapshot, segment: IndexSegment, name: str) -> str:
    """``<base>/_indices/<uuid>/<name>``; the name must be a plain file name (no directories)."""
    if not name or "/" in name or "\\" in name or name in (".", "..") or ":" in name:
        raise CorruptFileError(f"index {segment.name!r}: file name {name!r} is not a plain file name")
    if segment.base_id is None:
        base = snapshot.dataset_dir
    else:
        bp = snapshot.base_paths.get(segment.base_id)
        if bp is None:
            raise CorruptFileError(f"index {segment.name!r} refers to base path id {segment.base_id}, "
                                   "which the manifest does not define")
        base = snapshot.io.resolve_external(bp.path).rstrip("/") or "/"
    return snapshot.io.join(base, INDICES_DIR, segment.uuid, name)


class IndexFile:
    """One index file opened with the data-file reader (schema from the file itself).

    Damage surfaces as ``CorruptFileError`` naming the file: a local file whose size is not the
    one the manifest records (a truncated, extended or swapped-in file; remote files are read
    at the recorded size, where a wrong size leaves no footer), and any decoding failure."""

    def __init__(self, io: FileIO, path: str, size: int | None = None) -> None:
        with damage_guard(path, "index file"):
            self._open(io, path, size)

    def _open(self, io: FileIO, path: str, size: int | None) -> None:
        if size and io.is_local:
            actual = _local_size(path)
            if actual is not None and actual != size:
                raise CorruptFileError(f"{path}: index file is {actual} bytes, the manifest records {size}")
        reader = open_data_file(io, DataFileRef(path, (), (), 2, 2, size or None))
        container = getattr(reader, "container", None)
        if container is None:
            raise CorruptFileError(f"{path}: index files are Lance 2.x files")
        fd = container.descriptor
        self.schema = schema_from_protos(fd.schema.fields, dict(fd.schema.metadata))
        self.metadata: dict[str, str] = dict(self.schema.metadata)
        ids, cols = _column_map(self.schema.fields, container.minor)
        reader.ref = DataFileRef(path, ids, cols, container.major, container.minor, size or None)
        self.reader = reader
        self.path = path
        self.num_rows = reader.num_rows
        self._fields = {f.name: f for f in self.schema.fields}

    def field(self, name: str) -> LanceField:
        f = self._fields.get(name)
        if f is None:
            raise CorruptFileError(f"{self.path}: index file has no column {name!r} "
                                   f"(has {sorted(self._fields)})")
        return f

    def read(self, names: Sequence[str], rows: RowSelection = None) -> list[pa.Array]:
        with damage_guard(self.path, "index file"):
            arrays = self.reader.read_fields([self.field(n) for n in names], rows)
            return [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]


def _local_size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _column_map(fields: Sequence[LanceField], minor: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Field ids (pre-order) and their columns: 2.1+ files give columns to leaf fields only (a list's
    values, not the list), 2.0 files to every field."""
    ids: list[int] = []
    cols: list[int] = []

    def visit(fs: Sequence[LanceField]) -> None:
        for f in fs:
            ids.append(f.id)
            cols.append(-1)
            if minor == 0 or not f.children:
                cols[-1] = sum(c >= 0 for c in cols[:-1])
            visit(f.children)

    visit(fields)
    return tuple(ids), tuple(cols)


#: opened index files and what was read from them (``lance_duck.configure(index_cache_bytes=...)``)
CACHE = _state.cache("index_files")


OPEN_FILE_CHARGE = 1 << 20   # an open index file (reader, metadata, mapping) counts as 1 MiB


def nbytes_of(value: object) -> int:
    if isinstance(value, IndexFile):
        return OPEN_FILE_CHARGE
    if isinstance(value, (pa.Array, pa.ChunkedArray)):
        return int(value.nbytes)
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (list, tuple)):
        return sum(nbytes_of(v) for v in value) + 64
    if isinstance(value, dict):
        return sum(nbytes_of(v) for v in value.values()) + 64
    nb = getattr(value, "nbytes", None)
    return nb if isinstance(nb, int) else 64


def cached(key: tuple[Hashable, ...], compute: Callable[[], T]) -> T:
    """``compute()`` once per key while it stays in the cache."""
    hit = CACHE.get(key)
    if hit is not None:
        return cast(T, hit)          # computed by a call with this key, so of its type
    value = compute()
    CACHE.put(key, value, nbytes_of(value))
    return value
