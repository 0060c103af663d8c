"""Numpy kernels shared by the 2.0 and 2.1/2.2 file readers (no protobuf knowledge).

Modules: :mod:`.bitmap` (LSB-first bitmaps, Arrow arrays from values + validity),
:mod:`.fastlanes` (FastLanes 1024-value blocks), :mod:`.bitpack` (sequential bit streams),
:mod:`.fsst`, :mod:`.rle`, :mod:`.bss` (byte-stream split), :mod:`.general` (zstd / lz4 framings).
Inputs may be ``bytes``, ``memoryview``, ``pyarrow.Buffer`` or numpy arrays; short or inconsistent
buffers raise :class:`lance_duck.errors.CorruptFileError`.
"""
