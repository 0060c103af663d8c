"""``lance_duck.sql`` raises lance_duck's own error for a failing scan, whatever the filter (issue 28 §5).

The filtered-view path (``contains`` / ``LIKE`` / comparisons a view takes) reads the rows an index
selects while the reader is made: an error there (a damaged deletion file) reached the caller as
DuckDB's ``InvalidInputException`` wrapping ours ("exporting a stream ... failed: CorruptFileError"),
while plain scans raised ``CorruptFileError``. Every form now raises ours.
"""
from __future__ import annotations

import glob
import os

import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import CorruptFileError

from . import table_fixtures as T

FILTERS = ["contains(s, 'r-1')", "s LIKE '%r-1%'", "s LIKE 'str-1%'", "i = 5", "i < 40", "s = 'str-1'", "d > 10.0"]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> str:
    """Three fragments, a BTREE on ``i``, an NGRAM on ``s``, then a delete (deletion files)."""
    path = str(tmp_path_factory.mktemp("sqlerr") / "t.lance")
    n = 3000
    T.lance().write_dataset(pa.table({"i": np.arange(n), "s": [f"str-{k % 53}" for k in range(n)],
                                      "d": np.arange(n) * 0.5}), path, max_rows_per_file=1000)
    ds = T.lance().dataset(path)
    ds.create_scalar_index("i", "BTREE")
    ds.create_scalar_index("s", "NGRAM")
    ds.delete("i % 7 = 1")
    return path


@pytest.fixture(params=["zeroed", "removed"])
def damaged(request, base, tmp_path):
    path = T.copy_table(base, str(tmp_path / "t.lance"))
    first = sorted(glob.glob(os.path.join(path, "_deletions", "0-*")))[0]
    if request.param == "zeroed":
        open(first, "wb").write(b"\0" * os.path.getsize(first))
        return path, CorruptFileError
    os.remove(first)
    return path, FileNotFoundError


@pytest.mark.parametrize("where", FILTERS)
@pytest.mark.parametrize("select", ["i", "count(*)", "s, d"])
def test_scan_error_under_any_filter_is_lance_ducks(damaged, where, select):
    path, error = damaged
    with pytest.raises(error, match=r"_deletions/0-") as err:
        lance_duck.sql(f"SELECT {select} FROM '{path}' WHERE {where}").fetchall()
    assert "Invalid Input Error" not in str(err.value)


def test_undamaged_answers_match_pylance(base):
    ds = T.lance().dataset(base)
    for where in FILTERS:
        sql_where = where.replace("contains(s, 'r-1')", "s LIKE '%r-1%'")
        want = ds.count_rows(filter=sql_where)
        assert lance_duck.sql(f"SELECT count(*) FROM '{base}' WHERE {where}").fetchall() == [(want,)], where
