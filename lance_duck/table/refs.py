"""Tags and branches (``_refs/``) and branch directories (``tree/<branch>``).

Tags: ``<root>/_refs/tags/<name>.json`` ({branch, version, createdAt, updatedAt, manifestSize,
metadata}). Branches: ``<root>/_refs/branches/<url-encoded name>.json``; a branch's own dataset
directory is ``<root>/tree/<name>`` (the name's ``/`` become directory levels).
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import quote, unquote

from ..errors import BranchNotFoundError, CorruptFileError, InvalidArgumentError, TagNotFoundError

if TYPE_CHECKING:
    from ..io.fs import FileIO

REFS_DIR = "_refs"
TREE_DIR = "tree"

#: a ref file's JSON object (and its path, for errors) -> the ref as pylance lists it
_Parse = Callable[[dict[str, Any], str], dict[str, Any]]


def _ref_chars_ok(s: str) -> bool:
    return all(c.isalnum() or c in ".-_" for c in s)


def check_tag_name(name: object, error: type[Exception] = InvalidArgumentError) -> str:
    """pylance's tag-name rule: alphanumerics, ``.``, ``-``, ``_``; no leading/trailing dot, no
    ``..``, no ``.lock`` suffix. Anything else (``../x``, ``a/b``) is refused before any I/O."""
    if not isinstance(name, str) or not name:
        raise error(f"invalid tag name {name!r}: a tag name must be a non-empty string")
    problem = None
    if not _ref_chars_ok(name):
        problem = "may only contain alphanumerics, '.', '-' or '_'"
    elif name.startswith(".") or name.endswith("."):
        problem = "cannot begin or end with a dot"
    elif ".." in name:
        problem = "cannot contain '..'"
    elif name.endswith(".lock"):
        problem = "cannot end with '.lock'"
    if problem:
        raise error(f"invalid tag name {name!r}: a tag name {problem}")
    return name


def check_branch_name(name: object, error: type[Exception] = InvalidArgumentError) -> str:
    """pylance's branch-name rule: ``/``-separated segments of alphanumerics, ``.``, ``-``, ``_``;
    no ``..``, ``\\``, empty segment, leading/trailing ``/`` or ``.lock`` suffix."""
    if not isinstance(name, str) or not name:
        raise error(f"invalid branch name {name!r}: a branch name must be a non-empty string")
    problem = None
    if ".." in name or "\\" in name:
        problem = "cannot contain '..' or '\\'"
    elif name.startswith("/") or name.endswith("/") or "//" in name:
        problem = "cannot start or end with '/' or contain '//'"
    elif name.endswith(".lock"):
        problem = "cannot end with '.lock'"
    elif not all(_ref_chars_ok(seg) and seg != "." for seg in name.split("/")):
        problem = "may only contain alphanumerics, '.', '-', '_' and '/' between segments"
    if problem:
        raise error(f"invalid branch name {name!r}: a branch name {problem}")
    return name


def branch_dir(io: FileIO, root: str, branch: str | None) -> str:
    """The dataset directory holding a branch's ``_versions`` (``root`` for main)."""
    if branch is None or branch == "main":
        return root
    check_branch_name(branch)
    return io.join(root, TREE_DIR, *branch.split("/"))


def _read_json(io: FileIO, path: str, what: str) -> dict[str, Any]:
    raw = io.read_bytes(path)
    try:
        doc = json.loads(bytes(raw).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CorruptFileError(f"{path}: {what} file is not valid JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise CorruptFileError(f"{path}: {what} file does not hold a JSON object")
    return doc


def parse_rfc3339(text: str | None) -> datetime | None:
    """A UTC-aware datetime from an RFC 3339 string (nanoseconds truncated to µs)."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise CorruptFileError(f"timestamp {text!r} in a ref file is not a string")
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", text)
    if not m:
        raise CorruptFileError(f"unparseable timestamp {text!r} in a ref file")
    try:
        base = datetime.fromisoformat(m.group(1) + ("+00:00" if m.group(3) == "Z" else m.group(3)))
    except ValueError:
        raise CorruptFileError(f"unparseable timestamp {text!r} in a ref file") from None
    micros = int((m.group(2) or "0")[:6].ljust(6, "0"))
    return (base + timedelta(microseconds=micros)).astimezone(timezone.utc)


# -- tags ----------------------------------------------------------------------------------
def _tag_from_json(doc: dict[str, Any], path: str) -> dict[str, Any]:
    try:
        version = doc["version"]
        if isinstance(version, str) and version.isascii() and version.isdigit():
            version = int(version)
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise CorruptFileError(f"{path}: tag file's 'version' is {version!r}, not a version number")
        branch = doc.get("branch")
        if branch is not None and branch != "main":
            check_branch_name(branch, CorruptFileError)
        metadata = doc.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise CorruptFileError(f"{path}: tag file's 'metadata' is not an object")
        return {
            "branch": branch,
            "version": version,
            "created_at": parse_rfc3339(doc.get("createdAt")),
            "updated_at": parse_rfc3339(doc.get("updatedAt")),
            "manifest_size": doc.get("manifestSize"),
            "metadata": metadata,
        }
    except KeyError:
        raise CorruptFileError(f"{path}: tag file has no 'version'") from None
    except CorruptFileError as exc:
        msg = str(exc)
        raise CorruptFileError(msg if msg.startswith(path) else f"{path}: {msg}") from None


def tag_path(io: FileIO, root: str, name: str) -> str:
    """``<root>/_refs/tags/<name>.json`` (non-ASCII letters percent-encoded, as pylance stores them)."""
    check_tag_name(name)
    return io.join(root, REFS_DIR, "tags", quote(name, safe="") + ".json")


def _read_ref(io: FileIO, path: str, kind: str, name: str, missing: type[Exception], parse: _Parse) -> dict[str, Any]:
    try:
        doc = _read_json(io, path, kind)
    except FileNotFoundError:
        raise missing(f"{kind} {name!r} does not exist (no {path})") from None
    return parse(doc, path)


def _list_refs(io: FileIO, folder: str, kind: str, parse: _Parse,
               decode: Callable[[str], str] = lambda n: n) -> dict[str, dict[str, Any]]:
    """Every ``<name>.json`` of a refs folder, parsed, by (decoded) name in sorted file order."""
    out: dict[str, dict[str, Any]] = {}
    for fname, size in sorted(io.list_names(folder)):
        if size is None or not fname.endswith(".json"):
            continue
        path = io.join(folder, fname)
        try:
            doc = _read_json(io, path, kind)
        except FileNotFoundError:   # deleted since the listing: no longer a ref
            continue
        out[decode(fname[: -len(".json")])] = parse(doc, path)
    return out


def read_tag(io: FileIO, root: str, name: str) -> dict[str, Any]:
    """One tag as ``ds.tags.list()[name]``; TagNotFoundError if it does not exist."""
    return _read_ref(io, tag_path(io, root, name), "tag", name, TagNotFoundError, _tag_from_json)


def list_tags(io: FileIO, root: str) -> dict[str, dict[str, Any]]:
    """All tags, like pylance's ``ds.tags.list()``."""
    return _list_refs(io, io.join(root, REFS_DIR, "tags"), "tag", _tag_from_json, unquote)


# -- branches ------------------------------------------------------------------------------
def _branch_from_json(doc: dict[str, Any], path: str) -> dict[str, Any]:
    try:
        ident = (doc.get("identifier") or {}).get("version_mapping") or []
        metadata = doc.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise TypeError("'metadata' is not an object")
        return {
            "parent_branch": doc.get("parentBranch"),
            "branch_identifier": [(int(v), str(u)) for v, u in ident],
            "parent_version": doc.get("parentVersion"),
            "create_at": doc.get("createAt"),
            "manifest_size": doc.get("manifestSize"),
            "metadata": metadata,
        }
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise CorruptFileError(f"{path}: branch file is malformed ({exc})") from exc


def branch_ref_path(io: FileIO, root: str, name: str) -> str:
    """``<root>/_refs/branches/<url-encoded name>.json``."""
    check_branch_name(name)
    return io.join(root, REFS_DIR, "branches", quote(name, safe="") + ".json")


def read_branch(io: FileIO, root: str, name: str) -> dict[str, Any]:
    """One branch as ``ds.branches.list()[name]``; BranchNotFoundError if it does not exist."""
    return _read_ref(io, branch_ref_path(io, root, name), "branch", name, BranchNotFoundError, _branch_from_json)


def list_branches(io: FileIO, root: str) -> dict[str, dict[str, Any]]:
    """All branches, like pylance's ``ds.branches.list()``."""
    return _list_refs(io, io.join(root, REFS_DIR, "branches"), "branch", _branch_from_json, unquote)
