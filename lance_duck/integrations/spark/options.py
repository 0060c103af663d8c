"""The ``lance_duck`` Spark source's options: parsed and checked once, at planning.

Spark lower-cases option names (``versionAsOf`` arrives as ``versionasof``); values are strings.
An unknown name is refused with the list of valid ones, so a typo never reads the wrong version.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from ...errors import InvalidArgumentError

STORAGE_PREFIX = "storage_options."

# lower-cased name -> how the README spells it
OPTION_NAMES = {
    "path": "path",
    "version": "version", "versionasof": "versionAsOf", "tag": "tag", "branch": "branch",
    "asof": "asof", "timestampasof": "timestampAsOf",
    "columns": "columns", "filter": "filter", "batch_size": "batch_size",
    "partition_rows": "partition_rows", "partition_bytes": "partition_bytes",
    "pushfilters": "pushFilters",
    "readchangefeed": "readChangeFeed", "startingversion": "startingVersion", "endingversion": "endingVersion",
    "startingtimestamp": "startingTimestamp", "endingtimestamp": "endingTimestamp",
    "nearest": "nearest", "prefilter": "prefilter", "fast_search": "fast_search",
}
_ALIASES = {"versionasof": "version", "timestampasof": "asof"}

# measured (bench/spark_queries.py, 4M rows, local[2]): all-column reads with Arrow batches of
# 64K rows took 8.2-28 s, 256K 7.9-11.2 s, 1M 6.3-8.5 s; 8K ones were 2-6x slower still.
# Batches are also cut at MAX_BATCH_BYTES so that wide rows do not make huge batches. Decoding
# is done at least 1M rows at a time whatever the batch size (reader.MIN_DECODE_ROWS).
DEFAULT_BATCH_ROWS = 1024 * 1024
MAX_BATCH_BYTES = 64 << 20


@dataclass(frozen=True)
class ReadOptions:
    path: str
    version: int | str | None = None
    branch: str | None = None
    asof: str | None = None
    columns: tuple[str, ...] | None = None
    filter: str | None = None
    batch_size: int = DEFAULT_BATCH_ROWS
    partition_rows: int | None = None
    partition_bytes: int | None = None
    push_filters: bool = False
    storage_options: dict[str, str] = field(default_factory=dict)
    change_feed: "ChangeFeedOptions | None" = None
    nearest: str | None = None          # JSON of pylance's nearest keys (checked by nearest_spec)
    prefilter: bool = False
    fast_search: bool = False

    def nearest_spec(self) -> dict[str, Any] | None:
        """The ``nearest`` option as pylance's dict (``q`` a list, or a list of lists)."""
        if self.nearest is None:
            return None
        try:
            spec = json.loads(self.nearest)
        except ValueError as exc:
            raise InvalidArgumentError(f"lance_duck: option 'nearest' is not JSON ({exc}): {self.nearest!r}") from None
        if not isinstance(spec, dict):
            raise InvalidArgumentError("lance_duck: option 'nearest' must be a JSON object of pylance's nearest "
                                       f"keys, got {self.nearest!r}")
        return spec

    def storage(self) -> dict[str, str] | None:
        return dict(self.storage_options) or None


def parse_options(options: Mapping[str, str]) -> ReadOptions:
    """Check and convert the options of ``spark.read.format('lance_duck').option(...)``."""
    opts = {str(k).lower(): v for k, v in options.items()}
    storage = {k[len(STORAGE_PREFIX):]: v for k, v in opts.items() if k.startswith(STORAGE_PREFIX)}
    unknown = sorted(k for k in opts if k not in OPTION_NAMES and not k.startswith(STORAGE_PREFIX))
    if unknown:
        valid = ", ".join(sorted(OPTION_NAMES.values(), key=str.lower))
        raise InvalidArgumentError(
            f"lance_duck: unknown option(s) {', '.join(map(repr, unknown))}; valid options are {valid} "
            f"and storage_options.<key>")
    for alias, name in _ALIASES.items():
        if alias in opts:
            if name in opts and opts[name] != opts[alias]:
                raise InvalidArgumentError(
                    f"lance_duck: options {OPTION_NAMES[name]!r} and {OPTION_NAMES[alias]!r} disagree "
                    f"({opts[name]!r} vs {opts[alias]!r})")
            opts[name] = opts.pop(alias)
    path = opts.get("path")
    if not path:
        raise InvalidArgumentError(
            "lance_duck: no path; use spark.read.format('lance_duck').load(path) or OPTIONS (path '...')")
    version: int | str | None = opts.get("version")
    tag = opts.get("tag")
    if tag is not None:
        if version is not None:
            raise InvalidArgumentError(f"lance_duck: give either version ({version!r}) or tag ({tag!r}), not both")
        version = tag
    elif isinstance(version, str):
        v = version.strip()
        version = int(v) if v.isdigit() else v   # a number, else a tag name
    asof = opts.get("asof")
    if asof is not None and version is not None:
        raise InvalidArgumentError("lance_duck: give either a version/tag or asof/timestampAsOf, not both")
    columns = None
    if opts.get("columns") is not None:
        # "" reads no column at all: only row counts reach Spark (the cheap exact count(*))
        names = [c.strip() for c in opts["columns"].split(",")]
        columns = tuple(names) if any(names) else ()
        if "" in columns:
            raise InvalidArgumentError(f"lance_duck: option 'columns' has an empty name: {opts['columns']!r}")
    flt = opts.get("filter")
    if flt is not None and not flt.strip():
        flt = None
    feed = _change_feed(opts, version, asof)
    return ReadOptions(
        path=path, version=version, branch=opts.get("branch") or None, asof=asof, columns=columns,
        filter=flt, batch_size=_positive(opts, "batch_size") or DEFAULT_BATCH_ROWS,
        partition_rows=_positive(opts, "partition_rows"), partition_bytes=_size(opts, "partition_bytes"),
        push_filters=_bool(opts, "pushfilters"), storage_options=storage, change_feed=feed,
        nearest=opts.get("nearest") or None, prefilter=_bool(opts, "prefilter"),
        fast_search=_bool(opts, "fast_search"))


@dataclass(frozen=True)
class ChangeFeedOptions:
    """``readChangeFeed``: Delta's option names and meaning (both ends inclusive), as
    ``lance_duck.changes`` ends: ``start`` is exclusive there (``startingVersion - 1``)."""
    start: int | str               # a version (already startingVersion - 1) or a time (ISO string)
    end: int | str | None          # a version or a time; None = latest


_FEED_OPTIONS = ("startingversion", "endingversion", "startingtimestamp", "endingtimestamp")


def _change_feed(opts: dict[str, str], version: int | str | None, asof: str | None) -> ChangeFeedOptions | None:
    if not _bool(opts, "readchangefeed"):
        given = [OPTION_NAMES[k] for k in _FEED_OPTIONS if k in opts]
        if given:
            raise InvalidArgumentError(f"lance_duck: {', '.join(given)} need(s) option readChangeFeed=true")
        return None
    if version is not None or asof is not None:
        raise InvalidArgumentError("lance_duck: readChangeFeed reads a range of versions: give startingVersion / "
                                   "endingVersion (or startingTimestamp / endingTimestamp), not version, tag or asof")
    for a, b in (("startingversion", "startingtimestamp"), ("endingversion", "endingtimestamp")):
        if a in opts and b in opts:
            raise InvalidArgumentError(f"lance_duck: give either {OPTION_NAMES[a]} or {OPTION_NAMES[b]}, not both")
    start: int | str
    if "startingversion" in opts:
        v = _version_number(opts, "startingversion")
        if v < 1:
            raise InvalidArgumentError(f"lance_duck: startingVersion must be >= 1 (the first commit), got {v}")
        start = v - 1
    elif "startingtimestamp" in opts:
        start = str(opts["startingtimestamp"]).strip()
    else:
        raise InvalidArgumentError("lance_duck: readChangeFeed needs startingVersion or startingTimestamp")
    end: int | str | None = None
    if "endingversion" in opts:
        end = _version_number(opts, "endingversion")
    elif "endingtimestamp" in opts:
        end = str(opts["endingtimestamp"]).strip()
    return ChangeFeedOptions(start, end)


def _version_number(opts: dict[str, str], name: str) -> int:
    v = str(opts[name]).strip()
    if not v.isdigit():
        raise InvalidArgumentError(f"lance_duck: option {OPTION_NAMES[name]!r} must be a version number, got {v!r}")
    return int(v)


def _positive(opts: dict[str, str], name: str) -> int | None:
    v = opts.get(name)
    if v is None:
        return None
    try:
        n = int(str(v).replace("_", ""))
    except ValueError:
        n = 0
    if n <= 0:
        raise InvalidArgumentError(f"lance_duck: option {OPTION_NAMES[name]!r} must be a positive integer, got {v!r}")
    return n


_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _size(opts: dict[str, str], name: str) -> int | None:
    """A byte size: ``134217728``, ``128m``, ``128MB``, ``1g``."""
    v = opts.get(name)
    if v is None:
        return None
    s = str(v).strip().lower().removesuffix("b").removesuffix("i")
    mult = 1
    if s and s[-1] in _UNITS:
        mult, s = _UNITS[s[-1]], s[:-1]
    try:
        n = int(float(s) * mult)
    except ValueError:
        n = 0
    if n <= 0:
        raise InvalidArgumentError(
            f"lance_duck: option {OPTION_NAMES[name]!r} must be a positive size such as '128m', got {v!r}")
    return n


def _bool(opts: dict[str, str], name: str) -> bool:
    v = opts.get(name)
    if v is None:
        return False
    s = str(v).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise InvalidArgumentError(f"lance_duck: option {OPTION_NAMES[name]!r} must be true or false, got {v!r}")
