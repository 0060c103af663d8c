"""A PySpark (>= 4.1) Python data source over lance_duck: one partition per fragment.

Usage::

    from lance_duck.integrations.spark import register
    register(spark)                       # format name "lance_duck"
    df = (spark.read.format("lance_duck")
          .option("version", "3")          # or a tag name; also "branch", "asof", "columns", "batch_size"
          .load("/data/events.lance"))

Options: ``version`` (number or tag), ``branch``, ``asof`` (ISO timestamp), ``columns``
(comma-separated; Spark 4.3 pushes no column pruning to Python sources, so this or a user
``.schema(...)`` subset is the way to read fewer columns), ``batch_size``, ``pushFilters``
(``true`` to accept Spark's pushed filters; needs ``spark.sql.python.filterPushdown.enabled=true``),
and ``storage_options.<key>`` for fsspec. The version is pinned when the read is planned.

Caveat (Spark 4.3.0): a DataFrame or view that is queried again can reuse the filters pushed by a
previous query (SPARK's provider-scoped read info), returning too few rows. Filter pushdown is
therefore off unless you ask for it; with it on, load the DataFrame afresh for every query.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from .spark_types import conform, spark_arrow_schema

FORMAT_NAME = "lance_duck"


@dataclass(frozen=True)
class FragmentPartition(InputPartition):
    """One Spark task: a fragment of a pinned table version."""

    fragment_id: int


def register(spark) -> None:
    """Register the ``lance_duck`` format on a SparkSession."""
    spark.dataSource.register(LanceDataSource)


def _open(options: dict[str, str], version: int | None = None):
    from ..scan.dataset import dataset

    path = options.get("path")
    if not path:
        raise ValueError("lance_duck data source needs a path: spark.read.format('lance_duck').load(path)")
    storage = {k.split(".", 1)[1]: v for k, v in options.items() if k.lower().startswith("storage_options.")}
    if version is None:
        v = options.get("version")
        version = int(v) if v is not None and v.isdigit() else v
    return dataset(path, version=version, asof=options.get("asof") if version is None else None,
                   branch=options.get("branch"), storage_options=storage or None)


def _columns(options: dict[str, str], schema: pa.Schema) -> list[str]:
    cols = options.get("columns")
    if not cols:
        return list(schema.names)
    return [c.strip() for c in cols.split(",") if c.strip()]


class LanceDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self):
        ds = _open(dict(self.options))
        arrow = ds.schema
        cols = _columns(dict(self.options), arrow)
        return from_arrow_schema(spark_arrow_schema(pa.schema([arrow.field(c) for c in cols])))

    def reader(self, schema):
        opts = dict(self.options)
        cls = PushdownLanceReader if opts.get("pushFilters", opts.get("pushfilters", "false")).lower() == "true" \
            else LanceReader
        return cls(opts, schema)


class LanceReader(DataSourceReader):
    """Reads the columns of the Spark schema, one partition per fragment, at a pinned version."""

    def __init__(self, options: dict[str, str], schema) -> None:
        self.options = options
        self.columns = list(schema.fieldNames())
        self.target = to_arrow_schema(schema, timezone="UTC", prefers_large_types=False)
        ds = _open(options)
        self.version = ds.version  # pinned at planning
        self.arrow_schema = ds.schema
        self.batch_size = int(options.get("batch_size", options.get("batchsize", 8192)))
        self.filters: list[Any] = []

    def partitions(self) -> Sequence[InputPartition]:
        ds = _open(self.options, self.version)
        return [FragmentPartition(f.fragment_id) for f in ds.get_fragments()]

    def _filter(self) -> pc.Expression | None:
        expr = None
        for f in self.filters:
            e = spark_filter_to_expression(f, self.arrow_schema)
            expr = e if expr is None else expr & e
        return expr

    def read(self, partition: FragmentPartition) -> Iterator[pa.RecordBatch]:
        ds = _open(self.options, self.version)
        frag = ds.get_fragment(partition.fragment_id)
        for batch in frag.to_batches(columns=self.columns, filter=self._filter(), batch_size=self.batch_size):
            if batch.num_rows:
                yield conform(batch, self.target)


class PushdownLanceReader(LanceReader):
    """LanceReader that also accepts Spark's pushed filters (applied exactly while reading)."""

    def pushFilters(self, filters):  # noqa: N802 (Spark's name)
        empty = self.arrow_schema.empty_table()
        for f in filters:
            try:
                empty.filter(spark_filter_to_expression(f, self.arrow_schema))  # type-checks it
            except (_NotPushable, pa.ArrowException, TypeError, ValueError):
                yield f
                continue
            self.filters.append(f)


class _NotPushable(Exception):
    pass


def spark_filter_to_expression(f, schema: pa.Schema) -> pc.Expression:
    """A pyspark.sql.datasource filter as an exact pyarrow Expression (raises if not translatable).

    Literals are cast (safely) to the Lance column's type, so a Spark value that does not fit the
    column exactly is not pushed.
    """
    from pyspark.sql import datasource as sds

    def col(attr: tuple[str, ...]) -> pc.Expression:
        return pc.field(*attr)

    def _lit(value: Any) -> pc.Expression:
        if value is None:
            raise _NotPushable(value)
        t = _field_type(schema, f.attribute if hasattr(f, "attribute") else ())
        if pa.types.is_dictionary(t):
            t = t.value_type
        try:
            return pc.scalar(pa.scalar(value).cast(t, safe=True))
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise _NotPushable(f) from exc

    if isinstance(f, sds.EqualTo):
        return col(f.attribute) == _lit(f.value)
    if isinstance(f, sds.EqualNullSafe):
        if f.value is None:
            return col(f.attribute).is_null()
        return pc.if_else(col(f.attribute).is_null(), False, col(f.attribute) == _lit(f.value))
    if isinstance(f, sds.GreaterThan):
        return col(f.attribute) > _lit(f.value)
    if isinstance(f, sds.GreaterThanOrEqual):
        return col(f.attribute) >= _lit(f.value)
    if isinstance(f, sds.LessThan):
        return col(f.attribute) < _lit(f.value)
    if isinstance(f, sds.LessThanOrEqual):
        return col(f.attribute) <= _lit(f.value)
    if isinstance(f, sds.In):
        if any(v is None for v in f.value):
            raise _NotPushable(f)  # IN with NULL has three-valued semantics: let Spark do it
        t = _field_type(schema, f.attribute)
        try:
            values = pa.array(list(f.value)).cast(t.value_type if pa.types.is_dictionary(t) else t, safe=True)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise _NotPushable(f) from exc
        return col(f.attribute).isin(values)
    if isinstance(f, sds.IsNull):
        return col(f.attribute).is_null()
    if isinstance(f, sds.IsNotNull):
        return col(f.attribute).is_valid()
    if isinstance(f, sds.Not):
        return ~spark_filter_to_expression(f.child, schema)
    if isinstance(f, sds.StringStartsWith):
        _field_type(schema, f.attribute)
        return pc.starts_with(col(f.attribute), pattern=f.value)
    if isinstance(f, sds.StringEndsWith):
        return pc.ends_with(col(f.attribute), pattern=f.value)
    if isinstance(f, sds.StringContains):
        return pc.match_substring(col(f.attribute), pattern=f.value)
    raise _NotPushable(f)


def _field_type(schema: pa.Schema, path: tuple[str, ...]) -> pa.DataType:
    if not path or path[0] not in schema.names:
        raise _NotPushable(path)
    t = schema.field(path[0]).type
    for name in path[1:]:
        if not pa.types.is_struct(t) or t.get_field_index(name) < 0:
            raise _NotPushable(path)
        t = t.field(name).type
    return t
