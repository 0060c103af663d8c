"""2.3 sparse pages with list layers decode straight to offsets (``sparse23:direct-list``):
differential against pylance (and against the rep/def path, and 2.1 / 2.2 files of the same
tables) for null and empty lists, null items, strings, structs above and in the list, lists of
lists, lists of structs of lists, a single
huge list, long runs of empty lists, many pages, pages of other layouts in the same column,
row selections, limit / offset, take, filters, deletions and DuckDB.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lance_duck.file.v2_1.layouts import sparse23
from lance_duck.trace import decode_trace

from .conftest import assert_same

N = 40_000


def _lists(rng, n: int, items: pa.Array | None = None, p_null: float = 0.05, p_item: float = 0.05,
           max_len: int = 9) -> pa.Array:
    lens = rng.integers(0, max_len, n)
    off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    k = int(off[-1])
    if items is None:
        items = pa.array(rng.integers(0, 1 << 16, k).astype(np.int32), mask=rng.random(k) < p_item)
    return pa.ListArray.from_arrays(pa.array(off), items.slice(0, k), mask=pa.array(rng.random(n) < p_null))


def _runs_and_huge(rng, n: int) -> pa.Array:
    """Long runs of empty lists (and of null lists), one list of 150k items, short lists between."""
    lens = rng.integers(0, 9, n)
    lens[n // 40: n * 9 // 40] = 0   # 8000 empty lists in a row (n = 40k)
    lens[n // 2] = 150_000           # a single huge list
    null = np.zeros(n, bool)
    null[n * 3 // 10: n * 13 // 40] = True   # 1000 null lists in a row
    null[rng.random(n) < 0.02] = True
    lens[null] = 0
    off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    k = int(off[-1])
    items = pa.array(rng.integers(-50, 50, k).astype(np.int32), mask=rng.random(k) < 0.1)
    return pa.ListArray.from_arrays(pa.array(off), items, mask=pa.array(null))


def lists_table(n: int = N, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = pa.array([f"w{i:04d}" * (1 + i % 3) for i in range(9 * n)], mask=rng.random(9 * n) < 0.05)
    xs = pa.array(rng.integers(0, 100, 9 * n).astype(np.int32), mask=rng.random(9 * n) < 0.1)
    structs = pa.StructArray.from_arrays([xs, words], names=["x", "s"], mask=pa.array(rng.random(9 * n) < 0.05))
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "l": _lists(rng, n),
        "l_str": _lists(rng, n, words),
        "st_l": pa.StructArray.from_arrays([_lists(rng, n)], names=["a"], mask=pa.array(rng.random(n) < 0.05)),
        "l_st": _lists(rng, n, structs),
        "l_runs": _runs_and_huge(rng, n),
        "l_l": _lists(rng, n, _lists(rng, 9 * n, max_len=5), max_len=4),
        "l_st_l": _lists(rng, n, pa.StructArray.from_arrays([_lists(rng, 9 * n, max_len=4)], names=["a"],
                                                            mask=pa.array(rng.random(9 * n) < 0.05)), max_len=4),
    })


LIST_COLUMNS = ["l", "l_str", "st_l", "l_st", "l_runs", "l_l", "l_st_l"]


def _write(path, table: pa.Table, version: str, **kw) -> str:
    import lance
    lance.write_dataset(table, str(path), data_storage_version=version, **kw)
    return str(path)


@pytest.fixture(scope="module")
def lists23(tmp_path_factory):
    """{name: (path, the table written)}: one page per column, many pages, other layouts mixed in,
    the same table at 2.1 and 2.2."""
    root = tmp_path_factory.mktemp("lists23")
    t = lists_table()
    out = {"one": (_write(root / "one", t, "2.3"), t)}
    batches = t.to_batches(max_chunksize=13_400)
    reader = pa.RecordBatchReader.from_batches(t.schema, iter(batches))
    out["pages"] = (_write(root / "pages", reader, "2.3", data_cache_bytes=4096), t)
    # batches of short, repetitive lists (written as mini-block rep/def pages) between sparse ones
    small = pa.table({"id": pa.array(np.arange(4000, dtype=np.int64)),
                      "l": pa.array([[1, 2], None, [4, 5, 6], []] * 1000, pa.list_(pa.int32())),
                      "l_l": pa.array([[[1], None], None, [[], [4, 5]], []] * 1000, pa.list_(pa.list_(pa.int32())))})
    big = t.select(["id", "l", "l_l"])
    mixed = pa.concat_tables([small, big.slice(0, 25_000), small, big.slice(25_000, 3000), small])
    mixed = mixed.set_column(0, "id", pa.array(np.arange(mixed.num_rows, dtype=np.int64)))
    reader = pa.RecordBatchReader.from_batches(mixed.schema, iter(mixed.to_batches(max_chunksize=25_000)))
    out["mixed"] = (_write(root / "mixed", reader, "2.3", data_cache_bytes=4096), mixed)
    for v in ("2.1", "2.2"):
        out[v] = (_write(root / v, t, v), t)
    return out


def _reader(path: str):
    from lance_duck.file import open_data_file
    from lance_duck.table.snapshot import open_snapshot
    snap = open_snapshot(path)
    assert len(snap.fragments) == 1
    return snap, open_data_file(snap.io, snap.fragments[0].files[0])


def _read_all(path: str, table: pa.Table, columns: list[str], rows=None) -> None:
    """Every column (whole or ``rows``) equals the written table and pylance's read."""
    import lance
    snap, reader = _reader(path)
    ds = lance.dataset(path)
    for c in columns:
        f = snap.schema.field(c)
        exp = table.column(c) if rows is None else table.column(c).take(pa.array(np.asarray(rows)))
        theirs = ds.to_table(columns=[c]).column(0) if rows is None else ds.take(np.asarray(rows), columns=[c]).column(0)
        got = reader.read_field(f, rows)
        assert_same(got, theirs, f"{path} {c} (pylance)")
        assert got.equals(exp.combine_chunks()), f"{path} {c} (written)"   # (children under null structs aside)


def _direct_columns(path: str, columns: list[str]) -> dict[str, set[str]]:
    snap, reader = _reader(path)
    out = {}
    for c in columns:
        with decode_trace() as trace:
            reader.read_field(snap.schema.field(c))
        out[c] = {n for n in trace.names() if n.startswith("sparse23:") and n in ("sparse23:direct-list",
                                                                                  "sparse23:levels")}
    return out


def test_one_list_layer_pages_decode_straight_to_offsets_and_equal_pylance(lists23):
    path, t = lists23["one"]
    assert _direct_columns(path, LIST_COLUMNS) == {c: {"sparse23:direct-list"} for c in LIST_COLUMNS}
    _read_all(path, t, ["id"] + LIST_COLUMNS)


def test_direct_offsets_equal_the_rep_def_path(lists23, monkeypatch):
    """The same pages read with the rule turned off (rep/def levels) give the same arrays."""
    path, t = lists23["one"]
    snap, reader = _reader(path)
    direct = {c: reader.read_field(snap.schema.field(c)) for c in LIST_COLUMNS}
    monkeypatch.setattr(sparse23, "_direct_rule", lambda layers: False)
    snap, reader = _reader(path)
    with decode_trace() as trace:
        for c in LIST_COLUMNS:
            assert_same(reader.read_field(snap.schema.field(c)), direct[c], c)
    assert "sparse23:levels" in trace.names() and "sparse23:direct-list" not in trace.names()


def _same_answers(a: list, b: list, what: str) -> None:
    """Same offsets and validity per layer (None = all valid)."""
    def norm(x, n):
        return np.ones(n, bool) if x is None else np.asarray(x)
    assert len(a) == len(b), what
    for i, (x, y) in enumerate(zip(reversed(a), reversed(b))):   # outermost first: slots known
        if isinstance(x, tuple):
            assert np.array_equal(x[0], y[0]), f"{what} layer {i} offsets"
            assert np.array_equal(norm(x[1], x[0].size - 1), norm(y[1], y[0].size - 1)), f"{what} layer {i}"
        else:
            size = (x if x is not None else y).size if (x is not None or y is not None) else 0
            assert np.array_equal(norm(x, size), norm(y, size)), f"{what} layer {i} validity"


def test_direct_answers_equal_the_unravelled_levels_built_from_positions(lists23, monkeypatch):
    """Per page, the offsets and validity masks built from the positions equal those the rep/def
    path's levels unravel to (what a level page contributes to a column of direct pages)."""
    from lance_duck.file.v2_1.direct_lists import DirectList
    path, _ = lists23["one"]
    seen = []
    decode = sparse23.SparsePage.decode

    def both(self, data, local):
        if self.direct:
            direct = self._direct(iter(data[self._n_inner:]))
            rep, defs = self._levels(iter(data[self._n_inner:]))[:2]
            _same_answers(direct.answers, DirectList.from_levels(rep, defs, self.layers, self.rows, "x").answers,
                          self.what)
            seen.append(self.what)
        return decode(self, data, local)
    monkeypatch.setattr(sparse23.SparsePage, "decode", both)
    snap, reader = _reader(path)
    for c in LIST_COLUMNS:
        reader.read_field(snap.schema.field(c))
    assert len(seen) == 8   # a page per leaf (l_st: two leaves)


def test_many_pages_and_selections_across_page_edges_equal_pylance(lists23):
    path, t = lists23["pages"]
    snap, reader = _reader(path)
    col = reader.ref.column_of(snap.schema.field("l").children[0].id)
    assert len(reader.container.column(col).pages) >= 3
    kinds = _direct_columns(path, LIST_COLUMNS)
    assert all("sparse23:direct-list" in v for v in kinds.values()), kinds
    _read_all(path, t, LIST_COLUMNS)
    rng = np.random.default_rng(11)
    scattered = np.sort(rng.choice(N, 700, replace=False)).astype(np.int64)
    _read_all(path, t, LIST_COLUMNS, scattered)
    _read_all(path, t, LIST_COLUMNS, range(5_990, 24_013))          # a run over page edges
    _read_all(path, t, ["l_runs"], range(19_990, 20_011))          # around the huge list
    _read_all(path, t, ["l_runs"], np.array([999, 1000, 5000, 8999, 12_500, 20_000], np.int64))


def test_a_column_mixing_direct_pages_with_level_pages_equals_pylance(lists23):
    path, t = lists23["mixed"]
    snap, reader = _reader(path)
    for c in ("l", "l_l"):
        with decode_trace() as trace:
            reader.read_field(snap.schema.field(c))
        layouts = [n for n, _ in trace.events if n.startswith("layout:")]
        assert "sparse23:direct-list" in trace.names()
        assert layouts.count("layout:miniblock:large") > layouts.count("layout:sparse23:nested")  # pages of both
    _read_all(path, t, ["l", "l_l"])
    _read_all(path, t, ["l", "l_l"], np.arange(3_000, t.num_rows, 37, dtype=np.int64))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_the_same_lists_at_2_1_and_2_2_equal_pylance(lists23, version):
    path, t = lists23[version]
    _read_all(path, t, LIST_COLUMNS)
    _read_all(path, t, LIST_COLUMNS, np.arange(5, N, 101, dtype=np.int64))


def test_limit_offset_take_filter_and_deletions_equal_pylance(lists23, tmp_path):
    import shutil

    import lance

    import lance_duck
    src, _ = lists23["pages"]
    path = str(tmp_path / "deleted")
    shutil.copytree(src, path)
    ref = lance.dataset(path)
    ref.delete("id % 5 = 1 or (id >= 19990 and id < 20000)")
    ref = lance.dataset(path)
    ds = lance_duck.dataset(path)
    cols = ["id"] + LIST_COLUMNS
    assert ds.to_table(columns=cols).equals(ref.to_table(columns=cols))
    assert ds.to_table(columns=cols, limit=3000, offset=5_500).equals(ref.to_table(columns=cols, limit=3000,
                                                                                    offset=5_500))
    idx = np.array([0, 3, 4, 5_999, 6_000, 15_996, 16_007, 31_000, ref.count_rows() - 1], np.int64)
    assert ds.take(idx, columns=cols).equals(ref.take(idx, columns=cols))
    flt = "id % 7 = 3 and id > 900"
    assert ds.to_table(columns=cols, filter=flt).equals(ref.to_table(columns=cols, filter=flt))
    batches = list(ds.to_batches(columns=cols, batch_size=4_999))   # batch edges inside pages
    assert len(batches) > 5 and max(b.num_rows for b in batches) <= 4_999
    assert pa.Table.from_batches(batches).equals(ref.to_table(columns=cols))


def test_duckdb_over_direct_lists_equals_pylance(lists23):
    import duckdb
    import lance

    import lance_duck
    path, _ = lists23["pages"]
    con = duckdb.connect()
    lance_duck.register(con, "t", lance_duck.dataset(path))
    got = con.execute("select id, len(l), l[2], len(l_str), l_str[1], len(st_l.a), len(l_st), l_st[1].s, "
                      "len(l_runs) from t where id % 3 = 0 order by id").fetchall()

    def at(v, i):
        return v[i] if v is not None and len(v) > i else None

    def length(v):
        return None if v is None else len(v)
    exp = [(r["id"], length(r["l"]), at(r["l"], 1), length(r["l_str"]), at(r["l_str"], 0),
            length((r["st_l"] or {}).get("a")), length(r["l_st"]), (at(r["l_st"], 0) or {}).get("s"),
            length(r["l_runs"]))
           for r in lance.dataset(path).to_table(filter="id % 3 = 0").to_pylist()]
    assert got == exp


def _item_cases(rng, n: int) -> dict[str, pa.Array]:
    lens = rng.integers(0, 9, n)
    off = pa.array(np.concatenate([[0], np.cumsum(lens)]).astype(np.int32))
    k = int(off[-1].as_py())
    mask = pa.array(rng.random(n) < 0.05)
    ints = pa.array(rng.integers(0, 9, k).astype(np.int32), mask=rng.random(k) < 0.05)
    return {
        "all_null_items": pa.ListArray.from_arrays(off, pa.nulls(k, pa.int32()), mask=mask),
        "all_empty_or_null": pa.ListArray.from_arrays(pa.array(np.zeros(n + 1, np.int32)), pa.array([], pa.int32()),
                                                      mask=mask),
        "large_list": pa.LargeListArray.from_arrays(off.cast(pa.int64()), ints, mask=mask),
        "dictionary_items": pa.ListArray.from_arrays(off, pa.array(np.array(["a", "bb", "ccc"])[rng.integers(0, 3, k)],
                                                                   mask=rng.random(k) < 0.05).dictionary_encode(),
                                                     mask=mask),
        "map": pa.MapArray.from_arrays(off, pa.array([f"k{i % 50}" for i in range(k)]), ints, mask=mask),
        "floats": pa.ListArray.from_arrays(off, pa.array(rng.random(k), mask=rng.random(k) < 0.3), mask=mask),
        "bools": pa.ListArray.from_arrays(off, pa.array(rng.random(k) < 0.5, mask=rng.random(k) < 0.3), mask=mask),
        "non_null_items": pa.ListArray.from_arrays(off, ints.fill_null(0), mask=mask).cast(
            pa.list_(pa.field("item", pa.int32(), nullable=False))),
    }


@pytest.mark.parametrize("name", list(_item_cases(np.random.default_rng(0), 10)))
def test_more_item_types_under_one_list_layer_equal_pylance(tmp_path, name):
    """All-null items (no value plane), only empty / null lists, large lists, dictionary strings,
    maps, floats, booleans and non-nullable items: decoded straight to offsets, equal to pylance."""
    import lance

    import lance_duck
    arr = _item_cases(np.random.default_rng(1), 30_000)[name]
    schema = pa.schema([pa.field("c", arr.type)])
    path = _write(tmp_path / name, pa.table({"c": arr}, schema=schema), "2.3")
    with decode_trace() as trace:
        got = lance_duck.dataset(path).to_table()
    assert "sparse23:direct-list" in trace.names()
    ref = lance.dataset(path)
    assert_same(got.column("c").combine_chunks(), ref.to_table().column("c"), name)
    sel = np.sort(np.random.default_rng(2).choice(30_000, 500, replace=False)).astype(np.int64)
    assert lance_duck.dataset(path).take(sel).equals(ref.take(sel))
