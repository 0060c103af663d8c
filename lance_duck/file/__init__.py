"""Lance data files: one reader per file format version, behind one interface.

The readers (``open_data_file``, ``load_dictionary_values``) are imported on first use, so that the
table layer can name :class:`DataFileRef` without loading every decoder (a count from manifests
opens no data file).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes
from .base import DataFileReader, DataFileRef, RowSelection

if TYPE_CHECKING:
    from .dispatch import open_data_file
    from .legacy.dictionary import load_dictionary_values

__getattr__ = lazy_attributes(__name__, {"open_data_file": ".dispatch", "load_dictionary_values": ".legacy.dictionary"})


__all__ = ["DataFileReader", "DataFileRef", "RowSelection", "load_dictionary_values", "open_data_file"]
