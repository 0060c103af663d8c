"""NGRAM index reader: candidate rows for substring filters (``contains``, ``LIKE``, ``starts_with``...).

``ngram_postings.lance`` holds ``tokens`` (u32) and ``posting_list`` (a serialized roaring
treemap of row ids: u64 count, then per high half a u32 key and a portable roaring bitmap).
Lance lower-cases and ASCII-folds each text, takes every trigram of its characters and keeps
those made of ASCII letters and digits only; a trigram ``abc`` is the token
``37² · p(a) + 37 · p(b) + p(c)`` with ``p`` = 1..10 for ``0``..``9`` and 11..36 for ``a``..``z``.

A row containing a needle contains every trigram of the needle's runs of ASCII letters and
digits (lower-cased): those runs survive lower-casing and folding of the row's text
unchanged. The same holds ignoring case for an ASCII needle (``ILIKE``): a character matching
an ASCII letter under Unicode case folding is that letter in either case, U+212A (Kelvin sign,
lower-cased to ``k``) or U+017F (long s, folded to ``s``). So the rows holding all those tokens
are a superset of the matches ("at most");
a token absent from the index means no indexed row matches. Needles without such a trigram
(shorter than three characters, punctuation) are not answered: the scan reads everything.
"""
from __future__ import annotations

import re
import struct
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pyarrow as pa

from ..errors import CorruptFileError
from .checks import damaged, int_column
from .files import CACHE, IndexFile, cached, nbytes_of
from .roaring import decode_roaring
from .scalar import sorted_unique
from .terms import MAX_ZONE_SHARE, Terms, Unsupported

if TYPE_CHECKING:
    from ..io.fs import FileIO

FILE_NAME = "ngram_postings.lance"
#: contains, and icontains (ASCII needles, any case: the tokens are lower-cased trigrams anyway)
TEXT_OPS = frozenset({"contains", "icontains"})
NGRAM = 3
_ALPHA_SPAN = 37
_RUN = re.compile(r"[0-9A-Za-z]{3,}")
#: the largest token (``zzz``; pylance also writes a token 0)
MAX_TOKEN = 36 * (_ALPHA_SPAN * _ALPHA_SPAN + _ALPHA_SPAN + 1)


def _position(ch: str) -> int:
    c = ord(ch)
    return c - ord("0") + 1 if c <= ord("9") else c - ord("a") + 11


def needle_tokens(needle: str) -> set[int]:
    """The tokens every row containing ``needle`` holds (empty: the index cannot help)."""
    out: set[int] = set()
    for run in _RUN.findall(needle):
        run = run.lower()
        for i in range(len(run) - NGRAM + 1):
            a, b, c = (_position(ch) for ch in run[i:i + NGRAM])
            out.add(a * _ALPHA_SPAN * _ALPHA_SPAN + b * _ALPHA_SPAN + c)
    return out


def decode_treemap(buf: bytes | memoryview | pa.Buffer, what: str) -> np.ndarray:
    """Sorted uint64 members of a serialized roaring treemap (high halves strictly ascending,
    each bitmap decoded strictly, every byte accounted for)."""
    view = memoryview(buf).cast("B")
    if len(view) < 8:
        raise CorruptFileError(f"{what}: roaring treemap truncated")
    (count,) = struct.unpack_from("<Q", view, 0)
    if 8 + 12 * count > len(view):        # a key and an empty bitmap's header at least
        raise CorruptFileError(f"{what}: roaring treemap of {count} bitmaps in {len(view)} bytes")
    pos, parts, last = 8, [], -1
    for _ in range(count):
        if pos + 4 > len(view):
            raise CorruptFileError(f"{what}: roaring treemap truncated at byte {pos}")
        (key,) = struct.unpack_from("<I", view, pos)
        if key <= last:
            raise CorruptFileError(f"{what}: roaring treemap keys not ascending ({key} after {last})")
        last = key
        low, used = decode_roaring(view[pos + 4:], what)
        parts.append(low.astype(np.uint64) | (np.uint64(key) << np.uint64(32)))
        pos += 4 + used
    if pos != len(view):
        raise CorruptFileError(f"{what}: {len(view) - pos} trailing bytes after the roaring treemap")
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)


def _members(small: np.ndarray, big: np.ndarray) -> np.ndarray:
    """The values of sorted ``small`` that are in sorted ``big`` (binary search: O(small · log big))."""
    if len(big) == 0:
        return big
    pos = np.minimum(np.searchsorted(big, small), len(big) - 1)
    members: np.ndarray = small[big[pos] == small]
    return members


class NGramIndex:
    """``ngram_postings.lance`` of one segment: the token column is loaded once, posting
    lists are read per token row and cached."""

    #: the indexed column's type (set by the search; this file holds none to compare)
    value_type: pa.DataType | None = None

    def __init__(self, io: FileIO, path: str, size: int | None) -> None:
        self.io = io
        self.path = path
        self.size = size

    def _file(self) -> IndexFile:
        return cached(("ngram-file", self.path), lambda: IndexFile(self.io, self.path, self.size))

    def _tokens(self) -> tuple[np.ndarray, np.ndarray]:
        """(sorted tokens, their rows in the file)."""
        def load() -> tuple[np.ndarray, np.ndarray]:
            (tokens,) = self._file().read(["tokens"])
            keys = int_column(tokens, self.path, "tokens")
            order = np.argsort(keys, kind="stable")
            keys = keys[order]
            if len(keys) and (keys[0] < 0 or keys[-1] > MAX_TOKEN or np.any(keys[1:] == keys[:-1])):
                raise damaged(self.path, "a token that is no trigram, or twice")
            return keys, order
        return cached(("ngram-tokens", self.path), load)

    def _postings(self, rows: list[int]) -> dict[int, np.ndarray]:
        out: dict[int, np.ndarray] = {}
        missing: list[int] = []
        for r in rows:
            got = CACHE.get(("ngram-posting", self.path, r))
            if got is None:
                missing.append(r)
            else:
                out[r] = got
        if missing:
            order = sorted(missing)
            (lists,) = self._file().read(["posting_list"], np.asarray(order, dtype=np.int64))
            for r, blob in zip(order, lists):
                if not blob.is_valid:
                    raise damaged(self.path, f"token row {r} has no posting list")
                ids = decode_treemap(blob.as_buffer(), f"{self.path}: posting list of token row {r}")
                CACHE.put(("ngram-posting", self.path, r), ids, nbytes_of(ids))
                out[r] = ids
        return out

    def prewarm(self) -> None:
        """Read the tokens and every posting list into the index cache (``prewarm_index``)."""
        self._postings(list(range(len(self._tokens()[0]))))

    def _rows_for(self, needles: Sequence[str]) -> list[int] | None:
        """Token rows of every trigram of ``needles``; None when one is not in the index."""
        tokens = set()
        for needle in needles:
            tokens |= needle_tokens(needle)
        if not tokens:
            raise Unsupported(f"no trigram in {list(needles)!r}")
        keys, rows = self._tokens()
        wanted = np.array(sorted(tokens), dtype=np.int64)
        pos = np.minimum(np.searchsorted(keys, wanted), max(len(keys) - 1, 0))
        if len(keys) == 0 or np.any(keys[pos] != wanted):
            return None
        return [int(r) for r in rows[pos]]

    def search(self, terms: Terms, fragment_rows: dict[int, int]) -> np.ndarray:
        """Sorted unique uint64 ids (row addresses or stable row ids) of the candidate rows;
        Unsupported when they are more than half the rows of ``fragment_rows`` (scan instead)."""
        result: np.ndarray | None = None
        for preds in terms:
            union = []
            for p in preds:
                if p.op not in TEXT_OPS:
                    raise Unsupported(p.op)
                rows = self._rows_for(p.value.to_pylist())
                if rows is None:
                    continue                      # a trigram no indexed row holds: no candidate
                lists = self._postings(rows)
                shortest, *others = sorted(rows, key=lambda r: len(lists[r]))   # rows: one per trigram
                found = lists[shortest]
                for r in others:
                    if len(found) == 0:
                        break
                    found = _members(found, lists[r])
                union.append(found)
            ids = sorted_unique(np.concatenate(union)) if union else np.empty(0, dtype=np.uint64)
            result = ids if result is None else np.intersect1d(result, ids, assume_unique=True)
        if result is None:
            return np.empty(0, dtype=np.uint64)
        if len(result) > MAX_ZONE_SHARE * sum(fragment_rows.values()):
            raise Unsupported(f"substring candidates are {len(result)} rows")
        return result


__all__ = ["FILE_NAME", "NGramIndex", "TEXT_OPS", "decode_treemap", "needle_tokens"]
