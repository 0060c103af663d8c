"""Field names and parent ids a damaged manifest states are refused as pylance refuses them (issue 28 §5).

A bit flip in a parent id ("parent id -4194305"), a top-level name holding ``.`` (``'../f'``), an
empty name, or two fields of one struct with the same name (a rename onto another field's name):
CorruptFileError naming the field, where Arrow's cast error (duplicates) or a quiet read (names)
came out before. pylance refuses each (for duplicates its reader panics).
"""
from __future__ import annotations

import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import CorruptFileError

from . import table_fixtures as T


@pytest.fixture(scope="module", params=["legacy", "2.1"])
def base(request, tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("names") / "t.lance")
    t = pa.table({"i": list(range(100)), "st": [{"a": k, "b": str(k)} for k in range(100)], "z": [1.5] * 100})
    T.lance().write_dataset(t, path, data_storage_version=request.param)
    return path


@pytest.fixture
def table(base, tmp_path) -> str:
    return T.copy_table(base, str(tmp_path / "t.lance"))


def _field(m, name):
    return next(f for f in m.fields if f.name == name)


CASES = {
    "root parent id bit flip": (lambda m: setattr(_field(m, "i"), "parent_id", -4194305), "unknown parent id -4194305"),
    "child parent id bit flip": (lambda m: setattr(_field(m, "a"), "parent_id", -4194305), "unknown parent id -4194305"),
    "name ../f": (lambda m: setattr(_field(m, "i"), "name", "../f"), r"'\.\./f' .* has a '\.'"),
    "empty name": (lambda m: setattr(_field(m, "z"), "name", ""), "empty name"),
    "top-level duplicate": (lambda m: setattr(_field(m, "z"), "name", "i"), "two fields named 'i'"),
    "struct duplicate": (lambda m: setattr(_field(m, "b"), "name", "a"), "field 'st' .* two fields named 'a'"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_damaged_field_names_are_refused_as_pylance_refuses(table, case):
    edit, message = CASES[case]
    T.edit_manifest(table, edit)
    with pytest.raises(CorruptFileError, match=message):
        lance_duck.dataset(table).to_table()
    with pytest.raises(CorruptFileError, match=message):
        lance_duck.sql(f"SELECT count(*) FROM '{table}'").fetchall()
    if "duplicate" not in case:      # pylance's reader panics on duplicates (a Rust panic, not an error)
        with pytest.raises(Exception):
            T.read_pylance(table)


@pytest.mark.parametrize("version", ["2.0", "2.2"])      # pylance reads no unnamed list item in legacy files
def test_names_pylance_accepts_still_read(tmp_path, version):
    """``/`` and spaces in names, ``.`` inside a struct, an unnamed list item: what pylance writes,
    lance_duck reads."""
    path = str(tmp_path / "ok.lance")
    t = pa.table({"a/b": [1, 2], "c d": ["x", "y"], "st": [{"p.q": 1}, {"p.q": 2}],
                  "l": pa.array([[1], [2, 3]], pa.list_(pa.field("", pa.int64())))})
    T.lance().write_dataset(t, path, data_storage_version=version)
    assert T.read_ld(path).equals(T.read_pylance(path))
