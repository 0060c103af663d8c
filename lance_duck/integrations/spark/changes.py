"""``.option("readChangeFeed", "true")``: the change feed (:func:`lance_duck.changes`) as a Spark read.

The driver resolves the range to version numbers (pinned), diffs each commit's manifests (metadata
only) and cuts the commits' sorted changes into partitions of about ``partition_rows`` rows
(default :data:`FEED_PARTITION_ROWS`): a partition is a tuple of ``(version, first, end)`` pieces,
so its task reads only the changed fragments those rows live in. Workers diff the commits again
(deterministic, metadata only) and read their rows.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from ...changefeed import ChangeFeed, open_feed, plan_pieces
from ...errors import InvalidArgumentError, LanceDuckError
from ... import _state
from .options import ReadOptions
from .reader import _bounded
from .types import conform, spark_arrow_schema

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

# Change rows per partition when ``partition_rows`` is not given.
FEED_PARTITION_ROWS = 1024 * 1024
_feeds = _state.cache("spark_change_feeds")


@dataclass(frozen=True)
class ChangePartition(InputPartition):
    """One Spark task: slices ``(version, first, end)`` of commits' sorted change rows."""

    pieces: tuple[tuple[int, int, int], ...]


def feed_for(opts: ReadOptions, start: int | None = None, end: int | None = None) -> ChangeFeed:
    """The options' change feed (planning), or the pinned range's (workers; kept per process)."""
    cf = opts.change_feed
    assert cf is not None
    columns = list(opts.columns) if opts.columns is not None else None
    if start is None:
        return open_feed(opts.path, cf.start, cf.end, columns, opts.filter, branch=opts.branch,
                         storage_options=opts.storage())
    key = (opts.path, opts.branch, start, end, tuple(columns or ()), columns is None, opts.filter,
           tuple(sorted(opts.storage_options.items())))
    feed = _feeds.get(key)
    if feed is None:
        feed = open_feed(opts.path, start, end, columns, opts.filter, branch=opts.branch,
                         storage_options=opts.storage())
        _feeds.put(key, feed, 1)
    return feed


def feed_schema(opts: ReadOptions) -> pa.Schema:
    """The Arrow schema Spark sees for a change-feed read."""
    return spark_arrow_schema(feed_for(opts).schema)


def group_pieces(pieces: Sequence[tuple[int, int, int]], target: int) -> list[ChangePartition]:
    """Consecutive pieces grouped into partitions of about ``target`` rows (order kept)."""
    parts: list[ChangePartition] = []
    group: list[tuple[int, int, int]] = []
    size = 0
    for p in pieces:
        n = p[2] - p[1]
        if group and size + n > target:
            parts.append(ChangePartition(tuple(group)))
            group, size = [], 0
        group.append(p)
        size += n
    if group:
        parts.append(ChangePartition(tuple(group)))
    return parts


class ChangeFeedReader(DataSourceReader):
    """Reads the change feed of a version range pinned when the read is planned."""

    def __init__(self, opts: ReadOptions, schema: StructType) -> None:
        self.opts = opts
        feed = feed_for(opts)
        self.start, self.end = feed.start, feed.end
        self.target = to_arrow_schema(schema, timezone="UTC", prefers_large_types=False)
        have = spark_arrow_schema(feed.schema)
        if self.target.names != have.names:
            raise InvalidArgumentError(f"lance_duck: a change-feed read has the columns {have.names}; "
                                       f"the schema given to Spark has {self.target.names}")

    def partitions(self) -> Sequence[InputPartition]:
        feed = feed_for(self.opts, self.start, self.end)
        target = self.opts.partition_rows or FEED_PARTITION_ROWS
        return group_pieces(plan_pieces(feed, target), target)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        pieces = getattr(partition, "pieces", ())      # InputPartition(None) when nothing changed
        try:
            feed = feed_for(self.opts, self.start, self.end)
            for batch in feed.batches(pieces):
                yield from _bounded(conform(batch, self.target), self.opts.batch_size)
        except LanceDuckError as exc:
            raise type(exc)(f"{type(exc).__name__}: {exc} (change feed of {self.opts.path}, "
                            f"versions ({self.start}, {self.end}])") from None
