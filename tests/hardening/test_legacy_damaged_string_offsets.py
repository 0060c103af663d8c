"""A damaged position in a legacy string column raises CorruptFileError (issue 28 §5).

Legacy (0.1 / 0.2) string pages store each value's absolute file position; a position moved by
damage (still increasing, still inside the file) splits a multi-byte character between two values.
pylance refuses the page ("incomplete utf-8 byte sequence"); lance_duck validates the strings it
builds from raw bytes (Arrow's vectorised full validation) and raises CorruptFileError naming the
file and the field, instead of handing out a StringArray that is not UTF-8.
"""
from __future__ import annotations

import glob
import os
import struct

import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import CorruptFileError

from . import table_fixtures as T

VALUES = [f"é{k}" for k in range(200)]       # every value starts with a two-byte character


@pytest.fixture
def table(tmp_path) -> str:
    path = str(tmp_path / "legacy.lance")
    T.lance().write_dataset(pa.table({"i": list(range(200)), "s": VALUES}), path, data_storage_version="legacy")
    return path


def _move_position(table: str, value: int, by: int) -> str:
    """Move the stored start position of ``VALUES[value]`` by ``by`` bytes; the data file's path."""
    (path,) = glob.glob(os.path.join(table, "data", "*.lance"))
    raw = bytearray(open(path, "rb").read())
    data = "".join(VALUES).encode()
    start = raw.find(data)
    pos = start + len("".join(VALUES[:value]).encode())
    prev = start + len("".join(VALUES[:value - 1]).encode())
    at = raw.find(struct.pack("<qq", prev, pos))
    assert start >= 0 and at >= 0
    struct.pack_into("<q", raw, at + 8, pos + by)
    open(path, "wb").write(bytes(raw))
    return path


def test_undamaged_multibyte_strings_read_as_pylance_reads_them(table):
    assert T.read_ld(table).equals(T.read_pylance(table))


@pytest.mark.parametrize("value", [1, 57, 199])
def test_position_splitting_a_character_is_corrupt_as_pylance_says(table, value):
    path = _move_position(table, value, 1)
    with pytest.raises(CorruptFileError, match="not valid UTF-8") as err:
        T.read_ld(table)
    assert path in str(err.value) and "'s'" in str(err.value)
    with pytest.raises(Exception, match="utf-8"):
        T.read_pylance(table)
    # a read of other columns is not affected (the damage is in the string page only)
    assert lance_duck.dataset(table).to_table(columns=["i"]).equals(T.lance().dataset(table).to_table(columns=["i"]))


def test_damage_found_by_filtered_reads_and_sql_too(table):
    _move_position(table, 10, 1)
    with pytest.raises(CorruptFileError):
        lance_duck.dataset(table).to_table(filter="i > 5")      # rows holding the damaged values
    with pytest.raises(CorruptFileError):
        lance_duck.sql(f"SELECT count(*) FROM '{table}' WHERE s = 'x'").fetchall()
