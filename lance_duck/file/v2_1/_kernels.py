"""Thin adapters from this reader to the shared kernels in ``lance_duck.encodings``."""
from __future__ import annotations

import numpy as np

from ... import trace
from ...encodings import fsst as _fsst
from ...encodings import general as _general
from ...errors import UnsupportedFeatureError


def decompress(scheme: int, data: np.ndarray, what: str) -> np.ndarray:
    """One compressed unit: scheme 1 = LZ4 (u32 size + raw block), 2 = ZSTD (u64 size + frame)."""
    if scheme not in (1, 2):
        raise UnsupportedFeatureError(f"{what}: general compression scheme {scheme} is not supported")
    return _general.decompress(data, scheme)


def decompress_many(scheme: int, offsets: np.ndarray, data: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    if scheme not in (1, 2):
        raise UnsupportedFeatureError(f"{what}: general compression scheme {scheme} is not supported")
    return _general.decompress_many(data, offsets, scheme)


def fsst_decompress(symbol_table: bytes | _fsst.SymbolTable, offsets: np.ndarray, data: np.ndarray, *, int32_offsets: bool = False
                    ) -> tuple[np.ndarray, np.ndarray]:
    """FSST-decode every string delimited by ``offsets``; returns (offsets from 0, bytes): int64,
    or int32 with ``int32_offsets`` when the output surely fits (see ``encodings.fsst.decompress``)."""
    trace.record("path:fsst:decompress", len(offsets) - 1)
    return _fsst.decompress(symbol_table, offsets, data, int32_offsets=int32_offsets)


def fsst_decompress_many(inputs: list[tuple[bytes | _fsst.SymbolTable, np.ndarray, np.ndarray]], *,
                         int32_offsets: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """FSST-decode several inputs (symbol table, offsets, bytes), e.g. a column's pages, into one
    output (see ``encodings.fsst.decompress_many``)."""
    for _, offsets, _ in inputs:
        trace.record("path:fsst:decompress", len(offsets) - 1)
    return _fsst.decompress_many(inputs, int32_offsets=int32_offsets)
