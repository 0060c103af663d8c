"""File format 2.3 pages: ``lance.encodings23.PlanarLayout`` translated to the 2.1/2.2 page layouts.

A 2.3 page describes its structure (rep/def levels) and its values in two separate "planes". The
parts pylance 14 writes that are byte-identical to 2.2 are read by translating the plane messages
into the ``encodings21`` layouts the 2.1/2.2 reader already decodes:

=====================================  ================================================
2.3 planes                              2.2 layout
=====================================  ================================================
dense structure + chunked values        ``MiniBlockLayout`` (``has_large_chunk``: u32 words)
dense structure + constant value        ``ConstantLayout`` (inline value, layers)
sparse structure, no values             ``ConstantLayout`` (all null)
sparse structure (one validity layer)   ``SparseLayout`` -> ``layouts/sparse23.py``
dense structure + zipped values         ``FullZipLayout`` (control word widths as in 2.2)
sparse structure + zipped values        ``SparseLayout`` over a ``FullZipLayout``
=====================================  ================================================

The value compressions (``CompressiveEncoding``) keep the 2.1 grammar; a compression using a
field 2.1 does not know is refused by name, except range / delta string offsets
(``offsets23.py``). Sparse list / nested layers and indexed values are refused by name. No ``encodings23`` proto ships with lance_duck: the plane messages (field numbers
observed in pylance 14.0.2 output) are read from the wire format.
"""
from __future__ import annotations

from dataclasses import dataclass

from google.protobuf import unknown_fields

from ..._proto import encodings_v2_1_pb2 as pb
from ...errors import CorruptFileError, UnsupportedFeatureError

PLANAR_LAYOUT_URL = "lance.encodings23.PlanarLayout"

# field numbers of the plane messages, as pylance 14.0.2 writes them
_STRUCTURE_KINDS = {1: "dense structure", 2: "sparse structure (null positions)"}
_VALUE_KINDS = {1: "chunked values", 2: "zipped values (full-zip)", 3: "constant value", 4: "no values"}
_CHUNKED = {1: "value_compression", 2: "levels", 3: "dictionary", 4: "num_dictionary_items",
            5: "num_buffers", 6: "num_items"}
_LEVELS = {1: "rep_compression", 2: "def_compression", 3: "repetition_index_depth"}
_ZIPPED = {1: "value_compression", 2: "control_word", 3: "bits_per_value", 4: "bits_per_offset",
           5: "num_items", 6: "num_visible_items"}
_CONTROL_WORD = {1: "bits_rep", 2: "bits_def"}


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


def wire_fields(b: bytes, what: str) -> dict[int, bytes | int]:
    """field number -> last value (varint int or length-delimited bytes) of one message."""
    out: dict[int, bytes | int] = {}
    i = 0
    while i < len(b):
        key, i = _varint(b, i, what)
        num, wire = key >> 3, key & 7
        if num in out:  # e.g. one sparse layer per nesting level: not read yet
            raise UnsupportedFeatureError(
                f"{what}: 2.3 page layout repeats field {num} (nested sparse layers) which is not supported")
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
    nums = sorted({f.field_number for f in unknown_fields.UnknownFieldSet(msg)})
    if nums and not (path.endswith("variable.offsets") and nums in ([14], [15])):  # see offsets23
        raise UnsupportedFeatureError(
            f"{what}: 2.3 compression {path}.{msg.DESCRIPTOR.name} uses field(s) {nums} "
            "(a 2.3 codec such as range / delta / generic offsets) that is not supported")
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        items = value if _is_repeated(fd) else [value]
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


@dataclass
class SparseLayout:
    """A 2.3 page whose structure lists null (or valid) row positions; its values cover valid rows."""
    values: pb.PageLayout          # 2.2 layout of the valid rows' values (layers: all valid)
    null_positions: bool           # True: the positions are the null rows; False: the valid rows
    positions: pb.CompressiveEncoding | None   # None: no positions (num_positions == 0)
    delta: tuple[int, int] | None  # (bits, base) when the positions are delta-coded
    range: tuple[int, int] | None  # (start, step) when the positions are an arithmetic range
    num_positions: int


def _structure(structure: dict, what: str) -> tuple[list[int] | None, dict | None]:
    """(dense layers, None) or (None, sparse validity fields)."""
    _only(structure, _STRUCTURE_KINDS, "structural plane", what)
    if len(structure) != 1:
        raise CorruptFileError(f"{what}: 2.3 structural plane has {len(structure)} kinds set")
    if 2 in structure:
        sparse = wire_fields(_bytes(structure[2], "sparse structure", what), what)
        _only(sparse, {1: "layer"}, "sparse structure", what)
        layer = wire_fields(_bytes(sparse.get(1, b""), "sparse layer", what), what)
        if set(layer) != {1}:
            raise UnsupportedFeatureError(
                f"{what}: 2.3 sparse structure layer kind(s) {sorted(layer)} (lists / fixed-size lists / "
                "nested layers) are not supported (file format 2.3)")
        validity = wire_fields(_bytes(layer[1], "sparse validity", what), what)
        _only(validity, {1: "meaning", 2: "positions", 3: "num_positions"}, "sparse validity set", what)
        return None, validity
    dense = wire_fields(_bytes(structure[1], "dense structure", what), what)
    _only(dense, {1: "layers"}, "dense structure", what)
    raw = dense.get(1, b"")
    if isinstance(raw, int):
        return [raw], None
    layers, i = [], 0
    while i < len(raw):
        v, i = _varint(raw, i, what)
        layers.append(v)
    return layers, None


def _sparse(validity: dict, values: pb.PageLayout, num_values_of, what: str) -> SparseLayout:
    meaning = _int(validity.get(1, 0), "validity meaning", what)
    if meaning not in (1, 2):
        raise UnsupportedFeatureError(f"{what}: 2.3 sparse validity meaning {meaning} is not supported")
    n = _int(validity.get(3, 0), "num_positions", what)
    enc = wire_fields(_bytes(validity.get(2, b""), "positions", what), what)
    positions = delta = rng = None
    if n:
        if 14 in enc:   # Range: bits, start, step
            r = wire_fields(_bytes(enc[14], "range positions", what), what)
            _only(r, {1: "bits_per_value", 2: "start", 3: "step"}, "range codec", what)
            rng = (_int(r.get(2, 0), "range start", what), _int(r.get(3, 0), "range step", what))
            if rng[1] <= 0:
                raise CorruptFileError(f"{what}: 2.3 range positions with step {rng[1]}")
        elif 15 in enc:   # Delta: bits, base, deltas
            d = wire_fields(_bytes(enc[15], "delta positions", what), what)
            _only(d, {1: "bits_per_value", 2: "base", 3: "deltas"}, "delta codec", what)
            delta = (_int(d.get(1, 64), "delta bits", what), _int(d.get(2, 0), "delta base", what))
            positions = _compression(_bytes(d.get(3, b""), "deltas", what), "deltas", what)
        else:
            positions = _compression(_bytes(validity[2], "positions", what), "positions", what)
    sp = SparseLayout(values, meaning == 1, positions, delta, rng, n)
    num_values_of(sp)
    return sp


def planar_to_page_layout(value: bytes, what: str, rows: int) -> pb.PageLayout | SparseLayout:
    """The 2.1/2.2 ``PageLayout`` equivalent to a 2.3 ``PlanarLayout`` of ``rows`` rows (or a
    ``SparseLayout`` for a sparse structure), or refuse by name."""
    top = wire_fields(value, what)
    _only(top, {1: "structure", 2: "values"}, "PlanarLayout", what)
    if 1 not in top or 2 not in top:
        raise CorruptFileError(f"{what}: 2.3 page layout lacks its structure or values plane")
    layers, validity = _structure(wire_fields(_bytes(top[1], "structure", what), what), what)
    plane = wire_fields(_bytes(top[2], "values", what), what)
    if len(plane) != 1:
        raise CorruptFileError(f"{what}: 2.3 value plane has {len(plane)} kinds set")
    kind, body = next(iter(plane.items()))
    if validity is not None:
        n = _int(validity.get(3, 0), "num_positions", what)
        meaning = validity.get(1, 0)
        n_valid = rows - n if meaning == 1 else n
        if n_valid == 0 and kind == 4 and body == b"":   # every row null, no values
            out = pb.PageLayout()
            out.constant_layout.layers.append(pb.REPDEF_NULLABLE_ITEM)
            return out
        inner = _values(kind, body, [pb.REPDEF_ALL_VALID_ITEM], n_valid, what)
        if inner.HasField("mini_block_layout") and inner.mini_block_layout.HasField("dictionary"):
            inner.mini_block_layout.num_items = rows   # dictionary indices cover every row

        def check(sp: SparseLayout) -> None:
            if not 0 <= n_valid <= rows:
                raise CorruptFileError(f"{what}: {sp.num_positions} sparse positions for {rows} rows")
        return _sparse(validity, inner, check, what)
    return _values(kind, body, layers, None, what)


def _values(kind: int, body, layers: list[int], num_items: int | None, what: str) -> pb.PageLayout:
    if kind not in (1, 2, 3):
        name = _VALUE_KINDS.get(kind, f"value plane kind {kind}")
        raise UnsupportedFeatureError(f"{what}: 2.3 {name} is not supported (file format 2.3)")
    msg = wire_fields(_bytes(body, _VALUE_KINDS[kind], what), what)
    out = pb.PageLayout()
    if kind == 2:
        return _zipped(msg, layers, out, what)
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
    mb.num_items = _int(msg.get(6, num_items or 0), "num_items", what)
    levels = wire_fields(_bytes(msg.get(2, b""), "levels", what), what)
    _only(levels, _LEVELS, "chunked levels", what)
    if 1 in levels:
        mb.rep_compression.CopyFrom(_compression(_bytes(levels[1], "rep_compression", what),
                                                 "rep_compression", what))
    if 2 in levels:
        mb.def_compression.CopyFrom(_compression(_bytes(levels[2], "def_compression", what),
                                                 "def_compression", what))
    mb.repetition_index_depth = _int(levels.get(3, 0), "repetition_index_depth", what)
    return out


def _zipped(msg: dict, layers: list[int], out: pb.PageLayout, what: str) -> pb.PageLayout:
    """Zipped values: the 2.2 ``FullZipLayout`` (control word widths, value / offset width, counts)."""
    _only(msg, _ZIPPED, "zipped values", what)
    fz = out.full_zip_layout
    fz.layers.extend(layers)
    cw = wire_fields(_bytes(msg.get(2, b""), "control word", what), what)
    _only(cw, _CONTROL_WORD, "zipped control word", what)
    fz.bits_rep = _int(cw.get(1, 0), "bits_rep", what)
    fz.bits_def = _int(cw.get(2, 0), "bits_def", what)
    if 3 in msg and 4 not in msg:
        fz.bits_per_value = _int(msg[3], "bits_per_value", what)
    elif 4 in msg and 3 not in msg:
        fz.bits_per_offset = _int(msg[4], "bits_per_offset", what)
    else:
        raise CorruptFileError(f"{what}: 2.3 zipped values need exactly one of a value width or an offset width")
    fz.num_items = _int(msg.get(5, 0), "num_items", what)
    fz.num_visible_items = _int(msg.get(6, 0), "num_visible_items", what)
    if 1 in msg:
        fz.value_compression.CopyFrom(_compression(_bytes(msg[1], "value_compression", what),
                                                   "value_compression", what))
    return out


def _is_repeated(fd) -> bool:
    """Whether a protobuf field is repeated (``is_repeated`` on protobuf >= 6; ``label`` before)."""
    flag = getattr(fd, "is_repeated", None)
    return bool(flag) if flag is not None else fd.label == fd.LABEL_REPEATED
