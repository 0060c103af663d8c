"""Blob columns as scans return them: descriptions of where the bytes are, not the bytes.

pylance's ``ds.schema`` reports a blob column with its declared type (``large_binary`` with
``lance-encoding:blob`` metadata, or the ``lance.blob.v2`` extension), but ``to_table`` / ``take``
return its descriptions:

- blob v1 (files 2.0 / 2.1): ``struct<position: uint64, size: uint64>``;
- blob v2 (files 2.2 and later; pylance turns v1 columns into v2 when writing them): the packed
  ``struct<kind, position, size, blob_id, blob_uri>``, where ``kind`` says where the bytes are
  (0 inline in the data file, 1 packed sidecar, 2 dedicated sidecar, 3 external URI, 4 managed).

Either way the field keeps its name and nullability, and its metadata becomes exactly pylance's
markers (other field metadata is dropped, as pylance drops it).
"""
from __future__ import annotations

import pyarrow as pa

from ..file.blob_types import BLOB_METADATA, DESCRIPTION, DESCRIPTION_V2
from ..file.blob_types import is_blob_v2 as is_blob_v2  # re-exported: scan/ asks table/, not file/
from ..schema import LanceField, LanceSchema


def blob_read_field(f: LanceField, declared: pa.Field) -> pa.Field | None:
    """The Arrow field scans return for ``f`` when it is or holds (in structs) a blob column
    (None: no blob inside); ``declared`` is its field in the dataset schema."""
    if is_blob_v2(f) or f.is_blob:
        t = DESCRIPTION_V2 if is_blob_v2(f) else DESCRIPTION
        return pa.field(f.name, t, nullable=f.nullable, metadata=BLOB_METADATA[t])
    if not f.is_struct:
        return None
    kids = [blob_read_field(c, declared.type.field(i)) for i, c in enumerate(f.children)]
    if all(k is None for k in kids):
        return None
    kids = [k if k is not None else declared.type.field(i) for i, k in enumerate(kids)]
    return pa.field(f.name, pa.struct(kids), nullable=f.nullable, metadata=declared.metadata)


def read_schema(schema: LanceSchema, arrow_schema: pa.Schema) -> pa.Schema:
    """``arrow_schema`` with each blob column as its descriptions (pylance's to_table schema)."""
    fields = list(arrow_schema)
    changed = False
    for i, f in enumerate(schema.fields):
        read = blob_read_field(f, fields[i])
        if read is not None:
            fields[i] = read
            changed = True
    return pa.schema(fields, metadata=arrow_schema.metadata) if changed else arrow_schema
