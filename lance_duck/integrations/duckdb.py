"""DuckDB front-end: Lance table references and time travel inside SQL text.

Python cannot define DuckDB table functions, so :func:`sql` rewrites the query with sqlglot
(duckdb dialect) before DuckDB sees it.  These references are recognised:

* ``FROM 'path.lance'`` (any table name ending in ``.lance``, quoted either way)
* ``... AT (VERSION => 3)``, ``AT (VERSION => 'tag')``, ``AT (VERSION => 'branch:3')``,
  ``AT (TIMESTAMP => '2024-01-01 00:00:00')``
* ``... VERSION AS OF 3``, ``... TIMESTAMP AS OF '...'``
* ``FROM lance_scan('uri', version => ..., asof => ..., branch => ..., storage_options => {...})``

Each distinct (uri, version spec) is opened once as a :class:`~lance_duck.scan.dataset.LanceDataset`
and registered on the connection under a generated name, so one query can read the same
table at two versions.  ``SELECT count(*) FROM <lance ref>`` (nothing else) is answered from
metadata.
"""
from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from ..errors import InvalidArgumentError, LanceDuckError

_LANCE_SCAN = "lance_scan"
_default_lock = threading.Lock()
_default_con: duckdb.DuckDBPyConnection | None = None


@dataclass(frozen=True)
class LanceRef:
    """One Lance table reference in a query: where, and which version."""

    uri: str
    version: int | str | None = None
    asof: str | None = None
    branch: str | None = None
    storage_options: tuple[tuple[str, str], ...] | None = None

    @property
    def name(self) -> str:
        """The generated DuckDB name this reference is registered under."""
        digest = hashlib.sha1(repr(self).encode()).hexdigest()[:12]
        return f"__lance_{digest}"

    def describe(self) -> str:
        spec = []
        if self.branch is not None:
            spec.append(f"BRANCH => {self.branch!r}")
        if self.version is not None:
            spec.append(f"VERSION => {self.version!r}")
        if self.asof is not None:
            spec.append(f"TIMESTAMP => {self.asof!r}")
        return f"'{self.uri}'" + (f" AT ({', '.join(spec)})" if spec else "")

    def open(self):
        """The dataset this reference names; errors name the table and the reference."""
        from ..scan.dataset import dataset
        opts = dict(self.storage_options) if self.storage_options is not None else None
        try:
            return dataset(self.uri, self.version, self.asof, branch=self.branch, storage_options=opts)
        except (LanceDuckError, FileNotFoundError) as e:
            try:
                err = type(e)(f"{self.describe()}: {e}")
            except TypeError:
                raise e from None
            raise err from None


@dataclass(frozen=True)
class Rewritten:
    """The SQL DuckDB will run and the Lance references it needs registered."""

    sql: str
    refs: dict[str, LanceRef]
    count_ref: LanceRef | None = None   # set when the query is exactly SELECT count(*) FROM <ref>
    count_alias: str | None = None


def _literal_value(node: exp.Expression, what: str) -> Any:
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        text = node.this
        return int(text) if text.lstrip("-").isdigit() else float(text)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return -_literal_value(node.this, what)
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal):
        return _literal_value(node.this, what)
    if isinstance(node, exp.Null):
        return None
    raise InvalidArgumentError(f"{what} must be a constant, got {node.sql('duckdb')}")


def _version_value(value: Any) -> tuple[int | str | None, str | None]:
    """(version, branch) from a VERSION value: 3, 'tag', or 'branch:3'."""
    if isinstance(value, str) and ":" in value:
        branch, _, v = value.rpartition(":")
        if v.isdigit():
            return int(v), branch
    if isinstance(value, float):
        raise InvalidArgumentError(f"version must be an integer or a tag name, got {value}")
    return value, None


def _options(node: exp.Expression) -> tuple[tuple[str, str], ...]:
    pairs = []
    if isinstance(node, exp.Struct):
        for p in node.expressions:
            if isinstance(p, (exp.PropertyEQ, exp.EQ, exp.Slice)):
                key = p.this.name if isinstance(p.this, (exp.Identifier, exp.Column)) else _literal_value(p.this, "key")
                pairs.append((str(key), str(_literal_value(p.expression, "storage option"))))
            else:
                raise InvalidArgumentError(f"storage_options: cannot read {p.sql('duckdb')}")
    elif isinstance(node, exp.Map) or isinstance(node, exp.VarMap):
        keys = node.args.get("keys")
        values = node.args.get("values")
        ks = keys.expressions if keys is not None else []
        vs = values.expressions if values is not None else []
        pairs = [(str(_literal_value(k, "key")), str(_literal_value(v, "value"))) for k, v in zip(ks, vs)]
    else:
        raise InvalidArgumentError(
            f"storage_options must be a struct literal like {{'key': 'value'}}, got {node.sql('duckdb')}")
    return tuple(sorted(pairs))


def _lance_scan_ref(fn: exp.Anonymous) -> LanceRef:
    args = list(fn.expressions)
    if not args or isinstance(args[0], exp.Kwarg):
        raise InvalidArgumentError("lance_scan() needs the table uri as its first argument")
    uri = _literal_value(args[0], "lance_scan uri")
    kw: dict[str, Any] = {}
    for a in args[1:]:
        if not isinstance(a, (exp.Kwarg, exp.PropertyEQ, exp.EQ)):
            raise InvalidArgumentError(
                f"lance_scan('{uri}'): use named arguments (version => ...), got {a.sql('duckdb')}")
        key = a.this.name.lower()
        if key in kw:
            raise InvalidArgumentError(f"lance_scan('{uri}'): {key} given twice")
        kw[key] = a.expression
    unknown = set(kw) - {"version", "asof", "timestamp", "branch", "storage_options"}
    if unknown:
        raise InvalidArgumentError(f"lance_scan('{uri}'): unknown argument(s) {sorted(unknown)}; "
                                   "expected version, asof, branch, storage_options")
    version, branch = (None, None)
    if "version" in kw:
        version, branch = _version_value(_literal_value(kw["version"], "version"))
    if "branch" in kw:
        branch = _literal_value(kw["branch"], "branch")
    asof_node = kw.get("asof", kw.get("timestamp"))
    asof = None if asof_node is None else str(_literal_value(asof_node, "asof"))
    opts = _options(kw["storage_options"]) if "storage_options" in kw else None
    return LanceRef(str(uri), version, asof, branch, opts)


def _is_lance_name(table: exp.Table) -> bool:
    this = table.this
    return (isinstance(this, exp.Identifier) and not table.args.get("db") and not table.args.get("catalog")
            and this.name.rstrip("/").lower().endswith(".lance"))


def _table_ref(table: exp.Table) -> LanceRef | None:
    """The LanceRef of a FROM/JOIN item, or None when it is not a Lance reference."""
    if isinstance(table.this, exp.Anonymous) and str(table.this.this).lower() == _LANCE_SCAN:
        ref = _lance_scan_ref(table.this)
        if table.args.get("when") or table.args.get("version"):
            raise InvalidArgumentError(f"lance_scan('{ref.uri}'): give the version as an argument, not AT/AS OF")
        return ref
    if not _is_lance_name(table):
        return None
    uri = table.this.name
    version = asof = branch = None
    when = table.args.get("when")
    ver = table.args.get("version")
    if when is not None:
        kind = str(when.args.get("kind", "")).upper()
        value = _literal_value(when.expression, f"AT ({kind} => ...)")
        if kind == "VERSION":
            version, branch = _version_value(value)
        elif kind == "TIMESTAMP":
            asof = str(value)
        else:
            raise InvalidArgumentError(f"'{uri}' AT ({kind} => ...): expected VERSION or TIMESTAMP")
    elif ver is not None:
        kind = str(ver.this).upper()
        value = _literal_value(ver.expression, f"{kind} AS OF")
        if kind == "VERSION":
            version, branch = _version_value(value)
        elif kind == "TIMESTAMP":
            asof = str(value)
        else:
            raise InvalidArgumentError(f"'{uri}' {kind} AS OF: expected VERSION or TIMESTAMP")
    return LanceRef(uri, version, asof, branch)


def _stem(uri: str) -> str:
    base = uri.rstrip("/").rsplit("/", 1)[-1]
    return base[: -len(".lance")] if base.lower().endswith(".lance") else base


def _count_star_alias(select: exp.Select) -> str | None:
    """The output name if ``select`` is exactly ``SELECT count(*) [AS x] FROM <one table>``."""
    if not isinstance(select, exp.Select) or len(select.expressions) != 1:
        return None
    for key in ("joins", "where", "group", "having", "qualify", "limit", "offset", "distinct",
                "with", "windows", "laterals", "pivots", "sample", "into"):
        if select.args.get(key):
            return None
    item = select.expressions[0]
    alias = None
    if isinstance(item, exp.Alias):
        alias, item = item.alias, item.this
    if not (isinstance(item, exp.Count) and isinstance(item.this, exp.Star) and not item.args.get("distinct")):
        return None
    return alias or "count_star()"


def rewrite(query: str) -> Rewritten:
    """Find Lance references in ``query`` and replace them with generated table names."""
    try:
        statements = sqlglot.parse(query, read="duckdb")
    except ParseError as e:
        raise InvalidArgumentError(f"cannot parse SQL: {str(e).splitlines()[0]}") from None
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        raise InvalidArgumentError(f"expected one SQL statement, got {len(statements)}")
    tree = statements[0]
    refs: dict[str, LanceRef] = {}
    found: list[tuple[exp.Table, LanceRef]] = []
    for table in list(tree.find_all(exp.Table)):
        ref = _table_ref(table)
        if ref is not None:
            found.append((table, ref))
    stems = [_stem(r.uri) for _, r in found if True]
    count_ref = count_alias = None
    if len(found) == 1 and tree is found[0][0].parent_select and found[0][0].parent is tree.args.get("from_", tree.args.get("from")):
        count_alias = _count_star_alias(tree)  # type: ignore[arg-type]
        if count_alias is not None:
            count_ref = found[0][1]
    for table, ref in found:
        refs[ref.name] = ref
        alias = table.args.get("alias")
        new = exp.Table(this=exp.to_identifier(ref.name, quoted=True))
        if alias is not None:
            new.set("alias", alias)
        elif stems.count(_stem(ref.uri)) == 1 and _stem(ref.uri).isidentifier():
            new.set("alias", exp.TableAlias(this=exp.to_identifier(_stem(ref.uri), quoted=True)))
        table.replace(new)
    return Rewritten(tree.sql(dialect="duckdb"), refs, count_ref, count_alias)


def _default_connection() -> duckdb.DuckDBPyConnection:
    global _default_con
    with _default_lock:
        if _default_con is None:
            _default_con = duckdb.connect()
        return _default_con


def sql(query: str, connection: duckdb.DuckDBPyConnection | None = None) -> duckdb.DuckDBPyRelation:
    """Run ``query`` on DuckDB with Lance references (and time travel) resolved."""
    con = connection if connection is not None else _default_connection()
    rw = rewrite(query)
    if rw.count_ref is not None:
        n = rw.count_ref.open().count_rows()
        alias = rw.count_alias.replace('"', '""')
        return con.sql(f'SELECT CAST({int(n)} AS BIGINT) AS "{alias}"')
    for name, ref in rw.refs.items():
        con.register(name, ref.open())
    return con.sql(rw.sql)


def register(connection: duckdb.DuckDBPyConnection, name: str, uri_or_dataset, version=None, asof=None,
             *, branch: str | None = None, storage_options: dict | None = None):
    """Register a Lance table (a uri or an open dataset) on ``connection`` as view ``name``.

    ``register(con, 'path/t.lance', 'path/t.lance')`` makes ``FROM 'path/t.lance'`` work as-is.
    Returns the registered dataset.
    """
    if isinstance(uri_or_dataset, str) or hasattr(uri_or_dataset, "__fspath__"):
        opts = tuple(sorted((str(k), str(v)) for k, v in storage_options.items())) if storage_options else None
        ref_version, ref_branch = _version_value(version) if version is not None else (None, None)
        ds = LanceRef(str(uri_or_dataset), ref_version, None if asof is None else str(asof),
                      branch or ref_branch, opts).open()
    else:
        ds = uri_or_dataset
        if version is not None or branch is not None:
            ds = ds.checkout_version((branch, version) if branch is not None else version)
        if asof is not None:
            raise InvalidArgumentError("asof applies to a uri; open the dataset with dataset(uri, asof=...)")
    connection.register(name, ds)
    return ds


__all__ = ["LanceRef", "Rewritten", "register", "rewrite", "sql"]
