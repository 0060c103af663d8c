"""Manifest files: framing, protobuf decoding and the reader feature-flag check.

A ``.manifest`` file ends with a 16-byte footer (i64 position of the manifest's u32 length
prefix, u16 major, u16 minor, ``LANC``); the Manifest protobuf sits at that position. Legacy
tables keep dictionary values before it, so callers that need them keep the raw bytes.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

from .._proto import table_pb2
from ..errors import CorruptFileError, UnsupportedFeatureError

if TYPE_CHECKING:
    from ..io.fs import FileIO

MAGIC = b"LANC"
FOOTER_LEN = 16

# Reader feature flags this reader understands (bit -> meaning), as pylance 14.0.2 accepts them.
SUPPORTED_READER_FLAGS: dict[int, str] = {
    1: "deletion files",
    2: "stable row ids",
    4: "v2 file format (deprecated marker)",
    8: "table config",
    16: "base paths (shallow clones, branches)",
    32: "no transaction file",
    128: "MemWAL index catch-up (concerns index-only queries over a MemWAL; table rows read as usual)",
    256: "mixed data-file versions (every version present must be readable; see check_reader_flags)",
    1024: "tagged fragment-reuse history (deferred index remapping; scalar indices are then not used)",
    2048: "accepted by pylance 14.0.2 alone; data files and fragments read as usual",
    16384: "managed blobs (blob v2 descriptions of kind 4; read as pylance returns them)",
}
# Data-file versions (major, minor) as the manifest's DataFile records them, that lance_duck reads.
READABLE_FILE_VERSIONS = {(0, 1), (0, 2), (0, 3), (2, 0), (2, 1), (2, 2), (2, 3)}
MIXED_FILE_VERSIONS = 256
FRAGMENT_REUSE_TAGGED = 1024
MANAGED_BLOBS = 16384
# Flags that mean nothing unless the writer bit is set too (pylance refuses a half-set pair as corrupt).
PAIRED_FLAGS: dict[int, str] = {
    MIXED_FILE_VERSIONS: "mixed data-file versions",
    FRAGMENT_REUSE_TAGGED: "tagged fragment-reuse history",
    MANAGED_BLOBS: "managed blobs",
}
# Meanings of bits we refuse, for the error message only (pylance 14.0.2 refuses them too).
_KNOWN_UNSUPPORTED: dict[int, str] = {
    64: "data overlay files",
    512: "unknown to pylance 14.0.2",
    4096: "unknown to pylance 14.0.2",
    8192: "unknown to pylance 14.0.2",
    32768: "non-reusable field ids, a writer-only flag: as a reader flag the manifest is corrupt",
}


@dataclass
class ManifestFile:
    """One parsed manifest and the file it came from."""

    path: str
    raw: bytes
    manifest: table_pb2.Manifest


def decode_manifest(raw: bytes, path: str) -> table_pb2.Manifest:
    """Validate the framing of ``raw`` and decode its Manifest protobuf."""
    size = len(raw)
    if size < FOOTER_LEN + 4:
        raise CorruptFileError(f"{path}: manifest file is truncated ({size} bytes)")
    footer = raw[-FOOTER_LEN:]
    if footer[12:] != MAGIC:
        raise CorruptFileError(f"{path}: not a Lance manifest (no LANC magic at the end)")
    (pos,) = struct.unpack_from("<q", footer, 0)
    end = size - FOOTER_LEN
    if pos < 0 or pos + 4 > end:
        raise CorruptFileError(
            f"{path}: manifest position {pos} is outside the file ({size} bytes); the file is truncated or corrupt")
    (length,) = struct.unpack_from("<I", raw, pos)
    if pos + 4 + length != end:
        raise CorruptFileError(
            f"{path}: manifest length {length} at position {pos} does not match the file size {size}")
    m = table_pb2.Manifest()
    try:
        m.ParseFromString(raw[pos + 4:end])
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise CorruptFileError(f"{path}: manifest protobuf is corrupt ({exc})") from exc
    return m


def check_reader_flags(m: table_pb2.Manifest, path: str) -> None:
    """Refuse manifests that need a reader feature lance_duck does not implement."""
    flags = m.reader_feature_flags
    for bit, name in PAIRED_FLAGS.items():
        if flags & bit and not m.writer_feature_flags & bit:
            raise CorruptFileError(f"{path}: version {m.version} sets reader flag {bit} ({name}) without "
                                   "the writer flag; the manifest is corrupt (pylance refuses it too)")
    if flags & MIXED_FILE_VERSIONS:
        _check_mixed_file_versions(m, path)
    unknown = flags & ~sum(SUPPORTED_READER_FLAGS)
    if not unknown:
        return
    bits = [1 << i for i in range(64) if unknown >> i & 1]
    desc = ", ".join(f"{b} ({_KNOWN_UNSUPPORTED.get(b, 'unknown feature')})" for b in bits)
    raise UnsupportedFeatureError(
        f"{path}: version {m.version} needs reader feature flag {desc}, which lance_duck cannot read "
        f"(supported flags: {sorted(SUPPORTED_READER_FLAGS)})")


def _check_mixed_file_versions(m: table_pb2.Manifest, path: str) -> None:
    """Flag 256 promises only that fragments differ in file version: each must be one we read."""
    for frag in m.fragments:
        for f in frag.files:
            v = (f.file_major_version, f.file_minor_version)
            if v not in READABLE_FILE_VERSIONS:
                raise UnsupportedFeatureError(
                    f"{path}: fragment {frag.id} has a data file in format {v[0]}.{v[1]}, which lance_duck "
                    f"cannot read ({f.path})")


def check_fragments(m: table_pb2.Manifest, path: str) -> None:
    """Refuse fragments with protobuf fields we do not know (e.g. unflagged overlays)."""
    from google.protobuf.unknown_fields import UnknownFieldSet

    for frag in m.fragments:
        unknown = UnknownFieldSet(frag)
        if len(unknown):
            nums = sorted({unknown[i].field_number for i in range(len(unknown))})
            raise UnsupportedFeatureError(
                f"{path}: fragment {frag.id} of version {m.version} carries unknown protobuf field(s) "
                f"{nums}; lance_duck cannot read it safely")


def check_fragment_tree(m: table_pb2.Manifest, path: str) -> None:
    """Refuse a version whose fragments live in a fragment tree (Manifest field 22, pylance 14).

    The tree's fragment files are not in ``fragments``: reading only the list would drop rows.
    An empty tree (no layout) is what pylance reads as no tree, and so do we.
    """
    if m.HasField("fragment_tree") and m.fragment_tree.layout:
        raise UnsupportedFeatureError(
            f"{path}: version {m.version} keeps its fragments in a fragment tree (manifest field "
            f"fragment_tree, {len(m.fragment_tree.layout)} bytes of layout), which lance_duck cannot read")


# Manifest fields lance_duck never reads, whose number other Lance releases may have used
# with another type: a mismatch there is not damage that could change a result.
_UNREAD_FIELDS = frozenset({"transaction_section", "transaction_section_v14", "writer_version", "transaction_file",
                            "max_allocated_field_id", "clustering", "max_clustering_id"})


def check_wire_types(msg: Message, path: str, where: str = "manifest") -> None:
    """Refuse a known field stored with the wrong wire type (a damaged tag byte).

    Python's protobuf keeps such a field among the unknown fields and leaves the real one at its
    default, where Lance refuses the manifest; a flipped bit would otherwise drop a value silently.
    """
    from google.protobuf.unknown_fields import UnknownFieldSet

    if where == "manifest":  # the walk below is slow: skip it when nothing is unknown anywhere
        bare = type(msg)()
        bare.CopyFrom(msg)
        bare.DiscardUnknownFields()
        if bare.ByteSize() == msg.ByteSize():
            return
    desc = msg.DESCRIPTOR
    unknown = UnknownFieldSet(msg)
    if len(unknown):
        nums = {unknown[i].field_number for i in range(len(unknown))}
        bad = sorted(n for n in nums if desc.fields_by_number.get(n)
                     and desc.fields_by_number[n].name not in _UNREAD_FIELDS)
        if bad:
            names = [desc.fields_by_number[n].name for n in bad]
            raise CorruptFileError(f"{path}: {where}: field(s) {names} stored with the wrong wire type; "
                                   "the manifest is corrupt")
    for fd in desc.fields:
        if fd.message_type is None or fd.message_type.GetOptions().map_entry:
            continue
        if _is_repeated(fd):
            for i, sub in enumerate(getattr(msg, fd.name)):
                check_wire_types(sub, path, f"{where}.{fd.name}[{i}]")
        elif msg.HasField(fd.name):
            check_wire_types(getattr(msg, fd.name), path, f"{where}.{fd.name}")


def parse_manifest(raw: bytes, path: str) -> ManifestFile:
    """Decode and validate a manifest file's bytes (framing, wire types, flags, fragments)."""
    m = decode_manifest(raw, path)
    check_wire_types(m, path)
    check_reader_flags(m, path)
    check_fragment_tree(m, path)
    check_fragments(m, path)
    return ManifestFile(path, raw, m)


def read_manifest(io: FileIO, path: str, size: int | None = None) -> ManifestFile:
    """Read and validate one manifest file (FileNotFoundError names the path); ``size`` from a
    listing, when known (manifests are immutable: object stores serve them from a process cache)."""
    return parse_manifest(bytes(io.read_immutable(path, size)), path)


def encode_manifest(m: table_pb2.Manifest, prefix: bytes = b"") -> bytes:
    """Frame a Manifest protobuf the way pylance does (``prefix`` = bytes kept before it)."""
    body = m.SerializeToString()
    pos = len(prefix)
    return prefix + struct.pack("<I", len(body)) + body + struct.pack("<qHH", pos, 0, 2) + MAGIC


def _is_repeated(fd: object) -> bool:
    """Whether a protobuf field descriptor (pure-Python or upb) is repeated (``is_repeated`` on
    protobuf >= 6; ``label`` before, which the newest stubs no longer declare)."""
    flag = getattr(fd, "is_repeated", None)
    return bool(flag) if flag is not None else getattr(fd, "label") == FieldDescriptor.LABEL_REPEATED
