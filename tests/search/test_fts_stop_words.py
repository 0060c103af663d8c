"""Stop words per language (``remove_stop_words=True``) against pylance 14.0.2: every listed word of
every language indexed and appended unindexed (a word pylance keeps but we drop, or the other way
round, changes the rows or scores), and sentences analysed with stemming as pylance builds them."""
from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.index.inverted.stopwords import STOP_WORDS

from .fts_tables import assert_same_ranking

LANGUAGES = sorted(STOP_WORDS)
#: words no list holds, mixed in so that every query also matches rows
PLAIN = ["zebra", "quokka", "xylofon", "kwartz"]


@pytest.fixture(scope="session")
def word_tables(tmp_path_factory):
    """Per language: one word per row (its stop words and a few others), indexed with the whitespace
    tokenizer and no stemming, then the same rows appended unindexed."""
    root = tmp_path_factory.mktemp("fts_stop")
    out = {}
    for lang in LANGUAGES:
        words = sorted(STOP_WORDS[lang]) + PLAIN
        t = pa.table({"id": list(range(len(words))), "text": words})
        uri = str(root / f"{lang}.lance")
        ds = lance.write_dataset(t, uri)
        ds.create_scalar_index("text", "INVERTED", language=lang.capitalize(), base_tokenizer="whitespace",
                               stem=False, remove_stop_words=True, ascii_folding=False)
        lance.write_dataset(t.set_column(0, "id", pa.array(range(len(words), 2 * len(words)))), uri, mode="append")
        out[lang] = (uri, words)
    return out


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_stop_word_of_each_language_is_removed_as_pylance_removes_it(word_tables, lang):
    uri, words = word_tables[lang]
    for chunk in range(0, len(words), 60):
        text = " ".join(words[chunk:chunk + 60] + PLAIN[:1])
        theirs = lance.dataset(uri).to_table(columns=["id"], full_text_query=text)
        ours = lance_duck.dataset(uri).to_table(columns=["id"], full_text_query=text)
        assert_same_ranking(ours, theirs)
    # the index holds none of them, lance_duck drops each from a query (only the plain words match)
    ours = lance_duck.dataset(uri).to_table(columns=["id", "text"], full_text_query=" ".join(words))
    assert sorted(set(ours["text"].to_pylist())) == sorted(PLAIN)


SENTENCES = {
    "french": ["Les enfants de la ville jouaient dans le parc avec leurs amis",
               "Nous avons mangé des pommes et des poires pendant notre voyage"],
    "german": ["Die Kinder spielten mit ihren Freunden in dem Garten hinter dem Haus",
               "Wir haben über die Geschichte der Stadt gesprochen und sind nach Hause gegangen"],
    "spanish": ["Los niños jugaban con sus amigos en el parque de la ciudad",
                "Nosotros hemos comido las manzanas que estaban sobre la mesa"],
    "italian": ["I bambini giocavano con i loro amici nel parco della città",
                "Abbiamo mangiato le mele che erano sulla tavola"],
    "portuguese": ["As crianças brincavam com os seus amigos no parque da cidade",
                   "Nós comemos as maçãs que estavam em cima da mesa"],
    "dutch": ["De kinderen speelden met hun vrienden in het park van de stad",
              "Wij hebben de appels gegeten die op de tafel lagen"],
    "swedish": ["Barnen lekte med sina vänner i parken i staden", "Vi har ätit äpplena som låg på bordet"],
    "russian": ["Дети играли со своими друзьями в парке города", "Мы съели яблоки которые лежали на столе"],
    "turkish": ["Çocuklar şehirdeki parkta arkadaşları ile oynadılar ama sonra eve gittiler",
                "Biz masadaki elmaları yedik ve çok mutlu olduk"],
    "greek": ["Τα παιδιά έπαιζαν με τους φίλους τους στο πάρκο και μετά πήγαν σπίτι",
              "Εμείς φάγαμε τα μήλα που ήταν πάνω στο τραπέζι"],
    "romanian": ["Copiii se jucau cu prietenii lor în parcul orașului", "Noi am mâncat merele care erau pe masă"],
    "arabic": ["لعب الأطفال مع أصدقائهم في الحديقة إلى المساء", "أكلنا التفاح الذي كان على الطاولة"],
}


@pytest.fixture(scope="session")
def sentence_tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("fts_stop_sent")
    out = {}
    for lang, sents in SENTENCES.items():
        texts = [sents[i % len(sents)] + f" w{i % 5}" for i in range(40)]
        uri = str(root / f"{lang}.lance")
        ds = lance.write_dataset(pa.table({"id": list(range(40)), "text": texts}), uri)
        ds.create_scalar_index("text", "INVERTED", language=lang.capitalize(), stem=True, remove_stop_words=True,
                               with_position=True)
        lance.write_dataset(pa.table({"id": list(range(40, 50)), "text": texts[:10]}), uri, mode="append")
        out[lang] = uri
    return out


@pytest.mark.parametrize("lang", sorted(SENTENCES))
def test_sentences_with_stemming_and_stop_words_match_pylance_per_language(sentence_tables, lang):
    from lance.query import PhraseQuery

    from lance_duck.query import PhraseQuery as OurPhrase
    uri = sentence_tables[lang]
    words = " ".join(SENTENCES[lang]).split()
    for i in range(0, len(words), 3):
        text = " ".join(words[i:i + 3])
        theirs = lance.dataset(uri).to_table(columns=["id"], full_text_query=text)
        ours = lance_duck.dataset(uri).to_table(columns=["id"], full_text_query=text)
        assert_same_ranking(ours, theirs)
        theirs = lance.dataset(uri).to_table(columns=["id"], full_text_query=PhraseQuery(text, "text"))
        ours = lance_duck.dataset(uri).to_table(columns=["id"], full_text_query=OurPhrase(text, "text"))
        assert_same_ranking(ours, theirs)
