"""One-character string columns reach DuckDB as dictionaries over the ASCII bytes: every answer as
DuckDB gives it over pylance's table (fragments with deletions, longer values, nulls, non-ASCII)."""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import lance
import lance_duck
from lance_duck.scan.execution import one_byte_dictionary

N = 3000


def _flags(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    flag = rng.choice(np.array(list("ANRF")), n)
    mixed = rng.choice(np.array(["Y", "N", "YES", "é", ""]), n)   # longer, multi-byte, empty
    status = [None if i % 97 == 0 else s for i, s in enumerate(rng.choice(np.array(list("OFP")), n))]
    return pa.table({"id": np.arange(n, dtype=np.int64), "flag": flag, "mixed": mixed,
                     "status": pa.array(status, pa.string()), "v": rng.integers(0, 100, n)})


@pytest.fixture(scope="module", params=["2.0", "2.1", "2.2"])
def path(request, tmp_path_factory):
    p = str(tmp_path_factory.mktemp("onebyte") / "t.lance")
    lance.write_dataset(_flags(N, 1), p, data_storage_version=request.param, max_rows_per_file=1000)
    ds = lance.dataset(p)
    ds.delete("id % 13 = 5")
    # a fragment whose flag column holds a longer value: later batches are no longer one byte
    lance.write_dataset(_flags(500, 2).set_column(1, "flag", pa.array(["AB"] * 500)), p, mode="append")
    return p


QUERIES = [
    "SELECT flag, count(*), sum(v) FROM {t} GROUP BY flag ORDER BY flag",
    "SELECT flag, mixed, status, count(*) FROM {t} GROUP BY ALL ORDER BY ALL",
    "SELECT id, flag, status FROM {t} WHERE v < 7 ORDER BY id",
    "SELECT count(*) FROM {t} WHERE flag = 'N' AND status IS NULL",
    "SELECT max(flag), min(status), count(DISTINCT mixed) FROM {t}",
]


@pytest.mark.parametrize("q", QUERIES)
def test_answers_equal_duckdb_over_pylance(path, q):
    ref = duckdb.connect()
    ref.register("t", lance.dataset(path).to_table())
    con = duckdb.connect()
    lance_duck.sql(f"CREATE VIEW t AS SELECT * FROM '{path}'", con)
    assert lance_duck.sql(q.format(t="t"), con).fetchall() == ref.execute(q.format(t="t")).fetchall()


def test_only_one_byte_values_without_nulls_become_dictionaries():
    got = one_byte_dictionary(pa.array(["R", "A", "\x00", "R"]).slice(1))
    assert pa.types.is_dictionary(got.type) and got.cast(pa.string()).to_pylist() == ["A", "\x00", "R"]
    for plain in (pa.array(["R", "AB"]), pa.array(["R", None]), pa.array(["é", "a"]), pa.array(["", "ab"])):
        assert one_byte_dictionary(plain) is plain


def test_duckdb_reader_hands_one_byte_columns_over_as_dictionaries(path):
    reader = lance_duck.dataset(path).scanner(columns=["flag", "mixed", "status"])._dictionary_reader()
    types = {f.name: f.type for f in reader.schema}
    assert pa.types.is_dictionary(types["flag"])     # (the others may be page dictionaries of the file)
    got = pa.Table.from_batches(list(reader)).cast(pa.schema([("flag", pa.string()), ("mixed", pa.string()),
                                                               ("status", pa.string())]))
    assert got == lance.dataset(path).to_table(columns=["flag", "mixed", "status"])
