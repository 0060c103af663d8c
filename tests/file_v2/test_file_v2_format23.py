"""File format 2.3 (pylance ``data_storage_version="2.3"``) beyond the type matrix (which runs every
table at 2.3 too: test_file_v2_scan / _take / _big, with ``conftest.REFUSED_23`` naming what stays
refused): sparse list layers, refusal messages, multi-fragment tables through the table API and DuckDB.
"""
from __future__ import annotations

import numpy as np
import pytest

from lance_duck.errors import UnsupportedFeatureError

from .conftest import REFUSED_23, SPECS, assert_same


def test_refusal_table_names_matrix_tables_and_columns(v2_datasets):  # (empty today)
    """What stays refused at 2.3 exists in the matrix (a stale entry would hide nothing)."""
    for name, cols in REFUSED_23.items():
        assert name in SPECS
        fx = v2_datasets(name, "2.3")
        assert set(cols) <= {f.name for f in fx.fields()}, name


def test_2_3_sparse_list_layers_equal_pylance(v2_datasets):
    """Null lists, empty lists and null items stored by position (one and two list levels, list of
    structs, dictionary strings) read like pylance (row selections: test_file_v2_take)."""
    fx = v2_datasets("sparse_lists", "2.3")
    reader = fx.reader()
    from lance_duck.file.v2_1.column import page_layout
    from lance_duck.file.v2_1.planar23 import SparseLayout, SparseList
    layouts = [page_layout(p, "x") for i in range(5) for p in reader.container.column(i).pages]
    assert any(isinstance(x, SparseLayout) and sum(isinstance(y, SparseList) for y in x.layers) == 2
               for x in layouts)   # the two-level list is stored sparse
    for f in fx.fields():
        assert_same(reader.read_field(f), fx.expected.column(f.name), f"sparse_lists {f.name}")


def test_2_3_zipped_values_under_a_sparse_list_layer_equal_pylance(v2_datasets):
    """A list of long strings with mostly null items: a sparse list layer over full-zip values
    (and a list of vectors, zipped with rep/def); whole column, row selections, ranges."""
    from lance_duck.trace import decode_trace
    fx = v2_datasets("sparse_zipped_lists", "2.3")
    reader = fx.reader()
    n = fx.ds.count_rows()
    fields = {f.name: f for f in fx.fields()}
    with decode_trace() as trace:
        reader.read_field(fields["l_long_str"])
    assert {"layout:sparse23:nested", "layout:fullzip:var"} <= trace.names()
    sel = np.sort(np.random.default_rng(4).choice(n, 300, replace=False)).astype(np.int64)
    for name, f in fields.items():
        assert_same(reader.read_field(f), fx.expected.column(name), name)
        assert_same(reader.read_field(f, sel), fx.ds.take(sel, columns=[name]).column(0), f"take {name}")
        assert_same(reader.read_field(f, range(333, n - 77)),
                    fx.ds.take(np.arange(333, n - 77), columns=[name]).column(0), f"range {name}")


@pytest.mark.parametrize("name", ["prim_large_p95", "nested_large_p02", "wide_large_p95"])
def test_2_3_large_pages_equal_pylance_whole_and_selected(v2_datasets, name):
    """Encodings 2.3 chooses for larger pages only: run-length coded string offsets (flat or range
    run values), sparse struct validity above a list layer, run-length coded bit-packed indices."""
    fx = v2_datasets(name, "2.3")
    reader = fx.reader()
    n = fx.ds.count_rows()
    sel = np.sort(np.random.default_rng(2).choice(n, 500, replace=False)).astype(np.int64)
    failures = []
    for f in fx.fields():
        try:
            assert_same(reader.read_field(f), fx.expected.column(f.name), f"{name} {f.name}")
            assert_same(reader.read_field(f, sel), fx.ds.take(sel, columns=[f.name]).column(0), f"take {f.name}")
            assert_same(reader.read_field(f, range(777, n - 999)),
                        fx.ds.take(np.arange(777, n - 999), columns=[f.name]).column(0), f"range {f.name}")
        except Exception as exc:  # noqa: BLE001 - one report for every column
            failures.append(f"{f.name}: {type(exc).__name__}: {str(exc)[:300]}")
    assert not failures, "\n".join(failures)


def _msg(*fields: tuple[int, bytes]) -> bytes:
    return b"".join(bytes([num << 3 | 2, len(body)]) + body for num, body in fields)


def test_2_3_refusal_names_the_page_and_the_unknown_value_plane():
    from lance_duck.file.v2_1.planar23 import planar_to_page_layout
    dense = _msg((1, _msg((1, b"\x01"))))                  # dense structure, one all-valid layer
    layout = _msg((1, dense), (2, _msg((9, b""))))         # value plane kind 9: unknown
    with pytest.raises(UnsupportedFeatureError, match=r"x\.lance column 4 page 2: 2\.3 value plane kind 9"):
        planar_to_page_layout(layout, "x.lance column 4 page 2", 10)


def test_2_3_indexed_zipped_values_equal_pylance(v2_datasets):
    """Large repeated binaries with nulls: a per-row index into a zipped dictionary."""
    fx = v2_datasets("wide_p60", "2.3")
    reader = fx.reader()
    from lance_duck.file.v2_1.column import page_layout
    from lance_duck.file.v2_1.planar23 import IndexedLayout
    f = next(f for f in fx.fields() if f.name == "bin40k")
    lay = page_layout(reader.container.column(reader.ref.column_of(f.id)).pages[0], "x")
    assert isinstance(lay.values, IndexedLayout)
    assert_same(reader.read_field(f), fx.expected.column("bin40k"), "bin40k")
    idx = np.array([0, 5, 6, 36, 299, 599], np.int64)
    assert_same(reader.read_field(f, idx), fx.ds.take(idx, columns=["bin40k"]).column(0), "bin40k take")


@pytest.fixture(scope="module")
def table23(tmp_path_factory):
    """A 2.3 dataset of three fragments (nullable ints, strings, dictionary, all-null) with deletions."""
    import lance
    import pyarrow as pa
    n = 3000
    rng = np.random.default_rng(5)
    t = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "x": pa.array(rng.integers(0, 1000, n).astype(np.int32), mask=rng.random(n) < 0.3),
        "s": pa.array([f"w{i % 17}" for i in range(n)]),
        "f": pa.array(rng.random(n), mask=rng.random(n) < 0.7),
        "none": pa.nulls(n, pa.int32()),
    })
    path = str(tmp_path_factory.mktemp("t23") / "t23")
    lance.write_dataset(t, path, data_storage_version="2.3", max_rows_per_file=1000)
    ds = lance.dataset(path)
    ds.delete("id % 7 = 3")
    return path


def test_2_3_table_scan_filter_and_duckdb_equal_pylance(table23):
    import lance

    import lance_duck
    ref = lance.dataset(table23)
    ds = lance_duck.dataset(table23)
    assert len(ds.get_fragments()) == 3
    assert ds.to_table().equals(ref.to_table())
    flt = "x > 500 and f is not null"
    assert ds.to_table(filter=flt).equals(ref.to_table(filter=flt))
    got = lance_duck.sql("select count(*), sum(x), count(f), count(none) from ds where s = 'w3'").fetchall()
    exp = ref.to_table(filter="s = 'w3'")
    xs = [v for v in exp.column("x").to_pylist() if v is not None]
    assert got == [(exp.num_rows, sum(xs), len(exp) - exp.column("f").null_count, 0)]


@pytest.mark.parametrize("payload", [b"\x10\xff", b"\x10", b"\x18\x80\x80"])
def test_2_3_range_offsets_with_a_truncated_varint_are_corrupt(payload):
    from lance_duck._proto import encodings_v2_1_pb2 as pb
    from lance_duck.errors import CorruptFileError
    from lance_duck.file.v2_1.compression.offsets23 import variable_offsets23
    offsets = bytes([14 << 3 | 2, len(payload)]) + payload      # CompressiveEncoding field 14 (Range)
    var = pb.Variable.FromString(bytes([1 << 3 | 2, len(offsets)]) + offsets)
    with pytest.raises(CorruptFileError, match="page 7: truncated varint"):
        variable_offsets23(var, "x.lance column 3 page 7")


def test_2_3_run_lengths_over_bit_packed_values_equal_pylance(tmp_path):
    """Small 2.3 pages of repeated strings: mini-block RLE whose run values are FastLanes
    bit-packed (out of line) per chunk; whole column and row selections."""
    import lance
    import pyarrow as pa

    from lance_duck.file import open_data_file
    from lance_duck.table.snapshot import open_snapshot
    from lance_duck.trace import decode_trace
    n = 20000
    t = pa.table({"s": pa.array([f"value-{i % 300}" for i in range(n)]),
                  "l": pa.array([[i] * (i % 4) for i in range(n)], pa.list_(pa.int32()))})
    path = str(tmp_path / "rle23")
    lance.write_dataset(t, path, data_storage_version="2.3", max_page_bytes=8192)
    snap = open_snapshot(path)
    reader = open_data_file(snap.io, snap.fragments[0].files[0])
    ref = lance.dataset(path)
    sel = np.arange(5, n, 37, dtype=np.int64)
    with decode_trace() as trace:
        for name in ("s", "l"):
            f = snap.schema.field(name)
            assert_same(reader.read_field(f), ref.to_table(columns=[name]).column(0), name)
            assert_same(reader.read_field(f, sel), ref.take(sel, columns=[name]).column(0), f"take {name}")
    assert "path:rle:bitpacked" in trace.names()


@pytest.mark.parametrize("version", ["2.2", "2.3"])
def test_long_fsst_strings_taken_as_code_pairs_equal_pylance(tmp_path, monkeypatch, version):
    """Full-zip FSST strings of ~400 characters (over 2**18 codes in a page): decoded two codes
    at a time by the numpy kernels; whole column, a row selection and a range equal pylance's."""
    from tests._kernels import use_kernels
    use_kernels(monkeypatch, "numpy")
    import lance
    import pyarrow as pa

    import lance_duck
    from lance_duck.trace import decode_trace
    rng = np.random.default_rng(21)
    words = np.array([f"w{i:03d}" for i in range(1000)])
    n = 12000           # past a scan's first small tasks (2K rows): a later task holds > 2**18 codes
    lens = rng.integers(40, 110, n)
    flat = words[rng.integers(0, 1000, int(lens.sum()))]
    col = pa.array([" ".join(w) for w in np.split(flat, np.cumsum(lens)[:-1])], mask=rng.random(n) < 0.2)
    path = str(tmp_path / "long")
    lance.write_dataset(pa.table({"s": col}), path, data_storage_version=version)
    ref = lance.dataset(path)
    ds = lance_duck.dataset(path)
    with decode_trace() as trace:
        got = ds.to_table()
    assert "path:fsst:pairs" in trace.names() and "fz:fsst" in trace.names()
    assert got.equals(ref.to_table())
    idx = np.sort(rng.choice(n, 200, replace=False))
    assert ds.take(idx).equals(ref.take(idx))
    assert ds.to_table(offset=101, limit=2000).equals(ref.to_table(offset=101, limit=2000))


def test_2_3_level_runs_longer_than_255_equal_pylance(tmp_path):
    """Definition levels in long runs (one null run in 40,000 rows): 2.3 codes them RLE with
    16-bit run lengths per chunk; scan, take and a range equal pylance's."""
    import lance
    import pyarrow as pa

    import lance_duck
    from lance_duck.trace import decode_trace
    n = 40_000
    t = pa.table({"s": pa.array([None if 12_000 <= i < 12_100 else f"s{i // 700}" for i in range(n)]),
                  "txt": pa.array([None if i % 997 == 0 else f"row {i} #{i // 1000}" for i in range(n)])})
    path = str(tmp_path / "levels")
    lance.write_dataset(t, path, data_storage_version="2.3", max_rows_per_file=20_000)
    ref = lance.dataset(path)
    ds = lance_duck.dataset(path)
    with decode_trace() as trace:
        got = ds.to_table()
    assert "levels:rle" in trace.names()
    assert got.equals(ref.to_table())
    idx = np.arange(11_990, 12_120, 3)
    assert ds.take(idx).equals(ref.take(idx))
    assert ds.to_table(offset=19_000, limit=2_000).equals(ref.to_table(offset=19_000, limit=2_000))
