"""FSST edge cases written by pylance 14.0.2 (2.2 and 2.3), read by lance_duck, compared with
pylance: empty strings, nulls, all-null columns, escapes (bytes outside the symbol table),
very long values, multi-chunk and multi-page columns, ranges and taken rows, through the file
reader and the dataset API; and the kernel paths (code pairs, pieces on the kernel pool) on
those real pages."""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck import _state
from lance_duck.encodings import _threads, fsst
from lance_duck.file import open_data_file
from lance_duck.file.v2_1 import column
from lance_duck.table.snapshot import open_snapshot
from lance_duck.trace import decode_trace
from tests._kernels import use_kernels

VERSIONS = ["2.2", "2.3"]
MINI_ROWS = 100_000   # two mini-block pages per string column at 5,000-row batches
ZIP_ROWS = 8_000      # full-zip pages (strings of ~150-450 characters, a few of ~25 KB)
RARE = ["\x00", "\x01\x02", "\u00ff", "\u20ac", "\U0001f642", "\x7f"]


def _words(rng: np.random.Generator, lo: int, hi: int, n: int) -> list[str]:
    words = np.array([f"w{i:03d}" for i in range(800)])
    lens = rng.integers(lo, hi, n)
    flat = words[rng.integers(0, 800, int(lens.sum()))].tolist()
    out, at = [], 0
    for k in lens.tolist():
        out.append(" ".join(flat[at:at + k]))
        at += k
    return out


def _with_rare_bytes(rng: np.random.Generator, strings: list[str], every: int) -> list[str]:
    """Append characters the symbol table will not hold (CJK, control bytes) to one string in
    ``every``: their bytes are escaped (0xFF + literal byte)."""
    out = list(strings)
    for i in rng.choice(len(out), len(out) // every, replace=False).tolist():
        out[i] = out[i] + chr(0x3000 + i % 500) + RARE[i % len(RARE)]
    return out


def _mini_table() -> pa.Table:
    rng = np.random.default_rng(11)
    n = MINI_ROWS
    vals = rng.integers(0, 1 << 48, n).tolist()
    short = [f"{v:012x}"[:w] for v, w in zip(vals, rng.integers(0, 13, n).tolist())]   # 1 in 13 empty
    short = _with_rare_bytes(rng, short, 200)
    sparse = [s if keep else None for s, keep in zip(short, (rng.random(n) < 0.02).tolist())]
    return pa.table({
        "short": pa.array(short, mask=rng.random(n) < 0.05),
        "large": pa.array(short, pa.large_string()),
        "text": pa.array(_with_rare_bytes(rng, _words(rng, 1, 6, n), 100)),
        "mostly_null": pa.array(sparse, pa.string()),
        "all_null": pa.nulls(n, pa.string()),
        "all_empty_but_one": pa.array([""] * (n - 1) + ["x"]),
    })


def _zip_table() -> pa.Table:
    rng = np.random.default_rng(12)
    n = ZIP_ROWS
    long = _words(rng, 30, 90, n)
    for i in rng.choice(n, n // 50, replace=False).tolist():
        long[i] = ""
    huge = _words(rng, 30, 60, n)
    for i in range(0, n, 1000):
        huge[i] = _words(rng, 5_000, 5_001, 1)[0]     # ~25 KB values (~60 KB would be zstd)
    return pa.table({
        "long": pa.array(long, mask=rng.random(n) < 0.05),
        "long_rare": pa.array(_with_rare_bytes(rng, _words(rng, 30, 90, n), 100)),
        "huge": pa.array(huge),
    })


def _zip_pages_table() -> pa.Table:
    """Long strings, 30 % null, that pylance writes as two unequal full-zip pages (30,000 and
    10,000 rows: pages are cut at ~8 MB between 10,000-row batches)."""
    rng = np.random.default_rng(13)
    n = 40_000
    return pa.table({"long_null": pa.array(_words(rng, 30, 90, n), mask=rng.random(n) < 0.3)})


TABLES = {"mini": (_mini_table, 5_000), "zip": (_zip_table, 1_000), "zip_pages": (_zip_pages_table, 10_000)}

@pytest.fixture(autouse=True)
def _kernels(monkeypatch):
    """The numpy kernels (test_encodings_fsst_compiled.py runs the path-independent tests here
    again with the compiled ones)."""
    use_kernels(monkeypatch, "numpy")


# columns written with FSST, and the decode path they must take (checked, so a change in
# pylance's encoding choices fails here rather than testing something else)
FSST_COLUMNS = {"mini": {"short": "mb:fsst", "large": "mb:fsst", "text": "mb:fsst"},
                "zip": {"long": "fz:fsst", "long_rare": "fz:fsst", "huge": "fz:fsst"}}


@pytest.fixture(scope="module")
def fsst_tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("fsst_pylance")
    made: dict[tuple[str, str], tuple[str, pa.Table]] = {}

    def get(kind: str, version: str) -> tuple[str, pa.Table]:
        if (kind, version) not in made:
            make, batch = TABLES[kind]
            table = make()
            uri = str(root / f"{kind}_{version}.lance")
            reader = pa.RecordBatchReader.from_batches(table.schema, iter(table.to_batches(max_chunksize=batch)))
            lance.write_dataset(reader, uri, data_storage_version=version)
            made[kind, version] = uri, lance.dataset(uri).to_table()
        return made[kind, version]
    return get


def _reader(uri: str):
    snap = open_snapshot(uri)
    assert len(snap.fragments) == 1
    return snap, open_data_file(snap.io, snap.fragments[0].files[0])


CASES = [(k, v) for k in ("mini", "zip") for v in VERSIONS]


@pytest.mark.parametrize("kind,version", CASES, ids=[f"{k}-{v}" for k, v in CASES])
def test_fsst_columns_decode_like_pylance(fsst_tables, kind, version):
    uri, expected = fsst_tables(kind, version)
    snap, reader = _reader(uri)
    for name in expected.column_names:
        with decode_trace() as trace:
            got = reader.read_field(snap.schema.field(name))
        want = expected.column(name).combine_chunks()
        assert got.type == want.type and got.equals(want), name
        path = FSST_COLUMNS[kind].get(name)
        if path is not None:
            assert path in trace.names(), f"{name}: {sorted(trace.names())}"


@pytest.mark.parametrize("version", VERSIONS)
def test_fsst_escapes_and_multiple_pages_really_occur(fsst_tables, version):
    uri, _ = fsst_tables("mini", version)
    snap, reader = _reader(uri)
    with decode_trace() as trace:
        reader.read_field(snap.schema.field("short"))
    assert "path:fsst:escapes" in trace.names()
    assert trace.names() & {"layout:miniblock", "layout:miniblock:large"}
    assert len(trace.values("path:page-group")) >= 2 or len(trace.values("path:fsst:decompress")) >= 2
    uri, _ = fsst_tables("zip", version)
    snap, reader = _reader(uri)
    with decode_trace() as trace:
        reader.read_field(snap.schema.field("long_rare"))
    assert "path:fsst:escapes" in trace.names() and len(trace.values("path:fsst:decompress")) >= 2


def _selections(n: int) -> dict[str, object]:
    r = np.random.default_rng(5)
    return {
        "sparse": np.sort(r.choice(n, 41, replace=False)).astype(np.int64),
        "dense": np.sort(r.choice(n, n // 3, replace=False)).astype(np.int64),
        "ends": np.array([0, n - 1], np.int64),
        "head": range(0, 7),
        "across_pages": range(n // 2 - n // 8 - 3, n // 2 + n // 8),
        "odd_middle": range(n // 7 + 3, n - n // 5 - 1),
        "tail": range(n - 5, n),
        "one": range(n // 3, n // 3 + 1),
        "none": np.zeros(0, np.int64),
    }


@pytest.mark.parametrize("kind,version", CASES, ids=[f"{k}-{v}" for k, v in CASES])
def test_fsst_ranges_and_taken_rows_equal_pylance_take(fsst_tables, kind, version):
    uri, expected = fsst_tables(kind, version)
    snap, reader = _reader(uri)
    ds = lance.dataset(uri)
    failures = []
    for sel_name, sel in _selections(expected.num_rows).items():
        idx = np.asarray(list(sel) if isinstance(sel, range) else sel, np.int64)
        want = ds.take(idx) if idx.size else expected.slice(0, 0)
        for name in expected.column_names:
            got = reader.read_field(snap.schema.field(name), sel)
            if not (got.type == want.schema.field(name).type and got.equals(want.column(name).combine_chunks())):
                failures.append(f"{sel_name} {name}")
    assert not failures, failures


@pytest.mark.parametrize("version", VERSIONS)
def test_fsst_strings_through_the_dataset_api(fsst_tables, version):
    uri, expected = fsst_tables("mini", version)
    ours, theirs = lance_duck.dataset(uri), lance.dataset(uri)
    idx = [3, 17, 50_000, 50_001, MINI_ROWS - 1]
    cols = ["short", "text", "mostly_null"]
    assert ours.take(idx, columns=cols).equals(theirs.take(idx, columns=cols))
    got = ours.to_table(columns=cols, offset=49_990, limit=25)
    assert got.equals(theirs.to_table(columns=cols, offset=49_990, limit=25))
    for flt in ["short = ''", "short IS NULL", "text LIKE 'w00%'", "mostly_null IS NOT NULL"]:
        got = ours.to_table(columns=["short", "text"], filter=flt)
        want = theirs.to_table(columns=["short", "text"], filter=flt)
        assert got.num_rows > 0 and got.equals(want), flt


@pytest.mark.parametrize("version", VERSIONS)
def test_fsst_code_pairs_and_pool_pieces_on_pylance_pages(fsst_tables, monkeypatch, version):
    """The long-string pages decoded with the pair path and in pieces on a two-thread pool
    (a multiple of two pieces per page), the short-string pages with pairs forced on: the
    same values as pylance."""
    monkeypatch.setitem(_state._settings, "kernel_threads", 2)
    monkeypatch.setattr(fsst, "PIECE_TOKENS", 50_000)
    monkeypatch.setattr(fsst, "PARALLEL_MIN_TOKENS", 20_000)
    uri, expected = fsst_tables("zip", version)
    snap, reader = _reader(uri)
    with decode_trace() as trace:
        got = reader.read_field(snap.schema.field("long"))
    assert got.equals(expected.column("long").combine_chunks())
    pieces = trace.values("path:fsst:pieces")
    assert "path:fsst:pairs" in trace.names() and pieces and all(p % 2 == 0 for p in pieces)
    monkeypatch.setattr(fsst, "PAIR_MIN_TOKENS", 64)
    monkeypatch.setattr(fsst, "PAIR_MIN_CODES_PER_STRING", 1)
    uri, expected = fsst_tables("mini", version)
    snap, reader = _reader(uri)
    for name in ("large", "text"):     # escape-free pages take pairs, pages with escapes single codes
        with decode_trace() as trace:
            got = reader.read_field(snap.schema.field(name))
        assert got.equals(expected.column(name).combine_chunks()), name
    assert "path:fsst:pairs" in trace.names() or "path:fsst:escapes" in trace.names()


@pytest.mark.parametrize("version", VERSIONS)
def test_fsst_pieces_of_pages_decoded_concurrently_are_shared_with_the_idle_worker(fsst_tables, monkeypatch,
                                                                                     version):
    """Unequal pages decoded concurrently on the kernel pool (as large columns are) cut their
    FSST strings into pieces that the other worker helps with once its own page is done (code
    pairs with nulls; single codes with escapes): a range across the pages and taken rows equal
    pylance's. A whole column's pages are decoded together instead (``path:fsst-pages``: the
    pieces of both pages on the pool, one output) and equal pylance's too."""
    monkeypatch.setitem(_state._settings, "kernel_threads", 2)
    monkeypatch.setattr(column, "PARALLEL_PAGE_ROWS", 1)      # (the zip table's pages are small)
    monkeypatch.setattr(fsst, "PIECE_TOKENS", 50_000)
    monkeypatch.setattr(fsst, "PARALLEL_MIN_TOKENS", 20_000)
    for kind, name, path in [("zip_pages", "long_null", "path:fsst:pairs"),
                             ("zip", "long_rare", "path:fsst:escapes")]:
        uri, expected = fsst_tables(kind, version)
        snap, reader = _reader(uri)
        field = snap.schema.field(name)
        with decode_trace() as trace:
            got = reader.read_field(field)
        assert got.equals(expected.column(name).combine_chunks()), name
        assert len(trace.values("path:fsst:decompress")) == 2 and path in trace.names(), name
        assert trace.values("path:fsst-pages") == [2], f"{name}: {sorted(trace.names())}"
        ((inputs, pieces),) = trace.values("path:fsst:many")
        assert inputs == 2 and pieces > 2, name
        n = expected.num_rows
        rows = range(n // 2 + 3, n - n // 40)     # across both pages
        with decode_trace() as trace:
            got = reader.read_field(field, rows)
        assert got.equals(expected.column(name).slice(rows.start, len(rows)).combine_chunks()), name
        assert trace.values("path:shared-parts"), name
        idx = np.sort(np.random.default_rng(3).choice(n, n // 2, replace=False))
        want = lance.dataset(uri).take(idx, columns=[name]).column(0).combine_chunks()
        assert reader.read_field(field, idx).equals(want), name


def test_piece_count_is_a_multiple_of_the_pool_workers(monkeypatch):
    monkeypatch.setitem(_state._settings, "kernel_threads", 2)
    p, m = fsst.PIECE_TOKENS, fsst.PARALLEL_MIN_TOKENS
    assert fsst._piece_count(m - 1) == (m - 1) // p            # small: as many pieces as PIECE_TOKENS fit
    assert fsst._piece_count(m) == 2                           # large enough for the pool: two halves
    assert fsst._piece_count(3 * p + 5) == 4                   # 3 pieces on 2 threads -> 4
    assert fsst._piece_count(4 * p) == 4
    monkeypatch.setitem(_state._settings, "kernel_threads", 1)
    assert fsst._piece_count(3 * p + 5) == 3                   # one thread: pieces only bound the size


def test_on_a_kernel_thread_only_inputs_cut_anyway_are_cut_for_two(monkeypatch):
    # (a page decoded beside another: a split nobody helps with would only add a join copy)
    monkeypatch.setitem(_state._settings, "kernel_threads", 2)
    p, m = fsst.PIECE_TOKENS, fsst.PARALLEL_MIN_TOKENS
    got = _threads.map_parts(lambda n: fsst._piece_count(n), [m, p + 5, 2 * p, 3 * p + 5, 9 * p])
    assert got == [0, 1, 2, 4, 10]


@pytest.mark.parametrize("kind,version", CASES, ids=[f"{k}-{v}" for k, v in CASES])
def test_a_few_selected_strings_are_expanded_in_numpy_like_pylance_take(fsst_tables, kind, version):
    """Selections of a few strings (escaped bytes included) take the tiny numpy path
    (``path:fsst:tiny``) where they are FSST-coded and equal pylance's take; a whole column
    does not take it."""
    uri, expected = fsst_tables(kind, version)
    snap, reader = _reader(uri)
    ds = lance.dataset(uri)
    name = "short" if kind == "mini" else "long_rare"
    col = expected.column(name).combine_chunks()
    rare = [i for i, v in enumerate(col.to_pylist()) if v and any(ord(c) >= 0x3000 for c in v)]
    filled = [i for i, v in enumerate(col.to_pylist()) if v]
    for idx in ([rare[0]], [rare[1], rare[2]], [filled[0]], [filled[-1]], filled[-9:]):
        with decode_trace() as trace:
            got = reader.read_field(snap.schema.field(name), np.asarray(idx, np.int64))
        assert got.equals(ds.take(idx, columns=[name]).column(name).combine_chunks()), idx
        tiny = trace.values("path:fsst:tiny")
        assert all(0 <= t <= fsst.TINY_TOKENS for t in tiny), idx
        if kind == "mini" and idx[0] in rare:   # escaped bytes (256 + byte) took the tiny path
            assert tiny and max(tiny) > 0, idx
    with decode_trace() as trace:
        reader.read_field(snap.schema.field(name))
    assert not trace.values("path:fsst:tiny")
