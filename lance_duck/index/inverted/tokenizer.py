"""The text analysis an INVERTED index was built with, reproduced for query text (pylance 14.0.2).

Pipeline (the order was checked against pylance's indexed tokens): base tokenizer -> drop tokens of
``max_token_length`` UTF-8 bytes or more -> lower case -> Snowball stemming (``snowballstemmer``
implements rust-stemmers' algorithms) -> stop words -> ASCII folding. Base tokenizers:
``simple`` (runs of Unicode letters and digits), ``whitespace`` (split on ASCII whitespace),
``raw`` (the whole text) and ``ngram`` (every run of min..max characters; ``prefix_only``: from
the start only). A token's position is its index in the base tokenizer's output, so removed
tokens leave gaps. Other base tokenizers (``icu``, ``jieba/*``, ``lindera/*``, ``code``) are
refused by name.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Any, NamedTuple, Protocol

from ... import _state
from ...errors import UnsupportedFeatureError
from .stopwords import STOP_WORDS

#: English stop words as pylance 14.0.2 removes them (see :mod:`.stopwords`)
ENGLISH_STOP_WORDS = STOP_WORDS["english"]

_STEM_LANGUAGES = ("arabic", "danish", "dutch", "english", "finnish", "french", "german", "greek",
                   "hungarian", "italian", "norwegian", "portuguese", "romanian", "russian", "spanish",
                   "swedish", "tamil", "turkish")
_SIMPLE = re.compile(r"[^\W_]+")
_WHITESPACE = re.compile(r"[^ \t\n\x0b\x0c\r]+")
# characters NFKD does not take apart (Lucene's ASCII folding maps them)
_FOLD_EXTRA = str.maketrans({"ß": "ss", "æ": "ae", "Æ": "AE", "ø": "o", "Ø": "O", "œ": "oe", "Œ": "OE",
                             "ł": "l", "Ł": "L", "đ": "d", "Đ": "D", "þ": "th", "Þ": "TH", "ð": "d",
                             "Ð": "D", "ı": "i", "ħ": "h", "Ħ": "H", "ŧ": "t", "Ŧ": "T"})


class Token(NamedTuple):
    text: str
    position: int


def _fold(text: str) -> str:
    if text.isascii():
        return text
    text = text.translate(_FOLD_EXTRA)
    out = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return out


class _Stemmer(Protocol):
    def stemWord(self, word: str) -> str: ...  # noqa: N802 - snowballstemmer's name


@_state.memo("stemmers")
def _stemmer(language: str) -> _Stemmer:
    import snowballstemmer  # type: ignore[import-untyped]
    stemmer: _Stemmer = snowballstemmer.stemmer(language)
    return stemmer


@_state.memo("fts_words")
def _stem(language: str, word: str) -> str:
    """``word``'s Snowball stem in ``language`` (kept: the pure-Python stemmer costs ~0.1 ms a word)."""
    return str(_stemmer(language).stemWord(word))


class Tokenizer:
    """The analyzer described by an index's ``params`` JSON (see the module docstring)."""

    def __init__(self, params: dict[str, Any]):
        self.params = params
        base = str(params.get("base_tokenizer", "simple"))
        if params.get("lance_tokenizer", "text") not in ("text", None):
            raise UnsupportedFeatureError(f"INVERTED index document tokenizer {params['lance_tokenizer']!r} "
                                          "is not supported (text is)")
        if base not in ("simple", "whitespace", "raw", "ngram"):
            raise UnsupportedFeatureError(f"INVERTED index base tokenizer {base!r} is not supported "
                                          "(simple, whitespace, raw and ngram are)")
        self.base = base
        mtl = params.get("max_token_length", 40)
        self.max_len = None if mtl is None else int(mtl)
        self.lower = bool(params.get("lower_case", True))
        self.fold = bool(params.get("ascii_folding", False))
        language = str(params.get("language", "English")).lower()
        self.stem: str | None = None
        if params.get("stem", False):
            if language not in _STEM_LANGUAGES:
                raise UnsupportedFeatureError(f"stemming for language {params.get('language')!r} is not supported")
            _stemmer(language)             # fails here for a language snowballstemmer lacks
            self.stem = language
        self.stop: frozenset[str] = frozenset()
        if params.get("remove_stop_words", False):
            custom = params.get("custom_stop_words")
            if custom is not None:
                self.stop = frozenset(str(w) for w in custom)
            elif language in STOP_WORDS:
                self.stop = STOP_WORDS[language]
            else:
                raise UnsupportedFeatureError(f"stop words for language {params.get('language')!r} are not "
                                              f"supported ({', '.join(sorted(STOP_WORDS))} and custom_stop_words are)")
        self.ngram = (int(params.get("min_ngram_length", 3)), int(params.get("max_ngram_length", 3)),
                      bool(params.get("prefix_only", False)))

    def _base(self, text: str) -> list[str]:
        if self.base == "simple":
            return _SIMPLE.findall(text)
        if self.base == "whitespace":
            return _WHITESPACE.findall(text)
        if self.base == "raw":
            return [text]
        lo, hi, prefix = self.ngram
        n = len(text)
        out = []
        for start in range(1 if prefix else n):
            for size in range(lo, hi + 1):
                if start + size <= n:
                    out.append(text[start:start + size])
        return out

    def tokens(self, text: str) -> list[Token]:
        """The tokens of ``text`` with their positions, as the index holds them."""
        out = []
        for pos, raw in enumerate(self._base(text)):
            tok = self._analyzed(raw)
            if tok is not None:
                out.append(Token(tok, pos))
        return out

    def raw_tokens(self, text: str) -> list[tuple[str, str | None]]:
        """Every token of the base tokenizer as it came out of it, with what the index holds for it
        (None: dropped; pylance's fuzzy match expands the former, see ``search.fts``)."""
        return [(raw, self._analyzed(raw)) for raw in self._base(text)]

    def _analyzed(self, tok: str) -> str | None:
        if self.max_len is not None and len(tok.encode("utf-8")) >= self.max_len:
            return None
        if self.lower:
            tok = tok.lower()
        if self.stem is not None:
            tok = _stem(self.stem, tok)
        if tok in self.stop:
            return None
        return _fold(tok) if self.fold else tok
