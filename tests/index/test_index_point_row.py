"""One-row reads of lean mini-block pages with Python ints (``path:point-row``, file.v2_1.point):
a point lookup's column values, for every column kind, at chunk and page edges.

Differential: each row read alone equals the same row of the whole decoded column (and pylance's
``take``); point lookups through the index equal pylance's and the unindexed read, with
deletions and stable row ids; columns the point reader does not take (nulls, booleans, lists)
come back through the ordinary lean path, unchanged."""
from __future__ import annotations

import warnings

import duckdb
import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.file.dispatch import open_data_file
from lance_duck.trace import decode_trace

ROWS = 30_000
PER_FILE = 20_000
BATCH = 6_000           # several pages per column and file


def _table() -> pa.Table:
    rng = np.random.default_rng(11)
    i = np.arange(ROWS)
    return pa.table({
        "id": pa.array(i, pa.int64()),
        "small": pa.array(rng.integers(-300, 300, ROWS), pa.int32()),
        "wide": pa.array(rng.integers(-2**62, 2**62, ROWS), pa.int64()),
        "amount": pa.array(rng.random(ROWS) * 1000, pa.float64()),
        "f32": pa.array(rng.random(ROWS).astype(np.float32), pa.float32()),
        "tiny": pa.array(rng.integers(0, 200, ROWS).astype(np.uint8), pa.uint8()),
        "day": pa.array(i % 3000, pa.int32()).cast(pa.date32()),
        "cat": pa.array(np.char.add("cat_", (i % 13).astype(str)), pa.string()),
        "note": pa.array(np.char.add("note number ", rng.integers(0, 10**6, ROWS).astype(str)), pa.string()),
        "rand": pa.array([rng.bytes(int(k % 9) + 1).hex() for k in range(ROWS)], pa.string()),
        "blob": pa.array([rng.bytes(int(k % 9) + 4) for k in range(ROWS)], pa.binary()),
        "uni": pa.array(["".join(chr(0x400 + int(c)) for c in rng.integers(0, 600, int(k % 6) + 2)) + " x"
                         for k in range(ROWS)], pa.string()),      # bytes outside the symbols: escapes
        "few": pa.array([bytes([k % 251]) * (k % 5) for k in range(ROWS)], pa.binary()),
        "maybe": pa.array(np.where(i % 7 == 0, None, i % 1000).tolist(), pa.int64()),
        "flag": pa.array(i % 3 == 0, pa.bool_()),
        "nums": pa.array([[int(k), int(k) + 1] for k in range(ROWS)], pa.list_(pa.int32())),
    })


POINT_COLUMNS = ("id", "small", "wide", "amount", "f32", "tiny", "day", "cat", "note", "rand", "blob", "few", "uni")


@pytest.fixture(scope="module", params=[("2.1", False), ("2.2", False), ("2.2", True)],
                ids=["2.1", "2.2", "2.2-stable"])
def point_table(request, tmp_path_factory) -> str:
    warnings.simplefilter("ignore", DeprecationWarning)
    version, stable = request.param
    path = str(tmp_path_factory.mktemp("pointrow") / f"t_{version.replace('.', '_')}_{int(stable)}.lance")
    t = _table()
    lance.write_dataset(pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=BATCH)), path,
                        max_rows_per_file=PER_FILE, data_storage_version=version,
                        enable_stable_row_ids=stable)
    ds = lance.dataset(path)
    ds.create_scalar_index("id", "BTREE")
    ds.delete("id = 17 or id = 25000 or id % 1009 = 4")
    if stable:
        ds.update({"small": "small + 1"}, "id >= 5000 and id < 5003")   # rows move: ids mapped
    return path


def _chunk_and_page_edges(reader, field) -> list[int]:
    """Rows (of one file) on both sides of every chunk and page edge of ``field``'s column (its
    pages' chunk tables are kept once the column was read whole)."""
    rows = {0, reader.num_rows - 1}
    col = reader.ref.column_of(field.id)
    if col is None:                      # (a list: its leaf column's rows are not the table's)
        return sorted(rows)
    cp = reader._pages_of(col, reader.container.column(col))
    for i, (s, e) in enumerate(zip(cp.starts.tolist(), cp.edges[1:].tolist())):
        rows.update({s, e - 1})
        state = cp.meta.get(i)
        if state is not None and "chunk_rows" in state:
            for c in state["chunk_rows"].tolist():
                rows.update({s + c - 1, s + c})
    return sorted(r for r in rows if 0 <= r < reader.num_rows)


def test_single_rows_equal_the_whole_column_at_chunk_and_page_edges(point_table):
    snap = lance_duck.dataset(point_table)._snapshot
    fields = [f for f in snap.schema.fields]
    rng = np.random.default_rng(2)
    for frag in snap.fragments:
        reader = open_data_file(snap.io, frag.file_for_field(fields[0].id))
        whole = reader.read_fields(fields)
        for f, col in zip(fields, whole):
            rows = _chunk_and_page_edges(reader, f) + rng.integers(0, reader.num_rows, 20).tolist()
            for r in rows:
                for _ in range(2):               # the second read is lean once metadata is kept
                    got = reader.read_fields([f], np.array([r], np.int64))[0]
                    assert got.equals(col.slice(r, 1)), (f.name, r)
                    kept = reader.read_fields([f], range(r, r + 1), keep_dictionary=True)[0]
                    plain = kept.dictionary_decode() if pa.types.is_dictionary(kept.type) else kept
                    assert plain.equals(col.slice(r, 1)), (f.name, r)


def test_every_plain_column_kind_takes_the_point_reader(point_table):
    snap = lance_duck.dataset(point_table)._snapshot
    frag = snap.fragments[0]
    by_name = {f.name: f for f in snap.schema.fields}
    reader = open_data_file(snap.io, frag.file_for_field(by_name["id"].id))
    for name in POINT_COLUMNS:
        reader.read_fields([by_name[name]], np.array([3]))
        with decode_trace() as tr:
            reader.read_fields([by_name[name]], np.array([4321]))
        assert "path:point-row" in tr.names(), name
    for name in ("maybe", "flag"):            # nulls / bits: the ordinary lean path
        reader.read_fields([by_name[name]], np.array([3]))
        with decode_trace() as tr:
            got = reader.read_fields([by_name[name]], np.array([4321]))[0]
        assert "path:point-row" not in tr.names(), name
        assert got.equals(reader.read_fields([by_name[name]])[0].slice(4321, 1))


def _points() -> list[int]:
    return [0, 1, 1023, 1024, 4095, 4096, BATCH - 1, BATCH, PER_FILE - 1, PER_FILE, 5001, ROWS - 1,
            17, 25000, 1013]     # the last three: deleted (no row)


def test_point_lookups_equal_pylance_and_the_unindexed_read(point_table):
    ds = lance_duck.dataset(point_table)
    theirs = lance.dataset(point_table)
    for k in _points():
        flt = f"id = {k}"
        want = theirs.to_table(filter=flt)
        ds.to_table(filter=flt)
        with decode_trace() as tr:
            got = ds.to_table(filter=flt)
        assert got.schema == want.schema
        assert got.equals(want), flt
        assert ds.to_table(filter=flt, use_scalar_index=False).equals(want), flt
        assert got.num_rows == (0 if k in (17, 25000, 1013) else 1)
        if got.num_rows and k != 5001:      # (5001 moved to an unindexed fragment when stable)
            assert "path:point-row" in tr.names(), flt


def test_point_lookups_through_duckdb_equal_pylance(point_table):
    ours, theirs = duckdb.connect(), duckdb.connect()
    ours.register("T", lance_duck.dataset(point_table))
    theirs.register("T", lance.dataset(point_table))
    cols = ", ".join(POINT_COLUMNS + ("maybe", "flag"))
    for k in _points():
        q = f"select {cols} from T where id = {k}"
        assert ours.sql(q).fetchall() == theirs.sql(q).fetchall(), q
    q = f"select {cols} from T where id = 5001 and small = -1000"       # the whole filter re-applied
    assert ours.sql(q).fetchall() == [] == theirs.sql(q).fetchall()


def test_a_damaged_chunk_header_is_reported_not_read(point_table, tmp_path):
    """A point read of a chunk whose value buffer sizes overrun it raises CorruptFileError."""
    from lance_duck.errors import CorruptFileError
    from lance_duck.file.v2_1.point import PointPage
    snap = lance_duck.dataset(point_table)._snapshot
    f = next(x for x in snap.schema.fields if x.name == "note")
    reader = open_data_file(snap.io, snap.fragments[0].file_for_field(f.id))
    reader.read_fields([f], np.array([3]))
    lc = reader._lean_field(f, False)[0]
    pp = lc._point(0)
    assert isinstance(pp, PointPage)
    chunk, runs, ranges = pp.lean_plan(5)
    (off, n), = ranges
    data = bytearray(reader.file.read_ranges([(off, n)])[0])
    data[2:2 + pp.header.size - 2] = b"\xff" * (pp.header.size - 2)      # huge buffer sizes
    with pytest.raises(CorruptFileError, match="overrun"):
        pp.lean_decode([memoryview(bytes(data))], chunk, runs, 5)
    with pytest.raises(CorruptFileError, match="header"):
        pp.lean_decode([memoryview(bytes(data[:4]))], chunk, runs, 5)


def test_fsst_strings_read_by_symbol_join_or_the_vectorised_decoder(point_table):
    """A string without escapes is its symbols joined; one with escapes (or undefined codes) goes
    to the vectorised decoder. The table's FSST columns exercise both; every row equals the column."""
    snap = lance_duck.dataset(point_table)._snapshot
    seen = set()
    for name in ("note", "rand", "uni"):
        f = next(x for x in snap.schema.fields if x.name == name)
        reader = open_data_file(snap.io, snap.fragments[0].file_for_field(f.id))
        whole = reader.read_fields([f])[0]
        reader.read_fields([f], np.array([3]))
        assert reader._lean_field(f, False)[0]._point(0).symbols is not None, name     # FSST pages
        # every third row: pylance's FSST tables differ run to run, and one may escape a few rows only
        for row in range(0, 3000, 3):
            with decode_trace() as tr:
                got = reader.read_fields([f], np.array([row]))[0]
            assert got.equals(whole.slice(row, 1)), (name, row)
            assert "path:point-row" in tr.names()
            seen.add("path:fsst:decompress" in tr.names())
    assert seen == {True, False}
