"""Lance data files: one reader per file format version, behind one interface.

The readers (``open_data_file``, ``load_dictionary_values``) are imported on first use, so that the
table layer can name :class:`DataFileRef` without loading every decoder (a count from manifests
opens no data file).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import DataFileReader, DataFileRef, RowSelection

if TYPE_CHECKING:
    from .dispatch import open_data_file
    from .legacy.dictionary import load_dictionary_values

_LAZY = {"open_data_file": ".dispatch", "load_dictionary_values": ".legacy.dictionary"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DataFileReader", "DataFileRef", "RowSelection", "load_dictionary_values", "open_data_file"]
