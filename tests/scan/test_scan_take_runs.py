"""take of a ``range`` (consecutive positions: a plain LIMIT's rows) equals pylance's take of the
same positions: across fragments, past deletions and a fragment deleted whole, at the ends, empty,
every column or some, on 2.0, 2.1 and 2.2 files (nullable numbers and strings, dictionaries)."""
from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import InvalidArgumentError

N = 2400


def _table() -> pa.Table:
    return pa.table({
        "id": pa.array(range(N), pa.int64()),
        "fn": pa.array([None if i % 4 == 0 else i * 0.5 for i in range(N)], pa.float64()),
        "s": pa.array([None if i % 7 == 0 else f"s{i % 13}" for i in range(N)]),
        "cat": pa.array([["a", "b", "c"][i % 3] for i in range(N)]),
        "b": pa.array([i % 5 == 0 for i in range(N)]),
        "ts": pa.array(range(N), pa.timestamp("us")),
    })


@pytest.fixture(scope="module", params=["2.0", "2.1", "2.2"])
def path(request, tmp_path_factory):
    """Four fragments of 600 rows: rows deleted in the first and third, the second deleted whole."""
    p = str(tmp_path_factory.mktemp("take_runs") / "t.lance")
    ds = lance.write_dataset(_table(), p, max_rows_per_file=600, data_storage_version=request.param)
    ds.delete("(id < 40 and id % 3 = 1) or (id >= 600 and id < 1200) or (id >= 1300 and id % 10 = 0)")
    return p


RANGES = [range(0, 10), range(0, 1), range(0, 0), range(5, 45), range(560, 700), range(1000, 1050),
          range(0, 1677), range(1667, 1677), range(25, 26)]


@pytest.mark.parametrize("rows", RANGES, ids=lambda r: f"{r.start}-{r.stop}")
@pytest.mark.parametrize("columns", [None, ["s", "id"], ["fn"]], ids=["all", "s_id", "fn"])
def test_take_of_a_range_equals_pylance(path, rows, columns):
    want = lance.dataset(path).take(list(rows), columns=columns)
    ds = lance_duck.dataset(path)
    assert ds.count_rows() == 1677
    for _ in range(2):         # (the second take reads with the page metadata kept)
        got = ds.take(rows, columns=columns)
        assert got.schema == want.schema
        assert got.to_pylist() == want.to_pylist()


def test_take_of_a_range_past_the_end_or_negative_as_a_list(path):
    ds = lance_duck.dataset(path)
    with pytest.raises(InvalidArgumentError):
        ds.take(range(1672, 1678))
    want = lance.dataset(path).take([1672, 1673, 1674, 1675, 1676])
    assert ds.take(range(-5, 0)).to_pylist() == want.to_pylist()
    assert ds.take(range(10, 0, -2)).to_pylist() == lance.dataset(path).take(list(range(10, 0, -2))).to_pylist()
