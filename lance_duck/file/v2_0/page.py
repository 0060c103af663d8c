"""Decoding one 2.0 page: the ``ArrayEncoding`` tree -> an Arrow array of the target type.

Every node produces an array of ``n`` values that its parent consumes. ``target`` is the
Arrow type wanted from a node; ``None`` asks for the node's natural unsigned integer type
(used for offsets, indices and validity).
"""
from __future__ import annotations


from typing import Any, Callable

import numpy as np
import pyarrow as pa

from ..._proto import encodings_v2_0_pb2 as enc_pb
from ...errors import CorruptFileError, UnsupportedFeatureError
from ...encodings import bitpack, fastlanes, fsst, general
from ...encodings._buf import BufferLike
from .selection import LocalSelection, take_local
from .shared import Buffers

# 2.1+ encodings that share the 2.0 ArrayEncoding message; pylance's 2.0 decoder rejects them.
_NEWER_ONLY = {
    "constant": "Constant", "inline_bitpacking": "InlineBitpacking",
    "out_of_line_bitpacking": "OutOfLineBitpacking", "variable": "Variable",
    "packed_struct_fixed_width_mini_block": "PackedStructFixedWidthMiniBlock", "block": "Block",
    "rle": "Rle", "general_mini_block": "GeneralMiniBlock", "byte_stream_split": "ByteStreamSplit",
}

#: decodes ``n`` values of one ``array_encoding`` case (its message) as the Arrow type
_Decoder = Callable[[Any, int, pa.DataType, "PageContext"], pa.Array]


class PageContext:
    """Where a page's encoding finds its buffers."""

    def __init__(self, page_buffers: Buffers, where: str) -> None:
        self.page_buffers = page_buffers
        self.where = where

    def buffer(self, ref: enc_pb.Buffer) -> memoryview | bytes:
        if ref.buffer_type != enc_pb.Buffer.page:
            kind = enc_pb.Buffer.BufferType.Name(ref.buffer_type)
            raise UnsupportedFeatureError(f"{self.where}: {kind}-level buffers in 2.0 encodings are not supported")
        if ref.buffer_index >= len(self.page_buffers):
            raise CorruptFileError(f"{self.where}: encoding refers to page buffer {ref.buffer_index}, "
                                   f"page has {len(self.page_buffers)}")
        return self.page_buffers[ref.buffer_index]


# -- fixed-width helpers ---------------------------------------------------------------------

def bit_width(t: pa.DataType) -> int | None:
    """Bits per value of a fixed-width Arrow type (None if variable width or nested)."""
    if isinstance(t, pa.ExtensionType):
        return bit_width(t.storage_type)
    if pa.types.is_boolean(t):
        return 1
    if pa.types.is_fixed_size_list(t):
        inner = bit_width(t.value_type)
        return None if inner is None or inner == 1 else inner * t.list_size
    try:
        return int(t.bit_width)
    except ValueError:
        return None


def _uint_type(bits: int) -> pa.DataType:
    return {1: pa.bool_(), 8: pa.uint8(), 16: pa.uint16(), 32: pa.uint32(), 64: pa.uint64()}[bits]


def fixed_array(target: pa.DataType, n: int, raw: BufferLike, what: str, validity: np.ndarray | None = None) -> pa.Array:
    """An array of ``n`` fixed-width values read from ``raw`` (little-endian, back to back)."""
    if isinstance(target, pa.ExtensionType):
        storage = fixed_array(target.storage_type, n, raw, what, validity)
        return pa.ExtensionArray.from_storage(target, storage)
    if pa.types.is_fixed_size_list(target):
        items = fixed_array(target.value_type, n * target.list_size, raw, what)
        return pa.Array.from_buffers(target, n, [validity], children=[items])
    width = bit_width(target)
    if width is None:
        raise CorruptFileError(f"{what}: fixed-width buffer for non-fixed-width type {target}")
    nbytes = (n * width + 7) // 8
    if len(raw) < nbytes:
        raise CorruptFileError(f"{what}: value buffer too short ({len(raw)} bytes, need {nbytes})")
    buf = raw if isinstance(raw, pa.Buffer) else pa.py_buffer(raw)
    align = min(width // 8, 8)
    if align > 1 and buf.address % align:
        # a page at an unaligned file position (legacy writers): Arrow kernels expect aligned values
        buf = pa.py_buffer(np.frombuffer(buf, np.uint8, count=nbytes).copy())
    return pa.Array.from_buffers(target, n, [validity, buf])


def to_numpy_uint(arr: pa.Array) -> np.ndarray:
    """The values of an integer array as numpy (nulls are not expected)."""
    values: np.ndarray = arr.to_numpy(zero_copy_only=False)
    return values


def validity_buffer(arr: pa.Array) -> pa.Buffer | None:
    return arr.buffers()[0] if arr.null_count else None


def with_validity(arr: pa.Array, valid: pa.Buffer) -> pa.Array:
    """``arr`` with a validity bitmap (ANDed with the one it has)."""
    n = len(arr)
    if arr.null_count:
        mine = np.unpackbits(np.frombuffer(arr.buffers()[0], np.uint8), bitorder="little")[arr.offset:arr.offset + n]
        theirs = np.unpackbits(np.frombuffer(valid, np.uint8), bitorder="little")[:n]
        valid = pa.py_buffer(np.packbits(mine & theirs, bitorder="little"))
    t = arr.type
    if isinstance(t, pa.ExtensionType):
        return pa.ExtensionArray.from_storage(t, with_validity(arr.storage, valid))
    if pa.types.is_dictionary(t):
        return pa.DictionaryArray.from_arrays(with_validity(arr.indices, valid), arr.dictionary)
    if arr.offset:
        raise AssertionError("with_validity expects unsliced arrays")
    if pa.types.is_fixed_size_list(t) or pa.types.is_struct(t):
        children = [arr.values] if pa.types.is_fixed_size_list(t) else [arr.field(i) for i in range(t.num_fields)]
        return pa.Array.from_buffers(t, n, [valid], children=children)
    bufs = arr.buffers()
    return pa.Array.from_buffers(t, n, [valid] + bufs[1:])


# -- the tree ----------------------------------------------------------------------------------

def decode(enc: enc_pb.ArrayEncoding, n: int, target: pa.DataType | None, ctx: PageContext) -> pa.Array:
    """Decode ``n`` values of one ArrayEncoding node as ``target``."""
    kind = enc.WhichOneof("array_encoding")
    if kind is None:
        raise CorruptFileError(f"{ctx.where}: empty ArrayEncoding")
    if kind in _NEWER_ONLY:
        raise UnsupportedFeatureError(
            f"{ctx.where}: encoding {_NEWER_ONLY[kind]} is a Lance 2.1+ encoding and cannot appear in a 2.0 file")
    fn = _DECODERS.get(kind)
    if fn is None:
        raise UnsupportedFeatureError(f"{ctx.where}: 2.0 encoding {kind!r} is not supported here")
    return fn(getattr(enc, kind), n, target, ctx)


def decode_rows(enc: enc_pb.ArrayEncoding, n: int, target: pa.DataType, ctx: PageContext, local: LocalSelection) -> pa.Array:
    """The rows ``local`` (None / range / int array) of a page of ``n`` values.

    Lance's string dictionaries map only the selected indices; everything else is decoded whole
    and then sliced or taken.
    """
    if (local is not None and enc.WhichOneof("array_encoding") == "dictionary"
            and not (target is not None and pa.types.is_dictionary(target))):
        d = enc.dictionary
        idx = decode_uints(d.indices, n, ctx).astype(np.int64)
        idx = idx[local.start:local.stop] if isinstance(local, range) else idx[local]
        return _map_lance_dictionary(d, idx, target, ctx)
    arr = decode(enc, n, target, ctx)
    if len(arr) != n:
        raise CorruptFileError(f"{ctx.where}: decoded {len(arr)} values, page says {n}")
    return take_local(arr, local)


def decode_uints(enc: enc_pb.ArrayEncoding, n: int, ctx: PageContext) -> np.ndarray:
    """``n`` unsigned integers (offsets, indices) as numpy."""
    arr = decode(enc, n, None, ctx)
    if arr.null_count:
        raise CorruptFileError(f"{ctx.where}: offsets/indices contain nulls")
    if not pa.types.is_integer(arr.type):
        raise CorruptFileError(f"{ctx.where}: offsets/indices are not integers ({arr.type})")
    return to_numpy_uint(arr)


def _flat(flat: enc_pb.Flat, n: int, target: pa.DataType, ctx: PageContext) -> pa.Array:
    bits = int(flat.bits_per_value)
    raw: BufferLike = ctx.buffer(flat.buffer)
    if flat.HasField("compression") and flat.compression.scheme not in ("", "none"):
        raw = general.decompress(raw, flat.compression.scheme.lower())
    if target is None:
        if bits not in (1, 8, 16, 32, 64):
            raise CorruptFileError(f"{ctx.where}: Flat with {bits} bits where integers were expected")
        target = _uint_type(bits)
    if pa.types.is_null(target):
        return pa.nulls(n)
    want = bit_width(target)
    if want != bits:
        if want is not None and pa.types.is_integer(target) and bits in (8, 16, 32, 64):
            return fixed_array(_uint_type(bits), n, raw, ctx.where).cast(target)
        raise CorruptFileError(f"{ctx.where}: Flat has {bits} bits per value, type {target} needs {want}")
    return fixed_array(target, n, raw, ctx.where)


def _nullable(nl: enc_pb.Nullable, n: int, target: pa.DataType, ctx: PageContext) -> pa.Array:
    which = nl.WhichOneof("nullability")
    if which == "no_nulls":
        return decode(nl.no_nulls.values, n, target, ctx)
    if which == "all_nulls":
        if target is None:
            raise CorruptFileError(f"{ctx.where}: all-null offsets/indices")
        return pa.nulls(n, target)
    if which == "some_nulls":
        valid = decode(nl.some_nulls.validity, n, pa.bool_(), ctx)
        values = decode(nl.some_nulls.values, n, target, ctx)
        if pa.types.is_null(values.type):
            return values
        return with_validity(values, valid.buffers()[1])
    raise CorruptFileError(f"{ctx.where}: Nullable encoding without a variant")


def _fixed_size_list(fsl: enc_pb.FixedSizeList, n: int, target: pa.DataType, ctx: PageContext) -> pa.Array:
    if target is None or not pa.types.is_fixed_size_list(target):
        raise CorruptFileError(f"{ctx.where}: FixedSizeList encoding for type {target}")
    if fsl.dimension != target.list_size:
        raise CorruptFileError(f"{ctx.where}: FixedSizeList dimension {fsl.dimension} != {target.list_size}")
    items = decode(fsl.items, n * target.list_size, target.value_type, ctx)
    return pa.FixedSizeListArray.from_arrays(items, type=target)


def _offsets_type(target: pa.DataType) -> tuple[np.dtype, int]:
    if pa.types.is_large_string(target) or pa.types.is_large_binary(target):
        return np.dtype("<i8"), 1 << 62
    if pa.types.is_string(target) or pa.types.is_binary(target):
        return np.dtype("<i4"), (1 << 31) - 1
    raise CorruptFileError(f"Binary encoding for non-binary type {target}")


def binary_from_parts(target: pa.DataType, ends: np.ndarray, data: BufferLike, valid: np.ndarray | None,
                      what: str) -> pa.Array:
    """A string/binary array from value end offsets (first start is 0) and its bytes."""
    n = len(ends)
    odt, limit = _offsets_type(target)
    ends = ends.astype(np.int64, copy=False)
    if n and (ends[0] < 0 or np.any(ends[1:] < ends[:-1])):
        raise CorruptFileError(f"{what}: string offsets are not increasing")
    total = int(ends[-1]) if n else 0
    if total > limit:
        raise CorruptFileError(f"{what}: {total} bytes do not fit {target} offsets")
    if len(data) < total:
        raise CorruptFileError(f"{what}: string data too short ({len(data)} bytes, need {total})")
    offsets = np.zeros(n + 1, dtype=odt)
    offsets[1:] = ends
    vbuf = None
    if valid is not None and not valid.all():
        vbuf = pa.py_buffer(np.packbits(valid, bitorder="little"))
    data_buf = data if isinstance(data, pa.Buffer) else pa.py_buffer(data)
    return pa.Array.from_buffers(target, n, [vbuf, pa.py_buffer(offsets), data_buf])


def _binary(b: enc_pb.Binary, n: int, target: pa.DataType, ctx: PageContext) -> pa.Array:
    if target is None:
        target = pa.binary()
    e = decode_uints(b.indices, n, ctx).astype(np.uint64, copy=False)
    adj = np.uint64(b.null_adjustment)
    if b.null_adjustment:
        null = e >= adj
        ends = np.where(null, e - adj, e)
        valid = ~null
    else:
        ends, valid = e, None
    total = int(ends[-1]) if n else 0
    data = decode(b.bytes, total, pa.uint8(), ctx).buffers()[1] if total else pa.py_buffer(b"")
    return binary_from_parts(target, ends, data, valid, ctx.where)


def _fixed_size_binary(fb: enc_pb.FixedSizeBinary, n: int, target: pa.DataType, ctx: PageContext) -> pa.Array:
    w = int(fb.byte_width)
    data = decode(fb.bytes, n * w, pa.uint8(), ctx).buffers()[1] if n * w else pa.py_buffer(b"")
    ends = np.arange(1, n + 1, dtype=np.int64) * w
    return binary_from_parts(target or pa.binary(), ends, data, None, ctx.where)


def _dictionary(d: enc_pb.Dictionary, n: int, target: pa.DataType, ctx: PageContext) -> pa.Array:
    m = int(d.num_dictionary_items)
    if target is not None and pa.types.is_dictionary(target):
        # an Arrow dictionary field: keys as stored, values as the dictionary
        items = decode(d.items, m, target.value_type, ctx)
        keys = decode(d.indices, n, target.index_type, ctx)
        k = keys.to_numpy(zero_copy_only=False)
        if n and (k.min() < 0 or k.max() >= m):
            raise CorruptFileError(f"{ctx.where}: dictionary key outside the {m}-entry dictionary")
        return pa.DictionaryArray.from_arrays(keys, items)
    return _map_lance_dictionary(d, decode_uints(d.indices, n, ctx).astype(np.int64), target, ctx)


def _map_lance_dictionary(d: enc_pb.Dictionary, idx: np.ndarray, target: pa.DataType, ctx: PageContext) -> pa.Array:
    """Lance's own dictionary for strings: index 0 = null, k = items[k - 1]."""
    m = int(d.num_dictionary_items)
    items = decode(d.items, m, target, ctx)
    if len(idx) and (idx.max() > m or idx.min() < 0):
        raise CorruptFileError(f"{ctx.where}: dictionary index outside the {m}-entry dictionary")
    null = idx == 0
    take = pa.array(idx - 1, type=pa.int64(), mask=null if null.any() else None)
    return items.take(take)


def _fsst(f: enc_pb.Fsst, n: int, target: pa.DataType, ctx: PageContext) -> pa.Array:
    inner = decode(f.binary, n, pa.large_binary(), ctx)
    offsets = np.frombuffer(inner.buffers()[1], dtype="<i8", count=n + 1)
    data = np.frombuffer(inner.buffers()[2], dtype=np.uint8) if inner.buffers()[2] else np.zeros(0, np.uint8)
    out_offsets, out = fsst.decompress(f.symbol_table, offsets, data)
    valid = None
    if inner.null_count:
        valid = np.unpackbits(np.frombuffer(inner.buffers()[0], np.uint8), bitorder="little")[:n].astype(bool)
    return binary_from_parts(target or pa.binary(), np.asarray(out_offsets[1:]), np.ascontiguousarray(out),
                             valid, ctx.where)


def _packed_struct(ps: enc_pb.PackedStruct, n: int, target: pa.DataType, ctx: PageContext) -> pa.Array:
    if target is None or not pa.types.is_struct(target):
        raise CorruptFileError(f"{ctx.where}: PackedStruct encoding for type {target}")
    widths = []
    for i in range(target.num_fields):
        w = bit_width(target.field(i).type)
        if w is None or w % 8:
            raise UnsupportedFeatureError(
                f"{ctx.where}: packed struct child {target.field(i).name!r} of type {target.field(i).type} "
                "is not byte-aligned fixed width")
        widths.append(w // 8)
    row = sum(widths)
    raw = np.frombuffer(ctx.buffer(ps.buffer), dtype=np.uint8)
    if raw.size < n * row:
        raise CorruptFileError(f"{ctx.where}: packed struct buffer too short ({raw.size} < {n * row})")
    rows = raw[: n * row].reshape(n, row)
    children, pos = [], 0
    for i, w in enumerate(widths):
        col = np.ascontiguousarray(rows[:, pos:pos + w]).reshape(-1)
        children.append(fixed_array(target.field(i).type, n, col, ctx.where))
        pos += w
    return pa.StructArray.from_arrays(children, fields=list(target))


def _from_numpy(vals: np.ndarray, target: pa.DataType, ctx: PageContext) -> pa.Array:
    arr = pa.array(vals)
    if target is None or arr.type == target:
        return arr
    if bit_width(target) == vals.dtype.itemsize * 8 and not pa.types.is_integer(target):
        return fixed_array(target, len(vals), vals.tobytes(), ctx.where)
    return arr.cast(target)


def _bitpacked(bp: enc_pb.Bitpacked, n: int, target: pa.DataType, ctx: PageContext) -> pa.Array:
    vals = bitpack.unpack_sequential(ctx.buffer(bp.buffer), int(bp.compressed_bits_per_value), n,
                                     int(bp.uncompressed_bits_per_value), bool(bp.signed))
    return _from_numpy(vals, target, ctx)


def _bitpacked_non_neg(bp: enc_pb.BitpackedForNonNeg, n: int, target: pa.DataType, ctx: PageContext) -> pa.Array:
    vals = fastlanes.unpack(ctx.buffer(bp.buffer), int(bp.compressed_bits_per_value),
                            int(bp.uncompressed_bits_per_value), n)
    if target is not None and pa.types.is_signed_integer(target):
        vals = vals.view(f"<i{vals.dtype.itemsize}")
    return _from_numpy(vals, target, ctx)


def _not_a_page(name: str) -> _Decoder:
    def fail(_msg: Any, _n: int, _t: pa.DataType, ctx: PageContext) -> pa.Array:
        raise CorruptFileError(f"{ctx.where}: {name} encoding found inside a value page")
    return fail


#: the decoder of each ``array_encoding`` case (called with that case's message)
_DECODERS: dict[str, _Decoder] = {
    "flat": _flat, "nullable": _nullable, "fixed_size_list": _fixed_size_list, "binary": _binary,
    "dictionary": _dictionary, "fsst": _fsst, "packed_struct": _packed_struct,
    "bitpacked": _bitpacked, "fixed_size_binary": _fixed_size_binary,
    "bitpacked_for_non_neg": _bitpacked_non_neg,
    "list": _not_a_page("List"), "struct": _not_a_page("SimpleStruct"),
}
