"""full_text_query= against pylance 14.0.2: every query form over INVERTED indices written with
each tokenizer setting, with and without positions, two index segments, unindexed fragments,
deletions, stable row ids and a 2.3 table; same rows, same order (up to ties), same _score."""
from __future__ import annotations

import lance
import pytest
from lance import query as lq

import lance_duck
from lance_duck import query as q
from lance_duck.errors import InvalidArgumentError, UnsupportedFeatureError

from .fts_tables import assert_same_ranking, table

QUERIES = ["w1", "w3 w7", "w1 w1 w2", "dog", "running foxes", "the lazy dogs", "cafe", "Straße",
           "organization", "happiest children", "w0 jumps", "nothingmatches", "the and of"]


@pytest.fixture(scope="session")
def main_table(tmp_path_factory):
    """Three indexed fragments (positions), then an appended unindexed fragment, then deletions:
    versions 2 (indexed), 3 (+ unindexed), 4 (+ deletions)."""
    uri = str(tmp_path_factory.mktemp("fts") / "main.lance")
    ds = lance.write_dataset(table(1500, 1), uri, max_rows_per_file=500)
    ds.create_scalar_index("text", "INVERTED", with_position=True)
    ds.create_scalar_index("title", "INVERTED")
    ds = lance.write_dataset(table(120, 2, start=1500), uri, mode="append")
    ds.delete("id % 13 = 4 or id = 1503")
    return uri


@pytest.fixture(scope="session")
def two_segments(tmp_path_factory):
    """An index on 600 rows, 200 appended rows indexed as a second segment (optimize_indices)."""
    uri = str(tmp_path_factory.mktemp("fts") / "segments.lance")
    ds = lance.write_dataset(table(600, 3), uri)
    ds.create_scalar_index("text", "INVERTED", with_position=True)
    ds = lance.write_dataset(table(200, 4, start=600), uri, mode="append")
    ds.optimize.optimize_indices(num_indices_to_merge=0)
    return uri


TOKENIZERS = {
    "plain": dict(stem=False, remove_stop_words=False),
    "no_fold_no_lower": dict(lower_case=False, ascii_folding=False),
    "whitespace": dict(base_tokenizer="whitespace"),
    "raw": dict(base_tokenizer="raw", stem=False),
    "ngram": dict(base_tokenizer="ngram", stem=False, remove_stop_words=False),
    "ngram_2_4_prefix": dict(base_tokenizer="ngram", min_ngram_length=2, max_ngram_length=4, prefix_only=True),
    "short_tokens": dict(max_token_length=6),
    "custom_stop": dict(custom_stop_words=["w1", "dog"], stem=False),
}


@pytest.fixture(scope="session")
def tokenizer_tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("fts_tok")
    out = {}
    for name, params in TOKENIZERS.items():
        uri = str(root / f"{name}.lance")
        ds = lance.write_dataset(table(400, 5), uri)
        ds.create_scalar_index("text", "INVERTED", **params)
        out[name] = uri
    return out


@pytest.fixture(scope="session")
def special_tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("fts_special")
    stable = str(root / "stable.lance")
    ds = lance.write_dataset(table(500, 6), stable, enable_stable_row_ids=True, max_rows_per_file=200)
    ds.create_scalar_index("text", "INVERTED")
    ds.delete("id < 30")
    v23 = str(root / "v23.lance")
    ds = lance.write_dataset(table(500, 7), v23, data_storage_version="2.3")
    ds.create_scalar_index("text", "INVERTED", with_position=True)
    return {"stable": stable, "v23": v23}


def both(uri, version=None, **kw):
    theirs = lance.dataset(uri, version=version).to_table(**kw)
    ours = lance_duck.dataset(uri, version=version).to_table(**kw)
    return ours, theirs


@pytest.mark.parametrize("version", [2, 3, 4])
@pytest.mark.parametrize("text", QUERIES)
def test_string_query_matches_pylance_on_indexed_appended_and_deleted_versions(main_table, version, text):
    ours, theirs = both(main_table, version, columns=["id", "text"], full_text_query={"query": text,
                                                                                     "columns": ["text"]})
    assert_same_ranking(ours, theirs)


@pytest.mark.parametrize("limit", [1, 5, 37])
def test_limit_keeps_pylance_top_k(main_table, limit):
    ours, theirs = both(main_table, full_text_query={"query": "w2 w5 dog", "columns": ["text"]}, limit=limit)
    assert_same_ranking(ours, theirs, limited=True)


def test_plain_string_searches_every_indexed_column(main_table):
    ours, theirs = both(main_table, full_text_query="w3 title")
    assert_same_ranking(ours, theirs)


@pytest.mark.parametrize("prefilter", [False, True])
def test_filter_is_a_postfilter_or_a_prefilter_as_pylance(main_table, prefilter):
    ours, theirs = both(main_table, columns=["id", "score"], full_text_query={"query": "w1 w4", "columns": ["text"]},
                        filter="score > 0.5 and id > 100", limit=20, prefilter=prefilter)
    assert_same_ranking(ours, theirs, limited=True)


def test_row_id_and_score_placement_as_pylance(main_table):
    ours, theirs = both(main_table, columns=["id"], with_row_id=True,
                        full_text_query={"query": "w6", "columns": ["text"]})
    assert ours.schema.names == ["id", "_score", "_rowid"]
    assert_same_ranking(ours, theirs)


@pytest.mark.parametrize("make", [
    lambda m: m.MatchQuery("w1 w2 w9", "text"),
    lambda m: m.MatchQuery("w1 w2", "text", operator=m.FullTextOperator.AND),
    lambda m: m.MatchQuery("lazy dog", "text", boost=2.5),
    lambda m: m.MatchQuery("w12 dogz", "text", fuzziness=1),
    lambda m: m.MatchQuery("organizaton happyest", "text", fuzziness=2, prefix_length=2, max_expansions=3),
    lambda m: m.MatchQuery("w1 foxes", "text", fuzziness=None),
    lambda m: m.MatchQuery("w12 dogz", "text", fuzziness=1, operator=m.FullTextOperator.AND),
    lambda m: m.MatchQuery("lazy dgo", "text", fuzziness=2, operator=m.FullTextOperator.AND),
    lambda m: m.MatchQuery("w1 w2", "text", fuzziness=1, max_expansions=5),
    lambda m: m.MatchQuery("w1 w2", "text", fuzziness=1, max_expansions=12, operator=m.FullTextOperator.AND),
    lambda m: m.MatchQuery("w2 w1", "text", fuzziness=1, max_expansions=11, operator=m.FullTextOperator.AND),
    lambda m: m.MatchQuery("w3 w3", "text", fuzziness=1, max_expansions=14),
    lambda m: m.MatchQuery("w3 dog", "text", fuzziness=1, max_expansions=3, operator=m.FullTextOperator.AND),
    lambda m: m.MatchQuery("Lazy Running organizational", "text", fuzziness=1),
    lambda m: m.MatchQuery("the w1", "text", fuzziness=1, operator=m.FullTextOperator.AND),
    lambda m: m.MatchQuery("the w1 w1", "text", fuzziness=1, max_expansions=4),
    lambda m: m.MatchQuery("wx1 lazy", "text", fuzziness=1, operator=m.FullTextOperator.AND),
    lambda m: m.PhraseQuery("lazy dog", "text"),
    lambda m: m.PhraseQuery("quick fox", "text", slop=1),
    lambda m: m.PhraseQuery("running quickly", "text"),
    lambda m: m.MultiMatchQuery("w3", ["text", "title"]),
    lambda m: m.MultiMatchQuery("w3", ["text", "title"], boosts=[1.0, 3.0]),
    lambda m: m.BoostQuery(m.MatchQuery("w1", "text"), m.MatchQuery("w2", "text"), negative_boost=0.3),
    lambda m: m.BooleanQuery([(m.Occur.MUST, m.MatchQuery("w1", "text")),
                              (m.Occur.SHOULD, m.MatchQuery("w2", "text")),
                              (m.Occur.MUST_NOT, m.MatchQuery("w3", "text"))]),
    lambda m: m.BooleanQuery([(m.Occur.SHOULD, m.MatchQuery("dog", "text")),
                              (m.Occur.SHOULD, m.MatchQuery("w8", "title"))]),
], ids=["match", "match_and", "match_boost", "fuzzy", "fuzzy_prefix", "fuzzy_none", "fuzzy_and", "fuzzy2_and",
     "fuzzy_budget", "fuzzy_budget_and", "fuzzy_budget_and_spent", "fuzzy_repeat_budget", "fuzzy_and_none_left",
     "fuzzy_raw_tokens", "fuzzy_and_stop_word", "fuzzy_stop_word_budget", "fuzzy_and_edit", "phrase", "phrase_slop", "phrase_stop_gap", "multi",
        "multi_boosts", "boost", "boolean_must", "boolean_should"])
def test_query_objects_match_pylance(main_table, make):
    theirs = lance.dataset(main_table).to_table(columns=["id"], full_text_query=make(lq))
    ours = lance_duck.dataset(main_table).to_table(columns=["id"], full_text_query=make(q))
    assert_same_ranking(ours, theirs)


@pytest.mark.parametrize("name", list(TOKENIZERS))
@pytest.mark.parametrize("text", ["w1", "w12 w3", "the lazy dog", "Running quickly", "Café München",
                                  "organizational", "w"])
def test_each_tokenizer_setting_matches_pylance(tokenizer_tables, name, text):
    ours, theirs = both(tokenizer_tables[name], full_text_query=text)
    assert_same_ranking(ours, theirs)


def test_two_index_segments_share_statistics(two_segments):
    for text in ["w1", "w2 w30", "dog"]:
        ours, theirs = both(two_segments, full_text_query=text)
        assert_same_ranking(ours, theirs)


@pytest.mark.parametrize("kind", ["stable", "v23"])
def test_stable_row_ids_and_2_3_tables(special_tables, kind):
    for text in ["w1", "w4 w5", "lazy dog"]:
        ours, theirs = both(special_tables[kind], full_text_query=text, with_row_id=True)
        assert_same_ranking(ours, theirs)


def test_phrase_without_positions_is_refused(tokenizer_tables):
    with pytest.raises(Exception):
        lance.dataset(tokenizer_tables["plain"]).to_table(full_text_query=lq.PhraseQuery("w1 w2", "text"))
    with pytest.raises(InvalidArgumentError, match="positions"):
        lance_duck.dataset(tokenizer_tables["plain"]).to_table(full_text_query=q.PhraseQuery("w1 w2", "text"))


def test_bad_input_is_refused_by_name(main_table):
    ds = lance_duck.dataset(main_table)
    with pytest.raises(InvalidArgumentError, match="'nope'"):
        ds.to_table(full_text_query={"query": "w1", "columns": ["nope"]})
    with pytest.raises(InvalidArgumentError, match="'score'"):
        ds.to_table(full_text_query={"query": "w1", "columns": ["score"]})
    with pytest.raises(InvalidArgumentError, match="empty"):
        ds.to_table(full_text_query="  ")
    with pytest.raises(InvalidArgumentError, match="nearest"):
        ds.to_table(full_text_query="w1", nearest={"column": "text", "q": [1.0]})
    with pytest.raises(InvalidArgumentError, match="fuzziness"):
        ds.to_table(full_text_query=q.MatchQuery("w1", "text", fuzziness=-1))


def test_to_batches_and_scanner_give_the_same_rows(main_table):
    ds = lance_duck.dataset(main_table)
    full = ds.to_table(full_text_query="w1", limit=50)
    batches = list(ds.to_batches(full_text_query="w1", limit=50, batch_size=7))
    assert sum(b.num_rows for b in batches) == 50
    assert ds.scanner(full_text_query="w1", limit=50).to_table().equals(full)
    assert ds.scanner(full_text_query="w1", limit=50).count_rows() == 50


def test_a_damaged_index_file_raises_corrupt_file_error_naming_it(tmp_path):
    import glob
    import os
    import shutil
    from lance_duck.errors import CorruptFileError
    from .fts_tables import table as make
    uri = str(tmp_path / "d.lance")
    ds = lance.write_dataset(make(300, 9), uri)
    ds.create_scalar_index("text", "INVERTED")
    ok = str(tmp_path / "ok.lance")
    shutil.copytree(uri, ok)
    path = sorted(glob.glob(f"{uri}/_indices/*/part_*_tokens.lance"))[0]   # partition ids vary per build
    data = bytearray(open(path, "rb").read())
    fst_at = data.find(bytes([3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]))
    assert fst_at >= 0
    data[fst_at + 40] ^= 0xFF                       # a byte inside the FST's nodes
    open(path, "wb").write(bytes(data))
    with pytest.raises(CorruptFileError, match=os.path.basename(path)):
        lance_duck.dataset(uri).to_table(full_text_query="w1")
    assert lance_duck.dataset(ok).to_table(full_text_query="w1").num_rows > 0


LANGUAGES = {
    "French": ["Les chanteuses chantaient des chansons magnifiques", "Nous mangeons rapidement les pommes",
               "La réalisation des constructions nationales", "Il était une fois une princesse heureuse"],
    "German": ["Die Häuser wurden schnell gebaut", "Wir fahren mit den Fahrrädern nach Hause",
               "Die Kinder spielten fröhlich im Garten", "Bücher über Geschichte und Wissenschaften"],
    "Spanish": ["Los niños jugaban felizmente en el parque", "Las canciones tradicionales son hermosas",
                "Estamos construyendo nuevas casas", "La organización nacional de trabajadores"],
    "Russian": ["Дети играли в парке весело", "Мы читаем интересные книги",
                "Красивые песни звучали громко", "Национальная организация работников"],
}


@pytest.fixture(scope="session")
def language_tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("fts_lang")
    out = {}
    for lang, sentences in LANGUAGES.items():
        uri = str(root / f"{lang}.lance")
        texts = [sentences[i % len(sentences)] + f" w{i % 7}" for i in range(60)]
        ds = lance.write_dataset(pa_table(texts), uri)
        ds.create_scalar_index("text", "INVERTED", language=lang, stem=True, remove_stop_words=False)
        out[lang] = uri
    return out


def pa_table(texts):
    import pyarrow as pa
    return pa.table({"id": list(range(len(texts))), "text": texts})


@pytest.mark.parametrize("lang", list(LANGUAGES))
def test_snowball_stemming_per_language_matches_pylance(language_tables, lang):
    words = " ".join(LANGUAGES[lang]).split()
    for i in range(0, len(words), 3):
        ours, theirs = both(language_tables[lang], full_text_query=" ".join(words[i:i + 3]))
        assert_same_ranking(ours, theirs)


def test_french_index_with_stop_words_matches_pylance(tmp_path):
    uri = str(tmp_path / "fr.lance")
    ds = lance.write_dataset(pa_table(["les chansons", "des pommes", "le chant des oiseaux"]), uri)
    ds.create_scalar_index("text", "INVERTED", language="French")
    for text in ["chansons", "les des", "le chant", "oiseaux des pommes"]:
        ours, theirs = both(uri, full_text_query=text)
        assert_same_ranking(ours, theirs)


def test_stop_words_of_a_language_without_a_list_are_refused_by_name():
    from lance_duck.index.inverted.tokenizer import Tokenizer
    with pytest.raises(UnsupportedFeatureError, match="Klingon"):
        Tokenizer({"language": "Klingon", "remove_stop_words": True})


@pytest.mark.parametrize("text,slop", [("w0 w1", 0), ("w1 w0", 0), ("w2 w0 w1", 0), ("w0 w3", 1), ("lazy dog", 0)])
@pytest.mark.parametrize("limit", [1, 4, 25])
def test_phrase_with_limit_checks_the_best_candidates_first(main_table, two_segments, text, slop, limit):
    for uri in (main_table, two_segments):
        theirs = lance.dataset(uri).to_table(columns=["id"], full_text_query=lq.PhraseQuery(text, "text", slop=slop),
                                             limit=limit)
        ours = lance_duck.dataset(uri).to_table(columns=["id"], full_text_query=q.PhraseQuery(text, "text", slop=slop),
                                                limit=limit)
        assert_same_ranking(ours, theirs, limited=True)


def test_a_filtered_datasets_own_filter_selects_the_rows_searched(main_table):
    ds = lance_duck.dataset(main_table)
    want = ds.to_table(columns=["id"], full_text_query={"query": "w1 w2", "columns": ["text"]},
                       filter="id > 700", prefilter=True, limit=15)
    got = ds.filter("id > 700").to_table(columns=["id"], full_text_query={"query": "w1 w2", "columns": ["text"]},
                                         limit=15)
    assert got.equals(want)
    post = ds.filter("id > 700").to_table(columns=["id"], full_text_query={"query": "w1 w2", "columns": ["text"]},
                                          filter="id % 2 = 0", limit=15)
    assert post["id"].to_pylist() == [i for i in want["id"].to_pylist() if i % 2 == 0]


@pytest.fixture(scope="session")
def partitioned(tmp_path_factory):
    """An index pylance writes as several partitions (a 1 MiB build memory limit)."""
    import random as _random
    rnd = _random.Random(12)
    words = [f"w{i}" for i in range(3000)]
    texts = [" ".join(rnd.choice(words) for _ in range(rnd.randint(10, 40))) for _ in range(20000)]
    uri = str(tmp_path_factory.mktemp("fts_parts") / "p.lance")
    ds = lance.write_dataset(pa_table(texts), uri, max_rows_per_file=7000)
    ds.create_scalar_index("text", "INVERTED", memory_limit=1, num_workers=1)
    return uri


def test_several_partitions_share_statistics(partitioned):
    import glob
    parts = glob.glob(f"{partitioned}/_indices/*/part_*_docs.lance")
    assert len(parts) > 1
    for text in ["w1", "w7 w250 w2999", "w42 w42"]:
        ours, theirs = both(partitioned, full_text_query=text)
        assert_same_ranking(ours, theirs)
    ours, theirs = both(partitioned, full_text_query="w3 w9", limit=7)
    assert_same_ranking(ours, theirs, limited=True)


@pytest.mark.parametrize("kw", [dict(with_row_address=True), dict(with_row_id=True, with_row_address=True),
                                dict(columns=["_score", "id"]), dict(columns=["id"], disable_scoring_autoprojection=True),
                                dict(columns=["id"], offset=3)])
def test_columns_score_and_row_columns_placed_as_pylance(main_table, kw):
    ours, theirs = both(main_table, full_text_query={"query": "w4", "columns": ["text"]}, limit=6, **kw)
    assert ours.schema.names == theirs.schema.names
    if "_score" in theirs.schema.names and "id" in theirs.schema.names:
        assert_same_ranking(ours, theirs, limited=True)


@pytest.mark.parametrize("kind", ["stable", "v23"])
def test_row_ids_and_addresses_only_match_pylance(special_tables, kind):
    ours, theirs = both(special_tables[kind], columns=[], with_row_id=True, with_row_address=True,
                        full_text_query="w1 w4")
    assert ours.schema.names == theirs.schema.names
    assert sorted(ours["_rowid"].to_pylist()) == sorted(theirs["_rowid"].to_pylist())
    pairs = dict(zip(theirs["_rowid"].to_pylist(), theirs["_rowaddr"].to_pylist()))
    assert all(pairs.get(i) == a for i, a in zip(ours["_rowid"].to_pylist(), ours["_rowaddr"].to_pylist()))
