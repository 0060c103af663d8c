"""Scans of a pinned table version: LanceDataset / LanceFragment / LanceScanner."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes
from .dataset import LanceDataset, dataset
from .fragment import LanceFragment

if TYPE_CHECKING:
    from .scanner import LanceScanner


# the scanner (and the scan machinery under it) loads on first use: opening a dataset needs none of it
__getattr__ = lazy_attributes(__name__, {"LanceScanner": ".scanner"})


__all__ = ["dataset", "LanceDataset", "LanceFragment", "LanceScanner"]
