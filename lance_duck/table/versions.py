"""Version listing and selection: manifest naming schemes, latest, as-of.

Manifests live in ``<dataset dir>/_versions/``. Two naming schemes exist: V1 ``{v}.manifest``
and V2 ``{2**64-1-v:020d}.manifest`` (pylance's default). Detached (``d…``), staging
(``*.manifest-<uuid>``), temporary and hint files are skipped. Versions can have gaps.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Protocol, Union

from google.protobuf.timestamp_pb2 import Timestamp

from ..errors import CorruptFileError, InvalidArgumentError

if TYPE_CHECKING:
    from ..io.fs import FileIO

VERSIONS_DIR = "_versions"
_V2_BASE = (1 << 64) - 1
_V2_LEN = 20


@dataclass(frozen=True)
class VersionEntry:
    """One manifest found by listing ``_versions/``."""

    version: int
    name: str
    size: int | None
    scheme: str  # "v1" or "v2"


def version_number(value: object, what: str, accepted: str, negative: str) -> int:
    """``value`` as a version number (an ``int`` or anything with ``__index__``, not a bool, >= 0).

    Args:
        value: what the caller was given.
        what: its name in errors (``version``, ``from_version``...).
        accepted: what the caller also accepts, for the error on a wrong type.
        negative: the error for a bool or a negative number.

    Returns:
        The version number.

    Examples:
        >>> version_number(3, "version", "an int", "invalid version")
        3
    """
    try:
        v = operator.index(value)     # type: ignore[arg-type]
    except TypeError:
        raise InvalidArgumentError(f"{what} must be {accepted}, not {type(value).__name__}") from None
    if isinstance(value, bool) or v < 0:
        raise InvalidArgumentError(negative)
    return v


def parse_manifest_name(name: str) -> tuple[int, str] | None:
    """(version, scheme) for a manifest file name, or None for anything to skip."""
    if not name.endswith(".manifest") or name.startswith((".", "d", "_")):
        return None
    stem = name[: -len(".manifest")]
    if not stem.isdigit() or not stem.isascii():
        return None
    if len(stem) == _V2_LEN:
        return _V2_BASE - int(stem), "v2"
    return int(stem), "v1"


def manifest_name(version: int, scheme: str) -> str:
    """File name of ``version``'s manifest under a naming scheme."""
    return f"{_V2_BASE - version:020d}.manifest" if scheme == "v2" else f"{version}.manifest"


def list_versions(io: FileIO, dataset_dir: str, *, sizes: bool = True) -> list[VersionEntry]:
    """All manifests of a dataset directory, oldest first (one listing call). ``sizes=False``: a local
    directory is listed without a ``stat`` of each manifest (their sizes are then None)."""
    vdir = io.join(dataset_dir, VERSIONS_DIR)
    entries = []
    files: list[tuple[str, int | None]]
    if sizes or not io.is_local:
        files = [(name, size) for name, size in io.list_names(vdir) if size is not None]   # no directories
    else:
        files = [(name, None) for name in io.list_file_names(vdir)]
    for name, size in files:
        parsed = parse_manifest_name(name)
        if parsed is not None:
            entries.append(VersionEntry(parsed[0], name, size, parsed[1]))
    schemes = {e.scheme for e in entries}
    if len(schemes) > 1:
        raise CorruptFileError(
            f"{vdir}: mixes V1 ({{v}}.manifest) and V2 (zero-padded inverted) manifest names; "
            "lance refuses such a directory")
    entries.sort(key=lambda e: e.version)
    return entries


# -- timestamps -----------------------------------------------------------------------------
class HasTimestamp(Protocol):
    """A decoded manifest, whole (``table_pb2.Manifest``) or only its tail (``history.ManifestTail``)."""

    @property
    def timestamp(self) -> Timestamp: ...


def manifest_timestamp_ns(m: HasTimestamp) -> int:
    """The manifest's commit time in UTC nanoseconds (0, as pylance reports, when out of datetime's range)."""
    ns = m.timestamp.seconds * 1_000_000_000 + m.timestamp.nanos
    return ns if _MIN_NS <= ns < _MAX_NS else 0


_MIN_NS, _MAX_NS = -62_135_596_800 * 10**9 + 86_400 * 10**9, 253_402_300_800 * 10**9 - 86_400 * 10**9


def pylance_local_timestamp(ts_ns: int) -> datetime:
    """The naive local datetime pylance's ``versions()`` reports for a timestamp (µs truncated)."""
    return datetime.fromtimestamp(ts_ns // 1e9) + timedelta(microseconds=(ts_ns % 1e9) // 1e3)


def utc_timestamp(ts_ns: int) -> datetime:
    """The UTC-aware datetime of a timestamp, truncated to microseconds."""
    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=ts_ns // 1000)


AsOf = Union[datetime, str]


def normalize_asof(asof: AsOf) -> datetime:
    """A datetime from an ``asof`` argument (datetime or ISO string; naive = local time)."""
    if isinstance(asof, datetime):
        return asof
    if isinstance(asof, str):
        try:
            return datetime.fromisoformat(asof.strip())
        except ValueError as exc:
            raise InvalidArgumentError(f"asof: cannot parse {asof!r} as an ISO date/time") from exc
    raise InvalidArgumentError(f"asof must be a datetime or an ISO string, not {type(asof).__name__}")


def before_cutoff(ts_ns: int, cutoff: datetime) -> bool:
    """pylance's rule: the version counts when its timestamp is strictly earlier than ``cutoff``."""
    if cutoff.tzinfo is None:
        return pylance_local_timestamp(ts_ns) < cutoff
    return utc_timestamp(ts_ns) < cutoff
