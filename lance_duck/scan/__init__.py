"""Scans of a pinned table version: LanceDataset / LanceFragment / LanceScanner."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .dataset import LanceDataset, dataset
from .fragment import LanceFragment

if TYPE_CHECKING:
    from .scanner import LanceScanner


def __getattr__(name: str) -> Any:
    # the scanner (and the scan machinery under it) loads on first use: opening a dataset needs none of it
    if name == "LanceScanner":
        from .scanner import LanceScanner
        return LanceScanner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["dataset", "LanceDataset", "LanceFragment", "LanceScanner"]
