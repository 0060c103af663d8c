"""Storage access: fsspec filesystems, byte-range reads and caches."""
from .fs import FileIO, InputFile, open_io

__all__ = ["FileIO", "InputFile", "open_io"]
