"""``ATTACH 'dir' AS ns (TYPE LANCE)`` in :func:`lance_duck.sql`, as DuckDB's Lance extension has it.

An attached directory is a namespace (:class:`lance_duck.scan.namespace.LanceNamespace`) of the
connection: ``ns.main.t`` (or ``ns.t``) names its table ``t``, time travel included
(``ns.main.t AT (VERSION => 3)``); ``SHOW TABLES FROM ns.main`` lists its tables; ``DETACH ns`` forgets
it. Before the statement reaches the rest of the SQL front-end, every such name becomes the table's
quoted path (aliased ``t``), so references, pushdown and caches are those of ``FROM 't.lance'``. Writes
to a namespace (CREATE, INSERT, UPDATE, DELETE, DROP, ...) are refused by name.
"""
from __future__ import annotations

import re
import threading
import weakref
from dataclasses import dataclass
from typing import Any, cast

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from ...errors import InvalidArgumentError, UnsupportedFeatureError
from ...scan.namespace import LanceNamespace

_MENTION = re.compile(r"\b(attach|detach)\b", re.IGNORECASE)
_WRITES = (exp.Insert, exp.Update, exp.Delete, exp.Create, exp.Drop, exp.Merge, exp.Alter, exp.TruncateTable)

_lock = threading.Lock()
#: connection -> alias -> namespace (a connection's namespaces go with it)
_attached: weakref.WeakKeyDictionary[Any, dict[str, LanceNamespace]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Handled:
    """A statement answered here: ``relation`` (SHOW TABLES) or None (ATTACH / DETACH)."""

    relation: Any


def attached(con: duckdb.DuckDBPyConnection) -> dict[str, LanceNamespace]:
    """The namespaces attached on ``con`` (alias -> namespace; a copy)."""
    with _lock:
        return dict(_attached.get(con, {}))


def resolve(query: str, con: duckdb.DuckDBPyConnection) -> str | Handled:
    """``query`` with namespace tables as quoted paths, or the answer of an ATTACH / DETACH / SHOW TABLES
    about a Lance namespace. Text that mentions neither ATTACH / DETACH nor an attached alias is returned
    as it is (unparsed)."""
    if not isinstance(query, str):
        return query
    spaces = attached(con)
    lowered = query.lower()
    mentioned = ("attach" in lowered or "detach" in lowered) and _MENTION.search(query)
    if not mentioned and not any(alias.lower() in lowered for alias in spaces):
        return query
    try:
        trees = cast("list[exp.Expression | None]", sqlglot.parse(query, read="duckdb"))
    except ParseError:
        return query
    if len(trees) == 1 and trees[0] is not None:
        done = _statement(trees[0], con, spaces)
        if done is not None:
            return done
    if not spaces:
        return query
    changed = False
    out = []
    for tree in trees:
        if tree is None:
            continue
        tree, did = _rewrite_tables(tree, spaces)
        changed |= did
        out.append(tree.sql(dialect="duckdb"))
    return ";\n".join(out) if changed else query


def _statement(tree: exp.Expression, con: duckdb.DuckDBPyConnection,
               spaces: dict[str, LanceNamespace]) -> Handled | None:
    if isinstance(tree, exp.Attach):
        return _attach(tree, con)
    if isinstance(tree, exp.Detach):
        name = tree.this.name if isinstance(tree.this, (exp.Var, exp.Identifier, exp.Column)) else str(tree.this)
        with _lock:
            found = _attached.get(con, {}).pop(name, None)
        if found is None:
            return None          # not ours: DuckDB's own DETACH
        return Handled(None)
    if isinstance(tree, exp.Show) and str(tree.this).upper() == "TABLES":
        src = tree.args.get("from_") or tree.args.get("from")
        alias = ""
        if isinstance(src, exp.Table):
            alias = src.args["db"].name if src.args.get("db") else src.name
        if alias in spaces:
            names = spaces[alias].table_names()
            values = ", ".join("('" + n.replace("'", "''") + "')" for n in names) or "(NULL)"
            rel = con.sql(f"SELECT name FROM (VALUES {values}) AS t(name) WHERE name IS NOT NULL ORDER BY name")
            return Handled(rel)
    if isinstance(tree, _WRITES):
        target = tree.this if isinstance(tree.this, exp.Table) else tree.find(exp.Table)
        if isinstance(target, exp.Table) and _namespace_of(target, spaces) is not None:
            raise UnsupportedFeatureError(
                f"{target.sql(dialect='duckdb')}: {type(tree).__name__.upper()} on a Lance namespace; lance_duck "
                "reads tables and never changes them")
    return None


def _attach(tree: exp.Attach, con: duckdb.DuckDBPyConnection) -> Handled | None:
    options = {str(o.this).upper(): o.expression for o in tree.expressions if isinstance(o, exp.AttachOption)}
    kind = options.get("TYPE")
    if kind is None or str(kind.name if hasattr(kind, "name") else kind).upper() != "LANCE":
        return None                      # DuckDB's own ATTACH (a database file)
    target = tree.this
    alias_node = target.args.get("alias") if isinstance(target, exp.Alias) else None
    path_node = target.this if isinstance(target, exp.Alias) else target
    if not (isinstance(path_node, exp.Literal) and path_node.is_string):
        raise InvalidArgumentError(f"ATTACH ... (TYPE LANCE): give the directory as a string, got {path_node.sql()}")
    root = path_node.this
    alias = alias_node.name if alias_node is not None else root.rstrip("/").rsplit("/", 1)[-1].split(".")[0]
    unknown = sorted(set(options) - {"TYPE", "READ_ONLY"})
    if unknown:
        raise InvalidArgumentError(f"ATTACH '{root}' (TYPE LANCE): unknown option(s) {', '.join(unknown)}")
    space = LanceNamespace(root)
    with _lock:
        mine = _attached.setdefault(con, {})
        if alias in mine and not tree.args.get("exists"):
            raise InvalidArgumentError(f"ATTACH '{root}' AS {alias}: {alias} is already attached ({mine[alias].uri})")
        mine.setdefault(alias, space)
    return Handled(None)


def _namespace_of(table: exp.Table, spaces: dict[str, LanceNamespace]) -> LanceNamespace | None:
    catalog = table.args.get("catalog")
    db = table.args.get("db")
    if catalog is not None and catalog.name in spaces and (db is None or db.name == "main"):
        return spaces[catalog.name]
    if catalog is None and db is not None and db.name in spaces:
        return spaces[db.name]
    return None


def _rewrite_tables(tree: exp.Expression, spaces: dict[str, LanceNamespace]) -> tuple[exp.Expression, bool]:
    changed = False
    for table in list(tree.find_all(exp.Table)):
        space = _namespace_of(table, spaces)
        if space is None:
            continue
        name = table.name
        new = exp.Table(this=exp.to_identifier(space.table_uri(name), quoted=True))
        for key in ("when", "version", "sample", "pivots", "joins", "laterals"):
            if table.args.get(key):
                new.set(key, table.args[key])
        new.set("alias", table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(name, quoted=True)))
        table.replace(new)
        changed = True
    return tree, changed
