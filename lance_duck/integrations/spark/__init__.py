"""A PySpark (>= 4.1) Python data source over lance_duck.

Usage::

    from lance_duck.integrations.spark import register
    register(spark)                       # format names "lance_duck" and "lance" (when no other source has it)
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
``readChangeFeed=true`` with ``startingVersion`` / ``endingVersion`` (both inclusive, Delta's meaning)
or ``startingTimestamp`` / ``endingTimestamp`` reads :func:`lance_duck.changes` (``changes.py``).

Spark's filter pushdown is opt-in (``pushFilters=true`` plus
``spark.sql.python.filterPushdown.enabled=true``). The reader class follows the session's settings as
:func:`register` read them: with that conf off, ``pushFilters=true`` reads without pushdown (Spark filters
the rows itself) instead of failing; a conf changed after :func:`register` needs :func:`register` again
(else Spark refuses at planning with ``DATA_SOURCE_PUSHDOWN_DISABLED``). Spark 5's LIMIT hint
(``spark.sql.python.limitPushdown.enabled``) is taken the same way: each partition stops after that many
rows. ``pruneColumns(schema)`` (Sail's hook; Spark never calls it) narrows the columns read. It cannot be made safe from the
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

from typing import TYPE_CHECKING

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader
from pyspark.sql.types import StructType

from ...errors import InvalidArgumentError
from .changes import ChangeFeedReader, ChangePartition, feed_schema
from .filters import spark_filter_to_expression
from .options import ReadOptions, parse_options
from .partitions import LancePartition, plan_partitions
from .reader import LanceReader, LimitLanceReader, PushdownLanceReader, reader_class, table_schema
from .types import conform, spark_arrow_schema, spark_arrow_type

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

FORMAT_NAME = "lance_duck"
SHORT_NAME = "lance"      # what lance-spark users type

__all__ = ["FORMAT_NAME", "SHORT_NAME", "ChangeFeedReader", "ChangePartition", "LanceDataSource", "LancePartition",
           "LanceReader", "LimitLanceReader", "PushdownLanceReader", "reader_class",
           "ReadOptions", "conform", "parse_options", "plan_partitions", "register",
           "spark_arrow_schema", "spark_arrow_type", "spark_filter_to_expression"]


class LanceDataSource(DataSource):
    """``spark.read.format("lance_duck")``: one pinned version of a Lance table."""

    # cores of the session (set by :func:`register`); sizes the default partitions
    cores: int | None = None
    # the session's Python-source pushdown settings, as :func:`register` read them
    filter_pushdown: bool = False
    limit_pushdown: bool = False

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> StructType:
        from pyspark.sql.pandas.types import from_arrow_schema

        opts = parse_options(self.options)
        if opts.change_feed is not None:
            return from_arrow_schema(feed_schema(opts))
        return from_arrow_schema(spark_arrow_schema(table_schema(opts)))

    def reader(self, schema: StructType) -> DataSourceReader:
        opts = parse_options(self.options)
        if opts.change_feed is not None:
            if opts.push_filters:
                raise InvalidArgumentError("lance_duck: pushFilters is not supported with readChangeFeed; "
                                           "use the filter option")
            return ChangeFeedReader(opts, schema)
        cls = reader_class(opts.push_filters and self.filter_pushdown, self.limit_pushdown)
        return cls(opts, schema, cores=self.cores)


FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
LIMIT_PUSHDOWN_CONF = "spark.sql.python.limitPushdown.enabled"     # Spark 5


def register(spark: SparkSession) -> list[str]:
    """Register the source on a SparkSession as ``lance_duck``, and as ``lance`` when no other source has
    that name (lance-spark's JVM connector, when installed, keeps it). Remembers the session's default
    parallelism and its pushdown settings (call again after changing them). Returns the names registered.

    Examples:
        >>> from lance_duck.integrations.spark import register
        >>> register(spark)                                                  # doctest: +SKIP
        ['lance_duck', 'lance']
    """
    try:
        cores = int(spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext: size by the driver's cores
        cores = None
    settings = {"cores": cores, "filter_pushdown": _conf_on(spark, FILTER_PUSHDOWN_CONF),
                "limit_pushdown": _conf_on(spark, LIMIT_PUSHDOWN_CONF), "__module__": __name__}
    names = [FORMAT_NAME]
    spark.dataSource.register(type("RegisteredLanceDataSource", (LanceDataSource,), settings))
    if _short_name_free(spark, SHORT_NAME):
        spark.dataSource.register(type("RegisteredLanceShortName", (LanceDataSource,),
                                       {**settings, "name": classmethod(lambda cls: SHORT_NAME)}))
        names.append(SHORT_NAME)
    return names


def _conf_on(spark: SparkSession, key: str) -> bool:
    try:
        return str(spark.conf.get(key, "false")).strip().lower() == "true"
    except Exception:  # noqa: BLE001 - a key this Spark does not know
        return False


def _short_name_free(spark: SparkSession, name: str) -> bool:
    """True when no source but ours answers to ``name`` (a JVM connector such as lance-spark wins)."""
    try:
        jvm, jsession = spark._jvm, spark._jsparkSession
    except AttributeError:     # Spark Connect: no JVM to ask; another source would be registered there
        return True
    if jvm is None:
        return True
    try:
        lookup = jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource
        found = lookup(name, jsession.sessionState().conf())
    except Exception:  # noqa: BLE001 - not found (ClassNotFoundException through py4j)
        return True
    return "PythonDataSource" in str(found.getName()) or "python" in str(found.getName()).lower()
