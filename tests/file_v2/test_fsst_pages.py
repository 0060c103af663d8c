"""Whole columns of FSST strings -- long ones in full-zip pages, short ones in mini-block pages --
decoded together into one output (``path:fsst-pages``), written by pylance 14.0.2 as 2.1, 2.2 and
2.3 files and compared with pylance's reads: nulls on both sides of every page edge, empty strings,
escaped bytes, a page without nulls beside pages with them, a last page of nulls only, on the numpy
and the compiled kernels; ranges and taken rows across the pages (the page-by-page path) equal
pylance's too."""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

from lance_duck.file import open_data_file
from lance_duck.file.v2_1 import column
from lance_duck.table.snapshot import open_snapshot
from lance_duck.trace import decode_trace
from tests._kernels import KERNELS, use_kernels

ROWS, BATCH = 4_000, 1_000     # strings of ~1.5-5 KB: pylance cuts pages of ~8 MB between batches
EDGES = [0, 999, 1_000, 1_999, 2_000, 2_999, 3_000, 3_999]   # rows on both sides of batch edges


def _strings(rng: np.random.Generator, n: int) -> list[str]:
    words = np.array([f"w{i:03d}" for i in range(800)])
    lens = rng.integers(300, 900, n)
    flat = words[rng.integers(0, 800, int(lens.sum()))].tolist()
    out, at = [], 0
    for k in lens.tolist():
        out.append(" ".join(flat[at:at + k]))
        at += k
    return out


def _table() -> pa.Table:
    rng = np.random.default_rng(32)
    s = _strings(rng, ROWS)
    edges = np.zeros(ROWS, bool)
    edges[EDGES] = True
    with_empty = list(s)
    for i in [1, 998, 1_001, 2_500, 3_998]:
        with_empty[i] = ""
    first_pages_valid = rng.random(ROWS) < 0.5
    first_pages_valid[:2_000] = False
    tail_null = np.zeros(ROWS, bool)
    tail_null[3_000:] = True
    return pa.table({
        "dense": pa.array(s),
        "edges": pa.array(with_empty, mask=edges | (rng.random(ROWS) < 0.25)),
        "later_nulls": pa.array(s, mask=first_pages_valid),
        "tail_null": pa.array(s, mask=tail_null),
        "large": pa.array(with_empty, pa.large_string(), mask=edges),
    })


SHORT_ROWS, SHORT_BATCH, SHORT_EDGE = 100_000, 5_000, 95_000   # mini-block pages of 95,000 and 5,000 rows


def _short_table() -> pa.Table:
    rng = np.random.default_rng(33)
    n = SHORT_ROWS
    vals = rng.integers(0, 1 << 48, n).tolist()
    s = [f"{v:012x}"[:w] for v, w in zip(vals, rng.integers(1, 13, n).tolist())]
    with_empty = list(s)
    for i in [1, SHORT_EDGE - 2, SHORT_EDGE + 1, n - 2]:
        with_empty[i] = ""
    rare = [x + chr(0x3000 + i % 500) + "\x01" if i % 97 == 0 else x for i, x in enumerate(s)]   # escaped bytes
    edges = np.zeros(n, bool)
    edges[[0, SHORT_EDGE - 1, SHORT_EDGE, n - 1]] = True
    later = rng.random(n) < 0.5
    later[:SHORT_EDGE] = False
    tail = np.zeros(n, bool)
    tail[SHORT_EDGE:] = True
    return pa.table({
        "short_dense": pa.array(s),
        "short_edges": pa.array(with_empty, mask=edges | (rng.random(n) < 0.1)),
        "short_rare": pa.array(rare, mask=edges),
        "short_later_nulls": pa.array(s, mask=later),
        "short_tail_null": pa.array(s, mask=tail),
        "short_large": pa.array(with_empty, pa.large_string(), mask=edges),
    })


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("fsst_pages")
    made = {}
    for name, table, batch in (("t", _table(), BATCH), ("s", _short_table(), SHORT_BATCH)):
        for version in ("2.1", "2.2", "2.3"):
            uri = str(root / f"{name}{version}.lance")
            reader = pa.RecordBatchReader.from_batches(table.schema, iter(table.to_batches(max_chunksize=batch)))
            lance.write_dataset(reader, uri, data_storage_version=version)
            made[version if name == "t" else "short" + version] = uri
    return made


@pytest.fixture(params=KERNELS)
def kernels(request, monkeypatch):
    use_kernels(monkeypatch, request.param)
    return request.param


@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
def test_whole_columns_of_long_fsst_strings_equal_pylance(tables, kernels, version):
    uri = tables[version]
    ds = lance.dataset(uri)
    snap = open_snapshot(uri)
    reader = open_data_file(snap.io, snap.fragments[0].files[0])
    together = set()
    for name in ("dense", "edges", "later_nulls", "tail_null", "large"):
        want = ds.to_table(columns=[name]).column(0).combine_chunks()
        with decode_trace() as trace:
            got = reader.read_field(snap.schema.field(name))
        assert got.type == want.type and got.equals(want), name
        assert "fz:fsst" in trace.names(), f"{name}: {sorted(trace.names())}"
        assert len(trace.values("path:fsst:decompress")) >= 2 or "layout:constant" in str(trace.names()), name
        if trace.values("path:fsst-pages"):
            together.add(name)
    # columns whose pages are all FSST full-zip pages were decoded together; a page of nulls only
    # (a constant page) or 2.3's sparse pages over full-zip values (half the rows null) keep the
    # page by page path (their values checked above)
    want = {"dense", "edges", "large"} | ({"later_nulls"} if version != "2.3" else set())
    assert together == want, together


@pytest.mark.parametrize("version", ["2.2", "2.3"])
def test_ranges_and_taken_rows_across_the_pages_equal_pylance(tables, version, monkeypatch):
    monkeypatch.setattr(column, "PARALLEL_PAGE_ROWS", 1)
    uri = tables[version]
    ds = lance.dataset(uri)
    snap = open_snapshot(uri)
    reader = open_data_file(snap.io, snap.fragments[0].files[0])
    idx = np.array(sorted({0, 1, 998, 999, 1_000, 1_001, 2_999, 3_000, 3_999} | set(range(1_500, 2_600, 7))))
    for name in ("edges", "tail_null"):
        field = snap.schema.field(name)
        got = reader.read_field(field, range(990, 3_010))
        want = ds.to_table(columns=[name]).column(0).combine_chunks().slice(990, 2_020)
        assert got.equals(want), name
        assert reader.read_field(field, idx).equals(ds.take(idx, columns=[name]).column(0).combine_chunks()), name


def test_a_page_with_another_layout_keeps_the_page_by_page_path(tables):
    """Pages are decoded together only when every page is a full-zip FSST page: the trace of each
    column says which path it took, and the values are pylance's either way (see above)."""
    snap = open_snapshot(tables["2.2"])
    reader = open_data_file(snap.io, snap.fragments[0].files[0])
    with decode_trace() as trace:
        reader.read_field(snap.schema.field("dense"))
    assert trace.values("path:fsst-pages") and trace.values("path:fsst-pages")[0] >= 2


@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
def test_whole_columns_of_short_fsst_strings_in_mini_block_pages_equal_pylance(tables, kernels, version):
    uri = tables["short" + version]
    ds = lance.dataset(uri)
    snap = open_snapshot(uri)
    reader = open_data_file(snap.io, snap.fragments[0].files[0])
    together = set()
    names = ("short_dense", "short_edges", "short_rare", "short_later_nulls", "short_tail_null", "short_large")
    for name in names:
        want = ds.to_table(columns=[name]).column(0).combine_chunks()
        with decode_trace() as trace:
            got = reader.read_field(snap.schema.field(name))
        assert got.type == want.type and got.equals(want), name
        if trace.values("path:fsst-pages"):
            assert trace.values("path:fsst-pages") == [2] and "mb:fsst" in trace.names(), name
            together.add(name)
        if name == "short_rare":
            assert "path:fsst:escapes" in trace.names()
    # every version writes these as mini-block FSST pages, the all-null last page and a page without
    # nulls beside one with them included: all decoded together
    assert together == set(names), together


def test_short_strings_ranges_and_taken_rows_across_the_pages_equal_pylance(tables):
    uri = tables["short2.2"]
    ds = lance.dataset(uri)
    snap = open_snapshot(uri)
    reader = open_data_file(snap.io, snap.fragments[0].files[0])
    idx = np.array(sorted({0, 1, SHORT_EDGE - 1, SHORT_EDGE, SHORT_EDGE + 1, SHORT_ROWS - 1}
                          | set(range(90_000, 99_000, 13))))
    for name in ("short_edges", "short_rare"):
        field = snap.schema.field(name)
        whole = ds.to_table(columns=[name]).column(0).combine_chunks()
        assert reader.read_field(field, range(SHORT_EDGE - 500, SHORT_EDGE + 700)).equals(
            whole.slice(SHORT_EDGE - 500, 1_200)), name
        assert reader.read_field(field, idx).equals(ds.take(idx, columns=[name]).column(0).combine_chunks()), name
