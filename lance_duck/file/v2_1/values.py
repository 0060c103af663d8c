"""Decoded value slots of one page, before they become Arrow arrays.

Decompressors produce one of:

* :class:`Fixed` -- ``n`` fixed-width values as raw little-endian bytes (``bits`` a multiple of 8)
  or, for ``bits == 1``, a numpy bool array;
* :class:`VarBin` -- ``n`` variable-width values (int64 offsets from 0 + bytes);
* :class:`Packed` -- fixed-width records of a packed struct (split by the leaf builder);
* a ``pyarrow.Array`` already typed (fixed-size lists, structs of variable packed structs).

:func:`to_arrow` turns any of them into an array of the field's Arrow type.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np
import pyarrow as pa

from ...encodings._buf import empty
from ...encodings._threads import map_parts
from ...encodings.bitmap import pack_validity, unpack_bits
from ...errors import CorruptFileError, UnsupportedFeatureError


@dataclass
class Fixed:
    data: np.ndarray      # uint8 bytes (n * bits/8) or a typed uint view; bool array when bits == 1
    bits: int
    n: int

    def u8(self) -> np.ndarray:
        d = np.ascontiguousarray(self.data)
        return d.reshape(-1).view(np.uint8)


@dataclass
class VarBin:
    offsets: np.ndarray   # int64 (int32 from decoders that know the bytes fit), n + 1, from 0
    data: np.ndarray      # uint8

    @property
    def n(self) -> int:
        return len(self.offsets) - 1


@dataclass
class Packed:
    """Row-major records of a packed struct with fixed-width children."""
    bits_per_child: list[int]
    records: Fixed


def value_count(v: Fixed | VarBin | Packed | pa.Array) -> int:
    if isinstance(v, Packed):
        return v.records.n
    if isinstance(v, (Fixed, VarBin)):
        return v.n
    return len(v)


def as_fixed(v: Values, what: str) -> Fixed:
    """``v`` when a decoder gave fixed-width values (levels, run lengths, integers), else CorruptFileError."""
    if not isinstance(v, Fixed):
        raise CorruptFileError(f"{what}: expected fixed-width values, the encoding gave {type(v).__name__}")
    return v


def as_varbin(v: Values, what: str) -> VarBin:
    """``v`` when a decoder gave variable-width values, else CorruptFileError."""
    if not isinstance(v, VarBin):
        raise CorruptFileError(f"{what}: expected variable-width values, the encoding gave {type(v).__name__}")
    return v


def uint_view(v: Fixed) -> np.ndarray:
    """The values of a Fixed as unsigned integers (8..64 bits)."""
    dt = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}.get(v.bits)
    if dt is None:
        raise CorruptFileError(f"expected integer values of 8..64 bits, got {v.bits} bits")
    d = v.u8()
    if d.size < v.n * v.bits // 8:
        raise CorruptFileError("value buffer shorter than its value count")
    d = d[: v.n * v.bits // 8]
    if d.ctypes.data % (v.bits // 8):
        d = d.copy()
    return d.view(dt)


def _storage(t: pa.DataType) -> pa.DataType:
    return t.storage_type if isinstance(t, pa.ExtensionType) else t


def to_arrow(v: Values, t: pa.DataType) -> pa.Array:
    """An Arrow array of type ``t`` (no validity) from decoded values."""
    if isinstance(v, pa.Array):
        if v.type != t:
            if isinstance(t, pa.ExtensionType) and v.type == t.storage_type:
                return pa.ExtensionArray.from_storage(t, v)
            try:
                return v.cast(t) if not isinstance(v, pa.ExtensionArray) else v
            except pa.ArrowInvalid as exc:
                raise CorruptFileError(f"decoded {v.type} values cannot be read as {t}") from exc
        return v
    if isinstance(t, pa.ExtensionType):
        return pa.ExtensionArray.from_storage(t, to_arrow(v, t.storage_type))
    if pa.types.is_dictionary(t):
        raise CorruptFileError("dictionary-typed values need their page dictionary")
    if isinstance(v, Packed):
        return _packed_struct(v, t)
    if isinstance(v, FslValues):
        return _fsl(v, t)
    if isinstance(v, VarPackedValues):
        if not pa.types.is_struct(t) or t.num_fields != len(v.children):
            raise CorruptFileError(f"packed struct with {len(v.children)} children cannot be read as {t}")
        kids = [to_arrow(c, t.field(i).type) for i, c in enumerate(v.children)]
        return pa.StructArray.from_arrays(kids, fields=list(t))
    if pa.types.is_null(t):
        return pa.nulls(value_count(v))
    if isinstance(v, VarBin):
        return _varbin(v, t)
    if pa.types.is_boolean(t):
        bits = v.data if v.data.dtype == np.bool_ else np.unpackbits(v.u8(), count=v.n, bitorder="little")
        if len(bits) != v.n:
            raise CorruptFileError("boolean values shorter than their count")
        return pa.Array.from_buffers(pa.bool_(), v.n, [None, pack_validity(bits)], null_count=0)
    if pa.types.is_fixed_size_list(t):
        width = t.list_size
        child = to_arrow(Fixed(v.data, v.bits // width, v.n * width), t.value_type)
        return pa.FixedSizeListArray.from_arrays(child, type=t)
    try:
        width = t.bit_width
    except ValueError:  # a variable-width type (the manifest points the field at another column)
        raise CorruptFileError(f"{v.bits}-bit fixed-width values cannot be read as {t}") from None
    if width is None or width <= 0 or width % 8:
        raise UnsupportedFeatureError(f"fixed-width values cannot be read as {t}")
    if width != v.bits:
        if v.bits > width and v.bits % 8 == 0:
            # dictionary items widened by older writers: keep the low bytes of each item
            d = v.u8()[: v.n * v.bits // 8].reshape(v.n, v.bits // 8)[:, : width // 8]
            v = Fixed(np.ascontiguousarray(d), width, v.n)
        else:
            raise CorruptFileError(f"{v.bits}-bit values cannot be read as {t}")
    data = v.u8()[: v.n * width // 8]
    if data.size != v.n * width // 8:
        raise CorruptFileError(f"value buffer too short for {v.n} values of {t}")
    return pa.Array.from_buffers(t, v.n, [None, pa.py_buffer(data)], null_count=0)


def _varbin(v: VarBin, t: pa.DataType) -> pa.Array:
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    if not (large or pa.types.is_string(t) or pa.types.is_binary(t)):
        raise CorruptFileError(f"variable-width values cannot be read as {t}")
    offs = v.offsets
    # every producer checks its own offsets; this one pass guards the Arrow array built over them
    if offs.size and (offs[0] < 0 or int(offs[-1]) > v.data.size or (offs[1:] < offs[:-1]).any()):
        raise CorruptFileError(f"{t} offsets are not increasing within their {v.data.size} bytes")
    if not large:
        if offs.size and int(offs[-1]) > 2**31 - 1:
            raise UnsupportedFeatureError(f"{t} column: {int(offs[-1])} bytes of values in one read, more than 2 GiB")
        offs = offs.astype(np.int32, copy=False)
    else:
        offs = offs.astype(np.int64, copy=False)
    return pa.Array.from_buffers(t, v.n, [None, pa.py_buffer(offs), pa.py_buffer(v.data)], null_count=0)


def _packed_struct(v: Packed, t: pa.DataType) -> pa.Array:
    if not pa.types.is_struct(t) or t.num_fields != len(v.bits_per_child):
        raise CorruptFileError(f"packed struct with {len(v.bits_per_child)} children cannot be read as {t}")
    rec_bytes = v.records.bits // 8
    n = v.records.n
    rows = v.records.u8()[: n * rec_bytes].reshape(n, rec_bytes)
    children = []
    pos = 0
    for i, bits in enumerate(v.bits_per_child):
        w = bits // 8
        col = np.ascontiguousarray(rows[:, pos: pos + w])
        pos += w
        children.append(to_arrow(Fixed(col.reshape(-1), bits, n), t.field(i).type))
    return pa.StructArray.from_arrays(children, fields=list(t))


def _fsl(v: FslValues, t: pa.DataType) -> pa.Array:
    """Fixed-size-list rows from flattened items and per-layer item validity."""
    types = []
    cur = t
    for _d, _ in v.layers:
        cur = _storage(cur)
        if not pa.types.is_fixed_size_list(cur):
            raise CorruptFileError(f"fixed-size-list values cannot be read as {t}")
        types.append(cur)
        cur = cur.value_type
    arr = to_arrow(v.items, cur)
    for li in range(len(v.layers) - 1, -1, -1):
        valid = v.validities[li]
        if valid is not None:
            arr = with_validity(arr, valid)
        arr = pa.FixedSizeListArray.from_arrays(arr, type=types[li])
    return arr


def with_validity(arr: pa.Array, valid: np.ndarray | None) -> pa.Array:
    """``arr`` with its slots masked where ``valid`` is False (existing nulls are kept)."""
    if valid is None:
        return arr
    valid = np.asarray(valid, np.bool_)
    if len(valid) != len(arr):
        raise CorruptFileError(f"{len(valid)} validity bits for {len(arr)} values")
    if arr.null_count:
        valid = valid & _validity_of(arr)
    if valid.all():
        return arr
    if arr.offset != 0:
        arr = pa.concat_arrays([arr])
    if isinstance(arr, pa.ExtensionArray):
        return pa.ExtensionArray.from_storage(arr.type, with_validity(arr.storage, valid))
    t = arr.type
    if pa.types.is_null(t):
        return arr
    bufs = arr.buffers()
    nulls = int(valid.size - np.count_nonzero(valid))
    if pa.types.is_dictionary(t):
        idx = with_validity(arr.indices, valid)
        return pa.DictionaryArray.from_arrays(idx, arr.dictionary)
    if pa.types.is_struct(t):
        # children are null wherever the struct is (as pylance returns packed structs and blobs)
        kids = [with_validity(arr.field(i), valid) for i in range(t.num_fields)]
        return pa.Array.from_buffers(t, len(arr), [pack_validity(valid)], null_count=nulls, children=kids)
    if pa.types.is_fixed_size_list(t):
        return pa.Array.from_buffers(t, len(arr), [pack_validity(valid)], null_count=nulls,
                                     children=[arr.values])
    if t.num_fields:
        raise CorruptFileError(f"cannot apply leaf validity to {t} values")
    return pa.Array.from_buffers(t, len(arr), [pack_validity(valid)] + bufs[1:], null_count=nulls)


def _validity_of(arr: pa.Array) -> np.ndarray:
    """The validity of an array with nulls as a bool mask: its bitmap unpacked with numpy where
    the array has one (``is_valid().to_numpy()`` converts bit by bit: ~35x slower)."""
    t = arr.type
    if not (isinstance(arr, pa.ExtensionArray) or pa.types.is_union(t) or pa.types.is_null(t)
            or pa.types.is_dictionary(t)):
        bitmap = arr.buffers()[0]
        if bitmap is not None:
            return unpack_bits(bitmap, len(arr), arr.offset)
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), np.bool_)


@dataclass
class FslValues:
    """Flattened fixed-size-list items with per-layer item validity (outermost first)."""
    items: Values
    layers: list[tuple[int, bool]]
    validities: list[np.ndarray | None]



@dataclass
class VarPackedValues:
    """Children of a variable packed struct (one decoded value set per field)."""
    children: list[Values]


#: values decoded from a page's buffers: fixed-width, variable-width, packed records, flattened
#: fixed-size lists, a variable packed struct's children, or an Arrow array already
Values = Union[Fixed, VarBin, Packed, FslValues, VarPackedValues, pa.Array]


def fixed_row_bytes(t: pa.DataType) -> int | None:
    """Bytes of one value of ``t`` when it is fixed-width bytes throughout (integers, floats,
    fixed-size lists of them), else None."""
    if pa.types.is_fixed_size_list(t):
        inner = fixed_row_bytes(t.value_type)
        return None if inner is None else inner * t.list_size
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return int(t.bit_width) // 8
    return None


def _row_view(arr: pa.Array, row_bytes: int) -> np.ndarray | None:
    """The values of ``arr`` (of a :func:`fixed_row_bytes` type) as a (len, row_bytes) uint8
    view, or None when a value or an item has a null."""
    if arr.null_count:
        return None
    if pa.types.is_fixed_size_list(arr.type):
        size = arr.type.list_size
        items = _row_view(arr.values.slice(arr.offset * size, len(arr) * size), row_bytes // max(size, 1))
        return None if items is None else items.reshape(len(arr), row_bytes)
    data = arr.buffers()[1]
    if data is None:
        return np.zeros((len(arr), row_bytes), np.uint8)
    flat = np.frombuffer(data, np.uint8, len(arr) * row_bytes, arr.offset * row_bytes)
    return flat.reshape(len(arr), row_bytes)


def expand_valid(parts: list[tuple[pa.Array, np.ndarray]], t: pa.DataType) -> pa.Array | None:
    """One array of type ``t`` from pieces given as (values of the valid slots, validity of
    every slot): each piece's values are scattered to their slots as whole rows of bytes (null
    slots are zero) -- the take and the concatenation of the pieces in one pass. None when ``t``
    is not fixed-width bytes throughout or some value has a null of its own."""
    row_bytes = fixed_row_bytes(t)
    if row_bytes is None or isinstance(t, pa.ExtensionType):
        return None
    views = [_row_view(vals, row_bytes) for vals, _ in parts]
    if any(v is None for v in views):
        return None
    sizes = [valid.size for _, valid in parts]
    starts = np.cumsum([0] + sizes).tolist()
    # from Arrow's pool (reused memory: fresh pages fault in at every read, see ``_buf.empty``)
    out = empty((starts[-1], row_bytes), np.uint8)

    def place(i: int) -> None:   # (numpy's row scatter releases the GIL: pieces run side by side)
        (vals, valid), view = parts[i], views[i]
        slots = np.flatnonzero(valid)
        if slots.size != len(vals):
            raise CorruptFileError(f"{len(vals)} values for {slots.size} valid slots")
        piece = out[starts[i]: starts[i + 1]]
        if slots.size < valid.size:
            piece.fill(0)       # null slots hold zeros, not the pool's old bytes (one memset
            # beats a scatter of zero rows: 2-4x on 70 % nulls)
        piece[slots] = view
    map_parts(place, range(len(parts)))
    n = starts[-1]
    valid_all = np.concatenate([v for _, v in parts]) if len(parts) > 1 else parts[0][1]
    items, leaf, lists = n, t, []
    while pa.types.is_fixed_size_list(leaf):
        lists.append(leaf)
        items *= leaf.list_size
        leaf = leaf.value_type
    arr = pa.Array.from_buffers(leaf, items, [None, pa.py_buffer(out)])
    for ft in reversed(lists):
        arr = pa.FixedSizeListArray.from_arrays(arr, type=ft)
    nulls = int(n - np.count_nonzero(valid_all))
    if not nulls:
        return arr
    return with_validity(arr, valid_all)
