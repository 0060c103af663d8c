"""The manifest's index section -> index segments, and pylance's ``describe_indices`` view.

``Manifest.index_section`` is an offset inside the manifest file where a u32-length-prefixed
``IndexSection`` protobuf sits (it may precede the manifest message). Each ``IndexMetadata``
is one *segment* of a named index: the fragments it covers (a roaring bitmap), its files
under ``_indices/<uuid>/`` and the type of index (the ``type_url`` of its details).
"""
from __future__ import annotations

import struct
import uuid as _uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterable

from google.protobuf.message import DecodeError

from .. import _state
from .._proto import index_pb2, table_pb2
from ..errors import CorruptFileError
from .roaring import decode_roaring

if TYPE_CHECKING:
    from ..table.fragment import FragmentInfo

# type_url suffix -> pylance's index type name
TYPE_NAMES = {
    "BTreeIndexDetails": "BTree",
    "BitmapIndexDetails": "Bitmap",
    "LabelListIndexDetails": "LabelList",
    "ZoneMapIndexDetails": "ZoneMap",
    "NGramIndexDetails": "NGram",
    "BloomFilterIndexDetails": "BloomFilter",
    "InvertedIndexDetails": "Inverted",
    "JsonIndexDetails": "Json",
}


@dataclass(frozen=True)
class IndexSegment:
    """One IndexMetadata of the manifest (one segment of a named index)."""

    uuid: str
    name: str
    fields: tuple[int, ...]
    dataset_version: int
    fragment_ids: frozenset[int]
    type_url: str
    index_version: int
    created_at: datetime | None
    base_id: int | None
    files: tuple[tuple[str, int], ...]     # (name, size in bytes)
    details: bytes = field(default=b"", repr=False)   # the index details' serialized message

    @property
    def index_type(self) -> str:
        return type_name(self.type_url)

    @property
    def size_bytes(self) -> int | None:
        """Bytes of the segment's files; None when it lists none (pylance's fragment-reuse index)."""
        return sum(size for _, size in self.files) if self.files else None


def type_name(type_url: str) -> str:
    """pylance's name for an index type (``BTree``, ``Bitmap``...) from its details' type_url."""
    short = type_url.rsplit(".", 1)[-1].rsplit("/", 1)[-1]
    if short in TYPE_NAMES:
        return TYPE_NAMES[short]
    return short[:-len("IndexDetails")] if short.endswith("IndexDetails") else short


def read_index_segments(manifest: table_pb2.Manifest, raw: bytes, path: str) -> list[IndexSegment]:
    """Every index segment of a manifest (empty when it has no index section)."""
    if not manifest.HasField("index_section"):
        return []
    pos = manifest.index_section
    if pos + 4 > len(raw):
        raise CorruptFileError(f"{path}: index section offset {pos} is outside the manifest file")
    (length,) = struct.unpack_from("<I", raw, pos)
    if pos + 4 + length > len(raw):
        raise CorruptFileError(f"{path}: index section of {length} bytes at {pos} runs past the file end")
    blob = bytes(raw[pos + 4:pos + 4 + length])
    got = _PARSED.get(blob)
    if got is not None:
        return list(got)
    section = index_pb2.IndexSection()
    try:
        section.ParseFromString(blob)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise CorruptFileError(f"{path}: index section protobuf is corrupt ({exc})") from exc
    segments = tuple(_segment(m, path) for m in section.indices)
    _PARSED.put(blob, segments)
    return list(segments)


#: index sections parsed, kept by their bytes (a fresh dataset of a version seen before, or a later
#: version whose indices did not change, decodes no fragment bitmap again); segments are immutable
#: (``lance_duck.configure(index_section_cache_entries=...)``)
_PARSED = _state.cache("index_sections")


def _segment(m: index_pb2.IndexMetadata, path: str) -> IndexSegment:
    raw_uuid = m.uuid.uuid
    if len(raw_uuid) != 16:
        raise CorruptFileError(f"{path}: index {m.name!r} has a uuid of {len(raw_uuid)} bytes")
    frags, _ = decode_roaring(m.fragment_bitmap, f"{path}: fragment bitmap of index {m.name!r}") \
        if m.fragment_bitmap else ((), 0)
    created = None
    if m.HasField("created_at"):
        created = datetime.fromtimestamp(m.created_at / 1000, tz=timezone.utc)
    return IndexSegment(
        uuid=str(_uuid.UUID(bytes=bytes(raw_uuid))),
        name=m.name,
        fields=tuple(m.fields),
        dataset_version=m.dataset_version,
        fragment_ids=frozenset(int(f) for f in frags),
        type_url=m.index_details.type_url if m.HasField("index_details") else "",
        index_version=m.index_version,
        created_at=created,
        base_id=m.base_id if m.HasField("base_id") else None,
        files=tuple((f.path, f.size_bytes) for f in m.files),
        details=m.index_details.value if m.HasField("index_details") else b"",
    )


@dataclass(frozen=True)
class IndexSegmentDescription:
    """One segment, with pylance's attribute names."""

    uuid: str
    fragment_ids: set[int]
    dataset_version_at_last_update: int
    index_version: int
    created_at: datetime | None
    base_id: int | None
    size_bytes: int | None
    covering_fields: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class IndexDescription:
    """One named index (all its segments), like pylance's ``IndexDescription``."""

    name: str
    type_url: str
    index_type: str
    num_rows_indexed: int
    fields: list[int]
    field_names: list[str]
    segments: list[IndexSegmentDescription]
    details: dict[str, Any]

    @property
    def total_size_bytes(self) -> int | None:
        sizes = [s.size_bytes for s in self.segments]
        return None if None in sizes else sum(s for s in sizes if s is not None)

    @property
    def num_segments(self) -> int:
        return len(self.segments)

    def __repr__(self) -> str:
        names = "[" + ", ".join(f'"{n}"' for n in self.field_names) + "]"
        return (f"IndexDescription(name={self.name!r}, type_url={self.type_url!r}, "
                f"num_rows_indexed={self.num_rows_indexed}, fields={self.fields}, field_names={names}, "
                f"num_segments={self.num_segments}"
                + ("" if self.total_size_bytes is None else f", total_size_bytes={self.total_size_bytes}") + ")")


def describe(segments: list[IndexSegment], fragments: Iterable[FragmentInfo], field_paths: dict[int, str]) -> list[IndexDescription]:
    """Group segments by index name (sorted by name, as pylance lists them)."""
    rows = {f.id: f.count_rows() for f in fragments}
    by_name: dict[str, list[IndexSegment]] = {}
    for s in segments:
        by_name.setdefault(s.name, []).append(s)
    out = []
    for name in sorted(by_name):
        segs = by_name[name]
        first = segs[0]
        indexed = sum(rows.get(f, 0) for s in segs for f in s.fragment_ids)
        out.append(IndexDescription(
            name=name,
            type_url=first.type_url,
            index_type=first.index_type,
            num_rows_indexed=indexed,
            fields=list(first.fields),
            field_names=[field_paths.get(f, str(f)) for f in first.fields],
            segments=[IndexSegmentDescription(
                uuid=s.uuid, fragment_ids=set(s.fragment_ids),
                dataset_version_at_last_update=s.dataset_version, index_version=s.index_version,
                created_at=s.created_at, base_id=s.base_id, size_bytes=s.size_bytes) for s in segs],
            details={},
        ))
    return out


def list_indices(descriptions: list[IndexDescription]) -> list[dict[str, Any]]:
    """pylance's (deprecated) ``list_indices``: one dict per segment."""
    return [{"name": d.name, "type": d.index_type, "uuid": s.uuid, "fields": d.field_names,
             "version": s.dataset_version_at_last_update, "fragment_ids": s.fragment_ids,
             "base_id": s.base_id}
            for d in descriptions for s in d.segments]
