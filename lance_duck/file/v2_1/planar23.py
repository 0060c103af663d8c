"""File format 2.3 pages: ``lance.encodings23.PlanarLayout`` translated to the 2.1/2.2 page layouts.

A 2.3 page describes its structure (rep/def levels) and its values in two separate "planes". The
parts pylance 14 writes that are byte-identical to 2.2 are read by translating the plane messages
into the ``encodings21`` layouts the 2.1/2.2 reader already decodes:

=====================================  ================================================
2.3 planes                              2.2 layout
=====================================  ================================================
dense structure + chunked values        ``MiniBlockLayout`` (``has_large_chunk``: u32 words)
dense structure + constant value        ``ConstantLayout`` (inline value, layers)
dense structure + zipped values         ``FullZipLayout`` (control word widths as in 2.2)
sparse structure, one layer, no values  ``ConstantLayout`` (all null)
sparse structure                        ``SparseLayout`` -> ``layouts/sparse23.py``
indexed zipped values                   ``IndexedLayout`` -> ``layouts/indexed23.py``
=====================================  ================================================

A sparse structure lists, per layer (outermost first), the positions of its null or valid slots
and, for a list layer, of its non-empty lists and their lengths (``IntCodec``: constant, range,
delta, dictionary-of-range or a 2.1 compression); a fixed-size-list layer (of structs) gives its
dimension and validity, each of its slots has that many children. The values cover the valid
leaf slots (every leaf slot under a list, or with dictionary indices). The value compressions (``CompressiveEncoding``)
keep the 2.1 grammar; a compression using a field 2.1 does not know is refused by name, except
range / delta / run-length-range string offsets (``compression/offsets23.py``). No ``encodings23`` proto ships
with lance_duck: the plane messages (field numbers observed in pylance 14.0.2 output) are read from
the wire format.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence, Union, cast

from google.protobuf import unknown_fields
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from ..._proto import encodings_v2_1_pb2 as pb
from ...errors import CorruptFileError, UnsupportedFeatureError

PLANAR_LAYOUT_URL = "lance.encodings23.PlanarLayout"

# field numbers of the plane messages, as pylance 14.0.2 writes them
_STRUCTURE_KINDS = {1: "dense structure", 2: "sparse structure (null positions)"}
_VALUE_KINDS = {1: "chunked values", 2: "zipped values (full-zip)", 3: "constant value", 4: "no values",
                5: "indexed zipped values"}
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


WireValue = Union[bytes, int, list[Union[bytes, int]]]


def wire_fields(b: bytes, what: str, repeated: tuple[int, ...] = ()) -> dict[int, WireValue]:
    """field number -> value (varint int or length-delimited bytes) of one message; the fields in
    ``repeated`` map to the list of their values, any other field may occur once."""
    lists: dict[int, list[bytes | int]] = {num: [] for num in repeated}
    out: dict[int, WireValue] = dict(lists)
    i = 0
    while i < len(b):
        key, i = _varint(b, i, what)
        num, wire = key >> 3, key & 7
        v: bytes | int
        if num in out and num not in repeated:
            raise CorruptFileError(f"{what}: 2.3 page layout repeats field {num}")
        if wire == 0:
            v, i = _varint(b, i, what)
        elif wire == 2:
            n, i = _varint(b, i, what)
            if i + n > len(b):
                raise CorruptFileError(f"{what}: truncated field {num} in the 2.3 page layout")
            v = bytes(b[i:i + n])
            i += n
        else:
            raise CorruptFileError(f"{what}: unexpected wire type {wire} in the 2.3 page layout")
        if num in repeated:
            lists[num].append(v)
        else:
            out[num] = v
    return out


def _only(fields: dict[int, WireValue], known: dict[int, str], message: str, what: str) -> None:
    extra = sorted(set(fields) - set(known))
    if extra:
        raise UnsupportedFeatureError(
            f"{what}: 2.3 {message} field(s) {extra} are not supported (file format 2.3)")


def _bytes(v: WireValue | None, field: str, what: str) -> bytes:
    if not isinstance(v, bytes):
        raise CorruptFileError(f"{what}: 2.3 {field} is not a message")
    return v


def _list(v: WireValue, field: str, what: str) -> list[bytes | int]:
    if not isinstance(v, list):
        raise CorruptFileError(f"{what}: 2.3 {field} is not a repeated field")
    return v


def unknown_fields_of(msg: Message) -> list[Any]:
    """The unknown fields protobuf kept when parsing ``msg`` (types-protobuf's ``UnknownFieldSet``
    has no ``__iter__``, though the runtime iterates it by index)."""
    fields = unknown_fields.UnknownFieldSet(msg)
    return [fields[i] for i in range(len(fields))]


def _int(v: WireValue | None, field: str, what: str) -> int:
    if not isinstance(v, int):
        raise CorruptFileError(f"{what}: 2.3 {field} is not an integer")
    return v


def _check_known(msg: Message, path: str, what: str) -> None:
    """Refuse a compression carrying fields the 2.1 grammar does not know (new 2.3 codecs)."""
    nums = sorted({f.field_number for f in unknown_fields_of(msg)})
    offsets = path.endswith("variable.offsets") and nums in ([14], [15])
    rle_ranges = path.endswith(("variable.offsets.rle.values", "variable.offsets.rle.run_lengths")) and nums == [14]
    if nums and not (offsets or rle_ranges):  # see offsets23
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
class IntCodec:
    """How ``n`` integers (sparse positions, list lengths) are stored.

    kind: ``none`` (n == 0), ``const`` (``a`` n times), ``range`` (a + b * i), ``delta`` (``a`` plus
    the running sum of ``n - 1`` deltas coded with ``enc``), ``plain`` (``enc``), ``dict`` (indices
    coded with ``enc`` into the range items ``a + b * i``, ``k`` of them).
    """
    kind: str
    n: int
    enc: pb.CompressiveEncoding | None = None
    a: int = 0
    b: int = 0
    k: int = 0

    @property
    def has_buffer(self) -> bool:
        return self.kind in ("delta", "plain", "dict")

    def encoding(self, what: str) -> pb.CompressiveEncoding:
        """The compression of the stored integers (kinds with a buffer)."""
        if self.enc is None:
            raise CorruptFileError(f"{what}: {self.kind}-coded integers without their compression")
        return self.enc


@dataclass
class SparseValidity:
    """A nullable layer: the listed positions are its null (or its valid) slots."""
    null_positions: bool
    positions: IntCodec


@dataclass
class SparseList:
    """A list layer: ``nonempty`` slots (increasing) with ``lengths`` items each, of
    ``num_children`` items in all; the other slots are empty, or null per ``validity``."""
    num_children: int
    nonempty: IntCodec
    lengths: IntCodec
    validity: SparseValidity | None


@dataclass
class SparseFsl:
    """A fixed-size list layer (of structs): every slot has ``dim`` children, null per ``validity``."""
    dim: int
    validity: SparseValidity | None


#: one layer of a sparse page's structure
SparseLayer = Union[SparseValidity, SparseList, SparseFsl]


@dataclass
class IndexedLayout:
    """Indexed zipped values: one dictionary index per slot (``indices``) into ``num_dictionary_items``
    items stored as a full-zip page (``dictionary``)."""
    indices: pb.CompressiveEncoding
    dictionary: pb.PageLayout
    num_dictionary_items: int
    num_items: int


@dataclass
class SparseLayout:
    """A 2.3 page whose structure lists positions per layer (outermost first); its values cover
    the valid leaf slots only (or every leaf slot when ``per_slot``, e.g. dictionary indices)."""
    values: pb.PageLayout | IndexedLayout   # layout of the values (2.2 layers: all valid)
    layers: list[SparseLayer]      # outermost first
    leaf_slots: int                # slots of the innermost layer
    num_values: int
    per_slot: bool


_RANGE = {1: "bits_per_value", 2: "start", 3: "step"}
_DELTA = {1: "bits_per_value", 2: "base", 3: "deltas"}
_DICT = {1: "indices", 2: "items", 3: "num_items"}


def _range(raw: WireValue | None, what: str) -> tuple[int, int]:
    r = wire_fields(_bytes(raw, "range codec", what), what)
    _only(r, _RANGE, "range codec", what)
    start, step = _int(r.get(2, 0), "range start", what), _int(r.get(3, 0), "range step", what)
    return start, step


def int_codec(raw: WireValue | None, n: int, field: str, what: str) -> IntCodec:
    """The codec of ``n`` integers from the bytes of a (2.3) ``CompressiveEncoding``."""
    if n == 0:
        return IntCodec("none", 0)
    enc = wire_fields(_bytes(raw, field, what), what)
    if 14 in enc:
        a, b = _range(enc[14], what)
        return IntCodec("range", n, a=a, b=b)
    if 15 in enc:
        d = wire_fields(_bytes(enc[15], f"{field} delta", what), what)
        _only(d, _DELTA, "delta codec", what)
        return IntCodec("delta", n, _compression(_bytes(d.get(3, b""), "deltas", what), "deltas", what),
                        a=_int(d.get(2, 0), "delta base", what))
    if 3 in enc:    # every integer the same: ``Constant.value`` little-endian, no buffer
        c = wire_fields(_bytes(enc[3], f"{field} constant", what), what)
        _only(c, {1: "value"}, "constant codec", what)
        raw_value = _bytes(c.get(1, b""), f"{field} constant value", what)
        if len(raw_value) not in (1, 2, 4, 8):
            raise CorruptFileError(f"{what}: 2.3 {field} constant of {len(raw_value)} bytes")
        return IntCodec("const", n, a=int.from_bytes(raw_value, "little"))
    if 7 in enc:
        d = wire_fields(_bytes(enc[7], f"{field} dictionary", what), what)
        _only(d, _DICT, "dictionary codec", what)
        items = wire_fields(_bytes(d.get(2, b""), "dictionary items", what), what)
        if set(items) != {14}:
            raise UnsupportedFeatureError(f"{what}: 2.3 {field} dictionary items coded with field(s) "
                                          f"{sorted(items)} are not supported (file format 2.3)")
        a, b = _range(items[14], what)
        return IntCodec("dict", n, _compression(_bytes(d.get(1, b""), "indices", what), "indices", what),
                        a=a, b=b, k=_int(d.get(3, 0), "dictionary items", what))
    return IntCodec("plain", n, _compression(_bytes(raw, field, what), field, what))


_VALIDITY = {1: "meaning", 2: "positions", 3: "num_positions"}
_LIST = {1: "num_children", 2: "nonempty_positions", 3: "num_nonempty", 4: "lengths", 5: "validity"}
_FSL = {1: "dimension", 2: "validity"}


def _validity(raw: WireValue | None, what: str) -> SparseValidity:
    v = wire_fields(_bytes(raw, "sparse validity", what), what)
    _only(v, _VALIDITY, "sparse validity set", what)
    meaning = _int(v.get(1, 0), "validity meaning", what)
    if meaning not in (1, 2):
        raise UnsupportedFeatureError(f"{what}: 2.3 sparse validity meaning {meaning} is not supported")
    n = _int(v.get(3, 0), "num_positions", what)
    return SparseValidity(meaning == 1, int_codec(v.get(2, b""), n, "positions", what))


def _sparse_layers(raw: WireValue | None, what: str) -> list[SparseLayer]:
    sparse = wire_fields(_bytes(raw, "sparse structure", what), what, repeated=(1,))
    _only(sparse, {1: "layer"}, "sparse structure", what)
    out: list[SparseValidity | SparseFsl | SparseList] = []
    for body in _list(sparse[1], "sparse layers", what):
        layer = wire_fields(_bytes(body, "sparse layer", what), what)
        if len(layer) != 1 or next(iter(layer)) not in (1, 2, 3):
            raise UnsupportedFeatureError(f"{what}: 2.3 sparse structure layer kind(s) {sorted(layer)} "
                                          "are not supported (file format 2.3)")
        if 1 in layer:
            out.append(_validity(layer[1], what))
            continue
        if 3 in layer:
            fsl = wire_fields(_bytes(layer[3], "sparse fixed-size list layer", what), what)
            _only(fsl, _FSL, "sparse fixed-size list layer", what)
            dim = _int(fsl.get(1, 0), "fixed-size list dimension", what)
            if dim <= 0:
                raise CorruptFileError(f"{what}: 2.3 fixed-size list layer of dimension {dim}")
            out.append(SparseFsl(dim, _validity(fsl[2], what) if 2 in fsl else None))
            continue
        lst = wire_fields(_bytes(layer[2], "sparse list layer", what), what)
        _only(lst, _LIST, "sparse list layer", what)
        k = _int(lst.get(3, 0), "num_nonempty", what)
        out.append(SparseList(_int(lst.get(1, 0), "num_children", what),
                              int_codec(lst.get(2, b""), k, "nonempty positions", what),
                              int_codec(lst.get(4, b""), k, "list lengths", what),
                              _validity(lst[5], what) if 5 in lst else None))
    if not out:
        raise CorruptFileError(f"{what}: 2.3 sparse structure without layers")
    return out


def fsl_dims(layers: Sequence[SparseLayer]) -> tuple[int, int]:
    """(product of every fixed-size list dimension, of those under a list layer): a page of ``r``
    rows declares ``r`` times the first as its length (pylance 14.0.2), and its decoded levels
    hold ``length`` over the second rows (the fixed-size lists above every list are expanded)."""
    every = listed = 1
    in_list = False
    for lay in layers:
        in_list = in_list or isinstance(lay, SparseList)
        if isinstance(lay, SparseFsl):
            every *= lay.dim
            listed *= lay.dim if in_list else 1
    return every, listed


def _leaf_slots(layers: Sequence[SparseLayer], rows: int, what: str) -> tuple[int, int]:
    """(slots of the innermost layer, valid leaf values) implied by the layer counts."""
    every, _ = fsl_dims(layers)
    if rows % every:
        raise CorruptFileError(f"{what}: 2.3 page of {rows} entries under fixed-size lists of {every} items")
    slots = rows // every
    for lay in layers:
        if isinstance(lay, SparseList):
            slots = lay.num_children
        elif isinstance(lay, SparseFsl):
            slots *= lay.dim
    last = layers[-1]
    if not isinstance(last, SparseValidity):
        return slots, slots
    n = last.positions.n
    return slots, (slots - n if last.null_positions else n)


def _structure(structure: dict[int, WireValue], what: str) -> tuple[list[int] | None, list[SparseLayer] | None]:
    """(dense layers, None) or (None, sparse layers outermost first)."""
    _only(structure, _STRUCTURE_KINDS, "structural plane", what)
    if len(structure) != 1:
        raise CorruptFileError(f"{what}: 2.3 structural plane has {len(structure)} kinds set")
    if 2 in structure:
        return None, _sparse_layers(structure[2], what)
    dense = wire_fields(_bytes(structure[1], "dense structure", what), what)
    _only(dense, {1: "layers"}, "dense structure", what)
    packed = dense.get(1, b"")
    if isinstance(packed, int):
        return [packed], None
    raw = _bytes(packed, "dense layers", what)
    layers, i = [], 0
    while i < len(raw):
        v, i = _varint(raw, i, what)
        layers.append(v)
    return layers, None


def planar_to_page_layout(value: bytes, what: str, rows: int) -> pb.PageLayout | SparseLayout | IndexedLayout:
    """The 2.1/2.2 ``PageLayout`` equivalent to a 2.3 ``PlanarLayout`` of ``rows`` rows (or a
    ``SparseLayout`` for a sparse structure), or refuse by name."""
    top = wire_fields(value, what)
    _only(top, {1: "structure", 2: "values"}, "PlanarLayout", what)
    if 1 not in top or 2 not in top:
        raise CorruptFileError(f"{what}: 2.3 page layout lacks its structure or values plane")
    layers, sparse = _structure(wire_fields(_bytes(top[1], "structure", what), what), what)
    plane = wire_fields(_bytes(top[2], "values", what), what)
    if len(plane) != 1:
        raise CorruptFileError(f"{what}: 2.3 value plane has {len(plane)} kinds set")
    kind, body = next(iter(plane.items()))
    if sparse is None:
        assert layers is not None           # a dense structure has its layers
        if kind == 5 and layers == [pb.REPDEF_ALL_VALID_ITEM]:
            return _indexed(body, rows, what)
        return _values(kind, body, layers, None, what)
    slots, n_valid = _leaf_slots(sparse, rows, what)
    if not 0 <= n_valid <= slots:
        raise CorruptFileError(f"{what}: 2.3 sparse structure with {n_valid} values for {slots} slots")
    if len(sparse) == 1 and n_valid == 0 and kind == 4 and body == b"":   # every row null, no values
        out = pb.PageLayout()
        out.constant_layout.layers.append(pb.REPDEF_NULLABLE_ITEM)
        return out
    if kind == 4 and body == b"":
        if n_valid:
            raise CorruptFileError(f"{what}: 2.3 page without values has {n_valid} valid slots")
        return SparseLayout(pb.PageLayout(), sparse, slots, 0, False)
    if kind == 5:   # dictionary indices cover every slot
        return SparseLayout(_indexed(body, slots, what), sparse, slots, slots, True)
    inner = _values(kind, body, [pb.REPDEF_ALL_VALID_ITEM], n_valid, what)
    # the values cover every leaf slot (null items included) under a list, and dictionary indices
    # do; a nullable leaf outside lists stores its valid values only
    per_slot = inner.HasField("mini_block_layout") and (
        inner.mini_block_layout.HasField("dictionary") or any(isinstance(x, SparseList) for x in sparse))
    if per_slot:
        inner.mini_block_layout.num_items = slots
    return SparseLayout(inner, sparse, slots, slots if per_slot else n_valid, per_slot)


def _indexed(body: WireValue | None, slots: int, what: str) -> IndexedLayout:
    """Indexed zipped values: indices compression (1) and the dictionary's zipped values (2)."""
    msg = wire_fields(_bytes(body, "indexed zipped values", what), what)
    _only(msg, {1: "indices", 2: "dictionary"}, "indexed zipped values", what)
    if 1 not in msg or 2 not in msg:
        raise CorruptFileError(f"{what}: 2.3 indexed zipped values lack their indices or dictionary")
    dictionary = _zipped(wire_fields(_bytes(msg[2], "dictionary", what), what), [pb.REPDEF_ALL_VALID_ITEM],
                         pb.PageLayout(), what)
    fz = dictionary.full_zip_layout
    if fz.bits_rep or fz.bits_def:
        raise UnsupportedFeatureError(f"{what}: 2.3 indexed zipped values with a dictionary of nullable or "
                                      "repeated items are not supported (file format 2.3)")
    return IndexedLayout(_compression(_bytes(msg[1], "indices", what), "indices", what), dictionary,
                         int(fz.num_items), slots)


def _values(kind: int, body: WireValue | None, layers: list[int], num_items: int | None, what: str) -> pb.PageLayout:
    if kind not in (1, 2, 3):
        name = _VALUE_KINDS.get(kind, f"value plane kind {kind}")
        raise UnsupportedFeatureError(f"{what}: 2.3 {name} is not supported (file format 2.3)")
    msg = wire_fields(_bytes(body, _VALUE_KINDS[kind], what), what)
    out = pb.PageLayout()
    if kind == 2:
        return _zipped(msg, layers, out, what)
    if kind == 3:
        _only(msg, {1: "scalar"}, "constant value", what)
        out.constant_layout.layers.extend(_enum_layers(layers))
        if 1 in msg:
            out.constant_layout.inline_value = _bytes(msg[1], "constant scalar", what)
        return out
    _only(msg, _CHUNKED, "chunked values", what)
    mb = out.mini_block_layout
    mb.layers.extend(_enum_layers(layers))
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


def _enum_layers(layers: list[int]) -> list[pb.RepDefLayer]:
    """``layers`` as the protobuf stubs type a repeated enum (its values are these ints at runtime)."""
    return cast("list[pb.RepDefLayer]", layers)


def _zipped(msg: dict[int, WireValue], layers: list[int], out: pb.PageLayout, what: str) -> pb.PageLayout:
    """Zipped values: the 2.2 ``FullZipLayout`` (control word widths, value / offset width, counts)."""
    _only(msg, _ZIPPED, "zipped values", what)
    fz = out.full_zip_layout
    fz.layers.extend(_enum_layers(layers))
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


def _is_repeated(fd: object) -> bool:
    """Whether a protobuf field is repeated (``is_repeated`` on protobuf >= 6; ``label`` before)."""
    flag = getattr(fd, "is_repeated", None)
    return bool(flag) if flag is not None else getattr(fd, "label") == FieldDescriptor.LABEL_REPEATED
