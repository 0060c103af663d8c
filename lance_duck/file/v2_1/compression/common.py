"""What the three decoding roles share: the flat inner encodings, FSL layers."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...._proto import encodings_v2_1_pb2 as pb
from ....errors import CorruptFileError, UnsupportedFeatureError

#: the unsigned little-endian dtype of each bit width
UDT: dict[int, np.dtype[Any]] = {8: np.dtype(np.uint8), 16: np.dtype("<u2"), 32: np.dtype("<u4"), 64: np.dtype("<u8")}


def encoding_kind(enc: pb.CompressiveEncoding) -> str:
    """The ``compression`` oneof case of a ``CompressiveEncoding``."""
    k = enc.WhichOneof("compression")
    if k is None:
        raise CorruptFileError("compressive encoding is empty")
    return str(k)


def flat_bits(enc: pb.CompressiveEncoding, what: str, allowed: tuple[int, ...]) -> int:
    """Bits per value of a ``Flat`` inner encoding, one of ``allowed``."""
    if encoding_kind(enc) != "flat":
        raise UnsupportedFeatureError(f"{what}: expected a flat inner encoding, got {encoding_kind(enc)!r}")
    bits = int(enc.flat.bits_per_value)
    if bits not in allowed:
        raise UnsupportedFeatureError(f"{what}: flat inner encoding of {bits} bits (expected {allowed})")
    return bits



def fsl_layers(m: pb.FixedSizeList) -> tuple[list[tuple[int, bool]], pb.FixedSizeList]:
    """The nested FixedSizeList layers ((items_per_value, has_validity), outermost first) and the
    innermost one (whose ``values`` is the item encoding)."""
    layers = []
    cur = m
    while True:
        layers.append((int(cur.items_per_value), bool(cur.has_validity)))
        if encoding_kind(cur.values) != "fixed_size_list":
            return layers, cur
        cur = cur.values.fixed_size_list


@dataclass
class ChunkSet:
    """Value buffers of k mini-block chunks: ``bufs[b] = (data, offsets, sizes)``."""
    counts: np.ndarray                       # values per chunk
    bufs: list[tuple[np.ndarray, np.ndarray, np.ndarray]]

    @property
    def total(self) -> int:
        return int(self.counts.sum())
