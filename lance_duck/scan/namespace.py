"""A directory of Lance tables as a namespace: ``lance_duck.connect(dir)`` (LanceDB's names) and what
``ATTACH 'dir' AS ns (TYPE LANCE)`` in :func:`lance_duck.sql` reads.

Each ``<name>.lance`` directory directly under the root is the table ``<name>``. Reading only: a
namespace lists and opens tables; creating or dropping them is refused by name.
"""
from __future__ import annotations

import os
from typing import Any

from ..errors import InvalidArgumentError, NotFoundError
from ..io.fs import open_io
from .dataset import LanceDataset, dataset
from .params import AsOf, StorageOptions, Version

SUFFIX = ".lance"


class TableNotFoundError(NotFoundError):
    """A namespace holds no table of that name."""


class LanceNamespace:
    """The Lance tables of one directory (local path or object-store URL), read only.

    Examples:
        >>> import os, lance_duck
        >>> db = lance_duck.connect(os.path.dirname(lance_duck.sample_path()))   # the sample's directory
        >>> db.table_names()
        ['sample']
        >>> db.open_table("sample", version=1).count_rows()
        2000
    """

    def __init__(self, root: str | os.PathLike[str], storage_options: StorageOptions = None) -> None:
        self._io, self._path = open_io(root, storage_options)      # checks both arguments' types
        uri = os.fspath(root)
        self.uri = uri if "://" in uri else os.path.abspath(os.path.expanduser(uri))
        self.storage_options = dict(storage_options) if storage_options else None

    def table_names(self) -> list[str]:
        """The names of the tables (``<name>.lance`` directories holding ``_versions/``), sorted."""
        names = []
        for name, size in self._io.list_names(self._path):
            if size is None and name.endswith(SUFFIX) and len(name) > len(SUFFIX):
                if self._io.exists(self._io.join(self._path, name, "_versions")):
                    names.append(name[:-len(SUFFIX)])
        return sorted(names)

    def table_uri(self, name: str) -> str:
        """Where table ``name`` is (``<root>/<name>.lance``)."""
        if not name or "/" in name or "\\" in name or name in (".", ".."):
            raise InvalidArgumentError(f"{name!r} is not a table name")
        return self.uri.rstrip("/") + "/" + name + SUFFIX

    def open_table(self, name: str, version: Version = None, asof: AsOf = None, *,
                   branch: str | None = None) -> LanceDataset:
        """Table ``name`` at a version (default: the latest), as :func:`lance_duck.dataset` opens it.

        Raises:
            TableNotFoundError: no ``<name>.lance`` table in this directory.
        """
        uri = self.table_uri(name)
        if not self._io.exists(self._io.join(self._path, name + SUFFIX, "_versions")):
            raise TableNotFoundError(f"{self.uri}: no table {name!r} (tables: {', '.join(self.table_names()) or 'none'})")
        return dataset(uri, version, asof, branch=branch, storage_options=self.storage_options)

    def __getattr__(self, name: str) -> Any:
        if name in _WRITERS:
            def refused(*args: Any, **kwargs: Any) -> Any:
                from ..errors import UnsupportedFeatureError
                raise UnsupportedFeatureError(f"{name}() writes; lance_duck reads tables and never changes them")
            return refused
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"LanceNamespace({self.uri!r})"


#: LanceDB's connection methods that write (refused by name).
_WRITERS = frozenset({"create_table", "drop_table", "rename_table", "drop_all_tables", "create_namespace",
                      "drop_namespace"})


def connect(uri: str | os.PathLike[str], storage_options: StorageOptions = None) -> LanceNamespace:
    """The Lance tables of a directory, as LanceDB's ``connect``: ``table_names()``, ``open_table(name, ...)``.

    Args:
        uri: a local directory or an object-store URL holding ``<name>.lance`` tables.
        storage_options: object-store options, as for :func:`lance_duck.dataset`.

    Returns:
        A :class:`LanceNamespace` (reading only).

    Examples:
        >>> import os, lance_duck
        >>> lance_duck.connect(os.path.dirname(lance_duck.sample_path())).table_names()
        ['sample']
    """
    return LanceNamespace(uri, storage_options)
