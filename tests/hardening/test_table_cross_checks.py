"""What a manifest states is cross-checked against what the files hold.

Each test damages one statement of a pylance-written table (deletion counts, data files of a
fragment, field ids, column indices, parent ids, row counts) and expects CorruptFileError naming
the file and the disagreement, where lance_duck used to return rows (deleted rows back, a column
silently null or gone, a negative count).
"""
from __future__ import annotations

import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import CorruptFileError, UnsupportedFeatureError

from . import table_fixtures as T


@pytest.fixture(scope="module", params=T.STORAGE_VERSIONS)
def base(request, tmp_path_factory):
    return T.make_table(str(tmp_path_factory.mktemp("xcheck") / f"t_{request.param}.lance"), request.param)


@pytest.fixture
def table(base, tmp_path):
    path = T.copy_table(base, str(tmp_path / "t.lance"))
    assert T.read_ld(path).equals(T.read_pylance(path))
    return path


V2_VERSIONS = tuple(v for v in T.STORAGE_VERSIONS if v != "legacy")


@pytest.fixture(scope="module", params=V2_VERSIONS)
def base_v2(request, tmp_path_factory):
    """2.x tables only: their data files carry their own schema and column indices (legacy ones do not)."""
    return T.make_table(str(tmp_path_factory.mktemp("xcheck2") / f"t_{request.param}.lance"), request.param)


@pytest.fixture
def table_v2(base_v2, tmp_path):
    return T.copy_table(base_v2, str(tmp_path / "t.lance"))


def _frag_with(m, suffix: str):
    for f in m.fragments:
        if f.HasField("deletion_file") and f.deletion_file.file_type == (1 if suffix == "bin" else 0):
            return f
    raise AssertionError(f"no .{suffix} deletion file")


@pytest.mark.parametrize("kind", ["arrow", "bin"])
@pytest.mark.parametrize("delta", [-1, +1])
def test_deletion_file_disagreeing_with_num_deleted_rows_is_corrupt(table, kind, delta):
    stated = {}

    def edit(m):
        f = _frag_with(m, kind)
        f.deletion_file.num_deleted_rows += delta
        stated["n"] = f.deletion_file.num_deleted_rows
    T.edit_manifest(table, edit)
    with pytest.raises(CorruptFileError, match=rf"\.{kind}: deletion file lists \d+ deleted rows, .* says {stated['n']}"):
        T.read_ld(table)


def test_deletion_file_without_batches_is_corrupt(table):
    path = next(p for p in T.deletion_files(table) if p.endswith(".arrow"))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, pa.schema([("row_id", pa.uint32())])):
        pass
    with open(path, "wb") as f:
        f.write(sink.getvalue().to_pybytes())
    with pytest.raises(CorruptFileError, match="no record batches"):
        T.read_ld(table)
    with pytest.raises(ValueError):  # pylance refuses it as well (ArrowInvalid)
        T.read_pylance(table)


def test_more_deleted_rows_than_physical_rows_is_corrupt_not_a_negative_count(table):
    def edit(m):
        f = _frag_with(m, "arrow")
        f.deletion_file.num_deleted_rows = f.physical_rows + 5
    T.edit_manifest(table, edit)
    with pytest.raises(CorruptFileError, match="rows are deleted but the fragment has only"):
        lance_duck.dataset(table).count_rows()


def test_fragment_without_data_files_is_corrupt_like_pylance(table):
    T.edit_manifest(table, lambda m: m.fragments[2].ClearField("files"))
    with pytest.raises(CorruptFileError, match="fragment 2 of version \\d+ has no data files"):
        T.read_ld(table)
    with pytest.raises(ValueError, match="does not contain any data"):
        T.read_pylance(table)


def test_zero_physical_rows_is_refused_instead_of_skipping_the_fragment(table):
    def edit(m):
        m.fragments[2].physical_rows = 0
    T.edit_manifest(table, edit)
    with pytest.raises(UnsupportedFeatureError, match="0 physical rows"):
        T.read_ld(table)


def test_physical_rows_disagreeing_with_the_data_file_is_corrupt(table):
    def edit(m):
        m.fragments[2].physical_rows -= 10
    T.edit_manifest(table, edit)
    with pytest.raises(CorruptFileError, match="data file has 300 rows, the manifest says fragment 2"):
        T.read_ld(table)


def test_field_id_the_data_file_does_not_hold_is_corrupt_not_nulls(table_v2):
    table = table_v2

    def edit(m):
        m.fragments[0].files[0].fields[0] = 99
    T.edit_manifest(table, edit)
    with pytest.raises(CorruptFileError, match=r"holds field ids \[99\]"):
        T.read_ld(table)
    with pytest.raises(CorruptFileError):  # also when only the hidden column is asked for
        lance_duck.dataset(table).to_table(columns=["i"])


def test_column_indices_pointing_at_the_wrong_columns_are_corrupt(table_v2):
    table = table_v2

    def swap(m):
        ci = m.fragments[0].files[0].column_indices
        ci[0], ci[1] = ci[1], ci[0]
    T.edit_manifest(table, swap)
    with pytest.raises(CorruptFileError, match="column indices .* do not rise"):
        T.read_ld(table)


def test_column_index_beyond_the_file_is_corrupt(table_v2):
    table = table_v2

    def edit(m):
        ci = m.fragments[0].files[0].column_indices
        ci[len(ci) - 1] = 40
    T.edit_manifest(table, edit)
    with pytest.raises(CorruptFileError, match="column 40"):
        T.read_ld(table)


def test_fields_and_column_indices_of_unequal_length_are_corrupt(table_v2):
    table = table_v2
    T.edit_manifest(table, lambda m: m.fragments[1].files[0].column_indices.pop())
    with pytest.raises(CorruptFileError, match="field ids but \\d+ column indices"):
        T.read_ld(table)


def test_field_type_disagreeing_with_the_data_file_is_corrupt(table_v2):
    table = table_v2

    def edit(m):
        next(f for f in m.fields if f.name == "n").logical_type = "int64"
    T.edit_manifest(table, edit)
    with pytest.raises(CorruptFileError, match="'n' .* is 'int64' in the manifest but 'int32' in the data file"):
        T.read_ld(table)


@pytest.mark.parametrize("target", ["s", "i", "l"])
def test_parent_id_of_a_non_nested_or_distant_field_is_corrupt(table, target):
    """``s`` under ``i`` (not nested), ``st.a`` moved under ``l`` / ``s``: the column would vanish."""
    def edit(m):
        ids = {f.name: f.id for f in m.fields if f.parent_id == -1}
        child = next(f for f in m.fields if f.name == ("s" if target == "i" else "a"))
        child.parent_id = ids[target]
    T.edit_manifest(table, edit)
    with pytest.raises(CorruptFileError, match="parent"):
        lance_duck.dataset(table)


def test_repeated_field_id_in_the_schema_is_corrupt(table):
    def edit(m):
        next(f for f in m.fields if f.name == "s").id = next(f for f in m.fields if f.name == "n").id
    T.edit_manifest(table, edit)
    with pytest.raises(CorruptFileError, match="share the id"):
        lance_duck.dataset(table)


def test_field_stored_in_two_files_of_a_fragment_is_corrupt(table):
    def edit(m):
        f = m.fragments[0]
        f.files.add().CopyFrom(f.files[0])
    T.edit_manifest(table, edit)
    with pytest.raises(CorruptFileError, match="stored in two data files"):
        lance_duck.dataset(table)


def test_count_rows_and_scan_agree_on_an_undamaged_table(table):
    ds = lance_duck.dataset(table)
    assert ds.count_rows() == ds.to_table().num_rows == T.lance().dataset(table).count_rows()
