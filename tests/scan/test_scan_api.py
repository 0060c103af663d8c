"""The pylance-compatible API of LanceDataset / LanceFragment / LanceScanner, against pylance."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance
from .conftest import assert_tables_equal
from lance_duck.errors import InvalidArgumentError
from lance_duck.scan import LanceDataset, LanceFragment, LanceScanner, dataset

# pyarrow expressions with the SQL pylance takes for the same rows (pylance cannot take Expressions on this
# table: Substrait has no duration and no nested references), so pylance's own filter is the oracle.
FILTERS = [
    (pc.field("id") < 100, "id < 100"),
    ((pc.field("id") >= 300) & (pc.field("id") <= 700), "id >= 300 AND id <= 700"),
    (pc.field("s", "a") == 5, "s.a = 5"),
    (pc.field("name").isin(["abc3", "xyz4", "abc107"]), "name IN ('abc3', 'xyz4', 'abc107')"),
    (pc.field("x").is_null(), "x IS NULL"),
    (pc.field("name").is_valid() & (pc.field("u") > 250), "name IS NOT NULL AND u > 250"),
    ((pc.field("id") == 1) | (pc.field("id") == 1107) | (pc.field("id") == 1999), "id = 1 OR id = 1107 OR id = 1999"),
    (pc.field("extra").is_null() & (pc.field("id") < 10), "extra IS NULL AND id < 10"),
]


@pytest.fixture(scope="module")
def pair(table_path):
    return dataset(table_path), lance.dataset(table_path)


def test_identity_matches_pylance(pair):
    ds, ref = pair
    assert isinstance(ds, LanceDataset)
    assert (ds.version, ds.latest_version, ds.data_storage_version) == \
        (ref.version, ref.latest_version, ref.data_storage_version)
    assert ds.schema.equals(ref.schema, check_metadata=True)
    assert [v["version"] for v in ds.versions()] == [v["version"] for v in ref.versions()]
    assert {k: v["version"] for k, v in ds.tags.list().items()} == \
        {k: v["version"] for k, v in ref.tags.list().items()}
    assert ds.tags.get_version("two") == ref.tags.get_version("two") == 2
    assert set(ds.branches.list()) == set(ref.branches.list())


def test_full_table_equals_pylance(pair):
    ds, ref = pair
    assert_tables_equal(ds.to_table(), ref.to_table())


def test_count_rows_metadata_and_filtered(pair):
    ds, ref = pair
    assert ds.count_rows() == ref.count_rows()
    total = ref.count_rows()
    for f, sql in FILTERS:
        want = ref.count_rows(filter=sql)
        assert 0 < want < total, f"{sql!r} must select some rows, not all"
        assert ds.count_rows(filter=f) == want


@pytest.mark.parametrize("i", range(len(FILTERS)))
def test_filter_expression_equals_pylance(pair, i):
    ds, ref = pair
    f, sql = FILTERS[i]
    want = ref.to_table(filter=sql)
    assert 0 < want.num_rows < ref.count_rows()
    assert_tables_equal(ds.to_table(filter=f), want)
    # filter-only columns are read, applied and dropped
    assert_tables_equal(ds.to_table(columns=["ls", "id"], filter=f), want.select(["ls", "id"]))


def test_filter_selecting_no_row_gives_an_empty_table_of_the_schema(pair):
    ds, ref = pair
    want = ref.to_table(filter="id < -1")
    assert want.num_rows == 0
    assert_tables_equal(ds.to_table(filter=pc.field("id") < -1), want)
    assert ds.count_rows(filter=pc.field("id") < -1) == 0


@pytest.mark.parametrize("columns", [["id"], ["s.a", "id"], ["name", "s.b", "s"], [], ["dur", "ls", "u", "extra"],
                                     ["_rowid", "id"]])
def test_projection_equals_pylance(pair, columns):
    ds, ref = pair
    assert_tables_equal(ds.to_table(columns=columns), ref.to_table(columns=columns))


def test_projection_alias_of_column(pair):
    ds, ref = pair
    cols = {"sa": "s.a", "ident": "id"}
    assert_tables_equal(ds.to_table(columns=cols), ref.to_table(columns=cols))


@pytest.mark.parametrize("limit,offset,flt,sql", [
    (5, None, None, None), (10, 495, None, None), (None, 1500, None, None), (600, 400, None, None),
    (3, 2, pc.field("id") >= 100, "id >= 100"), (50, 990, pc.field("flag"), "flag"),
    (0, None, None, None), (10, 5000, None, None),
])
def test_limit_offset_count_after_deletions_and_filter(pair, limit, offset, flt, sql):
    ds, ref = pair
    got = ds.to_table(columns=["id", "name"], limit=limit, offset=offset, filter=flt)
    want = ref.to_table(columns=["id", "name"], limit=limit, offset=offset, filter=sql)
    assert_tables_equal(got, want)
    assert ds.scanner(limit=limit, offset=offset, filter=flt).count_rows() == want.num_rows


def test_row_id_and_address(pair):
    ds, ref = pair
    kw = dict(columns=["id"], with_row_id=True, with_row_address=True)
    assert_tables_equal(ds.to_table(**kw), ref.to_table(**kw))
    assert_tables_equal(ds.to_table(filter=pc.field("id") > 1490, **kw), ref.to_table(filter="id > 1490", **kw))


def test_stable_row_ids_equal_pylance(stable_ids_path):
    ds, ref = dataset(stable_ids_path), lance.dataset(stable_ids_path)
    kw = dict(columns=["id"], with_row_id=True, with_row_address=True)
    assert_tables_equal(ds.to_table(**kw), ref.to_table(**kw))


def test_batches_never_cross_fragments_and_respect_batch_size(pair):
    ds, ref = pair
    batches = list(ds.to_batches(columns=["id"], batch_size=128, with_row_address=True))
    for b in batches:
        assert 0 < b.num_rows <= 128
        assert len(set((b.column("_rowaddr").to_numpy() >> 32).tolist())) == 1
    assert_tables_equal(pa.Table.from_batches(batches), ref.to_table(columns=["id"], with_row_address=True))


def test_head_and_take_use_logical_positions(pair):
    ds, ref = pair
    assert_tables_equal(ds.head(7), ref.head(7))
    idx = [0, 7, 8, 494, 495, 1979, 3, 3, 990]
    assert_tables_equal(ds.take(idx), ref.take(idx))
    assert_tables_equal(ds.take(idx, columns=["name", "id"]), ref.take(idx, columns=["name", "id"]))
    with pytest.raises(IndexError):
        ds.take([ds.count_rows()])


def test_fragments_equal_pylance(pair):
    ds, ref = pair
    mine, theirs = ds.get_fragments(), ref.get_fragments()
    assert [f.fragment_id for f in mine] == [f.fragment_id for f in theirs]
    for a, b in zip(mine, theirs):
        assert isinstance(a, LanceFragment)
        assert (a.physical_rows, a.num_deletions, a.count_rows()) == (b.physical_rows, b.num_deletions, b.count_rows())
        assert a.count_rows(filter=pc.field("flag")) == b.count_rows(filter="flag")
        assert_tables_equal(a.to_table(columns=["id", "s"], filter=pc.field("flag")),
                            b.to_table(columns=["id", "s"], filter="flag"))
        assert_tables_equal(a.take([0, 1, 7, 8, 120]), b.take([0, 1, 7, 8, 120]))
    f1 = ds.get_fragment(theirs[1].fragment_id)
    assert_tables_equal(ds.scanner(fragments=[f1]).to_table(), ref.scanner(fragments=[theirs[1]]).to_table())
    assert_tables_equal(f1.head(3), theirs[1].head(3))


def test_scanner_api(pair):
    ds, ref = pair
    sc, rs = ds.scanner(columns=["id", "s.a"], filter=pc.field("id") < 600), \
        ref.scanner(columns=["id", "s.a"], filter="id < 600")
    assert isinstance(sc, LanceScanner)
    assert sc.projected_schema.equals(rs.projected_schema)
    assert sc.dataset_schema.equals(ds.schema)
    assert sc.count_rows() == rs.count_rows()
    reader = sc.to_reader()
    assert isinstance(reader, pa.RecordBatchReader)
    assert_tables_equal(reader.read_all(), rs.to_table())
    assert_tables_equal(sc.head(4), rs.head(4))
    assert_tables_equal(pa.Table.from_batches(list(sc.to_batches())), rs.to_table())


def test_time_travel_returns_new_objects(pair, table_path):
    ds, ref = pair
    for v in (1, 2, "two", 3):
        old = ds.checkout_version(v)
        assert old is not ds and ds.version == ref.version
        want = ref.checkout_version(v)
        assert old.version == want.version
        assert old.schema.equals(want.schema)
        assert_tables_equal(old.to_table(), want.to_table())
    assert dataset(table_path, version=2).count_rows() == lance.dataset(table_path, version=2).count_rows()


def test_deleted_rows_never_reappear(pair):
    ds, _ = pair
    paths = [
        ds.to_table(columns=["id"]).column("id"),
        ds.to_table(columns=["id"], filter=pc.field("id") >= 0).column("id"),
        ds.take(np.arange(ds.count_rows()), columns=["id"]).column("id"),
        pa.chunked_array([b.column(0) for b in ds.to_batches(columns=["id"], batch_size=64)]),
    ]
    for ids in paths:
        assert not np.any(ids.to_numpy() % 100 == 7)


def test_take_refuses_arguments_pylance_refuses(pair):
    ds, ref = pair
    for obj in (ds, ref, ds.get_fragments()[0], ref.get_fragments()[0]):
        with pytest.raises(TypeError, match="filter"):
            obj.take([0, 1], filter="id > 3")
        with pytest.raises(TypeError, match="batch_size"):
            obj.take([0, 1], columns=["id"], batch_size=10)


def test_get_fragments_with_a_filter_is_refused_like_pylance(pair):
    ds, ref = pair
    with pytest.raises(ValueError, match="does not support filter"):
        ref.get_fragments(filter=pc.field("id") < 10)
    with pytest.raises(InvalidArgumentError, match=r"get_fragments\(filter=.*not supported.*scanner"):
        ds.get_fragments(filter=pc.field("id") < 10)
    with pytest.raises(InvalidArgumentError, match="not supported"):
        list(ds._get_fragments(pc.field("id") < 10))  # pyarrow's entry point refuses it as well
    assert [f.fragment_id for f in ds.get_fragments(filter=None)] == [f.fragment_id for f in ref.get_fragments()]


def test_fragment_scanner_takes_only_the_dataset_schema(pair):
    ds, ref = pair
    frag, their = ds.get_fragments()[1], ref.get_fragments()[1]
    assert_tables_equal(frag.to_table(schema=ds.schema, columns=["id"]), their.to_table(columns=["id"]))
    narrowed = pa.schema([pa.field("id", pa.int32())])
    with pytest.raises(InvalidArgumentError, match=f"fragment {frag.fragment_id} .*schema"):
        frag.scanner(schema=narrowed)
