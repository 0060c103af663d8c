"""Lance data files: one reader per file format version, behind one interface."""
from .base import DataFileReader, DataFileRef, RowSelection, open_data_file

__all__ = ["DataFileReader", "DataFileRef", "RowSelection", "open_data_file"]
