"""The range of a change feed: (from, to] as version numbers, from versions, tags or timestamps.

* an int is a version (``0`` for ``from``: before the first commit);
* a ``datetime`` (naive = local time, as ``asof``) is a commit time: ``from`` is the newest version
  committed strictly before it (so commits at that instant are included), ``to`` the newest one
  committed at or before it (pylance's rule for its date ranges);
* a string is a tag, or, when no tag has that name and it parses as an ISO date/time, a time.

Every version of the range must still exist (``from`` included, unless 0): a cleaned-up one raises
:class:`VersionNotFoundError` naming it.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Union

from ..errors import InvalidArgumentError, TagNotFoundError, VersionNotFoundError
from ..table.history import version_timestamps
from ..table.refs import list_tags
from ..table.versions import list_versions, version_number

if TYPE_CHECKING:
    from ..table.snapshot import Snapshot

#: a bound of a change feed: a version number, a tag name or a commit time (ISO string or datetime)
VersionSpec = Union[int, str, datetime]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _micros(t: datetime) -> int:
    """Microseconds since the epoch (naive = local time)."""
    if t.tzinfo is None:
        t = t.astimezone()
    micros: int = (t - _EPOCH) // _micro()
    return micros


def _micro() -> timedelta:
    return timedelta(microseconds=1)


def _as_time(spec: object, what: str, tags: dict[str, dict[str, Any]]) -> datetime | None:
    """The datetime ``spec`` stands for, or None when it is a version or tag."""
    if isinstance(spec, datetime):
        return spec
    if isinstance(spec, str) and spec not in tags:
        try:
            return datetime.fromisoformat(spec.strip())
        except ValueError:
            raise TagNotFoundError(f"{what}: there is no tag {spec!r} (tags: {sorted(tags)}), "
                                   "and it is not an ISO date/time") from None
    return None


def resolve_range(snapshot: Snapshot, from_version: VersionSpec,
                  to_version: VersionSpec | None = None) -> tuple[int, int]:
    """(from, to) version numbers of a change feed over ``snapshot``'s branch.

    Raises:
        InvalidArgumentError: a spec of the wrong type, a negative version, from newer than to.
        TagNotFoundError: a string that is neither a tag nor an ISO date/time.
        VersionNotFoundError: a version of the range that does not exist (or was cleaned up).
    """
    io, ddir = snapshot.io, snapshot.dataset_dir
    tags = list_tags(io, snapshot.root) if isinstance(from_version, str) or isinstance(to_version, str) else {}
    stamps: list[tuple[int, int]] | None = None

    def at(spec: VersionSpec, what: str, inclusive: bool) -> int:
        nonlocal stamps
        t = _as_time(spec, what, tags)
        if t is not None:
            if stamps is None:
                stamps = version_timestamps(io, ddir)
            cut = _micros(t)
            ok = [v for v, ns in stamps if (ns // 1000 <= cut if inclusive else ns // 1000 < cut)]
            return max(ok) if ok else 0
        if isinstance(spec, str):
            tag = tags[spec]
            tag_branch = None if tag.get("branch") in (None, "main") else tag.get("branch")
            if tag_branch != snapshot.branch:
                raise InvalidArgumentError(f"{what}: tag {spec!r} points into branch {tag_branch or 'main'!r}, "
                                           f"the change feed reads {snapshot.branch or 'main'!r}")
            return int(tag["version"])
        return version_number(spec, what, "a version number, a tag name or a datetime",
                              f"{what} must be a version >= 0, got {spec!r}")

    if from_version is None:
        raise InvalidArgumentError("from_version is required (0 = from the first commit)")
    start = at(from_version, "from_version", inclusive=False)
    present = [e.version for e in list_versions(io, ddir)]
    end = present[-1] if to_version is None and present else (
        at(to_version, "to_version", inclusive=True) if to_version is not None else 0)
    if start > end:
        raise InvalidArgumentError(f"from_version {from_version!r} (version {start}) is newer than "
                                   f"to_version {to_version!r} (version {end}); the range is (from, to]")
    have = set(present)
    where = f" of {snapshot.uri}" + (f" on branch {snapshot.branch!r}" if snapshot.branch else "")
    for v in ([start] if start else []) + list(range(start + 1, end + 1)):
        if v not in have:
            oldest = present[0] if present else None
            why = (f"it was cleaned up (the oldest version kept is {oldest})" if oldest is not None and v < oldest
                   else "it does not exist")
            raise VersionNotFoundError(f"version {v}{where} is needed for the changes in ({start}, {end}] but {why}")
    return start, end
