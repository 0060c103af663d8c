"""Which leaf columns a field needs, and building its Arrow array from decoded leaves.

Leaves are consumed in pre-order (format notes 1.3/6.2): a field without children, a packed
struct or a blob is one leaf. Structs take their validity from the first child's levels; lists
and maps their offsets and validity; fixed-size lists of structs decimate element levels.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa

from ...encodings.bitmap import validity_buffer
from ...errors import CorruptFileError, UnsupportedFeatureError
from ...schema import LanceField
from ..blob_types import BLOB_METADATA, DESCRIPTION, DESCRIPTION_V2, is_blob_v2
from .column import LeafData
from .direct_lists import DirectUnraveler
from .repdef import Unraveler
from .values import with_validity


@dataclass
class Leaf:
    field: LanceField
    arrow_type: pa.DataType        # value type of the leaf's pages
    dict_type: pa.DataType | None  # the field's dictionary type, if dictionary-typed
    multiplier: int                # rows -> entries (fixed-size lists of structs)


def is_leaf(f: LanceField) -> bool:
    return not f.children or f.is_packed_struct or f.is_blob or is_blob_v2(f)


def _fsl_struct_dim(f: LanceField) -> int | None:
    """The list size of a fixed-size list whose child is a struct (has child fields)."""
    if f.logical_type.startswith("fixed_size_list") and f.children:
        return int(f.logical_type.rsplit(":", 1)[-1])
    return None


def leaf_type(f: LanceField, minor: int) -> tuple[pa.DataType, pa.DataType | None]:
    if f.is_blob and minor == 1:
        return DESCRIPTION, None
    if is_blob_v2(f):
        return DESCRIPTION_V2, None
    t = f.arrow_type
    if pa.types.is_dictionary(t):
        return t.value_type, t
    return t, None


def leaves(f: LanceField, minor: int, mult: int = 1, in_list: bool = False) -> Iterator[Leaf]:
    """The leaf columns of ``f`` in pre-order; ``mult``: entries per row of the pages above ``f``."""
    if is_leaf(f):
        t, d = leaf_type(f, minor)
        yield Leaf(f, t, d, mult)
        return
    dim = _fsl_struct_dim(f)
    if dim is not None and in_list and minor < 3:
        # pylance 14.0.2 writes these at 2.2 with levels it cannot read back itself
        raise UnsupportedFeatureError(f"field {f.name!r}: a fixed-size list of structs inside a list "
                                      f"is not supported in file format 2.{minor} (it is in 2.3)")
    for c in f.children:
        yield from leaves(c, minor, mult * (dim or 1), in_list or f.is_list or f.logical_type == "map")


def output_type(f: LanceField, minor: int) -> pa.DataType:
    if is_leaf(f):
        t, d = leaf_type(f, minor)
        return d if d is not None else t
    if f.is_struct:
        return _struct_type(f, minor)
    return f.arrow_type


def _struct_type(f: LanceField, minor: int) -> pa.DataType:
    """A struct's type, with blob children as the descriptions pylance returns for them."""
    t = f.arrow_type
    if not any(c.is_blob or is_blob_v2(c) for c in f.walk()):
        return t
    kids = []
    for i, c in enumerate(f.children):
        orig, ct = t.field(i), output_type(c, minor)
        kids.append(orig if ct == orig.type else
                    pa.field(orig.name, ct, orig.nullable, metadata=BLOB_METADATA.get(ct, orig.metadata)))
    return pa.struct(kids)


def build(f: LanceField, data: Iterator[LeafData], minor: int,
          what: str) -> tuple[pa.Array, Unraveler | DirectUnraveler]:
    """The Arrow array of field ``f`` from its leaves (in pre-order), and the levels walker."""
    if is_leaf(f):
        leaf = next(data)
        unr: Unraveler | DirectUnraveler
        if leaf.lists is not None:
            unr = DirectUnraveler(leaf.lists, leaf.layers, f"{what} field {f.name!r}")
        else:
            unr = Unraveler(leaf.rep, leaf.defs, leaf.layers, f"{what} field {f.name!r}")
        valid = unr.item_validity()
        arr = leaf.values
        if valid is not None and len(valid) != len(arr):
            raise CorruptFileError(f"{what} field {f.name!r}: {len(valid)} levels for {len(arr)} values")
        return with_validity(arr, valid), unr
    t = f.arrow_type
    if f.is_struct:
        t = _struct_type(f, minor)
        built = [build(c, data, minor, what) for c in f.children]
        unr = built[0][1]
        valid = unr.item_validity()
        kids = [a for a, _ in built]
        n = len(kids[0])
        if any(len(k) != n for k in kids):
            raise CorruptFileError(f"{what} field {f.name!r}: struct children differ in length")
        vbuf, nulls = validity_buffer(valid)
        return pa.Array.from_buffers(t, n, [vbuf], null_count=nulls, children=kids), unr
    if f.is_list or f.logical_type == "map":
        child, unr = build(f.children[0], data, minor, what)
        offsets, valid = unr.list_offsets()
        large = pa.types.is_large_list(t)
        if not large and offsets.size and offsets[-1] > 2**31 - 1:
            raise UnsupportedFeatureError(f"{what} field {f.name!r}: list child exceeds 2^31 items")
        if offsets.size and int(offsets[-1]) != len(child):
            raise CorruptFileError(f"{what} field {f.name!r}: lists hold {int(offsets[-1])} items, "
                                   f"{len(child)} decoded")
        obuf = pa.py_buffer(offsets.astype(np.int64 if large else np.int32))
        vbuf, nulls = validity_buffer(valid)
        if f.logical_type == "map":
            entries = pa.struct([t.key_field, t.item_field])
            if child.type != entries:
                raise CorruptFileError(f"{what} field {f.name!r}: map entries {child.type} != {entries}")
        return pa.Array.from_buffers(t, offsets.size - 1, [vbuf, obuf], null_count=nulls,
                                     children=[child]), unr
    dim = _fsl_struct_dim(f)
    if dim is not None:
        child, unr = build(f.children[0], data, minor, what)
        unr.decimate(dim)
        valid = unr.item_validity()
        n = len(child) // dim
        if n * dim != len(child) or (valid is not None and len(valid) != n):
            raise CorruptFileError(f"{what} field {f.name!r}: {len(child)} items do not make "
                                   f"{dim}-item rows")
        vbuf, nulls = validity_buffer(valid)
        return pa.Array.from_buffers(t, n, [vbuf], null_count=nulls, children=[child]), unr
    raise UnsupportedFeatureError(f"{what} field {f.name!r}: logical type {f.logical_type!r} is not supported")
