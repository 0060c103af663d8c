"""Full-text search over INVERTED indices: pylance's ``full_text_query`` with its BM25 scores.

A query (``search.query``) is evaluated column by column into {row address: score}:

* indexed rows: every partition of every segment of the column's INVERTED index (statistics N,
  average document length and document frequencies summed over all partitions);
* rows of fragments no segment covers: tokenized here with the index's analyzer and scored
  with the same formula (flat search, as pylance);
* deleted rows and rows of fragments gone from the version are dropped.

BM25 (verified against pylance 14.0.2): idf = ln((N - n + 0.5) / (n + 0.5) + 1),
score = idf * (k1 + 1) * tf / (tf + k1 * (1 - b + b * dl / avgdl)), k1 = 1.2, b = 0.75, float32.
Results are ordered by score (descending), then row address; ``limit`` keeps the top ones.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np
import pyarrow as pa

from ..errors import InvalidArgumentError, UnsupportedFeatureError
from ..index import index_segments
from ..index.files import segment_file_path
from ..index.inverted.reader import InvertedSegment, Partition
from ..index.inverted.tokenizer import Token, Tokenizer
from ..index.search import row_id_map
from .query import (BooleanQuery, BoostQuery, FullTextQuery, MatchQuery, MultiMatchQuery, Occur, PhraseQuery,
                    to_query)

if TYPE_CHECKING:
    from ..schema import LanceField
    from ..table.fragment import FragmentInfo
    from ..table.snapshot import Snapshot

K1 = 1.2
B = 0.75
SCORE = "_score"


@dataclass
class Hits:
    """Row addresses (sorted unique uint64) and their scores (float64 while combining)."""

    addrs: np.ndarray
    scores: np.ndarray

    @staticmethod
    def empty() -> Hits:
        return Hits(np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.float64))

    @staticmethod
    def of(addrs: np.ndarray, scores: np.ndarray) -> Hits:
        """Summed per address."""
        if len(addrs) == 0:
            return Hits.empty()
        if len(addrs) == 1 or bool(np.all(addrs[1:] > addrs[:-1])):
            return Hits(addrs, scores)
        # a stable sort (timsort: the terms' hits arrive as a few sorted runs) and one reduceat; the
        # scores of one address are added in their input order, as a bincount over np.unique would
        order = np.argsort(addrs, kind="stable")
        sorted_addrs = addrs[order]
        starts = np.flatnonzero(np.concatenate(([True], sorted_addrs[1:] != sorted_addrs[:-1])))
        return Hits(sorted_addrs[starts], np.add.reduceat(np.asarray(scores, dtype=np.float64)[order], starts))


@dataclass
class _Docs:
    """One scoring unit (a partition, or the flat unindexed rows) of a column."""

    ids: np.ndarray                         # per doc: the index's row id (flat docs: the row address)
    lengths: np.ndarray                     # tokens per doc
    partition: Partition | None = None
    addrs: np.ndarray | None = None         # indexed docs: row address per doc (DEAD: gone)
    all_live: bool = True                   # no doc of the unit is DEAD
    norms: np.ndarray | None = None         # indexed docs: k1 * (1 - b + b * length / avgdl)
    # flat docs: token -> (doc numbers ascending, tf per doc, every doc's positions concatenated)
    flat: dict[str, tuple[list[int], list[int], list[int]]] = field(default_factory=dict)

    @property
    def min_norm(self) -> float:
        """The smallest length norm (:meth:`ColumnIndex.norms` made them)."""
        assert self.norms is not None
        if not hasattr(self, "_min_norm"):
            self._min_norm = float(self.norms.min()) if len(self.norms) else 0.0
        return self._min_norm

    def addresses(self, docs: np.ndarray) -> np.ndarray:
        """Row addresses of doc numbers ``docs`` (DEAD for deleted rows)."""
        out: np.ndarray = self.ids[docs] if self.addrs is None else self.addrs[docs]
        return out

    def position_offsets(self, token: str, tfs: np.ndarray) -> np.ndarray:
        """Where each posting's positions start in the token's concatenated positions (and the
        end): kept with an index partition's decoded positions."""
        if self.partition is not None:
            tid = self.partition.token_id(token)
            if tid is not None:
                return self.partition.position_offsets(tid)
        return np.concatenate(([0], np.cumsum(tfs, dtype=np.int64)))

    def postings(self, token: str, positions: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(doc numbers, tfs, every doc's positions concatenated or None) of one token."""
        if self.partition is not None:
            tid = self.partition.token_id(token)
            if tid is None:
                return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.uint32) if positions else None
            got = self.partition.postings([tid], positions)[0]
            return got[0], got[1], (got[2] if positions else None)
        docs, tfs, pos = self.flat.get(token, ([], [], []))
        return (np.array(docs, dtype=np.int64), np.array(tfs, dtype=np.int64),
                np.array(pos, dtype=np.uint32) if positions else None)


DEAD = np.uint64(0xFFFFFFFFFFFFFFFF)
#: (fragments, column) -> (row addresses, texts) of their live rows, batch by batch (the scan layer's)
ReadTexts = Callable[["list[FragmentInfo]", str], Iterable[tuple[np.ndarray, list[str | None]]]]
#: one term's postings in one unit: (unit, doc numbers, tfs, every doc's positions or None)
Term = tuple[_Docs, np.ndarray, np.ndarray, Any]


class _IndexedColumn:
    """What a column's INVERTED index gives every query of one version, opened once per version
    (kept on the snapshot): segments, analyzer, partitions with each doc's row address and BM25
    length norm, the statistics, the fragments no segment covers."""

    def __init__(self, snapshot: Snapshot, name: str) -> None:
        field_ = _field(snapshot, name)
        segs = [s for s in index_segments(snapshot)
                if s.index_type == "Inverted" and s.fields and s.fields[0] == field_.id]
        if not segs:
            raise InvalidArgumentError(f"full text search: column {name!r} has no INVERTED index")
        self.segments: list[InvertedSegment] = []
        covered: set[int] = set()
        for s in segs:
            paths = {n: segment_file_path(snapshot, s, n) for n, _ in s.files}
            sizes: dict[str, int | None] = {n: (z or None) for n, z in s.files}
            if not paths:
                raise InvalidArgumentError(f"INVERTED index {s.name!r} lists no files")
            self.segments.append(InvertedSegment(snapshot.io, paths, sizes))
            covered |= set(s.fragment_ids)
        self.tokenizer = Tokenizer(self.segments[0].params)
        self.with_position = all(seg.with_position for seg in self.segments)
        live = snapshot.derived("_fts_live_addresses", lambda: _live_addresses(snapshot))
        parts = [p for seg in self.segments for p in seg.partitions]
        docs = [p.docs for p in parts]
        self.n_docs = sum(len(ids) for ids, _ in docs)
        total = sum(int(p.total_tokens) for p in parts)
        self.avgdl = total / self.n_docs if self.n_docs else 0.0
        self.units: list[_Docs] = []
        for p, (ids, lengths) in zip(parts, docs):
            addrs = live(ids)
            norms = K1 * (1.0 - B + B * lengths.astype(np.float64) / self.avgdl) if self.n_docs else None
            self.units.append(_Docs(ids, lengths, partition=p, addrs=addrs, all_live=not bool((addrs == DEAD).any()),
                                    norms=norms))
        self.unindexed = [f for f in snapshot.fragments if f.id not in covered]
        self._vocabulary: list[str] | None = None

    def vocabulary(self) -> list[str]:
        """Every token of the column's index partitions, sorted by UTF-8 bytes."""
        if self._vocabulary is None:
            words: set[str] = set()
            for u in self.units:
                assert u.partition is not None
                words.update(u.partition.all_tokens())
            self._vocabulary = sorted(words, key=lambda w: w.encode("utf-8"))
        return self._vocabulary


class ColumnIndex:
    """A text column of one version: its INVERTED index's partitions plus the unindexed rows."""

    def __init__(self, snapshot: Snapshot, name: str, read_texts: ReadTexts) -> None:
        self._read_texts = read_texts
        self._indexed = snapshot.derived(f"_fts_column:{name}", lambda: _IndexedColumn(snapshot, name))
        self.name = name
        self.snapshot = snapshot
        self.segments = self._indexed.segments
        self.tokenizer = self._indexed.tokenizer
        self.with_position = self._indexed.with_position
        self.units: list[_Docs] = list(self._indexed.units)
        if self._indexed.unindexed:
            self.units.append(self._flat(self._indexed.unindexed))

    def _flat(self, fragments: list[FragmentInfo]) -> _Docs:
        """The unindexed rows tokenized into a small inverted map (token -> their postings)."""
        index: dict[str, tuple[list[int], list[int], list[int]]] = {}
        addrs: list[int] = []
        lengths: list[int] = []
        for row_addrs, texts in self._read_texts(fragments, self.name):
            for a, t in zip(row_addrs, texts):
                if t is None:
                    continue
                toks = self.tokenizer.tokens(t)
                if not toks:
                    continue
                doc = len(addrs)
                mine: dict[str, list[int]] = {}
                for tok in toks:
                    mine.setdefault(tok.text, []).append(tok.position)
                for text, pos in mine.items():
                    entry = index.setdefault(text, ([], [], []))
                    entry[0].append(doc)
                    entry[1].append(len(pos))
                    entry[2].extend(pos)
                addrs.append(int(a))
                lengths.append(len(toks))
        return _Docs(np.array(addrs, dtype=np.uint64), np.array(lengths, dtype=np.int64), flat=index)

    def vocabulary(self) -> list[str]:
        """Every token of the column's index partitions, sorted by UTF-8 bytes."""
        return self._indexed.vocabulary()

    def expansions(self, token: str, edits: int, prefix_length: int, max_expansions: int) -> list[str]:
        """The terms within ``edits`` edits (Levenshtein, characters) of ``token`` sharing its first
        ``prefix_length`` characters: the first ``max_expansions`` in byte order (pylance's fuzzy match)."""
        if edits <= 0:
            return [token]
        prefix = token[:prefix_length]
        out = []
        for w in self.vocabulary():
            if abs(len(w) - len(token)) > edits or not w.startswith(prefix):
                continue
            if _levenshtein(token, w, edits) <= edits:
                out.append(w)
                if len(out) >= max_expansions:
                    break
        return out

    # -- scoring ---------------------------------------------------------------------------------
    def stats(self) -> tuple[int, float]:
        """(documents, average length) of the indexed partitions (unindexed rows add theirs for
        themselves, see :meth:`bm25`)."""
        return self._indexed.n_docs, self._indexed.avgdl

    def term(self, token: str, positions: bool = False) -> list[tuple[_Docs, np.ndarray, np.ndarray, Any]]:
        return [(u, *u.postings(token, positions)) for u in self.units]

    def idf(self, u: _Docs, stats: list[Term], n_docs: int) -> float:
        """A term's idf in unit ``u``: indexed rows with the index's statistics; unindexed rows
        (pylance's flat search) with the index's plus their own (documents, document frequency).
        ``stats``: the term's postings in every unit."""
        df = sum(len(d) for x, d, _, _ in stats if x.partition is not None)
        if u.partition is None:
            flat_df = sum(len(d) for x, d, _, _ in stats if x.partition is None)
            n_all = n_docs + len(u.lengths)
            return float(np.log((n_all - df - flat_df + 0.5) / (df + flat_df + 0.5) + 1.0))
        return float(np.log((n_docs - df + 0.5) / (df + 0.5) + 1.0))

    def norms(self, u: _Docs, n_docs: int, avgdl: float) -> np.ndarray:
        """``k1 * (1 - b + b * length / avgdl)`` per doc of ``u`` (unindexed rows: the average
        length over the index's documents and theirs)."""
        if u.norms is None:
            n_all = n_docs + len(u.lengths)
            avg = (avgdl * n_docs + float(u.lengths.sum())) / n_all
            u.norms = K1 * (1.0 - B + B * u.lengths.astype(np.float64) / avg)
        return u.norms

    def unit_scores(self, u: _Docs, docs: np.ndarray, tfs: np.ndarray, stats: list[Term], n_docs: int,
                    avgdl: float) -> np.ndarray:
        """BM25 of one term for documents ``docs`` of unit ``u`` (float64; see :meth:`idf`)."""
        tf = tfs.astype(np.float64)
        out: np.ndarray = self.idf(u, stats, n_docs) * (K1 + 1.0) * tf / (tf + self.norms(u, n_docs, avgdl)[docs])
        return out

    def bm25(self, token: str, per_unit: list[Term], n_docs: int, avgdl: float,
             df_of: list[Term] | None = None) -> Hits:
        """The term's BM25 hits (see :meth:`unit_scores`); ``df_of``: the postings the statistics
        come from (default ``per_unit``)."""
        stats = per_unit if df_of is None else df_of
        addrs, scores = [], []
        for u, docs, tfs, _ in per_unit:
            if not len(docs):
                continue
            sc = self.unit_scores(u, docs, tfs, stats, n_docs, avgdl)
            a = u.addresses(docs)
            if not u.all_live:
                keep = a != DEAD
                a, sc = a[keep], sc[keep]
            addrs.append(a)
            scores.append(sc)
        if not addrs:
            return Hits.empty()
        if len(addrs) == 1:
            return Hits.of(addrs[0], scores[0])
        return Hits.of(np.concatenate(addrs), np.concatenate(scores))


def _field(snapshot: Snapshot, name: str) -> LanceField:
    for f in snapshot.schema.fields:
        if f.name == name:
            if not pa.types.is_string(f.arrow_type) and not pa.types.is_large_string(f.arrow_type):
                raise InvalidArgumentError(f"full text search: column {name!r} is not a string column")
            return f
    raise InvalidArgumentError(f"full text search: no column {name!r} in the dataset")


def _live_addresses(snapshot: Snapshot) -> Callable[[np.ndarray], np.ndarray]:
    """A function: index row ids -> row addresses of live rows (DEAD for deleted or gone rows)."""
    frags = {f.id: f for f in snapshot.fragments}
    if snapshot.has_stable_row_ids:
        id_map = row_id_map(snapshot)
        return lambda row_ids: id_map.lookup(row_ids, DEAD)

    def by_address(addrs: np.ndarray) -> np.ndarray:
        out: np.ndarray = addrs.astype(np.uint64).copy()
        fid = (out >> np.uint64(32)).astype(np.int64)
        off = (out & np.uint64(0xFFFFFFFF)).astype(np.int64)
        ok = np.zeros(len(out), dtype=bool)
        for f_id in np.unique(fid):
            f = frags.get(int(f_id))
            if f is None:
                continue
            m = fid == f_id
            good = off[m] < f.physical_rows
            if f.num_deletions():
                good &= ~np.isin(off[m], f.deleted_offsets())
            ok[np.flatnonzero(m)[good]] = True
        out[~ok] = DEAD
        return out
    return by_address


# -- query evaluation -----------------------------------------------------------------------------
class Searcher:
    """Evaluates query objects over one version (column indices opened once per column)."""

    def __init__(self, snapshot: Snapshot, read_texts: ReadTexts) -> None:
        self.snapshot = snapshot
        self._read_texts = read_texts
        self._columns: dict[str, ColumnIndex] = {}

    def column(self, name: str) -> ColumnIndex:
        if name not in self._columns:
            self._columns[name] = ColumnIndex(self.snapshot, name, self._read_texts)
        return self._columns[name]

    def indexed_columns(self) -> list[str]:
        names = {f.id: f.name for f in self.snapshot.schema.fields}
        out = []
        for s in index_segments(self.snapshot):
            if s.index_type == "Inverted" and s.fields and s.fields[0] in names:
                n = names[s.fields[0]]
                if n not in out:
                    out.append(n)
        return out

    def evaluate(self, q: FullTextQuery, k: int | None = None) -> Hits:
        """The rows ``q`` matches with their scores; ``k``: only the best ``k`` are needed (at least
        those, ties included, are exact)."""
        if isinstance(q, MatchQuery):
            return self._match(q, k)
        if isinstance(q, PhraseQuery):
            return self._phrase(q, k)
        if isinstance(q, MultiMatchQuery):
            boosts = q.boosts or [1.0] * len(q.columns)
            parts = [self._match(MatchQuery(q.query, c, boost=b, operator=q.operator))
                     for c, b in zip(q.columns, boosts)]
            return _union_max(parts)
        if isinstance(q, BoostQuery):
            pos = self.evaluate(q.positive)
            neg = self.evaluate(q.negative)
            # pylance: positive score minus negative_boost times the negative query's score
            at = np.minimum(np.searchsorted(neg.addrs, pos.addrs), max(len(neg.addrs) - 1, 0))
            hit = (neg.addrs[at] == pos.addrs) if len(neg.addrs) else np.zeros(len(pos.addrs), bool)
            penalty = np.where(hit, neg.scores[at] if len(neg.addrs) else 0.0, 0.0)
            return Hits(pos.addrs, pos.scores - q.negative_boost * penalty)
        if isinstance(q, BooleanQuery):
            return self._boolean(q)
        raise UnsupportedFeatureError(f"full text query {type(q).__name__} is not supported")

    def _match(self, q: MatchQuery, k: int | None = None) -> Hits:
        col = self.column(q.column)
        occurrences = _occurrences(col, q)
        if not occurrences:
            return Hits.empty()
        n_docs, avgdl = col.stats()
        if k is not None and q.operator != "AND" and q.boost > 0:
            top = self._match_top(col, q, occurrences, k)
            if top is not None:
                return top
        indexed: dict[str, Hits] = {}        # per term: the indexed rows' hits
        flat: dict[str, Hits] = {}           # per query token: the unindexed rows' hits
        for t, terms in occurrences:
            per_term = {e: col.term(e) for e in dict.fromkeys(terms + ([t] if t is not None else []))}
            for e in terms:
                if e not in indexed:
                    indexed[e] = col.bm25(e, [x for x in per_term[e] if x[0].partition is not None], n_docs,
                                          avgdl, df_of=per_term[e])
            if t is not None and t not in flat:
                flat[t] = col.bm25(t, [x for x in per_term[t] if x[0].partition is None], n_docs, avgdl,
                                   df_of=per_term[t])
        out = _union([h for t, terms in occurrences
                      for h in [indexed[e] for e in terms] + ([flat[t]] if t is not None else [])])
        if q.operator == "AND":
            # indexed rows hold, for every query token, one of the terms it expands to (none left:
            # no indexed row matches); unindexed rows hold every (analyzed) query token
            each = [_union([indexed[e] for e in terms]).addrs for _, terms in occurrences]
            keep = _intersect(each)
            if any(u.partition is None for u in col.units):
                keep = np.union1d(keep, _intersect([flat[t].addrs for t in flat]))
            out = _restrict(out, keep)
        return Hits(out.addrs, out.scores * q.boost)

    def _match_top(self, col: ColumnIndex, q: MatchQuery, occurrences: list[tuple[str | None, list[str]]],
                   k: int) -> Hits | None:
        """The OR match's candidates for its best ``k`` rows (:mod:`.fts_topk`), scored as
        :meth:`_match` scores them (the parts in the same order); None: score every posting."""
        from .fts_topk import Part, top_k
        n_docs, avgdl = col.stats()
        flat = [i for i, u in enumerate(col.units) if u.partition is None]
        indexed = [i for i, u in enumerate(col.units) if u.partition is not None]
        norms = [col.norms(u, n_docs, avgdl) for u in col.units]

        def part(stats: list[Term], units: list[int]) -> Part:
            return Part([(i, stats[i][1], stats[i][2], col.idf(stats[i][0], stats, n_docs), norms[i])
                         for i in units if len(stats[i][1])], K1)
        of_term: dict[str, Part] = {}
        of_token: dict[str, Part] = {}
        parts: list[Part] = []
        for t, terms in occurrences:
            for e in terms:
                if e not in of_term:
                    of_term[e] = part(col.term(e), indexed)
            if t is not None and t not in of_token:
                of_token[t] = part(col.term(t), flat)
            parts += [of_term[e] for e in terms] + ([of_token[t]] if t is not None else [])
        got = top_k(parts, col.units, k)
        if got is None:
            return None
        h = Hits.of(*got)
        return Hits(h.addrs, h.scores * q.boost)

    def _phrase(self, q: PhraseQuery, k: int | None = None) -> Hits:
        """Rows holding the phrase, scored by the sum of its distinct terms' BM25. With ``k`` (the
        phrase is the whole query), candidates are checked best score first, in growing chunks,
        until ``k`` matches are found and no unchecked candidate can tie the k-th."""
        col = self.column(q.column)
        if not col.with_position:
            raise InvalidArgumentError(f"PhraseQuery on column {q.column!r}: its INVERTED index was built "
                                       "without positions (with_position=False)")
        toks = col.tokenizer.tokens(q.query)
        if not toks:
            return Hits.empty()
        n_docs, avgdl = col.stats()
        terms = {t.text: col.term(t.text, positions=True) for t in toks}
        c_unit, c_doc, c_score = [], [], []
        for ui, u in enumerate(col.units):
            common = terms[toks[0].text][ui][1]
            for t in toks[1:]:
                common = _intersect_sorted(common, terms[t.text][ui][1], len(u.lengths))
            if not len(common):
                continue
            if not u.all_live:
                common = common[u.addresses(common) != DEAD]
            score = np.zeros(len(common))
            for per in terms.values():
                d, f = per[ui][1], per[ui][2]
                score += self_scores(col, u, common, f[np.searchsorted(d, common)], per, n_docs, avgdl)
            c_unit.append(np.full(len(common), ui, dtype=np.int32))
            c_doc.append(common)
            c_score.append(score)
        if not c_unit:
            return Hits.empty()
        unit, doc, score = np.concatenate(c_unit), np.concatenate(c_doc), np.concatenate(c_score)
        key = -score.astype(np.float32)
        single = len(c_unit) == 1

        def addr_of(idx: np.ndarray) -> np.ndarray:
            """Row addresses of candidates ``idx`` (looked up for the candidates checked only)."""
            if single:
                return col.units[int(unit[0])].addresses(doc[idx])
            out = np.empty(len(idx), dtype=np.uint64)
            for ui in np.unique(unit[idx]):
                m = unit[idx] == ui
                out[m] = col.units[int(ui)].addresses(doc[idx][m])
            return out
        offsets: dict[tuple[str, int], np.ndarray] = {}

        def postings_of(ui: int) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
            for t, per in terms.items():
                if (t, ui) not in offsets:
                    offsets[t, ui] = col.units[ui].position_offsets(t, per[ui][2])
            return {t: (per[ui][1], per[ui][2], per[ui][3], offsets[t, ui]) for t, per in terms.items()}
        found: list[np.ndarray] = []
        found_addr: list[np.ndarray] = []
        rest = np.arange(len(doc))              # candidates not checked yet
        n_found, chunk = 0, len(doc) if k is None else max(256, 4 * k)
        while len(rest):
            if chunk < len(rest):              # the best `chunk` of the rest (ties at the cut too)
                kr = key[rest]
                cut = np.partition(kr, chunk - 1)[chunk - 1]
                take = kr <= cut
                sel, rest = rest[take], rest[~take]
            else:
                sel, rest = rest, rest[:0]
            sel_addr = addr_of(sel)
            order = np.lexsort((sel_addr, key[sel]))
            sel, sel_addr = sel[order], sel_addr[order]
            ok = np.zeros(len(sel), dtype=bool)
            for ui in np.unique(unit[sel]):
                m = np.flatnonzero(unit[sel] == ui)
                docs = doc[sel][m]
                srt = np.argsort(docs)
                ok[m[srt]] = _phrase_docs(toks, q.slop, docs[srt], postings_of(int(ui)))
            found.append(sel[ok])
            found_addr.append(sel_addr[ok])
            n_found += int(ok.sum())
            if k is not None and n_found >= k:
                kth = np.sort(key[np.concatenate(found)])[k - 1]
                if not len(rest) or key[rest].min() > kth:
                    break
            chunk *= 4
        hit = np.concatenate(found) if found else np.empty(0, np.int64)
        return Hits.of(np.concatenate(found_addr) if found_addr else np.empty(0, np.uint64), score[hit])

    def _boolean(self, q: BooleanQuery) -> Hits:
        must = [self.evaluate(c) for o, c in q.queries if o == Occur.MUST]
        should = [self.evaluate(c) for o, c in q.queries if o == Occur.SHOULD]
        must_not = [self.evaluate(c) for o, c in q.queries if o == Occur.MUST_NOT]
        out = _union(must + should)
        for m in must:
            out = _restrict(out, m.addrs)
        for m in must_not:
            keep = ~np.isin(out.addrs, m.addrs)
            out = Hits(out.addrs[keep], out.scores[keep])
        return out


def _occurrences(col: ColumnIndex, q: MatchQuery) -> list[tuple[str | None, list[str]]]:
    """Per query token (repeats kept, in query order): (the token as the index holds it, None when
    the analysis drops it; the index terms its indexed rows match). Exact (``fuzziness`` 0 or None):
    the analyzed token itself. Fuzzy, as pylance 14.0.2: the token as the base tokenizer gave it
    (not lower-cased, not stemmed) against the index's terms within ``fuzziness`` edits, in byte
    order, taken from one budget of ``max_expansions`` terms for the whole query (a token after it
    is spent matches no indexed row); unindexed rows match the analyzed token exactly."""
    if not q.fuzziness:
        return [(t.text, [t.text]) for t in col.tokenizer.tokens(q.query)]
    out: list[tuple[str | None, list[str]]] = []
    budget = q.max_expansions
    for raw, analyzed in col.tokenizer.raw_tokens(q.query):
        terms = col.expansions(raw, q.fuzziness, q.prefix_length, budget) if budget > 0 else []
        budget -= len(terms)
        out.append((analyzed, terms))
    return out


def _levenshtein(a: str, b: str, bound: int) -> int:
    """Edit distance of ``a`` and ``b`` (characters), or ``bound + 1`` once it must exceed ``bound``."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
        if min(cur) > bound:
            return bound + 1
        prev = cur
    return prev[-1]


def _phrase_at(toks: list[Token], positions: list[list[int]], slop: int) -> bool:
    """Whether the documents' positions hold the query tokens in order (gaps as in the query, up to
    ``slop`` more)."""
    cands = [int(p) for p in positions[0]]
    for i in range(1, len(toks)):
        delta = toks[i].position - toks[i - 1].position
        nxt = [int(p) for p in positions[i] if any(c + delta <= p <= c + delta + slop for c in cands)]
        if not nxt:
            return False
        cands = nxt
    return True


def _union(parts: list[Hits]) -> Hits:
    parts = [p for p in parts if len(p.addrs)]
    if not parts:
        return Hits.empty()
    return Hits.of(np.concatenate([p.addrs for p in parts]), np.concatenate([p.scores for p in parts]))


def self_scores(col: ColumnIndex, u: _Docs, docs: np.ndarray, tfs: np.ndarray, stats: list[Term], n_docs: int,
                avgdl: float) -> np.ndarray:
    return col.unit_scores(u, docs, tfs, stats, n_docs, avgdl)


def _phrase_docs(toks: list[Token], slop: int, docs: np.ndarray,
                 postings: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> np.ndarray:
    """Mask of sorted ``docs`` (all holding every term) where the phrase occurs; ``postings``: per
    term (doc ids, tfs, positions concatenated, offsets into them)."""
    keys = []
    for t in toks:
        d, f, pos, off = postings[t.text]
        idx = np.searchsorted(d, docs)
        lens = f[idx].astype(np.int64)
        starts = off[idx].astype(np.int64)
        take = np.repeat(starts - (np.cumsum(lens) - lens), lens) + np.arange(int(lens.sum()))
        keys.append((np.repeat(docs.astype(np.uint64), lens) << np.uint64(32)) | pos[take].astype(np.uint64))
    if slop == 0:
        first = keys[0]
        ok = np.ones(len(first), dtype=bool)
        for i in range(1, len(toks)):
            ok &= _members(first + np.uint64(toks[i].position - toks[0].position), keys[i])
        hit = np.unique((first[ok] >> np.uint64(32)).astype(np.int64))
    else:
        hit = np.array([d for d in docs.tolist() if _phrase_at(toks, [
            (kk[(kk >> np.uint64(32)) == d] & np.uint64(0xFFFFFFFF)).tolist() for kk in keys], slop)],
            dtype=np.int64)
    return _members(docs.astype(np.int64), hit)


def _intersect_sorted(a: np.ndarray, b: np.ndarray, universe: int) -> np.ndarray:
    """The values in both sorted unique arrays of doc numbers below ``universe``: the shorter
    searched in the longer, or (both long) one marked in a bitmap the other is read through."""
    if len(a) > len(b):
        a, b = b, a
    if not len(a):
        return a
    if len(a) * 16 < len(a) + len(b) or universe > 64 * (len(a) + len(b)):
        found: np.ndarray = a[_members(a, b)]
        return found
    mark = np.zeros(universe, dtype=bool)
    mark[b] = True
    marked: np.ndarray = a[mark[a]]
    return marked


def _members(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Mask of ``values`` found in the sorted array ``sorted_set`` (binary search, no sort)."""
    if not len(sorted_set) or not len(values):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    mask: np.ndarray = sorted_set[at] == values
    return mask


def _intersect(sets: list[np.ndarray]) -> np.ndarray:
    if not sets:
        return np.empty(0, np.uint64)
    out = sets[0]
    for a in sets[1:]:
        out = np.intersect1d(out, a, assume_unique=True)
    return out


def _union_max(parts: list[Hits]) -> Hits:
    """Every row of ``parts`` with its best score (pylance's multi-column match)."""
    parts = [p for p in parts if len(p.addrs)]
    if not parts:
        return Hits.empty()
    addrs = np.concatenate([p.addrs for p in parts])
    scores = np.concatenate([p.scores for p in parts])
    u, inv = np.unique(addrs, return_inverse=True)
    best = np.full(len(u), -np.inf)
    np.maximum.at(best, inv, scores)
    return Hits(u, best)


def _restrict(h: Hits, addrs: np.ndarray) -> Hits:
    keep = np.isin(h.addrs, addrs)
    return Hits(h.addrs[keep], h.scores[keep])


def ranked(h: Hits, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(addresses, float32 scores) by score descending, then address; the first ``k`` only."""
    s = h.scores.astype(np.float32)
    addrs = h.addrs
    if k is not None and k < len(s):
        if k <= 0:
            return addrs[:0], s[:0]
        kth = np.partition(-s, k - 1)[k - 1]
        keep = -s <= kth                      # every row scoring at least the k-th score
        addrs, s = addrs[keep], s[keep]
    order = np.lexsort((addrs, -s))
    if k is not None:
        order = order[:k]
    return addrs[order], s[order]


def query_of(full_text_query: Any, searcher: Searcher) -> FullTextQuery:
    """The query object of ``full_text_query`` (string, dict or query object)."""
    return to_query(full_text_query, searcher.indexed_columns)
