"""The tiny-selection read path of index-driven scans (issue 12): lean reads of a few rows through
shared per-(file, column) page objects (``path:lean-rows``), BTREE pages searched by bisection
(``path:btree-bisect``), readers kept across a dataset's scans, filter bindings remembered.

Every result is compared with pylance's and with lance_duck's own unindexed read, at chunk and
page edges, over columns of every kind the lean path handles (and some it hands back)."""
from __future__ import annotations

import warnings

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck
from lance_duck.file.dispatch import open_data_file
from lance_duck.index.btree import sorted_integers, sorted_match
from lance_duck.index.scalar import value_mask
from lance_duck.predicate.pruning import ColumnPredicate
from lance_duck.scan.filters import bind_filter
from lance_duck.trace import decode_trace

ROWS = 260_000
PER_FILE = 200_000   # two fragments; the first file's columns span two or three pages
BATCH = 16_384          # small write batches: the columns span two pages per file


def _table() -> pa.Table:
    rng = np.random.default_rng(5)
    i = np.arange(ROWS)
    return pa.table({
        "id": pa.array(i, pa.int64()),
        "small": pa.array(rng.integers(0, 300, ROWS), pa.int32()),
        "amount": pa.array(rng.random(ROWS), pa.float64()),
        "maybe": pa.array(np.where(i % 7 == 0, None, i % 1000).tolist(), pa.int64()),
        "cat": pa.array(np.char.add("cat_", (i % 5).astype(str)), pa.string()),
        "name": pa.array(np.char.add("name ", (i * 7919 % 100003).astype(str)), pa.string()),
        "flag": pa.array(i % 3 == 0, pa.bool_()),
        "nums": pa.array([[int(k), int(k) + 1] if k % 5 else None for k in range(ROWS)], pa.list_(pa.int32())),
    })


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def paged_table(request, tmp_path_factory) -> str:
    warnings.simplefilter("ignore", DeprecationWarning)
    path = str(tmp_path_factory.mktemp("point") / f"t_{request.param.replace('.', '_')}.lance")
    t = _table()
    lance.write_dataset(pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=BATCH)), path,
                        max_rows_per_file=PER_FILE, data_storage_version=request.param)
    ds = lance.dataset(path)
    ds.create_scalar_index("id", "BTREE")
    ds.delete("id = 5001 or id = 130000 or id % 997 = 3")
    return path


def _page_edges(path: str, name: str) -> list[int]:
    """Table row numbers where a page of column ``name`` starts (after the first), per file."""
    snap = lance_duck.dataset(path)._snapshot
    leaf = list(next(f for f in snap.schema.fields if f.name == name).walk())[-1]
    edges, base = [], 0
    for frag in snap.fragments:
        reader = open_data_file(snap.io, frag.file_for_field(leaf.id))
        lengths = [int(p.length) for p in reader.container.column(reader.ref.column_of(leaf.id)).pages]
        edges += (base + np.cumsum(lengths)[:-1]).tolist()
        base += frag.physical_rows
    return edges


def test_the_fixture_spans_pages(paged_table):
    assert _page_edges(paged_table, "id") and _page_edges(paged_table, "name")


def _points(path: str) -> list[int]:
    edges = _page_edges(path, "id") + _page_edges(path, "name") + _page_edges(path, "small")
    pts = {0, 1023, 1024, PER_FILE - 1, PER_FILE, ROWS - 1}
    for e in edges:
        pts.update({e - 1, e})
    return sorted(p for p in pts if p not in (5001, 130000) and p % 997 != 3)


def _equal_three_ways(path: str, flt: str, columns=None) -> pa.Table:
    want = lance.dataset(path).to_table(filter=flt, columns=columns)
    ds = lance_duck.dataset(path)
    got = ds.to_table(filter=flt, columns=columns)
    again = ds.to_table(filter=flt, columns=columns)          # the lean path once metadata is kept
    scanned = ds.to_table(filter=flt, columns=columns, use_scalar_index=False)
    assert got.schema == want.schema
    assert got.equals(want), flt
    assert again.equals(want), flt
    assert scanned.equals(want), flt
    return got


def test_point_lookups_at_chunk_and_page_edges_equal_pylance(paged_table):
    for k in _points(paged_table):
        got = _equal_three_ways(paged_table, f"id = {k}")
        assert got.num_rows == 1


@pytest.mark.parametrize("flt", [
    "id IN (3, 1500, 199999, 200000, 250001, 259998)",
    "id IN (5001, 130000)",                                    # deleted rows only
    "id BETWEEN 179500 AND 181500",                            # a page edge inside the range
    "id >= 16000 AND id < 17100",
    "id BETWEEN 199000 AND 201000",                            # two fragments
    "id = 12 AND name = 'nothing'",                            # the whole filter is re-applied
    "(id = 12 OR id = 13) AND flag",
])
def test_small_selections_equal_pylance_and_the_unindexed_read(paged_table, flt):
    _equal_three_ways(paged_table, flt)


def test_repeated_point_lookup_takes_the_lean_path_and_bisects_the_btree(paged_table):
    ds = lance_duck.dataset(paged_table)
    flt = "id = 180224"
    plain = [n for n in ds.schema.names if n != "nums"]   # (a list column reads through the general path)
    first = ds.to_table(filter=flt, columns=plain)
    with decode_trace() as tr:
        again = ds.to_table(filter=flt, columns=plain)
    assert again.equals(first) and again.equals(lance.dataset(paged_table).to_table(filter=flt, columns=plain))
    names = tr.names()
    assert "path:lean-rows" in names
    assert "path:btree-bisect" in names
    assert "file:open" not in names                 # the scan reused the reader of the first one
    assert "path:selected:unpack-gather" not in names


def test_a_new_dataset_opens_its_files_again(paged_table):
    lance_duck.dataset(paged_table).to_table(filter="id = 7")
    with decode_trace() as tr:
        lance_duck.dataset(paged_table).to_table(filter="id = 7")
    assert "file:open" in tr.names()


def test_file_reader_lean_reads_equal_the_whole_column(paged_table):
    snap = lance_duck.dataset(paged_table)._snapshot
    frag = snap.fragments[0]
    fields = list(snap.schema.fields)
    reader = open_data_file(snap.io, frag.file_for_field(fields[0].id))
    whole = reader.read_fields(fields)
    n = reader.num_rows
    edges = [e for e in _page_edges(paged_table, "id") if e < PER_FILE]
    rng = np.random.default_rng(3)
    sels = [np.array([0]), np.array([n - 1]), np.array(sorted({edges[0] - 1, edges[0]}), np.int64),
            np.sort(rng.choice(n, 40, replace=False)).astype(np.int64), range(edges[0] - 600, edges[0] + 600),
            range(1000, 1100)]
    for sel in sels:
        for round_ in range(2):                      # the second read is lean for every plain column
            with decode_trace() as tr:
                part = reader.read_fields(fields, sel)
            idx = pa.array(np.asarray(list(sel) if isinstance(sel, range) else sel))
            for f, a, b in zip(fields, part, whole):
                assert a.equals(b.take(idx)), (f.name, round_)
            plain = [f for f in fields if not f.children]
            lean = reader.read_fields(plain, sel)
            for f, a in zip(plain, lean):
                assert a.equals(whole[fields.index(f)].take(idx)), f.name
        # the plain columns read lean, "nums" (a list) by the general path, in the same read
        assert tr.values("path:lean-split") == [(len(plain), len(fields) - len(plain))]
    with decode_trace() as tr:
        reader.read_fields([f for f in fields if not f.children], np.array([5, 77]))
    assert "path:lean-rows" in tr.names()


def test_keep_dictionary_lean_reads_equal_decoded_values(paged_table):
    snap = lance_duck.dataset(paged_table)._snapshot
    fields = [f for f in snap.schema.fields if f.name in ("cat", "name")]
    reader = open_data_file(snap.io, snap.fragments[0].file_for_field(fields[0].id))
    whole = reader.read_fields(fields)
    sel = np.array([3, 1024, 99_999], np.int64)
    for _ in range(2):
        got = reader.read_fields(fields, sel, keep_dictionary=True)
        for a, b in zip(got, whole):
            plain = a.dictionary_decode() if pa.types.is_dictionary(a.type) else a
            assert plain.equals(b.take(pa.array(sel)))


# -- BTREE bisection ---------------------------------------------------------------------------
def _p(op, value):
    return ColumnPredicate(("v",), op, value)


@pytest.mark.parametrize("dtype", [pa.int64(), pa.int32(), pa.uint8(), pa.int16()])
def test_bisection_equals_comparing_every_value(dtype):
    rng = np.random.default_rng(9)
    hi = 200 if dtype == pa.uint8() else 5000
    values = pa.array(np.sort(rng.integers(0, hi, 4096)), dtype)
    ints = sorted_integers(values)
    assert ints is not None
    some = [int(values[k].as_py()) for k in (0, 17, 4095)]
    cases = [
        [(_p("==", pa.scalar(some[1])),)],
        [(_p("==", pa.scalar(hi + 7)),)],
        [(_p(">=", pa.scalar(some[1])),), (_p("<", pa.scalar(some[2])),)],
        [(_p("<=", pa.scalar(some[0])), _p(">", pa.scalar(some[2] - 3)))],
        [(_p("in", pa.array([some[0], None, some[2], hi + 1])),)],
        [(_p("is_null", None),)],
        [(_p("==", pa.scalar(some[1], pa.int8() if dtype != pa.uint8() else pa.uint8())),)],
    ]
    for terms in cases:
        pos = sorted_match(ints, terms)
        assert pos is not None
        want = np.flatnonzero(_arrow_mask(values, terms))
        assert np.array_equal(pos, want), terms
        assert np.array_equal(np.flatnonzero(value_mask(values, terms)), want), terms   # (integer_mask)


def _arrow_mask(values: pa.Array, terms) -> np.ndarray:
    """The reference: Arrow compute kernels, SQL semantics (null -> no match)."""
    keep = np.ones(len(values), dtype=bool)
    for preds in terms:
        m = np.zeros(len(values), dtype=bool)
        for p in preds:
            if p.op == "is_null":
                r = pc.is_null(values)
            elif p.op == "in":
                r = pc.is_in(values, value_set=p.value.drop_null().cast(values.type))
            else:
                fn = {"==": pc.equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}
                r = fn[p.op](values, p.value.cast(values.type))
            m |= r.fill_null(False).to_numpy(zero_copy_only=False)
        keep &= m
    return keep


def test_integer_recheck_equals_arrow_kernels():
    values = pa.array([5, -3, 7, 7, 0, 12], pa.int64())
    for terms in ([(_p("==", pa.scalar(7)),)], [(_p("in", pa.array([0, None, 12])),)],
                  [(_p(">", pa.scalar(0)), _p("<", pa.scalar(-1)))], [(_p("==", pa.scalar(None, pa.int64())),)],
                  [(_p("is_null", None),)], [(_p("<=", pa.scalar(5, pa.int8())),), (_p(">=", pa.scalar(-3)),)]):
        assert np.array_equal(value_mask(values, terms), _arrow_mask(values, terms)), terms
    with_nulls = pa.array([1, None, 3])
    assert value_mask(with_nulls, [(_p("is_null", None),)]).tolist() == [False, True, False]


def test_bisection_declines_what_it_cannot_answer_exactly():
    ints = sorted_integers(pa.array(np.arange(100), pa.int8()))
    assert sorted_match(ints, [(_p("==", pa.scalar(1000)),)]) is None     # outside int8
    assert sorted_match(ints, [(_p("==", pa.scalar(1.5)),)]) is None      # a fraction
    assert sorted_match(ints, [(_p("like", "x"),)]) is None
    assert sorted_integers(pa.array([3, 1, 2])) is None                   # not sorted
    assert sorted_integers(pa.array([1, None, 2])) is None                # nulls
    assert sorted_integers(pa.array([1.0, 2.0])) is None                  # floats: compared as before


# -- remembered filter bindings ----------------------------------------------------------------
def test_filter_bindings_are_remembered_per_schema_and_exact_expression():
    schema = pa.schema([("id", pa.int64()), ("x", pa.float32())])
    e = pc.field("id") == 612345
    a = bind_filter(e, schema)
    assert bind_filter(pc.field("id") == 612345, schema) is a          # equal expression: the same binding
    assert bind_filter(pc.field("id") == pa.scalar(612345, pa.int32()), schema) is not a   # literal type differs
    other = pa.schema([("id", pa.int64()), ("x", pa.float32())])
    assert bind_filter(e, other) is not a                              # another schema object
    s = bind_filter("id = 3", schema)
    assert bind_filter("id = 3", schema) is s
    assert s.columns == ("id",) and a.columns == ("id",)
