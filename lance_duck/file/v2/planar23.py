"""File format 2.3 pages: ``lance.encodings23.PlanarLayout`` translated to the 2.1/2.2 page layouts.

A 2.3 page describes its structure (rep/def levels) and its values in two separate "planes". The
parts pylance 14 writes that are byte-identical to 2.2 are read by translating the plane messages
into the ``encodings21`` layouts the 2.1/2.2 reader already decodes:

=====================================  ================================================
2.3 planes                              2.2 layout
=====================================  ================================================
dense structure + chunked values        ``MiniBlockLayout`` (``has_large_chunk``: u32 words)
dense structure + constant value        ``ConstantLayout`` (inline value, layers)
=====================================  ================================================

The value compressions (``CompressiveEncoding``) keep the 2.1 grammar; a compression using a
field 2.1 does not know (the 2.3 range / delta codecs, generic offsets, ...) is refused by name, as
are the sparse structure (null positions), zipped (full-zip) values and indexed values. No
``encodings23`` proto ships with lance_duck: the few plane messages are read from the wire format.
"""
from __future__ import annotations

from google.protobuf import unknown_fields

from ..._proto import encodings_v2_1_pb2 as pb
from ...errors import CorruptFileError, UnsupportedFeatureError

PLANAR_LAYOUT_URL = "lance.encodings23.PlanarLayout"

# field numbers of the plane messages, as pylance 14.0.2 writes them
_STRUCTURE_KINDS = {1: "dense structure", 2: "sparse structure (null positions)"}
_VALUE_KINDS = {1: "chunked values", 2: "zipped values (full-zip)", 3: "constant value"}
_CHUNKED = {1: "value_compression", 2: "levels", 3: "dictionary", 4: "num_dictionary_items",
            5: "num_buffers", 6: "num_items"}
_LEVELS = {1: "rep_compression", 2: "def_compression", 3: "repetition_index_depth"}


def _varint(b: bytes, i: int, what: str) -> tuple[int, int]:
    r = s = 0
    while True:
        if i >= len(b) or s > 63:
            raise CorruptFileError(f"{what}: truncated varint in the 2.3 page layout")
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def _fields(b: bytes, what: str) -> dict[int, bytes | int]:
    """field number -> last value (varint int or length-delimited bytes) of one message."""
    out: dict[int, bytes | int] = {}
    i = 0
    while i < len(b):
        key, i = _varint(b, i, what)
        num, wire = key >> 3, key & 7
        if wire == 0:
            out[num], i = _varint(b, i, what)
        elif wire == 2:
            n, i = _varint(b, i, what)
            if i + n > len(b):
                raise CorruptFileError(f"{what}: truncated field {num} in the 2.3 page layout")
            out[num] = bytes(b[i:i + n])
            i += n
        else:
            raise CorruptFileError(f"{what}: unexpected wire type {wire} in the 2.3 page layout")
    return out


def _only(fields: dict, known: dict, message: str, what: str) -> None:
    extra = sorted(set(fields) - set(known))
    if extra:
        raise UnsupportedFeatureError(
            f"{what}: 2.3 {message} field(s) {extra} are not supported (file format 2.3)")


def _bytes(v, field: str, what: str) -> bytes:
    if not isinstance(v, bytes):
        raise CorruptFileError(f"{what}: 2.3 {field} is not a message")
    return v


def _int(v, field: str, what: str) -> int:
    if not isinstance(v, int):
        raise CorruptFileError(f"{what}: 2.3 {field} is not an integer")
    return v


def _check_known(msg, path: str, what: str) -> None:
    """Refuse a compression carrying fields the 2.1 grammar does not know (new 2.3 codecs)."""
    if len(unknown_fields.UnknownFieldSet(msg)):
        nums = sorted({f.field_number for f in unknown_fields.UnknownFieldSet(msg)})
        raise UnsupportedFeatureError(
            f"{what}: 2.3 compression {path}.{msg.DESCRIPTOR.name} uses field(s) {nums} "
            "(a 2.3 codec such as range / delta / generic offsets) that is not supported")
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        items = value if fd.label == fd.LABEL_REPEATED else [value]
        for v in items:
            _check_known(v, f"{path}.{fd.name}", what)


def _compression(b: bytes, field: str, what: str) -> pb.CompressiveEncoding:
    enc = pb.CompressiveEncoding()
    try:
        enc.ParseFromString(b)
    except Exception as exc:
        raise CorruptFileError(f"{what}: 2.3 {field} is corrupt: {exc}") from exc
    _check_known(enc, field, what)
    return enc


def _layers(structure: dict, what: str) -> list[int]:
    _only(structure, _STRUCTURE_KINDS, "structural plane", what)
    if 2 in structure or 1 not in structure:
        kind = _STRUCTURE_KINDS.get(2) if 2 in structure else "missing structure"
        raise UnsupportedFeatureError(f"{what}: 2.3 {kind} is not supported (file format 2.3)")
    dense = _fields(_bytes(structure[1], "dense structure", what), what)
    _only(dense, {1: "layers"}, "dense structure", what)
    raw = dense.get(1, b"")
    if isinstance(raw, int):
        return [raw]
    layers, i = [], 0
    while i < len(raw):
        v, i = _varint(raw, i, what)
        layers.append(v)
    return layers


def planar_to_page_layout(value: bytes, what: str) -> pb.PageLayout:
    """The 2.1/2.2 ``PageLayout`` equivalent to a 2.3 ``PlanarLayout`` message, or refuse by name."""
    top = _fields(value, what)
    _only(top, {1: "structure", 2: "values"}, "PlanarLayout", what)
    if 1 not in top or 2 not in top:
        raise CorruptFileError(f"{what}: 2.3 page layout lacks its structure or values plane")
    layers = _layers(_fields(_bytes(top[1], "structure", what), what), what)
    plane = _fields(_bytes(top[2], "values", what), what)
    if len(plane) != 1:
        raise CorruptFileError(f"{what}: 2.3 value plane has {len(plane)} kinds set")
    kind, body = next(iter(plane.items()))
    if kind not in (1, 3):
        name = _VALUE_KINDS.get(kind, f"value plane kind {kind}")
        raise UnsupportedFeatureError(f"{what}: 2.3 {name} is not supported (file format 2.3)")
    msg = _fields(_bytes(body, _VALUE_KINDS[kind], what), what)
    out = pb.PageLayout()
    if kind == 3:
        _only(msg, {1: "scalar"}, "constant value", what)
        out.constant_layout.layers.extend(layers)
        if 1 in msg:
            out.constant_layout.inline_value = _bytes(msg[1], "constant scalar", what)
        return out
    _only(msg, _CHUNKED, "chunked values", what)
    mb = out.mini_block_layout
    mb.layers.extend(layers)
    mb.has_large_chunk = True
    if 1 in msg:
        mb.value_compression.CopyFrom(_compression(_bytes(msg[1], "value_compression", what),
                                                   "value_compression", what))
    if 3 in msg:
        mb.dictionary.CopyFrom(_compression(_bytes(msg[3], "dictionary", what), "dictionary", what))
    mb.num_dictionary_items = _int(msg.get(4, 0), "num_dictionary_items", what)
    mb.num_buffers = _int(msg.get(5, 0), "num_buffers", what)
    mb.num_items = _int(msg.get(6, 0), "num_items", what)
    levels = _fields(_bytes(msg.get(2, b""), "levels", what), what)
    _only(levels, _LEVELS, "chunked levels", what)
    if 1 in levels:
        mb.rep_compression.CopyFrom(_compression(_bytes(levels[1], "rep_compression", what),
                                                 "rep_compression", what))
    if 2 in levels:
        mb.def_compression.CopyFrom(_compression(_bytes(levels[2], "def_compression", what),
                                                 "def_compression", what))
    mb.repetition_index_depth = _int(levels.get(3, 0), "repetition_index_depth", what)
    return out
