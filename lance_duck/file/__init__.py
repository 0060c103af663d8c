"""Lance data files: one reader per file format version, behind one interface."""
from .base import DataFileReader, DataFileRef, RowSelection
from .legacy.dictionary import load_dictionary_values
from .dispatch import open_data_file

__all__ = ["DataFileReader", "DataFileRef", "RowSelection", "load_dictionary_values", "open_data_file"]
