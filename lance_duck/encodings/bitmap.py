"""LSB-first bitmaps and Arrow arrays from (values, validity).

Used by: 2.0 ``Flat(1)`` booleans and ``Nullable[SomeNull]`` validity bitmaps; 2.1/2.2 ``Flat(1)``
booleans, ``FixedSizeList`` item-validity buffers, and every reader that turns a decoded
numpy value array plus a validity mask into a ``pyarrow.Array``.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..errors import CorruptFileError
from ._buf import BufferLike, as_u8, need

__all__ = ["unpack_bits", "pack_validity", "validity_buffer", "bitmap_buffer", "primitive_array",
           "bool_array", "fixed_size_binary_array"]


def unpack_bits(data: BufferLike, n: int, offset: int = 0) -> np.ndarray:
    """Bits ``[offset, offset + n)`` of an LSB-first bitmap as a bool array."""
    n = int(n)
    offset = int(offset)
    if n < 0 or offset < 0:
        raise CorruptFileError(f"bitmap: negative length/offset ({n}, {offset})")
    buf = as_u8(data)
    first, skip = divmod(offset, 8)
    nbytes = (skip + n + 7) // 8
    need(buf, first + nbytes, "bitmap")
    bits = np.unpackbits(buf[first: first + nbytes], count=skip + n, bitorder="little")
    return bits[skip:].view(np.bool_)


def pack_validity(mask: np.ndarray) -> pa.Buffer:
    """An Arrow validity (or boolean values) bitmap from a bool mask (True = valid/true)."""
    return pa.py_buffer(np.packbits(np.asarray(mask, dtype=np.bool_), bitorder="little"))


def validity_buffer(mask: np.ndarray | None) -> tuple[pa.Buffer | None, int]:
    """(Arrow validity buffer or None when every slot is valid, null count)."""
    if mask is None:
        return None, 0
    mask = np.asarray(mask, dtype=np.bool_)
    valid = int(np.count_nonzero(mask))
    if valid == mask.size:
        return None, 0
    return pack_validity(mask), mask.size - valid


def bitmap_buffer(data: BufferLike, n: int, offset: int = 0) -> pa.Buffer:
    """Bits ``[offset, offset+n)`` of an LSB-first bitmap as an Arrow buffer starting at bit 0.

    Zero-copy when ``offset`` is a multiple of 8.
    """
    buf = as_u8(data)
    n = int(n)
    if offset % 8 == 0:
        nbytes = (n + 7) // 8
        need(buf, offset // 8 + nbytes, "bitmap")
        return pa.py_buffer(buf[offset // 8: offset // 8 + nbytes])
    return pack_validity(unpack_bits(buf, n, offset))


def primitive_array(arrow_type: pa.DataType, values: np.ndarray, validity: np.ndarray | None = None
                    ) -> pa.Array:
    """A fixed-width Arrow array over ``values`` (no copy) with an optional bool validity mask.

    ``values`` must hold exactly ``len * byte_width`` bytes' worth of elements in the physical layout
    of ``arrow_type`` (e.g. uint64 bit patterns for float64 or timestamps, or (n, 16) uint8 for
    decimal128).
    """
    values = np.ascontiguousarray(values)
    width = arrow_type.bit_width // 8
    if width <= 0:
        raise CorruptFileError(f"primitive_array: {arrow_type} is not fixed-width")
    n, rem = divmod(values.nbytes, width)
    if rem:
        raise CorruptFileError(f"primitive_array: {values.nbytes} bytes is not a whole number of {arrow_type}")
    vbuf, nulls = validity_buffer(validity)
    if validity is not None and len(validity) != n:
        raise CorruptFileError(f"primitive_array: {len(validity)} validity bits for {n} values")
    return pa.Array.from_buffers(arrow_type, n, [vbuf, pa.py_buffer(values)], null_count=nulls)


def fixed_size_binary_array(arrow_type: pa.DataType, values: np.ndarray,
                            validity: np.ndarray | None = None) -> pa.Array:
    """fixed_size_binary / decimal arrays from raw bytes (alias of :func:`primitive_array`)."""
    return primitive_array(arrow_type, values, validity)


def bool_array(bits: BufferLike | np.ndarray, n: int, validity: np.ndarray | None = None,
               offset: int = 0) -> pa.Array:
    """A boolean Arrow array from an LSB-first bitmap (or a bool numpy array) and optional validity."""
    if isinstance(bits, np.ndarray) and bits.dtype == np.bool_:
        if bits.size != n:
            raise CorruptFileError(f"bool_array: {bits.size} values for length {n}")
        vals = pack_validity(bits)
    else:
        vals = bitmap_buffer(bits, n, offset)
    vbuf, nulls = validity_buffer(validity)
    return pa.Array.from_buffers(pa.bool_(), int(n), [vbuf, vals], null_count=nulls)
