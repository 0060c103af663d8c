"""Scans of a pinned table version: LanceDataset / LanceFragment / LanceScanner."""
from .dataset import LanceDataset, dataset
from .fragment import LanceFragment
from .scanner import LanceScanner

__all__ = ["dataset", "LanceDataset", "LanceFragment", "LanceScanner"]
