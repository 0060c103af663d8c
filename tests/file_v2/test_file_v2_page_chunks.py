"""A plain fixed-width field's pages handed back as a chunked column (``read_fields(chunked=True)``).

Pages decoded apart (each with its own dead rows, or with encodings that do not batch) are not
joined into one array when the caller takes chunks (``LeafPlan.decode_chunks``): the scan hands
them to the engine batch by batch. Pinned: the chunks hold exactly pylance's values in order,
dead rows left out, for numbers, nullable numbers and dictionary pages beside plain ones; other
fields, and callers that ask for no chunks, get one array as before.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lance_duck.file.v2_1 import column as column_mod
from lance_duck.trace import decode_trace

from .conftest import Fixture, assert_same
from .._page_tables import pages_of_mixed_kinds, write_small_pages


N = 60_000


@pytest.fixture(scope="module")
def fx(tmp_path_factory) -> Fixture:
    # "f": bit-packed doubles with nulls, "v": fixed-size lists (flat)
    r = np.random.default_rng(41)
    t = pages_of_mixed_kinds(N, seed=41)
    t = t.append_column("f", pa.array(r.random(N), mask=r.random(N) < 0.1))
    t = t.append_column("v", pa.FixedSizeListArray.from_arrays(pa.array(r.random(N * 4).astype(np.float32)), 4))
    p = str(tmp_path_factory.mktemp("page_chunks") / "t.lance")
    write_small_pages(t, p)
    return Fixture(p)


@pytest.fixture(autouse=True)
def short_chunks(monkeypatch):
    """Pages of 5,000 rows handed on unjoined (at the default they are joined, see the last test)."""
    monkeypatch.setattr(column_mod, "PAGE_CHUNK_MIN_ROWS", 1000)


def _dead(n: int) -> np.ndarray:
    """Dead rows on every page: every 41st row (sparse enough to be left out while decoding), and a run across
    a page edge."""
    pos = np.arange(n)
    return np.flatnonzero((pos % 41 == 3) | ((pos >= 29_990) & (pos < 30_100))).astype(np.int64)


def test_fixed_width_fields_come_back_as_their_pages_equal_pylance(fx):
    fields = fx.fields()
    dead = _dead(N)
    live = np.ones(N, bool)
    live[dead] = False
    with decode_trace() as t:
        got = fx.reader().read_fields(fields, range(0, N), keep_dictionary=True, dead=dead, chunked=True)
    assert len(t.values("path:page-chunks")) == 3
    for f, a in zip(fields, got):
        # pages of flat values decode apart, each leaving its dead rows out; bit-packed pages
        # (id, f), fixed-size lists and strings decode as one batch and are filtered after it
        assert isinstance(a, pa.ChunkedArray) == (f.name in ("mixed", "r", "x")), f.name
        if isinstance(a, pa.ChunkedArray):
            assert a.num_chunks > 1 and not pa.types.is_dictionary(a.type)
            a = a.combine_chunks()
        want = fx.expected.column(f.name).combine_chunks().filter(pa.array(live))
        assert_same(a.dictionary_decode() if pa.types.is_dictionary(a.type) else a, want, f.name)


def test_without_chunked_every_field_is_one_array_equal_pylance(fx):
    fields = fx.fields()
    dead = _dead(N)
    live = np.ones(N, bool)
    live[dead] = False
    got = fx.reader().read_fields(fields, range(0, N), keep_dictionary=True, dead=dead)
    for f, a in zip(fields, got):
        assert isinstance(a, pa.Array), f.name
        want = fx.expected.column(f.name).combine_chunks().filter(pa.array(live))
        assert_same(a.dictionary_decode() if pa.types.is_dictionary(a.type) else a, want, f.name)



def test_pages_shorter_than_the_chunk_minimum_come_back_joined(fx, monkeypatch):
    monkeypatch.setattr(column_mod, "PAGE_CHUNK_MIN_ROWS", 1 << 16)
    field = next(f for f in fx.fields() if f.name == "r")
    with decode_trace() as t:
        got = fx.reader().read_fields([field], range(0, N), dead=_dead(N), chunked=True)[0]
    assert "path:page-chunks" not in t.names() and isinstance(got, pa.Array)
    live = np.ones(N, bool)
    live[_dead(N)] = False
    assert_same(got, fx.expected.column("r").combine_chunks().filter(pa.array(live)), "r")
