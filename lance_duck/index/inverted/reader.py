"""One INVERTED index segment's files: ``metadata.lance`` and per partition ``part_<id>_tokens``,
``_docs`` and ``_invert`` (pylance 14.0.2 writes ``format_version`` 2). Readers of files only:
tokens -> ids (FST), documents (row ids, token counts), postings and positions per token.
"""
from __future__ import annotations

import json
import struct
from contextlib import contextmanager
from functools import cached_property
from typing import TYPE_CHECKING, Any, Iterator, cast

import numpy as np
import numpy.typing as npt

from ... import _state
from ...errors import CorruptFileError, UnsupportedFeatureError
from ..files import CACHE, IndexFile, cached
from .fst import FstMap
from .postings import decode_positions, decode_posting

if TYPE_CHECKING:
    from ...io.fs import FileIO

_TAIL_CODECS = ("varint_delta_v1", "fixed32_v1")
_WORDS = _state.cache("fts_words")
_MISSING = object()


@contextmanager
def _damage(path: str) -> Iterator[None]:
    """What decoding damaged bytes raises, as a CorruptFileError naming the file."""
    try:
        yield
    except (ValueError, IndexError, KeyError, TypeError, struct.error, OverflowError, UnicodeDecodeError) as exc:
        if isinstance(exc, (CorruptFileError, UnsupportedFeatureError)):
            raise
        raise CorruptFileError(f"{path}: damaged INVERTED index data ({type(exc).__name__}: {exc})") from exc


def _open(io: FileIO, path: str, size: int | None) -> IndexFile:
    return cached(("inverted:file", io.key, path), lambda: IndexFile(io, path, size))


class Partition:
    """One partition: its tokens, documents and postings."""

    def __init__(self, io: FileIO, paths: dict[str, str], sizes: dict[str, int | None], pid: int, codec: str,
                 with_position: bool) -> None:
        self.io, self.pid, self.codec, self.with_position = io, pid, codec, with_position
        self._paths = {k: paths[f"part_{pid}_{k}.lance"] for k in ("tokens", "docs", "invert")}
        self._sizes = {k: sizes.get(f"part_{pid}_{k}.lance") for k in ("tokens", "docs", "invert")}

    def _file(self, kind: str) -> IndexFile:
        return _open(self.io, self._paths[kind], self._sizes[kind])

    @cached_property
    def fst(self) -> FstMap:
        f = self._file("tokens")
        if "_token_fst_bytes" not in {x.name for x in f.schema.fields}:
            raise UnsupportedFeatureError(f"{f.path}: INVERTED token set without an FST "
                                          "(an older index format) is not supported")
        with _damage(f.path):
            return cached(("inverted:fst", self.io.key, f.path),
                          lambda: FstMap(f.read(["_token_fst_bytes"])[0][0].as_py(), f.path))

    def token_id(self, token: str) -> int | None:
        """The id of ``token`` in this partition (None: absent); looked up once per token (the
        FST walk is a Python loop per byte)."""
        key = ("tid", self.io.key, self._paths["tokens"], token)
        hit = _WORDS.peek(key, _MISSING)
        if hit is _MISSING:
            with _damage(self._paths["tokens"]):
                hit = _WORDS.put(key, self.fst.get(token.encode("utf-8")))
        return cast("int | None", hit)

    def all_tokens(self) -> dict[str, int]:
        f = self._file("tokens")
        return cached(("inverted:tokens", self.io.key, f.path),
                      lambda: {k.decode("utf-8"): v for k, v in self.fst.items().items()})

    @cached_property
    def docs(self) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint32]]:
        """(row ids uint64, token counts uint32) by doc id."""
        f = self._file("docs")

        def load() -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint32]]:
            rid, n = f.read(["_rowid", "_num_tokens"])
            return (rid.to_numpy(zero_copy_only=False).astype(np.uint64),
                    n.to_numpy(zero_copy_only=False).astype(np.uint32))
        return cached(("inverted:docs", self.io.key, f.path), load)

    @cached_property
    def total_tokens(self) -> int:
        f = self._file("docs")
        t = f.metadata.get("total_tokens")
        return int(t) if t is not None else int(self.docs[1].sum(dtype=np.uint64))

    @cached_property
    def lengths(self) -> npt.NDArray[np.int64]:
        """Document frequency of every token id."""
        f = self._file("invert")
        return cached(("inverted:lengths", self.io.key, f.path),
                      lambda: f.read(["_length"])[0].to_numpy(zero_copy_only=False).astype(np.int64))

    def postings(self, token_ids: list[int], positions: bool = False) -> list[tuple[npt.NDArray[Any], ...]]:
        """(doc ids, freqs[, every doc's positions concatenated]) of each token id."""
        if not token_ids:
            return []
        f = self._file("invert")
        lengths = self.lengths
        if max(token_ids) >= len(lengths):
            raise CorruptFileError(f"{f.path}: token id {max(token_ids)} beyond the {len(lengths)} postings")
        out: list[tuple[npt.NDArray[Any], ...]] = []
        for tid in token_ids:
            key = ("inverted:posting", self.io.key, f.path, tid, positions)
            hit = CACHE.get(key)
            if hit is None:
                with _damage(f.path):
                    hit = self._posting(f, tid, int(lengths[tid]), positions)
                CACHE.put(key, hit, sum(getattr(a, "nbytes", 64) for a in hit) + 64)
            out.append(hit)
        return out

    def position_offsets(self, token_id: int) -> npt.NDArray[np.int64]:
        """Where each posting of ``token_id`` starts in its concatenated positions, and the end
        (int64, one more than the postings; kept in the index cache)."""
        f = self._file("invert")
        key = ("inverted:position_offsets", self.io.key, f.path, token_id)
        hit = CACHE.get(key)
        if hit is None:
            freqs = self.postings([token_id])[0][1]
            hit = np.concatenate(([0], np.cumsum(freqs, dtype=np.int64)))
            CACHE.put(key, hit, hit.nbytes + 64)
        return hit

    def prewarm(self, positions: bool) -> None:
        """Read the token set, documents and every posting list (with positions when asked and
        kept) into the index cache (``prewarm_index``)."""
        self.all_tokens()
        _ = self.docs, self.total_tokens
        every = list(range(len(self.lengths)))
        self.postings(every)
        if positions and self.with_position:
            self.postings(every, positions=True)

    def _posting(self, f: IndexFile, tid: int, length: int, positions: bool) -> tuple[npt.NDArray[Any], ...]:
        rows = np.array([tid], dtype=np.int64)
        what = f"{f.path} (token id {tid})"
        blocks = f.read(["_posting"], rows)[0][0].as_py()
        docs, freqs = decode_posting(blocks, length, self.codec, what)
        if not positions:
            return docs, freqs
        stream, offsets = f.read(["_compressed_position", "_position_block_offset"], rows)
        return docs, freqs, decode_positions(stream[0].as_py() or b"", offsets[0].as_py() or [], freqs, what)


class InvertedSegment:
    """One segment (``_indices/<uuid>/``) of an INVERTED index."""

    def __init__(self, io: FileIO, paths: dict[str, str], sizes: dict[str, int | None]) -> None:
        self.io = io
        if "metadata.lance" not in paths:
            raise CorruptFileError("INVERTED index segment without metadata.lance")
        meta = _open(io, paths["metadata.lance"], sizes.get("metadata.lance"))
        md = meta.metadata
        self.path = meta.path
        fv = md.get("format_version", "1")
        if fv != "2":
            raise UnsupportedFeatureError(f"{meta.path}: INVERTED index format_version {fv} "
                                          "is not supported (2 is read)")
        if md.get("token_set_format", "fst") != "fst":
            raise UnsupportedFeatureError(f"{meta.path}: token set format {md['token_set_format']!r} "
                                          "is not supported (fst is read)")
        if md.get("posting_block_size", "128") != "128":
            raise UnsupportedFeatureError(f"{meta.path}: posting blocks of {md['posting_block_size']} "
                                          "documents are not supported (128 are read)")
        codec = md.get("posting_tail_codec", "fixed32_v1")
        if codec not in _TAIL_CODECS:
            raise UnsupportedFeatureError(f"{meta.path}: posting tail codec {codec!r} is not supported")
        try:
            self.params: dict[str, Any] = json.loads(md.get("params", "{}"))
            pids = [int(p) for p in json.loads(md.get("partitions", "[]"))]
        except (ValueError, TypeError) as exc:
            raise CorruptFileError(f"{meta.path}: unreadable params / partitions metadata ({exc})") from exc
        self.with_position = bool(self.params.get("with_position", False))
        if self.with_position:
            layout = md.get("positions_layout"), md.get("positions_codec")
            if layout != ("shared_stream_v2", "packed_delta_v1"):
                raise UnsupportedFeatureError(f"{meta.path}: positions layout {layout} is not supported "
                                              "(shared_stream_v2 / packed_delta_v1 are read)")
        missing = [f"part_{p}_{k}.lance" for p in pids for k in ("tokens", "docs", "invert")
                   if f"part_{p}_{k}.lance" not in paths]
        if missing:
            raise CorruptFileError(f"{meta.path}: partition files missing: {', '.join(missing)}")
        self.partitions = [Partition(io, paths, sizes, p, codec, self.with_position) for p in pids]
