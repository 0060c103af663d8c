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

from ..file.v2_1.assemble import DESCRIPTION_V2, _is_blob_v2 as is_blob_v2
from ..file.v2_1.layouts.blob import DESCRIPTION
from ..schema import LanceField, LanceSchema

_V1_METADATA = {"lance-encoding:blob": "true"}
_V2_METADATA = {"lance-encoding:blob": "true", "lance-encoding:packed": "true"}


def blob_read_field(f: LanceField) -> pa.Field | None:
    """The Arrow field scans return for a top-level blob column (None: not a blob column)."""
    if is_blob_v2(f):
        return pa.field(f.name, DESCRIPTION_V2, nullable=f.nullable, metadata=_V2_METADATA)
    if f.is_blob:
        return pa.field(f.name, DESCRIPTION, nullable=f.nullable, metadata=_V1_METADATA)
    return None


def read_schema(schema: LanceSchema, arrow_schema: pa.Schema) -> pa.Schema:
    """``arrow_schema`` with each top-level blob column as its descriptions (pylance's to_table schema)."""
    fields = list(arrow_schema)
    changed = False
    for i, f in enumerate(schema.fields):
        read = blob_read_field(f)
        if read is not None:
            fields[i] = read
            changed = True
    return pa.schema(fields, metadata=arrow_schema.metadata) if changed else arrow_schema
