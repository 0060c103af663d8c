"""pylance's file inventories of a table: ``all_files()`` (what is stored under the table root) and
``tracked_files()`` (what each version's manifest refers to), as Arrow record batch readers with
pylance's schemas and labels."""
from __future__ import annotations

import os
import posixpath
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa

from ..errors import InvalidArgumentError

#: pylance's ``all_files()`` schema
ALL_FILES_SCHEMA = pa.schema([
    pa.field("base_uri", pa.dictionary(pa.int32(), pa.string()), nullable=False),
    pa.field("path", pa.string(), nullable=False),
    pa.field("size_bytes", pa.int64(), nullable=False),
    pa.field("last_modified", pa.timestamp("us", tz="UTC"), nullable=False),
])

#: pylance's ``tracked_files()`` schema
TRACKED_FILES_SCHEMA = pa.schema([
    pa.field("version", pa.int64(), nullable=False),
    pa.field("base_uri", pa.dictionary(pa.int32(), pa.string()), nullable=False),
    pa.field("path", pa.string(), nullable=False),
    pa.field("type", pa.dictionary(pa.int8(), pa.string()), nullable=False),
])

#: pylance's labels for the ``type`` column of ``tracked_files()``
FILE_TYPES = ("manifest", "data file", "deletion file", "transaction file", "index file")


def _mtime_us(info: dict[str, Any]) -> int:
    """Microseconds since the epoch of an fsspec ``info`` entry's modification time (0: unknown)."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        v = info.get(key)
        if v is None:
            continue
        if isinstance(v, datetime):
            v = (v if v.tzinfo else v.replace(tzinfo=timezone.utc)).timestamp()
        elif isinstance(v, str):
            v = datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
        return int(round(float(v) * 1_000_000))
    return 0


def all_files(snapshot: Any, base_uri: str) -> pa.RecordBatchReader:
    """Every file stored under the table root (recursively), with pylance's ``all_files()`` columns.

    Args:
        snapshot: any version of the table (the listing does not depend on it).
        base_uri: the value of the ``base_uri`` column (the table's URI as given).

    Returns:
        A reader of ``base_uri, path, size_bytes, last_modified`` rows, paths relative to the root.
    """
    root = snapshot.root.rstrip("/") or "/"
    paths, sizes, stamps = [], [], []
    if snapshot.io.is_local:    # nanosecond times (fsspec's are floats), truncated to microseconds as pylance
        for top, _dirs, names in os.walk(root):
            for name in names:
                try:
                    st = os.stat(os.path.join(top, name))
                except FileNotFoundError:   # removed since the directory was read
                    continue
                paths.append(os.path.relpath(os.path.join(top, name), root).replace(os.sep, "/"))
                sizes.append(st.st_size)
                stamps.append(st.st_mtime_ns // 1000)
    else:
        found = snapshot.io.call(lambda: snapshot.io.fs.find(root, detail=True), root)
        for name, info in found.items():
            if info.get("type") == "directory":
                continue
            paths.append(posixpath.relpath(name, root))
            sizes.append(int(info.get("size") or 0))
            stamps.append(_mtime_us(info))
    return _reader(ALL_FILES_SCHEMA, [_dict([base_uri] * len(paths), pa.int32()), pa.array(paths, pa.string()),
                                      pa.array(sizes, pa.int64()), pa.array(stamps, pa.timestamp("us", tz="UTC"))])


def tracked_files(snapshot: Any, base_uri: str, min_version: int | None = None,
                  progress: Callable[[int, int | None], Any] | None = None) -> pa.RecordBatchReader:
    """The files each version's manifest refers to, with pylance's ``tracked_files()`` columns.

    Args:
        snapshot: any version of the table's branch (every version of it is read).
        base_uri: the ``base_uri`` of files in the table's own directory (the table's URI as given).
        min_version: only versions at least this one.
        progress: called after each manifest with ``(manifests_processed, manifests_total)``.

    Returns:
        A reader of ``version, base_uri, path, type`` rows: per version its manifest, transaction
        file, data files, deletion files and index files. Order: newest version first (pylance
        documents its order as non-deterministic).
    """
    from ..index import index_segments
    from ..table.deletions import deletion_file_name
    from ..table.transactions import TRANSACTIONS_DIR
    from ..table.versions import VERSIONS_DIR, list_versions
    if min_version is not None and (not isinstance(min_version, int) or isinstance(min_version, bool)):
        raise InvalidArgumentError(f"tracked_files: min_version must be an integer, got {min_version!r}")
    entries = [e for e in list_versions(snapshot.io, snapshot.dataset_dir)
               if min_version is None or e.version >= min_version]
    entries.sort(key=lambda e: -e.version)
    rows: list[tuple[int, str, str, str]] = []
    index_rows: list[tuple[int, str, str, str]] = []
    for done, entry in enumerate(entries, 1):
        snap = snapshot if entry.version == snapshot.version else snapshot.checkout(entry.version)
        m = snap.manifest
        bases = {bp.id: bp.path for bp in m.base_paths}

        def base(base_id: int | None) -> str:
            return base_uri if base_id is None else bases.get(base_id, base_uri)

        v = entry.version
        rows.append((v, base_uri, f"{VERSIONS_DIR}/{entry.name}", "manifest"))
        if m.transaction_file:
            rows.append((v, base_uri, f"{TRANSACTIONS_DIR}/{m.transaction_file}", "transaction file"))
        for frag in m.fragments:
            for f in frag.files:
                rows.append((v, base(f.base_id if f.HasField("base_id") else None), f"data/{f.path}", "data file"))
        for frag in m.fragments:
            if frag.HasField("deletion_file"):
                d = frag.deletion_file
                rows.append((v, base(d.base_id if d.HasField("base_id") else None),
                             deletion_file_name(frag.id, d.read_version, d.id, d.file_type), "deletion file"))
        for seg in index_segments(snap):
            for name, _size in seg.files:
                index_rows.append((v, base(seg.base_id), f"_indices/{seg.uuid}/{name}", "index file"))
        if progress is not None:
            progress(done, len(entries))
    rows += index_rows
    cols = list(zip(*rows)) if rows else [(), (), (), ()]
    return _reader(TRACKED_FILES_SCHEMA, [pa.array(cols[0], pa.int64()), _dict(cols[1], pa.int32()),
                                          pa.array(cols[2], pa.string()), _dict(cols[3], pa.int8())])


def _dict(values: Any, index_type: pa.DataType) -> pa.Array:
    return pa.array(list(values), pa.string()).dictionary_encode().cast(pa.dictionary(index_type, pa.string()))


def _reader(schema: pa.Schema, columns: list[pa.Array]) -> pa.RecordBatchReader:
    batch = pa.RecordBatch.from_arrays(columns, schema=schema)
    return pa.RecordBatchReader.from_batches(schema, [batch])
