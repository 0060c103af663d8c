"""2.0 columns chosen by field metadata (packed struct, FSST / zstd / lz4 strings, blobs) and a
LanceFileWriter file with many list-offsets pages, compared with pylance 14.0.2."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from .conftest import assert_same, load_table, read_all, read_column, take_cases
from lance_duck._proto import encodings_v2_0_pb2 as enc_pb
from lance_duck.file import DataFileRef, open_data_file
from lance_duck.file.container import V2Container
from lance_duck.io.fs import open_io
from lance_duck.schema import schema_from_protos

N = 3000


def _special_table(n: int) -> pa.Table:
    rng = np.random.default_rng(11)
    words = [f"the quick brown fox {i % 37} jumps over {i % 11}" for i in range(n)]
    mask = rng.random(n) < 0.2
    fields = [
        pa.field("packed", pa.struct([("a", pa.int32()), ("b", pa.float64()), ("c", pa.uint8())]),
                 metadata={"packed": "true"}),
        pa.field("fsst", pa.string(), metadata={"lance-encoding:compression": "fsst"}),
        pa.field("zstd", pa.string(), metadata={"lance-encoding:compression": "zstd"}),
        pa.field("lz4", pa.large_string(), metadata={"lance-encoding:compression": "lz4"}),
        pa.field("zstd_bin", pa.binary(), metadata={"lance-encoding:compression": "zstd"}),
        pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"}),
    ]
    cols = [
        pa.StructArray.from_arrays([pa.array(np.arange(n), pa.int32()), pa.array(rng.normal(size=n)),
                                    pa.array(np.arange(n) % 256, pa.uint8())], names=["a", "b", "c"]),
        pa.array(words, pa.string(), mask=mask),
        pa.array(words, pa.string(), mask=mask[::-1].copy()),
        pa.array(words, pa.large_string(), mask=mask),
        pa.array([w.encode() * (i % 3) for i, w in enumerate(words)], pa.binary()),
        pa.array([None if i % 10 == 3 else bytes([i % 256]) * (i % 50) for i in range(n)], pa.large_binary()),
    ]
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


@pytest.fixture(scope="session")
def special(tmp_path_factory, lance_mod):
    path = str(tmp_path_factory.mktemp("special") / "t.lance")
    ds = lance_mod.write_dataset(_special_table(N), path, data_storage_version="2.0", max_rows_per_file=2000)
    return ds, load_table(path), ds.to_table()


def _root_kinds(snap, name):
    """Array-encoding kinds found in the pages of a field's column (for guarding what we test)."""
    field = snap.schema.field(name)
    ref = snap.fragments[0].file_for_field(field.id)
    reader = open_data_file(snap.io, ref)
    col = reader._column(ref.column_of(field.id))
    kinds = set()

    def walk(msg):
        for fd, val in msg.ListFields():
            if isinstance(val, enc_pb.ArrayEncoding):
                kinds.add(val.WhichOneof("array_encoding"))
            if hasattr(val, "ListFields"):
                walk(val)
            elif isinstance(val, (list, tuple)) or type(val).__name__.startswith("Repeated"):
                for v in val:
                    if hasattr(v, "ListFields"):
                        walk(v)
    for p in col.pages:
        kinds.add(p.encoding.WhichOneof("array_encoding"))
        walk(p.encoding)
    return col.kind, kinds


@pytest.mark.parametrize("column,kind", [
    ("packed", "packed_struct"), ("fsst", "fsst"), ("zstd", "binary"), ("lz4", "binary"),
    ("zstd_bin", "binary"), ("blob", "packed_struct"),
])
def test_special_column_equals_pylance(special, column, kind):
    ds, snap, expected = special
    assert kind in _root_kinds(snap, column)[1]
    assert_same(read_all(snap, column), expected[column], column)


def test_compressed_string_pages_really_are_compressed(special):
    _, snap, _ = special
    field = snap.schema.field("zstd")
    ref = snap.fragments[0].file_for_field(field.id)
    col = open_data_file(snap.io, ref)._column(ref.column_of(field.id))
    assert any(p.encoding.binary.bytes.flat.compression.scheme == "zstd" for p in col.pages)


def test_blob_column_returns_descriptors_like_pylance(special):
    _, snap, expected = special
    assert _root_kinds(snap, "blob")[0] == "blob"
    ours = read_all(snap, "blob")
    assert ours.type == pa.struct([("position", pa.uint64()), ("size", pa.uint64())])
    assert_same(ours, expected["blob"])


@pytest.mark.parametrize("column", ["packed", "fsst", "zstd", "lz4", "blob"])
def test_special_row_selection_equals_take(special, column):
    ds, snap, _ = special
    offset = 0
    for i, frag in enumerate(snap.fragments):
        for case, sel in take_cases(frag.physical_rows, seed=i):
            idx = np.arange(sel.start, sel.stop) if isinstance(sel, range) else sel
            expected = ds.take((idx + offset).tolist(), columns=[column])[column]
            assert_same(read_column(snap, column, i, sel), expected, f"{column}/{case}")
        offset += frag.physical_rows


# -- LanceFileWriter: many list-offsets pages ---------------------------------------------------

def open_plain_file(path: str):
    """A reader and the field tree of a standalone 2.0 file (not part of a dataset)."""
    io, root = open_io(path)
    f = io.open_input(root)
    tail = f.read_tail(64 * 1024)
    desc = V2Container.open(f, tail).descriptor
    schema = schema_from_protos(desc.schema.fields, dict(desc.schema.metadata))
    ids = [fld.id for fld in schema.walk()]
    ref = DataFileRef(path=root, fields=tuple(ids), column_indices=tuple(range(len(ids))), major=2, minor=0)
    return open_data_file(io, ref), schema


@pytest.fixture(scope="session")
def many_offsets_pages(tmp_path_factory):
    from lance.file import LanceFileReader, LanceFileWriter
    path = str(tmp_path_factory.mktemp("fw") / "lists.lance")
    rng = np.random.default_rng(5)
    schema = pa.schema([pa.field("li", pa.list_(pa.int16())), pa.field("ls", pa.large_list(pa.string()))])
    with LanceFileWriter(path, schema, version="2.0", data_cache_bytes=512, max_page_bytes=512) as w:
        for b in range(30):
            n = 100
            lens = rng.integers(0, 6, n)
            li = pa.array([list(range(k)) for k in lens], pa.list_(pa.int16()), mask=rng.random(n) < 0.2)
            ls = pa.array([[f"v{b}-{j}" if j % 4 else None for j in range(k)] for k in lens],
                          pa.large_list(pa.string()), mask=rng.random(n) < 0.2)
            w.write_batch(pa.record_batch([li, ls], schema=schema))
    return path, LanceFileReader(path).read_all().to_table()


def test_many_offsets_pages_with_different_null_adjustments(many_offsets_pages):
    path, expected = many_offsets_pages
    reader, schema = open_plain_file(path)
    li = schema.field("li")
    col = reader._column(0)
    assert len(col.pages) >= 10
    assert len({p.encoding.list.null_offset_adjustment for p in col.pages}) > 1
    for name in ("li", "ls"):
        assert_same(reader.read_field(schema.field(name)), expected[name], name)


def test_many_offsets_pages_row_selection(many_offsets_pages):
    path, expected = many_offsets_pages
    reader, schema = open_plain_file(path)
    n = expected.num_rows
    for case, sel in take_cases(n):
        idx = np.arange(sel.start, sel.stop) if isinstance(sel, range) else sel
        for name in ("li", "ls"):
            want = expected[name].take(pa.array(idx, pa.int64()))
            assert_same(reader.read_field(schema.field(name), sel), want, f"{name}/{case}")



_PLAIN = {"i": pa.int64(), "f": pa.float32(), "t": pa.timestamp("us"), "n": pa.int32()}


@pytest.fixture(scope="session")
def many_plain_pages(tmp_path_factory):
    """One file per column (a column's pages back to back), many small pages each."""
    from lance.file import LanceFileReader, LanceFileWriter
    rng = np.random.default_rng(6)
    out = {}
    for name, typ in _PLAIN.items():
        path = str(tmp_path_factory.mktemp("fw") / f"plain_{name}.lance")
        schema = pa.schema([pa.field(name, typ, nullable=name == "n")])
        with LanceFileWriter(path, schema, version="2.0", data_cache_bytes=1024, max_page_bytes=1024) as w:
            for b in range(12):
                n = 512     # (pages of whole 64-byte multiples: no padding between them)
                vals = rng.integers(0, 1 << 50, n)
                arr = (pa.array(vals, mask=rng.random(n) < 0.3).cast(typ, safe=False) if name == "n"
                       else pa.array(vals).cast(typ, safe=False))
                w.write_batch(pa.record_batch([arr], schema=schema))
        out[name] = (path, LanceFileReader(path).read_all().to_table())
    return out


@pytest.mark.parametrize("name", list(_PLAIN))
def test_many_plain_pages_join_into_the_same_values_as_pylance(many_plain_pages, name):
    path, expected = many_plain_pages[name]
    reader, schema = open_plain_file(path)
    assert len(reader._column(0).pages) >= 10
    whole = reader.read_field(schema.field(name))
    assert_same(whole, expected[name], name)
    if name != "n":    # values without nulls: a view of the mapped pages, not a copy
        first = reader.read_field(schema.field(name), range(0, 1))
        width = whole.type.bit_width // 8
        assert whole.buffers()[1].address + whole.offset * width == first.buffers()[1].address + first.offset * width
    for case, sel in take_cases(expected.num_rows):
        idx = np.arange(sel.start, sel.stop) if isinstance(sel, range) else sel
        assert_same(reader.read_field(schema.field(name), sel), expected[name].take(pa.array(idx, pa.int64())),
                    f"{name}/{case}")
