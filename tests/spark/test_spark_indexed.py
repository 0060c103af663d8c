"""Spark reads over tables with scalar indices: pushed filters are answered through the indices
(BTREE, BITMAP) on the workers and the rows equal pylance's, over histories that leave the indices'
coverage partial (append after the index, deletes, an update moving rows), with and without
stable row ids; the pushdown reader in one process reads a small share of the data bytes."""
from __future__ import annotations

import warnings

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from ..index.conftest import batch
from ..index.test_index_scan import _data_size, data_bytes  # noqa: F401  (fixture)


def _rows(start: int, n: int) -> pa.Table:
    return batch(start, n).select(["id", "grp", "cat", "amount"])


@pytest.fixture(scope="module", params=[("2.2", False), ("2.1", True)], ids=["2.2", "2.1-stable"])
def indexed_history(request, tmp_path_factory) -> str:
    version, stable = request.param
    path = str(tmp_path_factory.mktemp("spark_idx") / "t.lance")
    warnings.simplefilter("ignore", DeprecationWarning)
    ds = lance.write_dataset(_rows(0, 20_000), path, max_rows_per_file=5_000, enable_stable_row_ids=stable,
                             data_storage_version=version)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    ds.insert(_rows(20_000, 3_000))                          # not covered by the indices
    ds.delete("id % 13 = 5 OR (id >= 7000 AND id < 7100)")
    ds.update({"cat": "'moved'"}, "id % 97 = 3")             # rows move to a new fragment
    return path


WHERES = [
    "id = 12345",
    "id in (17, 7050, 12345, 19999, 21000)",
    "id between 4990 and 5010",
    "cat = 'c3'",
    "cat = 'moved'",
    "cat is null and id < 3000",
    "id < 40 or cat = 'c5'",
    "(id = 3 or id = 22000) and amount > 0",
]


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by("id")


@pytest.mark.parametrize("where", WHERES)
def test_pushed_filters_over_indexed_tables_read_pylances_rows(spark, indexed_history, where):
    df = (spark.read.format("lance_duck").option("pushFilters", "true")
          .option("columns", "id, grp, cat, amount").load(indexed_history).where(where))
    got = _sorted(df.toArrow())
    want = _sorted(lance.dataset(indexed_history).to_table(columns=["id", "grp", "cat", "amount"],
                                                           filter=where))
    assert want.num_rows > 0
    assert got.column_names == want.column_names
    for name in want.column_names:
        assert got[name].to_pylist() == want[name].to_pylist(), name


def test_the_pushdown_reader_reads_a_point_lookup_through_the_index(indexed_history, data_bytes):  # noqa: F811
    from pyspark.sql import datasource as sds
    from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

    from lance_duck.integrations.spark import PushdownLanceReader, parse_options

    schema = StructType([StructField("id", LongType()), StructField("grp", IntegerType()),
                         StructField("cat", StringType()), StructField("amount", DoubleType())])
    reader = PushdownLanceReader(parse_options({"path": indexed_history}), schema, cores=2)
    assert list(reader.pushFilters([sds.EqualTo(("id",), 12345)])) == []
    batches = [b for p in reader.partitions() for b in reader.read(p)]
    got = pa.Table.from_batches(batches) if batches else pa.table({})
    assert got["id"].to_pylist() == [12345]
    assert pc.equal(got["amount"], 12345 * 0.25).to_pylist() == [True]
    # the covered fragments read one row; the appended and moved rows (outside the index) are scanned
    data = _data_size(indexed_history)
    assert 0 < data_bytes["bytes"] < 0.10 * data, (data_bytes["bytes"], data)   # unindexed: ~19%
