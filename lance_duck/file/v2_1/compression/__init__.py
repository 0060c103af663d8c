"""Dispatch from ``CompressiveEncoding`` protobufs to decoding kernels.

Three roles (see the format notes, section 5):

* :func:`decode_miniblock` (``miniblock.py``) -- the value buffers of many mini-block chunks at once -> values;
* :func:`decode_block` / :func:`decode_block_batch` (``block.py``) -- whole buffers (dictionaries, levels;
  :func:`levels_at` a few levels of them);
* :func:`decode_per_value` (``fullzip.py``) -- full-zip values (already unzipped) -> values.

Every decoder reports the encodings it used to an open :func:`lance_duck.trace.decode_trace`.
"""
from __future__ import annotations

from .block import decode_block, decode_block_batch, levels_at
from .common import ChunkSet, encoding_kind
from .fullzip import decode_per_value
from .miniblock import decode_miniblock, decode_miniblock_runs, decode_miniblock_selected

__all__ = ["ChunkSet", "decode_block", "decode_block_batch", "decode_miniblock", "decode_miniblock_runs", "decode_miniblock_selected",
           "decode_per_value", "encoding_kind", "levels_at"]
