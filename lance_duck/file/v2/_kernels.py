"""Thin adapters from this reader to the shared kernels in ``lance_duck.encodings``."""
from __future__ import annotations

import numpy as np

from ...encodings import fsst as _fsst
from ...encodings import general as _general
from ...errors import UnsupportedFeatureError


def decompress(scheme: int, data: np.ndarray, what: str) -> np.ndarray:
    """One compressed unit: scheme 1 = LZ4 (u32 size + raw block), 2 = ZSTD (u64 size + frame)."""
    if scheme not in (1, 2):
        raise UnsupportedFeatureError(f"{what}: general compression scheme {scheme} is not supported")
    return _general.decompress(data, scheme)


def decompress_many(scheme: int, offsets: np.ndarray, data: np.ndarray, what: str):
    if scheme not in (1, 2):
        raise UnsupportedFeatureError(f"{what}: general compression scheme {scheme} is not supported")
    return _general.decompress_many(data, offsets, scheme)


def fsst_decompress(symbol_table: bytes, offsets: np.ndarray, data: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """FSST-decode every string delimited by ``offsets``; returns (int64 offsets from 0, bytes)."""
    return _fsst.decompress(symbol_table, offsets, data)
