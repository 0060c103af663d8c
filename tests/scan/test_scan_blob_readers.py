"""read_blobs / take_blobs / read_blob_ranges against pylance 14.0.2 on pylance-written blob tables:
file versions 2.0, 2.1 (blob v1) and 2.2 (blob v2 inline), several fragments, deletions, nulls and
empty blobs, stable row ids; bad input refused with InvalidArgumentError naming it."""
from __future__ import annotations

import io

import pyarrow as pa
import pytest

import lance
import lance_duck
from lance_duck.errors import InvalidArgumentError

N = 40
VALUES = [None if i % 7 == 3 else b"" if i % 11 == 5 else bytes([65 + i % 26]) * (i * 37 % 300) for i in range(N)]


def _table() -> pa.Table:
    schema = pa.schema([pa.field("id", pa.int64()),
                        pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    return pa.table({"id": list(range(N)), "b": pa.array(VALUES, pa.large_binary())}, schema=schema)


@pytest.fixture(scope="module", params=["2.0", "2.1", "2.2", "2.1-stable"])
def blob_table(request, tmp_path_factory):
    version = request.param.split("-")[0]
    path = str(tmp_path_factory.mktemp("blobs") / "t.lance")
    kwargs = {"enable_stable_row_ids": True} if request.param.endswith("stable") else {}
    lance.write_dataset(_table(), path, max_rows_per_file=12, data_storage_version=version, **kwargs)
    theirs = lance.dataset(path)
    theirs.delete("id in (1, 14, 30)")
    theirs = lance.dataset(path)
    return lance_duck.dataset(path), theirs


def _ids(theirs, column):
    return theirs.to_table(columns=[], with_row_id=column == "_rowid",
                           with_row_address=column == "_rowaddr").column(column).to_pylist()


def test_read_blobs_by_indices_equal_pylance(blob_table):
    mine, theirs = blob_table
    live = theirs.count_rows()
    for picked in (list(range(live)), [live - 1, 0, 0, 5, 2], []):
        assert mine.read_blobs("b", indices=picked) == theirs.read_blobs("b", indices=picked)


def test_read_blobs_by_ids_and_addresses_equal_pylance(blob_table):
    mine, theirs = blob_table
    ids, addrs = _ids(theirs, "_rowid"), _ids(theirs, "_rowaddr")
    # pylance's ids selector reads ids inside one fragment at a time in order; ask it per fragment
    for fid in {a >> 32 for a in addrs}:
        some = [i for i, a in zip(ids, addrs) if a >> 32 == fid]
        assert mine.read_blobs("b", ids=some) == theirs.read_blobs("b", ids=some)
    picked = [addrs[-1], addrs[0], addrs[4]]
    assert mine.read_blobs("b", addresses=picked) == theirs.read_blobs("b", addresses=picked)
    assert mine.read_blobs("b", addresses=pa.array(picked, pa.uint64())) == \
        theirs.read_blobs("b", addresses=picked)


def test_read_blobs_returns_the_written_bytes(blob_table):
    mine, theirs = blob_table
    live = [v for i, v in enumerate(VALUES) if i not in (1, 14, 30)]
    assert [b for _, b in mine.read_blobs("b", indices=list(range(len(live))))] == live


def test_read_blobs_unordered_holds_the_same_rows(blob_table):
    mine, theirs = blob_table
    picked = [7, 2, 20, 2]
    got = mine.read_blobs("b", indices=picked, preserve_order=False, io_buffer_size=1 << 20)
    assert sorted(got, key=repr) == sorted(theirs.read_blobs("b", indices=picked, preserve_order=False), key=repr)


def test_take_blobs_file_objects_behave_as_pylance(blob_table):
    mine, theirs = blob_table
    picked = list(range(theirs.count_rows()))
    ours, refs = mine.take_blobs("b", indices=picked), theirs.take_blobs("b", indices=picked)
    assert [repr(f) for f in ours] == [repr(f) for f in refs]
    for f, g in zip(ours, refs):
        if f is None:
            continue
        assert isinstance(f, io.IOBase)
        assert (f.size(), f.tell(), f.read(3), f.tell()) == (g.size(), g.tell(), g.read(3), g.tell())
        assert (f.seek(1), f.read()) == (g.seek(1), g.read())
        back = -min(2, g.size())
        assert (f.seek(back, io.SEEK_END), f.readall()) == (g.seek(back, io.SEEK_END), g.readall())
        assert (f.seek(f.size() + 5), f.read()) == (g.seek(g.size() + 5), g.read())
        if g.size() >= 5:
            assert f.read_range(1, 3) == g.read_range(1, 3)
            assert f.read_ranges([(0, 2), (2, 3)]) == g.read_ranges([(0, 2), (2, 3)])
        f.seek(0)
        buf = bytearray(4)
        assert f.readinto(buf) == min(4, f.size()) and bytes(buf[:f.size()]) == g.read_range(0, min(4, g.size()))
        with f:
            pass
        assert f.closed
        with pytest.raises(ValueError):
            f.read()


def test_read_blob_ranges_equal_pylance(blob_table):
    mine, theirs = blob_table
    sizes = [len(b or b"") for _, b in theirs.read_blobs("b", indices=list(range(theirs.count_rows())))]
    requests = [(i, min(2, s), max(0, s - 3)) for i, s in enumerate(sizes)] + [(0, 0, 0), (6, 1, 1), (6, 0, 1)]
    assert mine.read_blob_ranges("b", requests, selector="indices") == \
        theirs.read_blob_ranges("b", requests, selector="indices")
    addrs = _ids(theirs, "_rowaddr")
    by_addr = [(addrs[i], o, n) for i, o, n in requests[:10]]
    assert mine.read_blob_ranges("b", by_addr, selector="addresses") == \
        theirs.read_blob_ranges("b", by_addr, selector="addresses")
    assert mine.read_blob_ranges("b", [], selector="ids") == []


@pytest.mark.parametrize("call, names", [
    (lambda ds: ds.read_blobs("b"), "exactly one"),
    (lambda ds: ds.read_blobs("b", ids=[0], indices=[0]), "exactly one"),
    (lambda ds: ds.read_blobs("id", indices=[0]), "'id' is not a blob column"),
    (lambda ds: ds.read_blobs("zz", indices=[0]), "'zz'"),
    (lambda ds: ds.read_blobs("b", indices=[10_000]), "10000"),
    (lambda ds: ds.read_blobs("b", indices=[-1]), "-1"),
    (lambda ds: ds.read_blobs("b", indices=["a"]), "indices"),
    (lambda ds: ds.read_blobs("b", addresses=[1]), "row address 1"),       # deleted
    (lambda ds: ds.read_blobs("b", ids=[1 << 40]), "row id"),
    (lambda ds: ds.read_blobs("b", indices=[0], io_buffer_size=0), "io_buffer_size"),
    (lambda ds: ds.take_blobs("b", indices=[0], buffer_size=-1), "buffer_size"),
    (lambda ds: ds.read_blob_ranges("b", [(0, 0, 1)], selector="rows"), "selector"),
    (lambda ds: ds.read_blob_ranges("b", [(0, 0)], selector="indices"), "request 0"),
    (lambda ds: ds.read_blob_ranges("b", [(0, -1, 1)], selector="indices"), "request 0"),
    (lambda ds: ds.read_blob_ranges("b", [(4, 0, 10_000)], selector="indices"), "exceeds"),
])
def test_bad_blob_requests_refused_by_name(blob_table, call, names):
    with pytest.raises(InvalidArgumentError, match=names):
        call(blob_table[0])


def test_blob_file_bad_seek_refused(blob_table):
    f = blob_table[0].take_blobs("b", indices=[5])[0]
    with pytest.raises(InvalidArgumentError, match="before the start"):
        f.seek(-1)
    with pytest.raises(InvalidArgumentError, match="outside"):
        f.read_range(0, f.size() + 1)


@pytest.fixture(scope="module")
def sidecar_table(tmp_path_factory):
    """A 2.2 table whose blob values pylance stores inline, in a dedicated and a packed sidecar file, and
    as an external URI."""
    root = tmp_path_factory.mktemp("sidecars")
    (root / "ext.bin").write_bytes(b"0123456789" * 10)
    field = lance.blob_field("b", dedicated_size_threshold=1000, inline_size_threshold=64)
    values = lance.blob_array([b"a" * 10, b"b" * 5000, (root / "ext.bin").as_uri(), None, b"c" * 100])
    t = pa.table({"id": pa.array(range(5), pa.int64()), "b": values},
                 schema=pa.schema([pa.field("id", pa.int64()), field]))
    path = str(root / "t.lance")
    lance.write_dataset(t, path, data_storage_version="2.2", allow_external_blob_outside_bases=True)
    return lance_duck.dataset(path), lance.dataset(path)


def test_inline_and_null_blob_v2_values_read_beside_sidecar_ones(sidecar_table):
    mine, theirs = sidecar_table
    assert mine.read_blobs("b", indices=[0, 3]) == theirs.read_blobs("b", indices=[0, 3])


@pytest.mark.parametrize("index, where", [(1, "dedicated sidecar"), (2, "external URI"), (4, "packed sidecar")])
def test_blob_v2_values_outside_the_data_file_are_refused_by_name(sidecar_table, index, where):
    from lance_duck.errors import UnsupportedFeatureError
    mine, theirs = sidecar_table
    assert theirs.read_blobs("b", indices=[index])[0][1]        # pylance reads them
    for call in (lambda: mine.read_blobs("b", indices=[index]), lambda: mine.take_blobs("b", indices=[index]),
                 lambda: mine.read_blob_ranges("b", [(index, 0, 1)], selector="indices")):
        with pytest.raises(UnsupportedFeatureError, match=f"'b'.*{where}"):
            call()
