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
``pushFilters``, ``storage_options.<key>``. The version is pinned when the read is planned.

Spark's filter pushdown is opt-in (``pushFilters=true`` plus
``spark.sql.python.filterPushdown.enabled=true``): on Spark 4.3 the provider of a DataFrame keeps
the reader of its last pushdown, so a later query of the same DataFrame or view with no pushable
filter re-uses the previous query's filters (too few rows). Nothing in the Python source runs for
that later query, so the source cannot detect it; the ``filter`` option has no such problem.
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
