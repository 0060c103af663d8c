"""Long histories: ``versions()`` and ``asof`` without decoding every manifest in full.

``versions()`` needs each version's timestamp and a summary of its fragments. Consecutive
manifests mostly repeat the previous one's fragments byte for byte (an append adds one entry,
a delete rewrites one), so each manifest is compared with the previous one: the summary of the
identical leading entries is carried over and only the entries after the first differing byte
are decoded. Manifests are fetched concurrently, a bounded window ahead.

``asof`` follows pylance: the largest version whose timestamp is strictly before the cutoff,
over *all* versions (timestamps need not grow with versions when writers' clocks skew, so no
binary search can be exact). Versions are visited newest first and only the tail of each
manifest is fetched: the protobuf fields after the fragments (version, timestamp, ...).
"""
from __future__ import annotations

import struct
from datetime import datetime
from typing import Iterable, Iterator, Protocol, Sequence, TypedDict, cast

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2
from google.protobuf.message import DecodeError, Message

from .._proto import table_pb2
from ..errors import CorruptFileError, VersionNotFoundError
from ..io.fs import FileIO
from .manifest import FOOTER_LEN, MAGIC, ManifestFile, read_manifest
from .versions import (VERSIONS_DIR, VersionEntry, before_cutoff, list_versions, manifest_timestamp_ns,
                       pylance_local_timestamp)

# Bytes fetched from the end of a manifest for ``asof`` (the fields after the fragments are ~100 bytes).
TAIL_WINDOW = 8192
# Manifests fetched ahead of the one being decoded.
READ_AHEAD = 32

_SUMMARY_KEYS = ("total_data_file_rows", "total_data_files", "total_deletion_file_rows",
                 "total_deletion_files", "total_files_size", "total_fragments", "total_rows")


class ManifestTailView(Protocol):
    """What :data:`ManifestTail` (a message class built at import) holds: the leading repeated
    fields kept as raw bytes (empty when the window starts after them), version, timestamp."""

    fields: Sequence[bytes]
    fragments: Sequence[bytes]
    version: int
    timestamp: timestamp_pb2.Timestamp

    def HasField(self, name: str) -> bool: ...  # noqa: N802 - protobuf's name


def _tail_class() -> type[Message]:
    """A Manifest view that keeps only version and timestamp (fields 1/2 kept as raw bytes)."""
    fdp = descriptor_pb2.FileDescriptorProto(name="lance_duck/manifest_tail.proto", package="lance_duck.lite",
                                             syntax="proto3",
                                             dependency=["google/protobuf/timestamp.proto"])
    msg = fdp.message_type.add(name="ManifestTail")
    F = descriptor_pb2.FieldDescriptorProto
    msg.field.add(name="fields", number=1, type=F.TYPE_BYTES, label=F.LABEL_REPEATED)
    msg.field.add(name="fragments", number=2, type=F.TYPE_BYTES, label=F.LABEL_REPEATED)
    msg.field.add(name="version", number=3, type=F.TYPE_UINT64, label=F.LABEL_OPTIONAL)
    msg.field.add(name="timestamp", number=7, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                  type_name=".google.protobuf.Timestamp")
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("lance_duck.lite.ManifestTail"))


ManifestTail = _tail_class()


# -- protobuf wire walking -------------------------------------------------------------------
def _varint(buf: bytes | memoryview, p: int, end: int) -> tuple[int, int]:
    """(value, next position) of the varint at ``p``; ValueError when it runs past ``end``."""
    value = shift = 0
    while True:
        if p >= end or shift > 63:
            raise ValueError("truncated varint")
        b = buf[p]
        p += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, p
        shift += 7


def _skip(buf: bytes | memoryview, p: int, wt: int, end: int) -> int:
    """Position after a field value of wire type ``wt`` starting at ``p``."""
    if wt == 0:
        return _varint(buf, p, end)[1]
    if wt == 2:
        n, p = _varint(buf, p, end)
        p += n
    elif wt == 1:
        p += 8
    elif wt == 5:
        p += 4
    else:
        raise ValueError(f"wire type {wt}")
    if p > end:
        raise ValueError("field runs past the end")
    return p


def _frame(raw: bytes, path: str) -> tuple[int, int]:
    """(start, end) of the Manifest protobuf inside a manifest file's bytes (framing checked)."""
    size = len(raw)
    if size < FOOTER_LEN + 4 or raw[-4:] != MAGIC:
        raise CorruptFileError(f"{path}: not a Lance manifest (truncated, or no LANC magic at the end)")
    (pos,) = struct.unpack_from("<q", raw, size - FOOTER_LEN)
    end = size - FOOTER_LEN
    if pos < 0 or pos + 4 > end:
        raise CorruptFileError(f"{path}: manifest position {pos} is outside the file ({size} bytes)")
    (length,) = struct.unpack_from("<I", raw, pos)
    if pos + 4 + length != end:
        raise CorruptFileError(f"{path}: manifest length {length} at position {pos} does not match the "
                               f"file size {size}")
    return pos + 4, end


def _parse_tail(data: bytes | memoryview, path: str) -> ManifestTailView:
    try:
        return cast(ManifestTailView, ManifestTail.FromString(bytes(data)))
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise CorruptFileError(f"{path}: manifest protobuf is corrupt ({exc})") from exc


# -- versions() ------------------------------------------------------------------------------
def fragment_counts(f: table_pb2.DataFragment) -> tuple[int, int, int, int, int, int]:
    """(data files, bytes, deletion files, deleted rows, live rows, 1) of one fragment, as pylance sums them."""
    has_del = f.HasField("deletion_file")
    n_del = f.deletion_file.num_deleted_rows if has_del else 0
    rows = f.physical_rows - n_del if f.physical_rows and (not has_del or n_del) else 0
    return (len(f.files), sum(df.file_size_bytes for df in f.files), int(has_del), n_del, rows, 1)


def summary_dict(counts: Iterable[int | np.integer]) -> dict[str, str]:
    """pylance's ``metadata`` of a version from summed :func:`fragment_counts`."""
    files, size, del_files, del_rows, rows, frags = (int(c) for c in counts)
    return dict(zip(_SUMMARY_KEYS, (str(rows + del_rows), str(files), str(del_rows), str(del_files),
                                    str(size), str(frags), str(rows))))


def manifest_summary(m: table_pb2.Manifest) -> dict[str, str]:
    """The ``metadata`` pylance's ``versions()`` reports for a decoded manifest."""
    total = np.zeros(6, np.int64)
    for f in m.fragments:
        total += fragment_counts(f)
    return summary_dict(total)


class _Incremental:
    """Summaries of consecutive manifests, reusing the previous one's identical leading entries."""

    def __init__(self) -> None:
        self.body = np.zeros(0, np.uint8)
        self.ends = np.zeros(0, np.int64)          # end offsets of the leading field-1/2 entries
        self.cum = np.zeros((0, 6), np.int64)      # fragment counts summed up to each end

    def summarise(self, raw: bytes, path: str) -> tuple[int, int, dict[str, str]]:
        """(version, timestamp ns, metadata) of one manifest file's bytes."""
        start, end = _frame(raw, path)
        body = np.frombuffer(raw, np.uint8, end - start, start)
        n = min(len(body), len(self.body))
        diff = np.flatnonzero(body[:n] != self.body[:n])
        same = int(diff[0]) if len(diff) else n
        j = int(np.searchsorted(self.ends, same, "right"))
        p = int(self.ends[j - 1]) if j else 0
        acc = self.cum[j - 1].copy() if j else np.zeros(6, np.int64)
        new_ends: list[int] = []
        new_cum: list[np.ndarray] = []
        mv = memoryview(raw)[start:end]
        size = len(mv)
        try:
            while p < size:
                tag, q = _varint(mv, p, size)
                field, wt = tag >> 3, tag & 7
                if field not in (1, 2) or wt != 2:
                    break
                ln, q = _varint(mv, q, size)
                e = q + ln
                if e > size:
                    raise ValueError("field runs past the end")
                if field == 2:
                    acc += np.array(fragment_counts(table_pb2.DataFragment.FromString(bytes(mv[q:e]))), np.int64)
                new_ends.append(e)
                new_cum.append(acc.copy())
                p = e
        except (ValueError, DecodeError, RuntimeError) as exc:
            raise CorruptFileError(f"{path}: manifest protobuf is corrupt ({exc})") from exc
        tail = _parse_tail(mv[p:], path)
        if len(tail.fields) or len(tail.fragments):
            # Entries out of the usual order: decode the whole manifest.
            m = table_pb2.Manifest.FromString(bytes(mv))
            self.body = np.zeros(0, np.uint8)
            self.ends, self.cum = np.zeros(0, np.int64), np.zeros((0, 6), np.int64)
            return m.version, manifest_timestamp_ns(m), manifest_summary(m)
        self.body = body
        if new_ends:
            self.ends = np.concatenate([self.ends[:j], np.asarray(new_ends, np.int64)])
            self.cum = np.concatenate([self.cum[:j], np.asarray(new_cum, np.int64).reshape(-1, 6)])
        else:
            self.ends, self.cum = self.ends[:j], self.cum[:j]
        return tail.version, manifest_timestamp_ns(tail), summary_dict(acc)


class VersionInfo(TypedDict):
    """One entry of ``versions()``, as pylance's ``lance.dataset.Version``: the number, the commit
    time (pylance's naive local time) and the table's totals then (``total_rows``, ...)."""

    version: int
    timestamp: datetime
    metadata: dict[str, str]


def list_version_infos(io: FileIO, dataset_dir: str) -> list[VersionInfo]:
    """Every version of a dataset directory, like pylance's ``ds.versions()`` (oldest first).

    A manifest removed while they are read (a cleanup of old versions) makes the listing start again.
    """
    for attempt in range(LIST_ATTEMPTS):
        try:
            return _version_infos(io, dataset_dir)
        except FileNotFoundError:
            if attempt == LIST_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


# Listings of _versions/ tried when manifests keep vanishing while they are read.
LIST_ATTEMPTS = 5


def _version_infos(io: FileIO, dataset_dir: str) -> list[VersionInfo]:
    vdir = io.join(dataset_dir, VERSIONS_DIR)
    entries = list_versions(io, dataset_dir)
    paths = [io.join(vdir, e.name) for e in entries]
    inc = _Incremental()
    out: list[VersionInfo] = []
    # whole manifests, as ranges when the listing gave their sizes (an object store's client that
    # opens a file with a request -- io/arrow_s3.py -- then reuses the file it opened before)
    items = [(p, 0, e.size) if e.size else (p, None, None) for p, e in zip(paths, entries)]
    for path, raw in zip(paths, io.read_ranges_many(items, min(READ_AHEAD, io.max_in_flight))):
        version, ts_ns, meta = inc.summarise(raw, path)
        out.append({"version": version, "timestamp": pylance_local_timestamp(ts_ns), "metadata": meta})
    return out


# -- asof ------------------------------------------------------------------------------------
# Top-level Manifest fields after the fragments: number -> (wire type, repeatable).
_TAIL_FIELDS = {3: (0, False), 4: (0, False), 5: (2, True), 6: (0, False), 7: (2, False), 8: (2, False),
                9: (0, False), 10: (0, False), 11: (0, False), 12: (2, False), 13: (2, False), 14: (0, False),
                15: (2, False), 16: (2, True), 18: (2, True), 19: (2, True), 20: (2, False), 21: (0, False),
                23: (0, False)}


def _is_tail_start(buf: bytes, p: int) -> bool:
    """Whether ``buf[p:]`` parses as the Manifest's fields after the fragments, in writer order."""
    last, size = 2, len(buf)
    try:
        while p < size:
            tag, p = _varint(buf, p, size)
            field, wt = tag >> 3, tag & 7
            if field < last or (field == last and not _TAIL_FIELDS.get(field, (0, True))[1]):
                return False
            known = _TAIL_FIELDS.get(field)
            if (known is not None and known[0] != wt) or (known is None and field < 24):
                return False
            p = _skip(buf, p, wt, size)
            last = field
    except ValueError:
        return False
    return p == size and last >= 7


def tail_timestamp(window: bytes, file_size: int, version: int, path: str) -> int | None:
    """A version's timestamp (ns) from the last bytes of its manifest file, or None if they do not suffice.

    The fields after the fragments start with ``version`` (field 3); each place where the window
    holds that field with this file's version is tried, and the answer is used only when exactly
    one of them parses to the end as the Manifest's trailing fields (the true start always does).
    """
    if len(window) < FOOTER_LEN + 4 or window[-4:] != MAGIC:
        raise CorruptFileError(f"{path}: not a Lance manifest (truncated, or no LANC magic at the end)")
    (pos,) = struct.unpack_from("<q", window, len(window) - FOOTER_LEN)
    base = file_size - len(window)       # file offset of window[0]
    body_start, body_end = pos + 4 - base, len(window) - FOOTER_LEN
    if body_start >= 0:                   # the whole protobuf is in the window
        start, end = _frame(window, path) if base == 0 else (body_start, body_end)
        tail = _parse_tail(memoryview(window)[start:end], path)
        return manifest_timestamp_ns(tail)
    body = window[:body_end]
    key = b"\x18" + _encode_varint(version)
    starts, i = [], body.find(key)
    while i >= 0:
        if _is_tail_start(body, i):
            starts.append(i)
        i = body.find(key, i + 1)
    if len(starts) != 1:
        return None
    tail = _parse_tail(memoryview(body)[starts[0]:], path)
    if tail.version != version or len(tail.fields) or len(tail.fragments) or not tail.HasField("timestamp"):
        return None
    return manifest_timestamp_ns(tail)


def _encode_varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _newest_first_timestamps(io: FileIO, vdir: str, entries: list[VersionEntry]) -> Iterator[tuple[VersionEntry, int]]:
    """(entry, timestamp ns) newest first; tails fetched concurrently in growing batches."""
    order = list(reversed(entries))
    i, batch = 0, 1
    while i < len(order):
        chunk = order[i:i + batch]
        paths = [io.join(vdir, e.name) for e in chunk]
        ranges = [(p, max(0, e.size - TAIL_WINDOW), e.size) if e.size else (p, None, None)
                  for p, e in zip(paths, chunk)]
        for e, path, (_, s, _), window in zip(chunk, paths, ranges, io.read_ranges_many(ranges, READ_AHEAD)):
            ts = tail_timestamp(window, (s or 0) + len(window), e.version, path)
            if ts is None:                # a long tail: read the whole manifest
                raw = io.read_bytes(path)
                ts = tail_timestamp(raw, len(raw), e.version, path)
                if ts is None:
                    raise CorruptFileError(f"{path}: the manifest's metadata position is outside the file")
            yield e, ts
        i += len(chunk)
        batch = min(batch * 4, 256)


def resolve_asof(io: FileIO, vdir: str, entries: list[VersionEntry], cutoff: datetime, where: str = "") -> ManifestFile:
    """pylance's rule: the largest version whose timestamp is strictly before ``cutoff``.

    Every version newer than the answer is checked (only its manifest's tail is fetched), so the
    answer is pylance's even when timestamps are not monotonic; the answer's manifest is read in full.
    """
    for e, ts in _newest_first_timestamps(io, vdir, entries):
        if before_cutoff(ts, cutoff):
            mf = read_manifest(io, io.join(vdir, e.name))
            if mf.manifest.version != e.version:
                raise CorruptFileError(f"{mf.path}: file name says version {e.version}, "
                                       f"the manifest says {mf.manifest.version}")
            return mf
    raise VersionNotFoundError(f"no version{where} was committed before {cutoff.isoformat()}")


def version_timestamps(io: FileIO, dataset_dir: str) -> list[tuple[int, int]]:
    """(version, commit timestamp in UTC ns) of every version of a dataset directory, oldest
    first; only the tail of each manifest is fetched."""
    entries = list_versions(io, dataset_dir)
    vdir = io.join(dataset_dir, VERSIONS_DIR)
    return sorted((e.version, ts) for e, ts in _newest_first_timestamps(io, vdir, entries))
