"""Change feeds: the rows each commit of a range inserted, updated or deleted (``feed.py``), over
(from, to] as ``bounds.py`` resolves it. ``lance_duck.changes`` is the entry point."""
from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa

from ..scan.interop import engine_reader
from ..scan.params import Filter
from ..table.snapshot import kept, kept_checkout, open_kept
from .bounds import Bound, resolve_range
from .feed import CHANGE_TYPES, META_NAMES, ChangeFeed, plan_pieces

__all__ = ["changes", "open_feed", "ChangeFeed", "plan_pieces", "CHANGE_TYPES", "META_NAMES"]


def open_feed(uri: str, from_version: Bound, to_version: Bound | None = None, columns: Sequence[str] | None = None,
              filter: Filter = None, *, branch: str | None = None,
              storage_options: dict[str, Any] | None = None) -> ChangeFeed:
    """The plan of :func:`changes` (range resolved, schema and filter checked; nothing else read)."""
    latest = open_kept(uri, branch=branch, storage_options=storage_options)
    start, end = resolve_range(latest, from_version, to_version)
    to = kept(latest) if end == latest.version else kept_checkout(latest, end)
    return ChangeFeed(to, start, end, columns, filter)


def changes(uri: str, from_version: Bound, to_version: Bound | None = None, columns: Sequence[str] | None = None,
            filter: Filter = None, *, branch: str | None = None,
            storage_options: dict[str, Any] | None = None) -> pa.RecordBatchReader:
    """Every row change of every commit in (``from_version``, ``to_version``], Delta-CDF style.

    Columns: the table's columns as of ``to_version`` (null where a commit's row lacked one), then
    ``_change_type`` (``insert``, ``update_preimage``, ``update_postimage``, ``delete``),
    ``_commit_version`` (int64), ``_commit_timestamp`` (the manifest's time, µs UTC) and ``_rowid``.
    With stable row ids an update gives the row's pre- and post-image and ``_rowid`` is the stable
    id; without them an update shows as a delete plus an insert and ``_rowid`` is the row address
    (the old one for a delete, the new one for an insert). Compaction, index builds and other
    rewrites produce no rows (the commits' transactions say which they are); adding a column with
    values updates every row. Rows come commit by commit, ordered by ``_rowid`` within a commit
    (delete, pre-image, post-image, insert for one id). Only changed fragments are read, and only
    the changed rows of them decoded.

    Args:
        uri: the table.
        from_version: exclusive start: a version (``0``: from the first commit), a tag, or a time
            (``datetime`` / ISO string: commits at or after it).
        to_version: inclusive end: a version, a tag or a time (the newest commit at or before it);
            default the latest version.
        columns: data columns to return (default all of ``to_version``'s).
        filter: SQL (pylance's dialect) or a ``pyarrow.compute.Expression`` over the output columns,
            the ``_``-columns included; applied to each output row on its own.
        branch: as for :func:`lance_duck.dataset`.
        storage_options: as for :func:`lance_duck.dataset`.

    Returns:
        A ``pa.RecordBatchReader`` (commits are diffed as it is read).

    Raises:
        InvalidArgumentError: from newer than to, a bad version spec, column or filter.
        VersionNotFoundError: a version of the range does not exist or was cleaned up.
        TagNotFoundError: a string that is neither a tag nor an ISO date/time.

    Example:
        >>> import lance_duck
        >>> r = lance_duck.changes(lance_duck.sample_path(), 1, 2, columns=["order_id"])
        >>> t = r.read_all()
        >>> t.column_names, set(t.column("_change_type").to_pylist())
        (['order_id', '_change_type', '_commit_version', '_commit_timestamp', '_rowid'], {'insert'})
    """
    feed = open_feed(uri, from_version, to_version, columns, filter, branch=branch, storage_options=storage_options)
    return engine_reader(feed.schema, feed.batches())
