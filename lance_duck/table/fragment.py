"""Fragments of one version: data files (paths resolved), deletions, row ids.

Paths: a DataFile without ``base_id`` lives in ``<dataset dir>/data/``; with ``base_id`` the
manifest's BasePath says where (``is_dataset_root`` → ``<base>/data/``, else ``<base>/``).
Deletion files follow the same rule under ``_deletions/``. Shallow clones and branches use
base paths to point back at the table they came from.

Confinement: every path a manifest names is relative and stays under its directory
(:func:`confine`): absolute paths, URLs, ``..`` / ``.`` / empty segments, NUL bytes and names
longer than 255 bytes are refused with CorruptFileError. Declared base paths are the only way
out of the table root. All resolution (data, deletion, row-id, index files) goes through it.
A base path is a path of the table's own store (absolute, or -- as pylance writes for a shallow
clone made from a relative path -- relative to the working directory) or a URL; a URL of another
store (``s3://...`` on a local table) is refused by name (UnsupportedFeatureError), never read as a
local path.
"""
from __future__ import annotations

import os
import re
import threading
from typing import TYPE_CHECKING, Hashable, Mapping

import numpy as np

from .. import _state
from .._proto import table_pb2
from ..errors import CorruptFileError, UnsupportedFeatureError
from ..file import DataFileReader, DataFileRef
from .deletions import DeletionFileInfo, deletion_file_name, read_deletions
from .rowids import decode_row_ids, decode_version_runs, row_ids_at

if TYPE_CHECKING:
    from ..io.fs import FileIO
    from ..schema import LanceField

TOMBSTONE = -2
# A URL's scheme (RFC 3986), two letters at least (``C:`` is a Windows drive)
_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")
# Deletion files are immutable: their checked, decoded offsets are kept per process (every version
# that keeps a deletion file, and every change-feed or delta() call, reuses them).
DECODED_DELETIONS = _state.cache("decoded_deletions")
MAX_NAME_BYTES = 255  # longest file or directory name local filesystems and object stores accept


def confine(io: FileIO, base: str, rel: str, what: str) -> str:
    """``base/rel`` when ``rel`` is a plain relative path that cannot leave ``base``.

    The one rule for every manifest-named path: refuses (CorruptFileError naming ``what`` and
    the path) empty paths, NUL bytes, absolute paths, URLs, backslashes, ``.`` / ``..`` / empty
    segments and segments longer than 255 bytes.
    """
    problem = None
    if not isinstance(rel, str) or not rel:
        problem = "is empty"
    elif "\x00" in rel:
        problem = "contains a NUL byte"
    elif rel.startswith("/") or "://" in rel or "\\" in rel or (len(rel) > 1 and rel[1] == ":" and rel[0].isalpha()):
        problem = "is not a relative path"
    else:
        for seg in rel.split("/"):
            if seg in ("", ".", ".."):
                problem = f"has a {seg!r} segment" if seg else "has an empty segment"
                break
            if len(seg.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
                problem = f"has a name longer than {MAX_NAME_BYTES} bytes"
                break
    if problem:
        shown = rel if len(rel) <= 120 else rel[:60] + "..." + rel[-40:]
        raise CorruptFileError(f"{what} path {shown!r} {problem}; lance_duck only opens paths inside "
                               f"{base} (or a base path the manifest declares)")
    return io.join(base, rel)


class PathResolver:
    """Turns manifest-relative paths into paths inside the table's FileIO (always via :func:`confine`)."""

    def __init__(self, io: FileIO, dataset_dir: str, base_paths: Mapping[int, table_pb2.BasePath]) -> None:
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
        if not bp.path or "\x00" in bp.path:
            raise CorruptFileError(f"{what}: base path id {base_id} has an empty or malformed path {bp.path!r}")
        resolved = self.io.resolve_external(bp.path)
        scheme = _URL_SCHEME.match(resolved)
        if scheme:   # a URL the table's store does not own: never a path on this store
            raise UnsupportedFeatureError(
                f"{what}: base path id {base_id} is {bp.path!r}, a location on another store "
                f"({scheme.group(1)}:) than the table's ({self.io.protocol}:); lance_duck reads base paths "
                "on the table's own store only")
        return resolved.rstrip("/") or "/", bp.is_dataset_root

    def data_file(self, rel: str, base_id: int | None) -> str:
        base, is_root = self._base(base_id, f"data file {rel!r}")
        return confine(self.io, self.io.join(base, "data") if is_root else base, rel, "data file")

    def deletion_file(self, rel: str, base_id: int | None) -> str:
        base, _ = self._base(base_id, f"deletion file {rel!r}")
        return confine(self.io, base, rel, "deletion file")

    def dataset_file(self, rel: str, what: str = "file") -> str:
        return confine(self.io, self.dataset_dir, rel, what)

    def index_dir(self, uuid: str, base_id: int | None = None) -> str:
        """``<base>/_indices/<uuid>`` of an index (the uuid is one confined segment)."""
        base, _ = self._base(base_id, f"index {uuid!r}")
        if "/" in str(uuid):
            raise CorruptFileError(f"index uuid {uuid!r} is not a single name")
        return confine(self.io, base, f"_indices/{uuid}", "index")


_UNREAD = object()


def _per_row(runs: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray | None:
    """Version runs expanded to one version per row (as ``rowids.decode_version_sequence``)."""
    return None if runs is None else np.repeat(runs[1], np.diff(runs[0], prepend=0))


def _base_id(msg: table_pb2.DataFile | table_pb2.DeletionFile) -> int | None:
    return msg.base_id if msg.HasField("base_id") else None


class FragmentInfo:
    """One fragment of a pinned version (immutable; deletions and row ids load lazily).

    Construction cross-checks what the manifest states without opening a file (no data files,
    more deleted rows than physical rows, field / column lists of unequal length or with
    repeats); :meth:`check_data_file` checks an opened data file against the manifest.
    """

    def __init__(self, pb: table_pb2.DataFragment, resolver: PathResolver, version: int | None = None,
                 schema_fields: Mapping[int, LanceField] | None = None):
        self.pb = pb
        self.id: int = pb.id
        self.physical_rows: int = pb.physical_rows
        self.version = version
        self._io = resolver.io
        self._resolver = resolver
        where = f"fragment {pb.id}" + (f" of version {version}" if version is not None else "")
        self._where = where
        if not pb.files:
            raise CorruptFileError(f"{where} has no data files")
        if not self.physical_rows:
            raise UnsupportedFeatureError(
                f"{where} records 0 physical rows for {len(pb.files)} data file(s): an unknown row count "
                "(very old writers) or a damaged manifest; lance_duck needs the row count from the manifest")
        self._schema_fields = schema_fields
        self.files: list[DataFileRef] = [
            DataFileRef(
                path=resolver.data_file(f.path, _base_id(f)),
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
            _check_file_lists(ref, where, schema_fields)
            for fid in ref.fields:
                if fid == TOMBSTONE:
                    continue
                if fid in self._field_file:
                    raise CorruptFileError(f"{where}: field id {fid} is stored in two data files "
                                           f"({self._field_file[fid].path} and {ref.path})")
                self._field_file[fid] = ref
        self.deletion: DeletionFileInfo | None = None
        if pb.HasField("deletion_file"):
            d = pb.deletion_file
            rel = deletion_file_name(pb.id, d.read_version, d.id, d.file_type)
            self.deletion = DeletionFileInfo(
                resolver.deletion_file(rel, _base_id(d)), d.file_type, d.num_deleted_rows)
            if d.num_deleted_rows > self.physical_rows:
                raise CorruptFileError(f"{where}: the manifest says {d.num_deleted_rows} rows are deleted "
                                       f"but the fragment has only {self.physical_rows} ({self.deletion.path})")
        # Files claiming ids outside the schema (checked lazily, see file_for_field); legacy
        # files carry no schema of their own to check against.
        self._unverified: list[DataFileRef] = [] if schema_fields is None else [
            r for r in self.files if r.column_indices and any(
                fid != TOMBSTONE and fid not in schema_fields for fid in r.fields)]
        self._lock = threading.Lock()
        self._deleted: np.ndarray | None = None
        self._row_ids: np.ndarray | None = None
        self._version_runs: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}

    def __repr__(self) -> str:
        return (f"FragmentInfo(id={self.id}, physical_rows={self.physical_rows}, files={len(self.files)}, "
                f"deletion={self.deletion.path if self.deletion else None})")

    def file_for_field(self, field_id: int) -> DataFileRef | None:
        """The data file holding a field (None: the column is all null in this fragment).

        Before answering None while some file claims field ids the schema does not know (left by
        dropped columns, or a damaged id that hides this field), those files' own schemas are
        checked once against the manifest, so a damaged id raises instead of reading nulls.
        """
        ref = self._field_file.get(field_id)
        if ref is None and self._unverified:
            self._verify_unknown_ids()
        return ref

    def _verify_unknown_ids(self) -> None:
        with self._lock:
            for ref in self._unverified:
                try:
                    from ..file import open_data_file   # the decoders load on first use
                    reader = open_data_file(self._io, ref)
                except FileNotFoundError as exc:
                    raise vanished(ref.path, "data file", self.version) from exc
                self.check_data_file(ref, reader)
            self._unverified = []

    # -- deletions ------------------------------------------------------------------------
    def deleted_offsets(self) -> np.ndarray:
        """Sorted unique int64 physical offsets of deleted rows (read once, then cached).

        The file must agree with the manifest: offsets below ``physical_rows`` and, when the
        manifest states ``num_deleted_rows``, exactly that many of them (CorruptFileError).
        """
        if self.deletion is None:
            return np.empty(0, dtype=np.int64)
        with self._lock:
            if self._deleted is None:
                d = self.deletion
                try:
                    key = _deletion_key(self._io, d.path, d.num_deleted_rows, self.physical_rows)
                except FileNotFoundError as exc:
                    raise vanished(d.path, "deletion file", self.version) from exc
                kept: np.ndarray | None = DECODED_DELETIONS.get(key)
                if kept is not None:
                    self._deleted = kept
                    return kept
                try:
                    offs = read_deletions(self._io, d, self.physical_rows)
                except FileNotFoundError as exc:
                    raise vanished(d.path, "deletion file", self.version) from exc
                if offs.size and offs[-1] >= self.physical_rows:
                    raise CorruptFileError(
                        f"{d.path}: deletes row {int(offs[-1])} but fragment {self.id} "
                        f"has only {self.physical_rows} rows")
                if d.num_deleted_rows and offs.size != d.num_deleted_rows:
                    raise CorruptFileError(
                        f"{d.path}: deletion file lists {offs.size} deleted rows, the manifest of "
                        f"{self._where} says {d.num_deleted_rows}")
                offs.flags.writeable = False
                self._deleted = offs
                DECODED_DELETIONS.put(key, offs, offs.nbytes + 64)
            return self._deleted

    def check_data_file(self, ref: DataFileRef, reader: DataFileReader) -> None:
        """Cross-check an opened data file against this fragment's manifest entry.

        Row count must equal ``physical_rows``; a 2.x file's own schema must hold every field id
        the manifest assigns to it, and the manifest's column indices must exist in the file and
        rise with the fields (a swap would read one column as another).
        """
        n = getattr(reader, "num_rows", None)
        if n is not None and n != self.physical_rows:
            raise CorruptFileError(f"{ref.path}: data file has {n} rows, the manifest says {self._where} "
                                   f"has {self.physical_rows}")
        container = getattr(reader, "container", None)
        descriptor = getattr(container, "descriptor", None) if container is not None else None
        if container is None or descriptor is None or not hasattr(container, "num_columns"):
            return
        own = {f.id: f for f in descriptor.schema.fields}
        claimed = [fid for fid in ref.fields if fid != TOMBSTONE]
        missing = [fid for fid in claimed if fid not in own]
        if missing:
            raise CorruptFileError(f"{ref.path}: the manifest says this file holds field ids {missing} "
                                   f"({self._where}), the file's schema has {sorted(own)}")
        if self._schema_fields is not None:
            for fid in claimed:
                f = self._schema_fields.get(fid)
                if f is not None and f.logical_type != own[fid].logical_type:
                    raise CorruptFileError(
                        f"{ref.path}: field {f.name!r} (id {fid}) is {f.logical_type!r} in the manifest but "
                        f"{own[fid].logical_type!r} in the data file ({self._where})")
        cols = [c for c in ref.column_indices if c >= 0]
        if cols and max(cols) >= container.num_columns:
            raise CorruptFileError(f"{ref.path}: the manifest points at column {max(cols)}, the file has "
                                   f"{container.num_columns} columns ({self._where})")

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
            return bytes(getattr(self.pb, inline))
        ext = getattr(self.pb, external)
        path = self._resolver.dataset_file(ext.path, f"{external.replace('_', ' ')} file")
        try:
            return bytes(self._io.open_input(path).read(ext.offset, ext.size))
        except FileNotFoundError as exc:
            raise vanished(path, f"{external.replace('_', ' ')} file", self.version) from exc

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

    def row_ids_at(self, offsets: np.ndarray) -> np.ndarray | None:
        """uint64 stable row ids of the rows at sorted physical ``offsets`` (None without stable
        row ids), without expanding the whole sequence unless it is already decoded."""
        with self._lock:
            ids = self._row_ids
        if ids is not None:
            return ids[np.asarray(offsets, dtype=np.int64)]
        raw = self._sequence_bytes("inline_row_ids", "external_row_ids")
        if raw is None:
            return None
        return row_ids_at(raw, self.physical_rows, offsets, f"row ids of fragment {self.id}")

    def created_at_versions(self) -> np.ndarray | None:
        """uint64 ``_row_created_at_version`` per physical row, or None if not recorded."""
        return _per_row(self.created_at_runs())

    def last_updated_at_versions(self) -> np.ndarray | None:
        """uint64 ``_row_last_updated_at_version`` per physical row, or None if not recorded."""
        return _per_row(self.last_updated_at_runs())

    def created_at_runs(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``_row_created_at_version`` as runs (``rowids.decode_version_runs``), or None (decoded
        once, then kept: read-only arrays)."""
        return self._runs("created_at_versions", "created-at")

    def last_updated_at_runs(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``_row_last_updated_at_version`` as runs (``rowids.decode_version_runs``), or None
        (decoded once, then kept: read-only arrays)."""
        return self._runs("last_updated_at_versions", "last-updated")

    def _runs(self, name: str, what: str) -> tuple[np.ndarray, np.ndarray] | None:
        got = self._version_runs.get(name, _UNREAD)
        if got is _UNREAD:
            raw = self._sequence_bytes(f"inline_{name}", f"external_{name}")
            got = None if raw is None else decode_version_runs(
                raw, self.physical_rows, f"{what} versions of fragment {self.id}")
            if got is not None:
                for a in got:
                    a.flags.writeable = False
            self._version_runs[name] = got
        return got  # type: ignore[return-value]

    def row_addresses(self) -> np.ndarray:
        """uint64 ``fragment_id << 32 | offset`` for every physical row."""
        addresses: np.ndarray = (np.uint64(self.id) << np.uint64(32)) | np.arange(self.physical_rows, dtype=np.uint64)
        return addresses


def _deletion_key(io: FileIO, path: str, num_deleted: int, rows: int) -> tuple[Hashable, ...]:
    """The key of a deletion file's decoded offsets: remote files are immutable (store, path);
    a local one adds its size and mtime, so a file rewritten in place is decoded afresh."""
    if getattr(io, "is_local", False):
        st = os.stat(path)
        return io.key, path, st.st_size, st.st_mtime_ns, num_deleted, rows
    return getattr(io, "key", id(io)), path, num_deleted, rows


def _check_file_lists(ref: DataFileRef, where: str, schema_fields: Mapping[int, LanceField] | None) -> None:
    """A DataFile's ``fields`` / ``column_indices`` must pair up and not repeat; in 2.1+ files a
    field with children (struct, list) has no column of its own (pylance's rule; packed and
    extension structs such as blob v2 aside)."""
    if ref.column_indices and len(ref.column_indices) != len(ref.fields):
        raise CorruptFileError(f"{where}: data file {ref.path} lists {len(ref.fields)} field ids but "
                               f"{len(ref.column_indices)} column indices")
    live = [f for f in ref.fields if f != TOMBSTONE]
    if any(f < 0 for f in live) or len(set(live)) != len(live):
        raise CorruptFileError(f"{where}: data file {ref.path} has invalid or repeated field ids {list(ref.fields)}")
    if schema_fields is not None and (ref.major, ref.minor) >= (2, 1):
        for fid, col in zip(ref.fields, ref.column_indices):
            f = schema_fields.get(fid)
            if col >= 0 and f is not None and f.children and not _stored_whole(f):
                raise CorruptFileError(f"{where}: data file {ref.path} gives field {f.name!r} (id {fid}), which "
                                       f"has children, column {col}; in 2.1+ files only leaf fields have columns")
    cols = [c for c in ref.column_indices if c >= 0]
    if any(b <= a for a, b in zip(cols, cols[1:])):
        raise CorruptFileError(f"{where}: data file {ref.path} has column indices {list(ref.column_indices)} "
                               "that do not rise with its fields")


def _stored_whole(f: LanceField) -> bool:
    """Nested fields 2.1+ files keep in one column: packed structs, blob v2 and other extension structs."""
    return f.is_packed_struct or bool(f.extension_name) or "ARROW:extension:name" in f.metadata


def vanished(path: str, what: str, version: int | None) -> FileNotFoundError:
    """The error for a file a pinned version names but the store no longer has."""
    v = f"version {version}" if version is not None else "this version"
    return FileNotFoundError(f"{what} {path} of {v} is missing; the version was probably cleaned up "
                             "(e.g. by cleanup_old_versions) after it was opened, or the table is incomplete")
