"""The table layer: everything a reader knows about a table before it opens a data file.

``open_snapshot(uri, version=None, asof=None, *, branch=None, storage_options=None)`` pins one
version (see :mod:`lance_duck.table.snapshot`). Modules: ``manifest`` (framing, flags),
``versions`` (naming, listing, as-of), ``refs`` (tags, branches), ``schema`` / ``extension``
(fields -> Arrow), ``fragment`` (data files, paths), ``deletions``, ``rowids``.

Exports are lazy: ``lance_duck.file.base`` imports ``table.schema`` while ``table.fragment``
imports ``file.base``, so this package must not import its submodules eagerly.
"""
from __future__ import annotations

__all__ = ["open_snapshot", "Snapshot", "FragmentInfo"]


def __getattr__(name: str):
    if name in ("open_snapshot", "Snapshot"):
        from . import snapshot
        return getattr(snapshot, name)
    if name == "FragmentInfo":
        from .fragment import FragmentInfo
        return FragmentInfo
    raise AttributeError(name)
