"""Dictionary values of legacy (0.1/0.2) dictionary fields, stored inside the ``.manifest`` file.

``Field.dictionary {offset, length}`` points into the manifest file's bytes:

* string / binary values: ``length + 1`` little-endian i64 *absolute* positions at ``offset``;
  value i is ``manifest[pos[i]:pos[i + 1]]``; zero-length values read back as null (as pylance);
* fixed-width values (integers): ``length`` raw little-endian values at ``offset``.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...errors import CorruptFileError, UnsupportedFeatureError
from ...schema import LanceField
from ..base import checked_utf8
from ..v2_0.page import bit_width, fixed_array


def _is_binary_like(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                or pa.types.is_large_binary(t))


def load_dictionary_values(manifest_bytes: bytes, field: LanceField) -> pa.Array:
    """The dictionary values of a legacy dictionary field (as pylance loads them)."""
    t = field.arrow_type
    if not pa.types.is_dictionary(t):
        raise CorruptFileError(f"field {field.name!r} has dictionary bytes but type {t}")
    vt = t.value_type
    off, n = int(field.dictionary_offset), int(field.dictionary_length)
    size = len(manifest_bytes)
    buf = np.frombuffer(manifest_bytes, dtype=np.uint8)
    if off < 0 or n < 0:
        raise CorruptFileError(f"field {field.name!r}: negative dictionary offset/length")
    if _is_binary_like(vt):
        need = off + 8 * (n + 1)
        if need > size:
            raise CorruptFileError(f"field {field.name!r}: dictionary positions [{off}, {need}) are outside "
                                   f"the {size}-byte manifest")
        pos = buf[off:need].copy().view("<i8")
        if n and (pos[0] < 0 or pos[-1] > size or np.any(pos[1:] < pos[:-1])):
            raise CorruptFileError(f"field {field.name!r}: dictionary value positions are corrupt")
        base = int(pos[0]) if n else 0
        lengths = np.diff(pos)
        odt = np.int64 if (pa.types.is_large_string(vt) or pa.types.is_large_binary(vt)) else np.int32
        offsets = (pos - base).astype(odt)
        valid = lengths > 0
        vbuf = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
        data = pa.py_buffer(bytes(manifest_bytes[base:int(pos[-1])] if n else b""))
        arr = pa.Array.from_buffers(vt, n, [vbuf, pa.py_buffer(offsets), data])
        return checked_utf8(arr, f"field {field.name!r} dictionary") if _is_string(vt) else arr
    w = bit_width(vt)
    if w is None or w % 8:
        raise UnsupportedFeatureError(f"field {field.name!r}: legacy dictionary values of type {vt}")
    end = off + n * w // 8
    if end > size:
        raise CorruptFileError(f"field {field.name!r}: dictionary values [{off}, {end}) are outside "
                               f"the {size}-byte manifest")
    return fixed_array(vt, n, bytes(manifest_bytes[off:end]), f"field {field.name!r} dictionary")


def _is_string(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))
