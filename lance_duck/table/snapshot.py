"""One pinned version of a table: the contract every layer above reads from.

``open_snapshot`` resolves (branch, version | tag | as-of) to one manifest, validates it, and
returns an immutable :class:`Snapshot` (schema, fragments with resolved paths, deletions and
row ids on demand). Nothing here reads a data file.
"""
from __future__ import annotations

import enum
import operator
import os
from datetime import datetime
from typing import Any, Callable, TypeVar, Union, cast

import pyarrow as pa

from .._proto import table_pb2
from ..errors import BranchNotFoundError, CorruptFileError, InvalidArgumentError, VersionNotFoundError
from ..io.fs import FileIO, open_io
from ..file import DataFileReader, DataFileRef, load_dictionary_values, open_data_file
from .blobs import read_schema
from .fragment import FragmentInfo, PathResolver, vanished
from .manifest import FRAGMENT_REUSE_TAGGED, ManifestFile, read_manifest
from .refs import branch_dir, list_branches, list_tags, read_branch, read_tag
from ..schema import LanceSchema, schema_from_protos
from .versions import (VERSIONS_DIR, AsOf, list_versions, manifest_name, manifest_timestamp_ns, normalize_asof,
                       utc_timestamp)
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
        try:
            number = operator.index(version)
        except TypeError:
            raise InvalidArgumentError(f"version must be an int, a tag name or (branch, version), "
                                       f"not {type(version).__name__}") from None
        if isinstance(number, bool) or number < 0:
            raise InvalidArgumentError(f"invalid version {number!r}")
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

    def derived(self, key: str, make: Callable[[], T]) -> T:
        """A value derived from this (immutable) snapshot under ``key``, made once by ``make``
        and kept on it: the upper layers' per-version caches (index segments, name maps, open
        readers). Threads racing on a first call all get the value stored first."""
        d = self.__dict__
        if key in d:
            return cast(T, d[key])           # stored by a call with this key, so of its type
        return cast(T, d.setdefault(key, make()))

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
            field.dictionary_values = load_dictionary_values(manifest_bytes, field)
