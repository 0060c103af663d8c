"""The Arrow types blob columns are read as (their descriptions) and the field metadata pylance puts
on them; kept apart from the 2.1 readers so that the table layer names them without loading those."""
from __future__ import annotations

import pyarrow as pa

from ..schema import LanceField

# blob v1: the position and size of each value in the file
DESCRIPTION = pa.struct([pa.field("position", pa.uint64()), pa.field("size", pa.uint64())])
# blob v2 (2.2): one packed column of descriptors, returned by pylance as this struct
DESCRIPTION_V2 = pa.struct([pa.field("kind", pa.uint8(), False), pa.field("position", pa.uint64(), False),
                            pa.field("size", pa.uint64(), False), pa.field("blob_id", pa.uint32(), False),
                            pa.field("blob_uri", pa.string(), False)])
# field metadata pylance puts on blob descriptions (top-level columns and struct children)
BLOB_METADATA = {DESCRIPTION: {"lance-encoding:blob": "true"},
                 DESCRIPTION_V2: {"lance-encoding:blob": "true", "lance-encoding:packed": "true"}}


def is_blob_v2(f: LanceField) -> bool:
    """Whether ``f`` is a blob v2 column (``lance.blob.v2`` extension)."""
    return f.extension_name == "lance.blob.v2" or f.metadata.get("ARROW:extension:name") == "lance.blob.v2"
