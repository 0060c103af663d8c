"""One pinned version of a table: the contract every layer above reads from.

``open_snapshot`` resolves (branch, version | tag | as-of) to one manifest, validates it, and
returns an immutable :class:`Snapshot` (schema, fragments with resolved paths, deletions and
row ids on demand). Nothing here reads a data file.
"""
from __future__ import annotations

import enum
import os
from datetime import datetime
from typing import Any, Callable, TypeVar, Union, cast

import pyarrow as pa

from .. import _state
from .._proto import table_pb2
from ..errors import BranchNotFoundError, CorruptFileError, InvalidArgumentError, VersionNotFoundError
from ..io.fs import FileIO, open_io
from ..file import DataFileReader, DataFileRef
from .blobs import read_schema
from .fragment import FragmentInfo, PathResolver, vanished
from .manifest import FRAGMENT_REUSE_TAGGED, ManifestFile, parse_manifest, read_manifest
from .refs import branch_dir, list_branches, list_tags, read_branch, read_tag
from ..schema import LanceSchema, schema_from_protos
from .versions import (VERSIONS_DIR, AsOf, list_versions, manifest_name, manifest_timestamp_ns, normalize_asof,
                       utc_timestamp, version_number)
from .history import VersionInfo, list_version_infos, resolve_asof

class _Same(enum.Enum):
    """:meth:`Snapshot.checkout`'s default branch: the snapshot's own."""

    BRANCH = "same"


_SAME = _Same.BRANCH
#: a version as :func:`open_snapshot` takes it: a number, a tag name, or (branch, number or tag)
VersionRef = Union[int, str, "tuple[str | None, int | str | None]", None]
LEGACY_VERSIONS = ("0.1", "0.2", "legacy")


def open_snapshot(uri: str | os.PathLike[str], version: VersionRef = None, asof: AsOf | None = None, *,
                  branch: str | None = None, storage_options: dict[str, Any] | None = None) -> "Snapshot":
    """Open one version of the table at ``uri`` (local path or fsspec URL).

    ``version``: a version number, a tag name, or a ``(branch, version)`` pair; ``asof``: the
    newest version committed strictly before this datetime / ISO string (naive = local time, as
    pylance); ``branch``: a branch name (None = main). Default: the latest version.
    """
    io, root = open_io(uri, storage_options)
    return _open(str(uri), io, root, version, asof, branch)


def _open(uri: str, io: FileIO, root: str, version: VersionRef, asof: AsOf | None,
          branch: str | None) -> "Snapshot":
    if version is not None and asof is not None:
        raise InvalidArgumentError("give either version or asof, not both")
    if isinstance(version, tuple):
        if len(version) != 2:
            raise InvalidArgumentError(f"version tuple must be (branch, version), got {version!r}")
        branch, version = version
    if branch == "main":
        branch = None
    number: int | None = None
    if isinstance(version, str):
        tag = read_tag(io, root, version)
        tag_branch = tag["branch"] if tag["branch"] != "main" else None
        if branch is not None and tag_branch != branch:
            raise InvalidArgumentError(f"tag {version!r} points into branch {tag_branch!r}, not {branch!r}")
        branch, number = tag_branch, tag["version"]
    elif version is not None:
        number = version_number(version, "version", "an int, a tag name or (branch, version)",
                                f"invalid version {version!r}")
    ddir = branch_dir(io, root, branch)
    where = f" on branch {branch!r}" if branch else ""
    if branch is not None:
        read_branch(io, root, branch)  # BranchNotFoundError when the ref is missing
    if number is not None and asof is None:
        mf = _read_by_name(io, io.join(ddir, VERSIONS_DIR), number)
        if mf is not None:
            return Snapshot(uri, io, root, branch, ddir, mf)
    for attempt in range(LATEST_ATTEMPTS - 1):
        try:
            return Snapshot(uri, io, root, branch, ddir, _resolve(uri, io, root, branch, ddir, number, asof, where))
        except _Vanished:
            # the manifest chosen was removed after the listing (a cleanup of old versions, which
            # never removes the latest): list again -- a newer version was committed meanwhile
            continue
    return Snapshot(uri, io, root, branch, ddir, _resolve(uri, io, root, branch, ddir, number, asof, where))


class _Vanished(FileNotFoundError):
    """The latest manifest listed was gone when it was read."""


# Listings of _versions/ tried when the latest manifest listed keeps vanishing before it is read.
LATEST_ATTEMPTS = 5


def _resolve(uri: str, io: FileIO, root: str, branch: str | None, ddir: str, version: int | None,
             asof: AsOf | None, where: str) -> ManifestFile:
    """The manifest a (branch, version | asof | latest) reference names, from a listing of ``_versions/``."""
    try:
        entries = list_versions(io, ddir)
    except NotADirectoryError:
        raise FileNotFoundError(f"Not a Lance table: {uri} is a file, not a table directory "
                                f"(a Lance table is a directory holding {VERSIONS_DIR}/)") from None
    if not entries:
        if branch is not None:
            raise BranchNotFoundError(f"branch {branch!r} has no versions under {ddir}")
        if not io.exists(root):
            raise FileNotFoundError(f"No such table: {root}")
        raise FileNotFoundError(f"Not a Lance table: no manifests in {io.join(root, VERSIONS_DIR)}")
    vdir = io.join(ddir, VERSIONS_DIR)
    if asof is not None:
        return resolve_asof(io, vdir, entries, normalize_asof(asof), where)
    found = entries[-1] if version is None else next((e for e in entries if e.version == version), None)
    if found is None:
        have = [e.version for e in entries]
        shown: list[object] = list(have) if len(have) <= 12 else [*have[:5], "...", *have[-5:]]
        raise VersionNotFoundError(f"version {version} does not exist{where} in {uri} "
                                   f"(versions present: {shown})")
    try:
        mf = read_manifest(io, io.join(vdir, found.name), found.size)
    except FileNotFoundError as exc:
        if version is None:
            raise _Vanished(str(exc)) from exc
        raise
    if mf.manifest.version != found.version:
        raise CorruptFileError(f"{mf.path}: file name says version {found.version}, "
                               f"the manifest says {mf.manifest.version}")
    return mf


def _read_by_name(io: FileIO, vdir: str, version: int) -> ManifestFile | None:
    """A given version's manifest read by its (V2 scheme) name, without listing the directory
    (one request on an object store, none once cached); None when it is not there under that name."""
    try:
        mf = read_manifest(io, io.join(vdir, manifest_name(version, "v2")))
    except FileNotFoundError:
        return None
    return mf if mf.manifest.version == version else None


T = TypeVar("T")


class Snapshot:
    """One pinned version of a table (immutable; cheap to keep)."""

    def __init__(self, uri: str, io: FileIO, root: str, branch: str | None, dataset_dir: str,
                 mf: ManifestFile):
        m = mf.manifest
        self.uri = uri
        self.io = io
        self.root = root
        self.branch = branch
        self.dataset_dir = dataset_dir          # root, or root/tree/<branch>
        self.manifest_file = mf
        self.manifest: table_pb2.Manifest = m
        self.version: int = m.version
        self.timestamp_ns: int = manifest_timestamp_ns(m)
        self.timestamp: datetime = utc_timestamp(self.timestamp_ns)
        self.data_storage_version: str = _storage_version(m)
        self.schema: LanceSchema = schema_from_protos(m.fields, dict(m.schema_metadata))
        if self.is_legacy:
            _check_legacy_schema(mf.path, self.schema)
            _load_legacy_dictionaries(mf.raw, self.schema)
        self.arrow_schema: pa.Schema = self.schema.to_arrow()
        # what scans and takes return: blob columns as their descriptions (table/blobs.py)
        self.read_schema: pa.Schema = read_schema(self.schema, self.arrow_schema)
        self.base_paths = {bp.id: bp for bp in m.base_paths}
        resolver = PathResolver(io, dataset_dir, self.base_paths)
        self.resolver = resolver
        self.fragments: list[FragmentInfo] = [
            FragmentInfo(f, resolver, m.version, self.schema.by_id) for f in m.fragments]
        self._file_owner: dict[str, FragmentInfo] = {r.path: f for f in self.fragments for r in f.files}
        self.has_stable_row_ids: bool = bool(m.reader_feature_flags & 2)
        # Flag 1024: indices are translated through a tagged fragment-reuse history (deferred
        # remapping) that lance_duck does not interpret, so filters never take rows from them.
        self.scalar_indices_usable: bool = not m.reader_feature_flags & FRAGMENT_REUSE_TAGGED

    def __repr__(self) -> str:
        b = f", branch={self.branch!r}" if self.branch else ""
        return f"Snapshot({self.uri!r}, version={self.version}{b}, fragments={len(self.fragments)})"

    def derived(self, key: str, make: Callable[[], T], keep: Callable[[T], bool] | None = None) -> T:
        """A value derived from this (immutable) snapshot under ``key``, made once by ``make``
        and kept on it: the upper layers' per-version caches (index segments, name maps, open
        readers). Threads racing on a first call all get the value stored first. With ``keep``,
        a value it refuses (too large to hold) is returned without being kept."""
        d = self.__dict__
        if key in d:
            return cast(T, d[key])           # stored by a call with this key, so of its type
        value = make()
        if keep is not None and not keep(value):
            return value
        return cast(T, d.setdefault(key, value))

    @property
    def is_legacy(self) -> bool:
        return self.data_storage_version in LEGACY_VERSIONS

    def fragment(self, fragment_id: int) -> FragmentInfo:
        """The fragment with this id (KeyError if this version has none)."""
        for f in self.fragments:
            if f.id == fragment_id:
                return f
        raise KeyError(f"version {self.version} has no fragment {fragment_id}")

    def open_data_file(self, ref: DataFileRef) -> DataFileReader:
        """Open one of this version's data files, checked against the manifest.

        A missing file raises FileNotFoundError saying the version was probably cleaned up;
        a file whose rows, field ids or columns disagree with the manifest raises CorruptFileError.
        """
        try:
            from ..file import open_data_file   # the decoders load on first use
            reader = open_data_file(self.io, ref)
        except FileNotFoundError as exc:
            raise vanished(ref.path, "data file", self.version) from exc
        owner = self._file_owner.get(ref.path)
        if owner is not None:
            owner.check_data_file(ref, reader)
        return reader

    # -- history and refs ----------------------------------------------------------------
    def latest_version(self) -> int:
        """The newest version of this snapshot's branch (listed afresh)."""
        entries = list_versions(self.io, self.dataset_dir)
        return entries[-1].version if entries else self.version

    def versions(self) -> list[VersionInfo]:
        """Every version of this branch, like pylance's ``ds.versions()``."""
        return list_version_infos(self.io, self.dataset_dir)

    def list_tags(self) -> dict[str, dict[str, Any]]:
        """All tags of the table, like pylance's ``ds.tags.list()``."""
        return list_tags(self.io, self.root)

    def list_branches(self) -> dict[str, dict[str, Any]]:
        """All branches of the table, like pylance's ``ds.branches.list()``."""
        return list_branches(self.io, self.root)

    def checkout(self, version: VersionRef = None, asof: AsOf | None = None, *,
                 branch: str | None | _Same = _SAME) -> "Snapshot":
        """Another version of the same table (a new object; default: latest of this branch)."""
        b = self.branch if branch is _SAME else branch
        return _open(self.uri, self.io, self.root, version, asof, b)

    # -- counts --------------------------------------------------------------------------
    def count_rows(self) -> int:
        """Exact live rows; reads only manifests and (when needed) deletion files."""
        return sum(f.count_rows() for f in self.fragments)


# -- kept snapshots ------------------------------------------------------------------------
# Versions the change readers (change feeds, delta()) open are kept per process (the "snapshots"
# cache, lance_duck.configure's snapshot_cache_bytes): a Snapshot holds what was worked out from it
# (decoded deletions and row ids, open readers, derived values), so the next feed or delta() over
# the same versions finds it done. The key is the table as opened (store and its settings, uri,
# branch) and the manifest file's path and bytes: a version is immutable, and a table written anew
# at the same path has other manifest bytes.
_KEPT = _state.cache("snapshots")
# estimated bytes of a kept snapshot: per byte of its manifest file, and per fragment
KEPT_BYTES_PER_MANIFEST_BYTE = 8
KEPT_BYTES_PER_FRAGMENT = 2048


def _kept_key(uri: str, io: FileIO, root: str, branch: str | None, ddir: str, mf: ManifestFile) -> tuple[Any, ...] | None:
    share = getattr(io, "share_key", None)
    return None if share is None else (share, uri, root, branch, ddir, mf.path, mf.raw)


def _keep(key: tuple[Any, ...], snapshot: Snapshot) -> Snapshot:
    charge = (KEPT_BYTES_PER_MANIFEST_BYTE * len(snapshot.manifest_file.raw)
              + KEPT_BYTES_PER_FRAGMENT * len(snapshot.fragments))
    return cast(Snapshot, _KEPT.put(key, snapshot, charge))


def kept(snapshot: Snapshot) -> Snapshot:
    """The process's kept snapshot of the same version as ``snapshot`` (same table as opened, same
    manifest bytes), or ``snapshot`` itself, kept from now on."""
    key = _kept_key(snapshot.uri, snapshot.io, snapshot.root, snapshot.branch, snapshot.dataset_dir,
                    snapshot.manifest_file)
    if key is None:
        return snapshot
    hit = _KEPT.get(key)
    return cast(Snapshot, hit) if hit is not None else _keep(key, snapshot)


def open_kept(uri: str | os.PathLike[str], *, branch: str | None = None,
              storage_options: dict[str, Any] | None = None) -> Snapshot:
    """The latest version of ``uri`` (as :func:`open_snapshot`) as :func:`kept` gives it: when a
    kept snapshot has the bytes of the newest manifest listed, no manifest is parsed and no
    snapshot built; anything unusual (a branch, no listing) goes the way of :func:`open_snapshot`."""
    io, root = open_io(uri, storage_options)
    if getattr(io, "share_key", None) is not None and branch in (None, "main"):
        try:
            entries = list_versions(io, root)
        except (FileNotFoundError, NotADirectoryError):
            entries = []
        if entries:
            path = io.join(io.join(root, VERSIONS_DIR), entries[-1].name)
            try:
                raw: bytes | None = bytes(io.read_immutable(path, entries[-1].size))
            except FileNotFoundError:
                raw = None          # removed since the listing: open_snapshot lists again
            if raw is not None:
                key = (io.share_key, str(uri), root, None, root, path, raw)
                hit = _KEPT.get(key)
                if hit is not None:
                    return cast(Snapshot, hit)
                mf = parse_manifest(raw, path)
                if mf.manifest.version == entries[-1].version:     # (else open_snapshot refuses it)
                    return _keep(key, Snapshot(str(uri), io, root, None, root, mf))
    return kept(_open(str(uri), io, root, None, None, branch))


def kept_checkout(snapshot: Snapshot, version: int) -> Snapshot:
    """Version ``version`` of ``snapshot``'s branch as :func:`kept` gives it: its manifest is read
    (by name, no listing), parsed and validated only when no kept snapshot has those bytes."""
    if version == snapshot.version:
        return kept(snapshot)
    io = snapshot.io
    if getattr(io, "share_key", None) is not None:
        path = io.join(io.join(snapshot.dataset_dir, VERSIONS_DIR), manifest_name(version, "v2"))
        try:
            raw: bytes | None = bytes(io.read_immutable(path))
        except FileNotFoundError:
            raw = None              # not there under that name: found by listing below
        if raw is not None:
            key = (io.share_key, snapshot.uri, snapshot.root, snapshot.branch, snapshot.dataset_dir, path, raw)
            hit = _KEPT.get(key)
            if hit is not None:
                return cast(Snapshot, hit)
            mf = parse_manifest(raw, path)
            if mf.manifest.version == version:
                return _keep(key, Snapshot(snapshot.uri, io, snapshot.root, snapshot.branch, snapshot.dataset_dir, mf))
    return kept(snapshot.checkout(version))


def _storage_version(m: table_pb2.Manifest) -> str:
    """``data_storage_version`` as pylance reports it ("0.1" for legacy, "2.0", "2.1", "2.2")."""
    if m.HasField("data_format") and m.data_format.version:
        return m.data_format.version
    for f in m.fragments:
        for df in f.files:
            if df.file_major_version in (0, 1) or (df.file_major_version, df.file_minor_version) == (0, 3):
                return "2.0" if df.file_minor_version == 3 else "0.1"
            return f"{df.file_major_version}.{df.file_minor_version}"
    return "2.0" if m.writer_feature_flags & 4 else "0.1"


def _check_legacy_schema(path: str, schema: LanceSchema) -> None:
    """Legacy files carry no schema of their own to check against; refuse what they cannot hold."""
    for f in schema.walk():
        if f.is_struct and not f.children:
            raise CorruptFileError(f"{path}: struct field {f.name!r} (id {f.id}) has no children, which a "
                                   "legacy (0.1/0.2) table cannot store")
        if f.children and not (f.is_struct or f.is_list or f.logical_type == "map"):
            raise CorruptFileError(f"{path}: field {f.name!r} (id {f.id}) of type {f.logical_type!r} has "
                                   "children, which a legacy (0.1/0.2) table cannot store")


def _load_legacy_dictionaries(manifest_bytes: bytes, schema: LanceSchema) -> None:
    """Legacy tables keep dictionary values inside the manifest file; attach them to the fields."""
    for field in schema.walk():
        if field.logical_type.startswith("dict:"):
            from ..file import load_dictionary_values
            field.dictionary_values = load_dictionary_values(manifest_bytes, field)
