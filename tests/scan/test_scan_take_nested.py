"""take() with nested column names returns pruned structs exactly as pylance's take does."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lance_duck.scan import dataset

from .conftest import STORAGE_VERSIONS, assert_tables_equal

import lance  # a test dependency: missing, it must fail, not skip

COLUMNS = [["s.a"], ["s.c.d", "id"], ["id", "s.b", "s.a"], ["s.c", "s"], ["s", "s.a"], ["s.c.d", "s.c"],
           ["s.c", "s.a", "id"], ["s.c.d", "_rowid"]]


@pytest.fixture(scope="module", params=STORAGE_VERSIONS)
def nested_path(request, tmp_path_factory) -> str:
    n = 3000
    r = np.random.default_rng(5)
    null_structs = request.param != "2.0"              # 2.0 cannot store struct validity
    rows = [None if null_structs and k % 17 == 0 else
            {"a": None if k % 5 == 0 else int(k), "b": f"b{k % 7}",
             "c": None if null_structs and k % 11 == 0 else {"d": None if k % 3 == 0 else float(r.random())}}
            for k in range(n)]
    t = pa.table({"id": np.arange(n), "s": pa.array(rows, pa.struct([
        ("a", pa.int64()), ("b", pa.string()), ("c", pa.struct([("d", pa.float64())]))]))})
    p = str(tmp_path_factory.mktemp(f"nested_take_{request.param}") / "t.lance")
    lance.write_dataset(t, p, max_rows_per_file=1000, data_storage_version=request.param)
    lance.dataset(p).delete("id % 13 = 4")
    return p


INDICES = [0, 1, 16, 17, 33, 999, 1000, 2500, 5, 2700, 1]


@pytest.mark.parametrize("columns", COLUMNS, ids=["+".join(c) for c in COLUMNS])
def test_dataset_take_with_nested_names_equals_pylance(nested_path, columns):
    assert_tables_equal(dataset(nested_path).take(INDICES, columns=columns),
                        lance.dataset(nested_path).take(INDICES, columns=columns))


@pytest.mark.parametrize("columns", [c for c in COLUMNS if "_rowid" not in c],
                         ids=["+".join(c) for c in COLUMNS if "_rowid" not in c])
def test_fragment_take_with_nested_names_equals_pylance(nested_path, columns):
    ours = dataset(nested_path).get_fragments()[1]
    ref = lance.dataset(nested_path).get_fragments()[1]
    idx = [0, 2, 3, 17, 400]
    assert_tables_equal(ours.take(idx, columns=columns), ref.take(idx, columns=columns))
