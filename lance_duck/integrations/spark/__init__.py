"""A PySpark (>= 4.1) Python data source over lance_duck.

Usage::

    from lance_duck.integrations.spark import register
    register(spark)                       # format name "lance_duck"
    df = (spark.read.format("lance_duck")
          .option("version", "3")          # or a tag name; see README "Spark" for every option
          .option("columns", "id, amount") # Spark 4.x pushes no column pruning to Python sources
          .load("/data/events.lance"))

Options (checked at planning; an unknown one is refused): ``version`` / ``versionAsOf`` (number
or tag), ``tag``, ``branch``, ``asof`` / ``timestampAsOf``, ``columns``, ``filter`` (SQL in
pylance's dialect, applied exactly), ``batch_size``, ``partition_rows`` / ``partition_bytes``,
``pushFilters``, ``storage_options.<key>``, ``nearest`` (JSON of pylance's ``nearest`` keys: a vector
search, its global top-k found on the driver at planning and read as one partition) with
``prefilter`` / ``fast_search``. The version is pinned when the read is planned.

Spark's filter pushdown is opt-in (``pushFilters=true`` plus
``spark.sql.python.filterPushdown.enabled=true``; with ``pushFilters=true`` and that conf off, Spark
refuses the read at planning with ``DATA_SOURCE_PUSHDOWN_DISABLED``). It cannot be made safe from the
source on Spark 4.3.0 (read in the jar with ``javap -c -p``, classes in
``org.apache.spark.sql.execution.datasources.v2.python``):

* ``PythonDataSourceV2`` (the provider: one per ``load()`` or SQL view, shared by every query of that
  DataFrame, its views, ``spark.table``, ``cache()``, every branch of a union or join) holds one
  mutable ``readInfo`` (the pickled reader and its partitions).
* ``PythonScanBuilder.pushFilters`` calls Python (``data_source_pushdown_filters.py``: ``reader()``,
  ``pushFilters``, ``partitions()``) only when at least one filter is serialisable
  (``UserDefinedPythonDataSourceFilterPushdownRunner.isAnyFilterSupported``), and then
  ``ds.setReadInfo(...)``. A query with no pushable filter calls nothing in Python and keeps
  whatever ``readInfo`` the last pushdown left.
* ``PythonBatch`` (from ``PythonScan.toBatch``) lazily takes ``ds.getOrCreateReadInfo(...)``: the
  provider's *current* read info, read after every scan of the plan has been pushed down.

So (1) ``df.count()`` after ``df.where(...).count()`` reuses the old filter (no Python code runs
for it, nothing can notice), and (2) in ``df.where(a).union(df.where(b))`` both scans run the
reader of the last pushdown: their tasks receive byte-identical inputs (pickled reader, pickled
partitions, output schema), yet must return different rows, so no reader can be right for both.
Both are pinned by tests. The ``filter`` option has neither problem (it is part of the options).
"""
from __future__ import annotations

from pyspark.sql.datasource import DataSource

from .filters import spark_filter_to_expression
from .options import ReadOptions, parse_options
from .partitions import LancePartition, plan_partitions
from .reader import LanceReader, PushdownLanceReader, table_schema
from .types import conform, spark_arrow_schema, spark_arrow_type

FORMAT_NAME = "lance_duck"

__all__ = ["FORMAT_NAME", "LanceDataSource", "LancePartition", "LanceReader", "PushdownLanceReader",
           "ReadOptions", "conform", "parse_options", "plan_partitions", "register",
           "spark_arrow_schema", "spark_arrow_type", "spark_filter_to_expression"]


class LanceDataSource(DataSource):
    """``spark.read.format("lance_duck")``: one pinned version of a Lance table."""

    # cores of the session (set by :func:`register`); sizes the default partitions
    cores: int | None = None

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self):
        from pyspark.sql.pandas.types import from_arrow_schema

        opts = parse_options(self.options)
        return from_arrow_schema(spark_arrow_schema(table_schema(opts)))

    def reader(self, schema):
        opts = parse_options(self.options)
        cls = PushdownLanceReader if opts.push_filters else LanceReader
        return cls(opts, schema, cores=self.cores)


def register(spark) -> None:
    """Register the ``lance_duck`` format on a SparkSession (remembering its default parallelism)."""
    try:
        cores = int(spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext: size by the driver's cores
        cores = None
    source = type("RegisteredLanceDataSource", (LanceDataSource,), {"cores": cores, "__module__": __name__})
    spark.dataSource.register(source)
