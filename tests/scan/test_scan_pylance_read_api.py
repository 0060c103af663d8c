"""pylance 14.0.2's read-only dataset / fragment / scanner surface beyond scans, against pylance;
its writers refused by name."""
from __future__ import annotations

import inspect
import sys

import pyarrow as pa
import pytest

import lance
import lance_duck
from lance_duck.errors import InvalidArgumentError, RowIndexError, UnsupportedFeatureError
from lance_duck.scan.compat import DATASET_ENGINE_ONLY, DATASET_WRITERS, FRAGMENT_ENGINE_ONLY, FRAGMENT_WRITERS

from .conftest import assert_tables_equal

PYLANCE_DATASET = sys.modules["lance.dataset"].LanceDataset
PYLANCE_FRAGMENT = sys.modules["lance.fragment"].LanceFragment
PYLANCE_SCANNER = sys.modules["lance.dataset"].LanceScanner

#: pylance read methods lance_duck does not offer yet (named in docs/pylance-api.md as such).
NOT_YET: set[str] = set()


@pytest.fixture(scope="module")
def pair(table_path):
    return lance_duck.dataset(table_path), lance.dataset(table_path)


@pytest.fixture(scope="module")
def described(tmp_path_factory):
    """A table with table metadata, config, schema metadata, an index, a dropped column and a base path."""
    root = tmp_path_factory.mktemp("readapi")
    base = lance.DatasetBasePath(str(root / "extra"), name="extra")
    t = pa.table({"a": list(range(50)), "b": [str(i) for i in range(50)], "c": [1.0] * 50},
                 metadata={"origin": "tests"})
    path = str(root / "m.lance")
    ds = lance.write_dataset(t, path, max_rows_per_file=20, initial_bases=[base])
    ds.update_metadata({"owner": "data-eng"})
    ds.update_config({"lance.custom": "1"})
    ds.drop_columns(["c"])
    ds.delete("a < 3")
    ds.create_scalar_index("a", "BTREE")
    return path


def test_manifest_facts_equal_pylance(pair, described):
    for mine, theirs in (pair, (lance_duck.dataset(described), lance.dataset(described))):
        assert mine.has_index == theirs.has_index
        assert mine.has_stable_row_ids == theirs.has_stable_row_ids
        assert mine.max_field_id == theirs.max_field_id
        assert mine.metadata == theirs.metadata
        assert mine.schema_metadata == theirs.schema_metadata
        assert mine.config() == theirs.config()
        assert list(mine.fragment_ids()) == list(theirs.fragment_ids())
        assert mine.get_version() == theirs.get_version()
        assert mine.version_refs() == theirs.version_refs()
        assert mine.stats.dataset_stats() == theirs.stats.dataset_stats()
        assert mine.stats.dataset_stats(5) == theirs.stats.dataset_stats(5)
        mine_bp = {k: (b.id, b.name, b.path, b.is_dataset_root) for k, b in mine.base_paths().items()}
        theirs_bp = {k: (b.id, b.name, b.path, b.is_dataset_root) for k, b in theirs.base_paths().items()}
        assert mine_bp == theirs_bp


def test_described_table_is_not_trivial(described):
    ds = lance_duck.dataset(described)
    assert ds.metadata == {"owner": "data-eng"} and ds.config() == {"lance.custom": "1"}
    assert ds.has_index and ds.max_field_id == 2 and ds.schema_metadata == {"origin": "tests"}
    assert len(ds.base_paths()) == 1


def test_stable_row_ids_flag_equals_pylance(stable_ids_path):
    assert lance_duck.dataset(stable_ids_path).has_stable_row_ids is lance.dataset(stable_ids_path).has_stable_row_ids is True


def test_get_version_of_an_old_version_equals_pylance(table_path):
    for v in (1, 2, 3):
        assert lance_duck.dataset(table_path, version=v).get_version() == lance.dataset(table_path, version=v).get_version()


def test_checkout_latest_moves_the_dataset_in_place_as_pylance(table_path):
    mine, theirs = lance_duck.dataset(table_path, version=2), lance.dataset(table_path, version=2)
    assert mine.checkout_latest() is None and theirs.checkout_latest() is None
    assert mine.version == theirs.version == lance.dataset(table_path).version
    assert_tables_equal(mine.to_table(), theirs.to_table())


@pytest.mark.parametrize("start,end", [(0, 0), (0, 5), (490, 510), (1995, 2100), (3000, 3005)])
def test_slice_equals_pylance(pair, start, end):
    mine, theirs = pair
    assert_tables_equal(mine.slice(start, end), theirs.slice(start, end))
    assert_tables_equal(mine.slice(start, end, columns=["name", "id"]), theirs.slice(start, end, columns=["name", "id"]))


@pytest.mark.parametrize("start,end", [(-1, 3), (5, 2)])
def test_slice_refuses_bad_bounds(pair, start, end):
    with pytest.raises(InvalidArgumentError, match="start|end"):
        pair[0].slice(start, end)


def test_sample_draws_distinct_live_rows(pair):
    mine, theirs = pair
    got = mine.sample(50, columns=["id", "name"])
    assert got.schema.equals(theirs.sample(50, columns=["id", "name"]).schema)
    ids = got.column("id").to_pylist()
    assert len(set(ids)) == 50
    live = set(theirs.to_table(columns=["id"]).column("id").to_pylist())
    assert set(ids) <= live
    ordered = mine.sample(30, randomize_order=False).column("id").to_pylist()
    assert ordered == sorted(ordered)
    with pytest.raises(InvalidArgumentError, match="num_rows"):
        mine.sample(mine.count_rows() + 1)


def test_to_pandas_equals_pylance(pair):
    mine, theirs = pair
    cols = ["id", "x", "name", "flag", "d"]
    assert mine.to_pandas(columns=cols, filter="id > 1500").equals(theirs.to_pandas(columns=cols, filter="id > 1500"))
    sc_mine, sc_theirs = mine.scanner(columns=cols, limit=10), theirs.scanner(columns=cols, limit=10)
    assert sc_mine.to_pandas().equals(sc_theirs.to_pandas())
    f_mine, f_theirs = mine.get_fragment(1), theirs.get_fragment(1)
    assert f_mine.to_pandas(columns=cols).equals(f_theirs.to_pandas(columns=cols))


def test_fragment_metadata_and_deletion_file_equal_pylance(pair):
    mine, theirs = pair
    for a, b in zip(mine.get_fragments(), theirs.get_fragments()):
        assert a.deletion_file() == b.deletion_file()
        ma, mb = a.metadata, b.metadata
        assert (ma.id, ma.physical_rows) == (mb.id, mb.physical_rows)
        assert [(f.path, f.fields, f.column_indices, f.file_major_version, f.file_minor_version, f.file_size_bytes)
                for f in ma.files] == \
               [(f.path, f.fields, f.column_indices, f.file_major_version, f.file_minor_version, f.file_size_bytes)
                for f in mb.files]
        if mb.deletion_file is None:
            assert ma.deletion_file is None
        else:
            fields = ("file_type", "num_deleted_rows", "read_version", "id", "base_id")
            assert [getattr(ma.deletion_file, f) for f in fields] == [getattr(mb.deletion_file, f) for f in fields]
        assert a.validate() is None


def test_validate_names_a_missing_data_file(tmp_path):
    path = str(tmp_path / "v.lance")
    lance.write_dataset(pa.table({"a": list(range(30))}), path, max_rows_per_file=10)
    ds = lance_duck.dataset(path)
    assert ds.validate() is None
    victim = tmp_path / "v.lance" / "data" / ds.get_fragment(1).data_files()[0].rsplit("/", 1)[-1]
    victim.unlink()
    with pytest.raises(FileNotFoundError, match=victim.name):
        lance_duck.dataset(path).validate()


def test_explain_plan_names_projection_filter_and_index(described):
    sc = lance_duck.dataset(described).scanner(columns=["b"], filter="a > 10", limit=4)
    plan = sc.explain_plan()
    assert plan.startswith("LanceScan: ")
    assert "projection=[b]" in plan and "limit=4" in plan and "a > 10" in plan
    assert "ScalarIndexQuery: a_idx(BTree) on [a]" in plan
    analyzed = sc.analyze_plan()
    assert "output_rows=4" in analyzed
    assert "ScalarIndexQuery" not in lance_duck.dataset(described).scanner(filter="b = 'x'").explain_plan()


def _txn(t):
    return None if t is None else (t.read_version, type(t.operation).__name__, t.uuid, dict(t.transaction_properties))


def test_transactions_equal_pylance(table_path, described):
    for path in (table_path, described):
        mine, theirs = lance_duck.dataset(path), lance.dataset(path)
        for n in (1, 3, 10):
            assert [_txn(t) for t in mine.get_transactions(n)] == [_txn(t) for t in theirs.get_transactions(n)]
        for v in range(1, theirs.version + 1):
            assert _txn(mine.read_transaction(v)) == _txn(theirs.read_transaction(v))
    old = lance_duck.dataset(table_path, version=2)
    assert [_txn(t) for t in old.get_transactions()] == [_txn(t) for t in lance.dataset(table_path, version=2).get_transactions()]
    with pytest.raises(lance_duck.VersionNotFoundError):
        lance_duck.dataset(table_path).read_transaction(99)


def test_take_out_of_range_is_an_invalid_argument_and_an_index_error(pair):
    ds = pair[0]
    for bad in ([ds.count_rows()], [0, 10**9], [-ds.count_rows() - 1]):
        with pytest.raises(RowIndexError) as err:
            ds.take(bad)
        assert isinstance(err.value, InvalidArgumentError) and isinstance(err.value, IndexError)


@pytest.mark.parametrize("name", DATASET_WRITERS)
def test_pylance_dataset_writers_are_refused_by_name(pair, name):
    with pytest.raises(UnsupportedFeatureError, match=rf"{name}\(\).*reader"):
        getattr(pair[0], name)()


@pytest.mark.parametrize("name", FRAGMENT_WRITERS)
def test_pylance_fragment_writers_are_refused_by_name(pair, name):
    with pytest.raises(UnsupportedFeatureError, match=rf"{name}\(\).*reader"):
        getattr(pair[0].get_fragment(0), name)()


@pytest.mark.parametrize("owner,name", [("dataset", n) for n in DATASET_ENGINE_ONLY] +
                         [("fragment", n) for n in FRAGMENT_ENGINE_ONLY])
def test_pylance_engine_members_are_refused_saying_what_to_use(pair, owner, name):
    obj = pair[0] if owner == "dataset" else pair[0].get_fragment(0)
    with pytest.raises(UnsupportedFeatureError, match=rf"{name} is not offered by lance_duck: "):
        getattr(obj, name)()


def _public(cls: type) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_")}


def test_every_pylance_dataset_member_is_offered_refused_or_listed_as_not_yet():
    ours = _public(lance_duck.LanceDataset)
    unaccounted = _public(PYLANCE_DATASET) - ours - NOT_YET
    assert unaccounted == set()
    assert NOT_YET.isdisjoint(DATASET_WRITERS)


def test_every_pylance_fragment_and_scanner_member_is_offered():
    from lance_duck.scan.fragment import LanceFragment
    from lance_duck.scan.scanner import LanceScanner
    assert _public(PYLANCE_FRAGMENT) - _public(LanceFragment) == set()
    assert _public(PYLANCE_SCANNER) - _public(LanceScanner) == set()


def test_the_pylance_api_page_lists_every_pylance_member():
    from pathlib import Path
    page = (Path(__file__).resolve().parents[2] / "docs" / "pylance-api.md").read_text()
    for cls in (PYLANCE_DATASET, PYLANCE_FRAGMENT, PYLANCE_SCANNER):
        for name in _public(cls):
            assert f"`{name}" in page, (cls.__name__, name)


def test_refused_writers_keep_pylance_signature_free_of_side_effects(pair):
    ds = pair[0]
    version = ds.version
    with pytest.raises(UnsupportedFeatureError):
        ds.delete("id > 0")
    assert lance.dataset(ds.uri).version == version
    assert inspect.getdoc(type(ds).delete)
