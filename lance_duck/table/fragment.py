"""Fragments of one version: data files (paths resolved), deletions, row ids.

Paths: a DataFile without ``base_id`` lives in ``<dataset dir>/data/``; with ``base_id`` the
manifest's BasePath says where (``is_dataset_root`` → ``<base>/data/``, else ``<base>/``).
Deletion files follow the same rule under ``_deletions/``. Shallow clones and branches use
base paths to point back at the table they came from.
"""
from __future__ import annotations

import threading
from typing import Mapping

import numpy as np

from .._proto import table_pb2
from ..errors import CorruptFileError
from ..file.base import DataFileRef
from .deletions import DeletionFileInfo, deletion_file_name, read_deletions
from .rowids import decode_row_ids, decode_version_sequence

TOMBSTONE = -2


class PathResolver:
    """Turns manifest-relative paths into paths inside the table's FileIO."""

    def __init__(self, io, dataset_dir: str, base_paths: Mapping[int, table_pb2.BasePath]):
        self.io = io
        self.dataset_dir = dataset_dir
        self.base_paths = dict(base_paths)

    def _base(self, base_id: int | None, what: str) -> tuple[str, bool]:
        if base_id is None:
            return self.dataset_dir, True
        bp = self.base_paths.get(base_id)
        if bp is None:
            raise CorruptFileError(
                f"{what} refers to base path id {base_id}, which the manifest does not define "
                f"(defined: {sorted(self.base_paths)})")
        return self.io.resolve_external(bp.path).rstrip("/") or "/", bp.is_dataset_root

    def data_file(self, rel: str, base_id: int | None) -> str:
        base, is_root = self._base(base_id, f"data file {rel!r}")
        return self.io.join(base, "data", rel) if is_root else self.io.join(base, rel)

    def deletion_file(self, rel: str, base_id: int | None) -> str:
        base, _ = self._base(base_id, f"deletion file {rel!r}")
        return self.io.join(base, rel)

    def dataset_file(self, rel: str) -> str:
        return self.io.join(self.dataset_dir, rel)


def _opt(msg, name: str):
    return getattr(msg, name) if msg.HasField(name) else None


class FragmentInfo:
    """One fragment of a pinned version (immutable; deletions and row ids load lazily)."""

    def __init__(self, pb: table_pb2.DataFragment, resolver: PathResolver):
        self.pb = pb
        self.id: int = pb.id
        self.physical_rows: int = pb.physical_rows
        self._io = resolver.io
        self._resolver = resolver
        self.files: list[DataFileRef] = [
            DataFileRef(
                path=resolver.data_file(f.path, _opt(f, "base_id")),
                fields=tuple(f.fields),
                column_indices=tuple(f.column_indices),
                major=f.file_major_version,
                minor=f.file_minor_version,
                size=f.file_size_bytes or None,
            )
            for f in pb.files
        ]
        self._field_file: dict[int, DataFileRef] = {}
        for ref in self.files:
            for fid in ref.fields:
                if fid != TOMBSTONE:
                    self._field_file.setdefault(fid, ref)
        self.deletion: DeletionFileInfo | None = None
        if pb.HasField("deletion_file"):
            d = pb.deletion_file
            rel = deletion_file_name(pb.id, d.read_version, d.id, d.file_type)
            self.deletion = DeletionFileInfo(
                resolver.deletion_file(rel, _opt(d, "base_id")), d.file_type, d.num_deleted_rows)
        self._lock = threading.Lock()
        self._deleted: np.ndarray | None = None
        self._row_ids: np.ndarray | None = None

    def __repr__(self) -> str:
        return (f"FragmentInfo(id={self.id}, physical_rows={self.physical_rows}, files={len(self.files)}, "
                f"deletion={self.deletion.path if self.deletion else None})")

    def file_for_field(self, field_id: int) -> DataFileRef | None:
        """The data file holding a field (None: the column is all null in this fragment)."""
        return self._field_file.get(field_id)

    # -- deletions ------------------------------------------------------------------------
    def deleted_offsets(self) -> np.ndarray:
        """Sorted unique int64 physical offsets of deleted rows (read once, then cached)."""
        if self.deletion is None:
            return np.empty(0, dtype=np.int64)
        with self._lock:
            if self._deleted is None:
                offs = read_deletions(self._io, self.deletion)
                if offs.size and offs[-1] >= self.physical_rows:
                    raise CorruptFileError(
                        f"{self.deletion.path}: deletes row {int(offs[-1])} but fragment {self.id} "
                        f"has only {self.physical_rows} rows")
                offs.flags.writeable = False
                self._deleted = offs
            return self._deleted

    def num_deletions(self) -> int:
        """Deleted rows (from the manifest when it knows, else from the deletion file)."""
        if self.deletion is None:
            return 0
        if self.deletion.num_deleted_rows:
            return self.deletion.num_deleted_rows
        return int(self.deleted_offsets().size)

    def count_rows(self) -> int:
        """Live rows: physical rows minus deletions."""
        return self.physical_rows - self.num_deletions()

    # -- row ids and row versions ----------------------------------------------------------
    def _sequence_bytes(self, inline: str, external: str) -> bytes | None:
        which = {inline, external}
        kind = next((k for k in which if self.pb.HasField(k)), None)
        if kind is None:
            return None
        if kind == inline:
            return getattr(self.pb, inline)
        ext = getattr(self.pb, external)
        path = self._resolver.dataset_file(ext.path)
        f = self._io.open_input(path)
        return bytes(f.read(ext.offset, ext.size))

    def row_ids(self) -> np.ndarray | None:
        """uint64 stable row id of every physical row, or None without stable row ids."""
        with self._lock:
            if self._row_ids is None:
                raw = self._sequence_bytes("inline_row_ids", "external_row_ids")
                if raw is None:
                    return None
                ids = decode_row_ids(raw, f"row ids of fragment {self.id}")
                if ids.size != self.physical_rows:
                    raise CorruptFileError(
                        f"row ids of fragment {self.id}: {ids.size} ids for {self.physical_rows} rows")
                ids.flags.writeable = False
                self._row_ids = ids
            return self._row_ids

    def created_at_versions(self) -> np.ndarray | None:
        """uint64 ``_row_created_at_version`` per physical row, or None if not recorded."""
        raw = self._sequence_bytes("inline_created_at_versions", "external_created_at_versions")
        return None if raw is None else decode_version_sequence(
            raw, self.physical_rows, f"created-at versions of fragment {self.id}")

    def last_updated_at_versions(self) -> np.ndarray | None:
        """uint64 ``_row_last_updated_at_version`` per physical row, or None if not recorded."""
        raw = self._sequence_bytes("inline_last_updated_at_versions", "external_last_updated_at_versions")
        return None if raw is None else decode_version_sequence(
            raw, self.physical_rows, f"last-updated versions of fragment {self.id}")

    def row_addresses(self) -> np.ndarray:
        """uint64 ``fragment_id << 32 | offset`` for every physical row."""
        return (np.uint64(self.id) << np.uint64(32)) | np.arange(self.physical_rows, dtype=np.uint64)
