"""The table layer: everything a reader knows about a table before it opens a data file.

``open_snapshot(uri, version=None, asof=None, *, branch=None, storage_options=None)`` pins one
version (see :mod:`lance_duck.table.snapshot`). Modules: ``manifest`` (framing, flags),
``versions`` (naming, listing, as-of), ``history`` (version infos, as-of over many manifests),
``refs`` (tags, branches), ``extension`` (Arrow extension types), ``fragment`` (data files, paths),
``deletions``, ``rowids``. The field model is :mod:`lance_duck.schema`, below ``file/``.
"""
from __future__ import annotations

from .fragment import FragmentInfo
from .snapshot import Snapshot, open_snapshot

__all__ = ["open_snapshot", "Snapshot", "FragmentInfo"]
