"""Row-count-only reads (``columns=''``): PySpark's zero-column batch wrapping, vectorised.

PySpark's own ``ArrowBatchTransformer.wrap_struct`` is the oracle: the replacement must give the
same batch for every input, and be in place in a worker that unpickles a no-column reader.
"""
from __future__ import annotations

import pickle

import pyarrow as pa
import pytest
from pyspark.sql.conversion import ArrowBatchTransformer

from lance_duck.integrations.spark import rowcounts

_PYSPARK_WRAP = ArrowBatchTransformer.__dict__["wrap_struct"].__func__   # before any install()


@pytest.mark.parametrize("n", [1, 7, 70_000])
def test_empty_structs_equal_pysparks_row_by_row_array(n):
    got = rowcounts.empty_structs(n)
    got.validate(full=True)
    assert got.equals(pa.array([{}] * n))
    assert got.null_count == 0 and len(got) == n


def _batches():
    no_column = pa.RecordBatch.from_struct_array(
        pa.StructArray.from_arrays([pa.nulls(5)], ["_"])).drop_columns(["_"])
    return [
        no_column,
        no_column.slice(0, 0),
        pa.record_batch({"id": pa.array([1, None, 3]), "s": pa.array(["a", "b", None])}),
        pa.record_batch({"st": pa.array([{"x": 1}, None])}),
    ]


def test_installed_wrap_struct_gives_pysparks_batches(monkeypatch):
    monkeypatch.setattr(ArrowBatchTransformer, "wrap_struct", staticmethod(_PYSPARK_WRAP))
    rowcounts.install()
    rowcounts.install()      # twice: wraps once
    installed = ArrowBatchTransformer.__dict__["wrap_struct"].__func__
    assert installed is not _PYSPARK_WRAP and getattr(installed, "_lance_duck", False)
    for batch in _batches():
        got, want = ArrowBatchTransformer.wrap_struct(batch), _PYSPARK_WRAP(batch)
        assert got.schema == want.schema
        assert got.equals(want), batch.schema


@pytest.mark.parametrize("columns", ["", "id"])
def test_unpickling_a_reader_installs_only_for_a_read_of_no_column(monkeypatch, history_table, columns):
    from pyspark.sql.pandas.types import from_arrow_schema

    from lance_duck.integrations.spark import LanceReader, parse_options
    from lance_duck.integrations.spark.reader import table_schema

    monkeypatch.setattr(ArrowBatchTransformer, "wrap_struct", staticmethod(_PYSPARK_WRAP))
    opts = parse_options({"path": history_table, "columns": columns})
    reader = LanceReader(opts, from_arrow_schema(table_schema(opts)), cores=2)
    pickle.loads(pickle.dumps(reader))          # what a Spark worker does with the read function
    installed = ArrowBatchTransformer.__dict__["wrap_struct"].__func__
    assert (installed is not _PYSPARK_WRAP) == (columns == "")
