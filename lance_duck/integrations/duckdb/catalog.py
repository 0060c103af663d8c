"""``lance_versions('t.lance')``, ``lance_tags('t.lance')`` and ``lance_indices('t.lance')`` in
:func:`lance_duck.sql`: a table's history, tags and indices as rows, to join with its data.

Each call is read from sqlglot's tree and its rows registered on the connection like a caller's Arrow
table (as ``lance_changes``). They hold what ``versions()``, ``tags.list()`` and ``describe_indices()``
return: ``lance_versions`` one row per version of the branch (``version``, ``timestamp`` in UTC,
``metadata`` as a map, ``tags`` naming it); ``lance_tags`` one row per tag (``tag``, ``version``,
``branch``, ``created_at``, ``updated_at``, ``manifest_size``); ``lance_indices`` one row per index of the
version (``name``, ``index_type``, ``type_url``, ``fields``, ``field_names``, ``num_rows_indexed``,
``num_segments``, ``total_size_bytes``).

Arguments: the uri first; then ``version =>`` (``lance_indices`` only: a number or tag),
``branch =>`` and ``storage_options => {...}``.
"""
from __future__ import annotations

from datetime import timezone
from typing import Any, Callable

import pyarrow as pa
from sqlglot import exp

from ...errors import InvalidArgumentError
from ...scan.dataset import dataset

NAMES = ("lance_versions", "lance_tags", "lance_indices")

VERSIONS_SCHEMA = pa.schema([("version", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC")),
                             ("metadata", pa.map_(pa.string(), pa.string())), ("tags", pa.list_(pa.string()))])
TAGS_SCHEMA = pa.schema([("tag", pa.string()), ("version", pa.int64()), ("branch", pa.string()),
                         ("created_at", pa.timestamp("us", tz="UTC")), ("updated_at", pa.timestamp("us", tz="UTC")),
                         ("manifest_size", pa.int64())])
INDICES_SCHEMA = pa.schema([("name", pa.string()), ("index_type", pa.string()), ("type_url", pa.string()),
                            ("fields", pa.list_(pa.int32())), ("field_names", pa.list_(pa.string())),
                            ("num_rows_indexed", pa.int64()), ("num_segments", pa.int64()),
                            ("total_size_bytes", pa.int64())])


def is_catalog_call(table: exp.Expression) -> bool:
    """Whether a FROM / JOIN item is a ``lance_versions`` / ``lance_tags`` / ``lance_indices`` call."""
    return (isinstance(table, exp.Table) and isinstance(table.this, exp.Anonymous)
            and str(table.this.this).lower() in NAMES)


def catalog_name(table: exp.Table) -> str:
    """The function's name (the alias its rows get in the query when it has none)."""
    return str(table.this.this).lower()


def catalog_table(fn: exp.Anonymous, literal: Callable[[exp.Expression, str], Any],
                  options: Callable[[exp.Expression], Any]) -> pa.Table:
    """The rows of one call (``literal`` / ``options``: the SQL front-end's readers of constants and of
    ``storage_options`` structs)."""
    name = str(fn.this).lower()
    args = list(fn.expressions)
    if not args or isinstance(args[0], (exp.Kwarg, exp.PropertyEQ)):
        raise InvalidArgumentError(f"{name}() needs the table uri as its first argument")
    uri = str(literal(args[0], f"{name} uri"))
    allowed = ("version", "branch", "storage_options") if name == "lance_indices" else ("branch", "storage_options")
    kw: dict[str, Any] = {}
    for a in args[1:]:
        if not isinstance(a, (exp.Kwarg, exp.PropertyEQ)):
            raise InvalidArgumentError(f"{name}('{uri}'): use named arguments after the uri "
                                       f"({', '.join(k + ' =>' for k in allowed)}), got {a.sql('duckdb')}")
        key = a.this.name.lower()
        if key not in allowed:
            raise InvalidArgumentError(f"{name}('{uri}'): unknown argument {key!r}; expected {', '.join(allowed)}")
        kw[key] = dict(options(a.expression)) if key == "storage_options" else literal(a.expression, key)
    version = kw.get("version")
    if isinstance(version, str) and version.isdigit():
        version = int(version)
    ds = dataset(uri, version, branch=kw.get("branch"), storage_options=kw.get("storage_options"))
    if name == "lance_versions":
        return versions_table(ds)
    if name == "lance_tags":
        return tags_table(ds)
    return indices_table(ds)


def versions_table(ds: Any) -> pa.Table:
    """``ds.versions()`` as rows (timestamps in UTC), with the tags naming each version."""
    tags: dict[int, list[str]] = {}
    for tag, info in sorted(ds.tags.list().items()):
        if info.get("branch") == ds.branch:
            tags.setdefault(int(info["version"]), []).append(tag)
    rows = [{"version": v["version"], "timestamp": v["timestamp"].astimezone(timezone.utc),
             "metadata": list((v.get("metadata") or {}).items()), "tags": tags.get(v["version"], [])}
            for v in ds.versions()]
    return pa.Table.from_pylist(rows, schema=VERSIONS_SCHEMA)


def tags_table(ds: Any) -> pa.Table:
    """``ds.tags.list()`` as rows, by tag name."""
    rows = [{"tag": tag, "version": int(info["version"]), "branch": info.get("branch"),
             "created_at": info.get("created_at"), "updated_at": info.get("updated_at"),
             "manifest_size": info.get("manifest_size")} for tag, info in sorted(ds.tags.list().items())]
    return pa.Table.from_pylist(rows, schema=TAGS_SCHEMA)


def indices_table(ds: Any) -> pa.Table:
    """``ds.describe_indices()`` as rows."""
    rows = [{"name": d.name, "index_type": d.index_type, "type_url": d.type_url, "fields": list(d.fields),
             "field_names": list(d.field_names), "num_rows_indexed": d.num_rows_indexed,
             "num_segments": d.num_segments, "total_size_bytes": d.total_size_bytes}
            for d in ds.describe_indices()]
    return pa.Table.from_pylist(rows, schema=INDICES_SCHEMA)
