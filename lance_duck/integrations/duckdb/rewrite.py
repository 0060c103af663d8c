"""Lance references in SQL text rewritten with sqlglot (duckdb dialect): :func:`rewrite` turns a
statement into a :class:`Rewritten` one whose references are registration names (the statement cache,
:mod:`.statements`, keeps rewrites with placeholders for them)."""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import logging
import os
import re
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, cast

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from ...errors import InvalidArgumentError, LanceDuckError
from ...predicate._deep import call_deep
from ...scan.dataset import LanceDataset, dataset
from ...scan.views import HIDDEN_COLUMNS, with_hidden_columns
from .scan_errors import watched
from . import cache
from .catalog import catalog_name, catalog_table, is_catalog_call
from .changes import changes_table, is_changes_call, rename_reserved
from .search import Values, is_search, parse_search
from .pushdown import Term, substring_terms, view_name


_LANCE_SCAN = "lance_scan"



@dataclass(frozen=True)
class LanceRef:
    """One Lance table reference in a query: where, and which version."""

    uri: str
    version: int | str | None = None
    asof: str | None = None
    branch: str | None = None
    storage_options: tuple[tuple[str, str], ...] | None = None
    hidden: tuple[str, ...] = ()           # hidden columns shown (_rowid, _rowaddr, row versions)
    columns: tuple[str, ...] | None = None  # lance_scan(columns => [...]): the columns shown
    filter: str | None = None              # lance_scan(filter => '...'), pylance's dialect
    batch_size: int | None = None          # lance_scan(batch_size => n)

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

    def open(self) -> LanceDataset:
        """The dataset this reference names; errors name the table and the reference."""
        opts = dict(self.storage_options) if self.storage_options is not None else None
        try:
            return dataset(self.uri, self.version, self.asof, branch=self.branch, storage_options=opts)
        except (LanceDuckError, FileNotFoundError) as e:
            try:
                err = type(e)(f"{self.describe()}: {e}")
            except TypeError:
                raise e from None
            raise err from None

    def cached(self) -> LanceDataset:
        """:meth:`open`, through the per-process table cache (:mod:`.cache`); the dataset
        :func:`sql` registers."""
        ds = cache.table(self.uri, self.version, self.asof, self.branch, self.storage_options,
                             lambda v: (self if v is None else dataclasses.replace(self, version=v)).open(),
                             watched)
        return self.shaped(ds)

    def shaped(self, ds: LanceDataset) -> LanceDataset:
        """``ds`` as this reference shows it: its filter, its columns and the hidden columns it names."""
        if self.filter is not None:
            ds = ds.filter(self.filter)
        hidden = [h for h in self.hidden if h not in ds.schema.names]   # a real column of that name wins
        columns = self.columns
        if columns is not None:
            hidden += [c for c in columns if c in HIDDEN_COLUMNS and c not in hidden and c not in ds.schema.names]
            columns = tuple(c for c in columns if c not in hidden)
        return with_hidden_columns(ds, hidden, batch_size=self.batch_size, columns=columns)


@dataclass(frozen=True)
class Rewritten:
    """The SQL DuckDB will run and the Lance references it needs registered."""

    sql: str
    refs: dict[str, LanceRef]
    count_ref: LanceRef | None = None   # set when the query is exactly SELECT count(*) FROM <ref> [WHERE ...]
    count_alias: str | None = None
    objects: dict[str, Any] = field(default_factory=dict)  # caller's variables, by generated name
    # generated name of a filtered view -> (the reference's name, substring and float comparison conjuncts it applies)
    views: dict[str, tuple[str, list[Term]]] = field(default_factory=dict)
    # the count's WHERE, and the names its columns may be qualified with
    count_where: exp.Expression | None = None
    count_qualifiers: frozenset[str] = frozenset()
    # generated name of a dataset whose scans are read to the end -> the name it stands for (see
    # :func:`_read_whole`)
    whole: dict[str, str] = field(default_factory=dict)
    # one statement that only reads (a SELECT or a set operation): running it again gives its result
    query: bool = False


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


def _scan_ref(args: list[exp.Expression]) -> LanceRef:
    """The reference of ``lance_scan(*args)`` (a search's table)."""
    return _lance_scan_ref(exp.Anonymous(this=_LANCE_SCAN, expressions=args))


_SEARCHES = itertools.count()


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
    unknown = set(kw) - set(_SCAN_ARGS)
    if unknown:
        raise InvalidArgumentError(f"lance_scan('{uri}'): unknown argument(s) {sorted(unknown)}; "
                                   f"expected {', '.join(a for a in _SCAN_ARGS if a != 'timestamp')}")
    version, branch = (None, None)
    if "version" in kw:
        version, branch = _version_value(_literal_value(kw["version"], "version"))
    if "branch" in kw:
        branch = _literal_value(kw["branch"], "branch")
    asof_node = kw.get("asof", kw.get("timestamp"))
    asof = None if asof_node is None else str(_literal_value(asof_node, "asof"))
    opts = _options(kw["storage_options"]) if "storage_options" in kw else None
    hidden = tuple(name for flag, name in (("with_row_id", "_rowid"), ("with_row_address", "_rowaddr"))
                   if flag in kw and _flag(kw[flag], flag, uri))
    columns = None
    if "columns" in kw:
        got = _literal_value(kw["columns"], "columns") if not isinstance(kw["columns"], exp.Array) else \
            [_literal_value(e, "columns") for e in kw["columns"].expressions]
        if isinstance(got, str):
            got = [c.strip() for c in got.split(",") if c.strip()]
        if not isinstance(got, list) or not got or not all(isinstance(c, str) for c in got):
            raise InvalidArgumentError(f"lance_scan('{uri}'): columns => ['a', 'b'] (a list of names), got "
                                       f"{kw['columns'].sql('duckdb')}")
        columns = tuple(got)
    flt = None if "filter" not in kw else _literal_value(kw["filter"], "filter")
    if flt is not None and not isinstance(flt, str):
        raise InvalidArgumentError(f"lance_scan('{uri}'): filter => 'sql text', got {kw['filter'].sql('duckdb')}")
    batch = None
    if "batch_size" in kw:
        batch = _literal_value(kw["batch_size"], "batch_size")
        if isinstance(batch, bool) or not isinstance(batch, int) or batch <= 0:
            raise InvalidArgumentError(f"lance_scan('{uri}'): batch_size => a positive integer, got {batch!r}")
    return LanceRef(str(uri), version, asof, branch, opts, hidden, columns, flt, batch)


_SCAN_ARGS = ("version", "asof", "timestamp", "branch", "storage_options", "columns", "filter", "with_row_id",
              "with_row_address", "batch_size")


def _flag(node: exp.Expression, name: str, uri: Any) -> bool:
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    value = _literal_value(node, name)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise InvalidArgumentError(f"lance_scan('{uri}'): {name} => true or false, got {node.sql('duckdb')}")


#: How a quoted name is recognised as a Lance table (said in errors and in the README).
LANCE_NAME_RULE = ("a quoted name is read as a Lance table when it ends in .lance or is a local directory "
                   "holding _versions/; for any other location use lance_scan('uri')")


def _is_local_table_dir(name: str) -> bool:
    """A local directory that holds ``_versions/`` (a Lance table whatever its name)."""
    path = name[len("file://"):] if name.startswith("file://") else name
    if "://" in path:
        return False
    try:
        return os.path.isdir(os.path.join(os.path.expanduser(path), "_versions"))
    except (OSError, ValueError):
        return False


def _plain_name(table: exp.Table) -> str | None:
    """The name of ``table`` when it is one identifier (no schema / catalog), else None."""
    this = table.this
    if isinstance(this, exp.Identifier) and not table.args.get("db") and not table.args.get("catalog"):
        return this.name
    return None


def _is_lance_name(table: exp.Table, probes: dict[str, bool] | None = None) -> bool:
    name = _plain_name(table)
    if name is None:
        return False
    if name.rstrip("/").lower().endswith(".lance"):
        return True
    if not table.this.quoted:
        return False
    found = _is_local_table_dir(name)
    if probes is not None:
        probes[name] = found
    return found


def _table_ref(table: exp.Table, probes: dict[str, bool] | None = None) -> LanceRef | None:
    """The LanceRef of a FROM/JOIN item, or None when it is not a Lance reference (``probes``
    records the quoted names looked up as local table directories)."""
    if isinstance(table.this, exp.Anonymous) and str(table.this.this).lower() == _LANCE_SCAN:
        ref = _lance_scan_ref(table.this)
        if table.args.get("when") or table.args.get("version"):
            raise InvalidArgumentError(f"lance_scan('{ref.uri}'): give the version as an argument, not AT/AS OF")
        return ref
    if not _is_lance_name(table, probes):
        _refuse_time_travel_on_a_path(table)
        return None
    uri = table.this.name
    version = asof = branch = None
    when = table.args.get("when")
    ver = table.args.get("version")
    clause = None
    if when is not None:            # AT (VERSION => v) / AT (TIMESTAMP => t)
        kind = str(when.args.get("kind", "")).upper()
        clause = kind, when.expression, f"AT ({kind} => ...)"
    elif ver is not None:           # VERSION AS OF v / TIMESTAMP AS OF t
        kind = str(ver.this).upper()
        clause = kind, ver.expression, f"{kind} AS OF"
    if clause is not None:
        kind, node, label = clause
        value = _literal_value(node, label)
        if kind == "VERSION":
            version, branch = _version_value(value)
        elif kind == "TIMESTAMP":
            asof = str(value)
        else:
            raise InvalidArgumentError(f"'{uri}' {label}: expected VERSION or TIMESTAMP")
    return LanceRef(uri, version, asof, branch)


def _refuse_time_travel_on_a_path(table: exp.Table) -> None:
    """Time travel on a quoted path that is not a Lance table: say why, not DuckDB's catalog error."""
    name = _plain_name(table)
    if name is None or not table.this.quoted:
        return
    if not (table.args.get("when") or table.args.get("version")):
        return
    if "/" in name or os.sep in name or "." in name or os.path.exists(name):
        raise InvalidArgumentError(
            f"'{name}' with AT / AS OF: not a Lance table ({LANCE_NAME_RULE})")


def _stem(uri: str) -> str:
    base = uri.rstrip("/").rsplit("/", 1)[-1]
    return base[: -len(".lance")] if base.lower().endswith(".lance") else base


def _count_star_alias(select: exp.Select) -> str | None:
    """The output name if ``select`` is exactly ``SELECT count(*) [AS x] FROM <one table> [WHERE ...]``."""
    if not isinstance(select, exp.Select) or len(select.expressions) != 1:
        return None
    for key in ("joins", "group", "having", "qualify", "limit", "offset", "distinct",
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


# -- parsing -------------------------------------------------------------------------------------
class _QuietSqlglot(logging.Filter):
    """Drops sqlglot's log records ("Falling back to parsing as a 'Command'") on one thread."""

    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()

    def filter(self, record: logging.LogRecord) -> bool:
        return threading.get_ident() != self.thread


@contextlib.contextmanager
def _quiet_sqlglot() -> Iterator[None]:
    logger = logging.getLogger("sqlglot")
    f = _QuietSqlglot()
    logger.addFilter(f)
    try:
        yield
    finally:
        logger.removeFilter(f)


def _parse(query: str) -> list[exp.Expression] | None:
    """sqlglot's statements, or None when sqlglot cannot read the text (DuckDB will judge it)."""
    try:
        with _quiet_sqlglot():
            statements = [cast(exp.Expression, s) for s in sqlglot.parse(query, read="duckdb") if s is not None]
    except (ParseError, TokenError):
        return None
    return statements


# ``EXPLAIN [ANALYZE] <query>``, ``DESCRIBE|DESC|SHOW|SUMMARIZE <query or table>``
_PREFIX = re.compile(r"^\s*(explain(?:\s+analyze)?|describe|desc|show|summarize)\s+(.*?)\s*;?\s*$",
                     re.IGNORECASE | re.DOTALL)

Resolver = Callable[[LanceRef], str]
Lookup = Callable[[str], Any]


class _Rewriter:
    """One rewrite: replaces references, remembers what must be registered."""

    def __init__(self, resolve: Resolver | None, lookup: Lookup | None, values: Values | None = None):
        self.resolve = resolve or (lambda ref: ref.name)
        self.lookup = lookup
        self.values = values                            # the caller's variables (search vectors)
        self.refs: dict[str, LanceRef] = {}
        self.objects: dict[str, Any] = {}
        self.names: dict[LanceRef, str] = {}
        self.trees: list[exp.Expression] | None = None  # the statements, when not under a prefix
        self.asked: list[str] = []                       # names looked up among the caller's variables
        self.probes: dict[str, bool] = {}                # quoted names probed as table directories

    def name_of(self, ref: LanceRef) -> str:
        if ref not in self.names:
            name = self.resolve(ref)
            self.names[ref] = name
            self.refs[name] = ref
        return self.names[ref]

    def variable(self, table: exp.Table, ctes: set[str]) -> str | None:
        """Generated name of a caller's variable named like ``table``, or None."""
        name = _plain_name(table)
        if self.lookup is None or name is None or name.lower() in ctes or table.args.get("when") \
                or table.args.get("version"):
            return None
        self.asked.append(name)
        obj = self.lookup(name)
        if obj is None:
            return None
        generated = f"__lance_var_{name}_{id(obj):x}"
        self.objects[generated] = obj
        return generated

    def catalog(self, fn: exp.Anonymous) -> str:
        """Generated name of the rows of a ``lance_versions`` / ``lance_tags`` / ``lance_indices`` call."""
        table = catalog_table(fn, _literal_value, _options)
        generated = f"__lance_catalog_{id(table):x}"
        self.objects[generated] = table
        return generated

    def changes(self, fn: exp.Anonymous) -> str:
        """Generated name of the rows of a ``lance_changes(...)`` call (read now, registered as an Arrow table)."""
        table = changes_table(fn, _literal_value, _options)
        generated = f"__lance_changes_{id(table):x}"
        self.objects[generated] = table
        return generated

    def statement(self, tree: exp.Expression) -> tuple[exp.Expression, bool]:
        """Replace the references in one statement; (tree, whether anything changed)."""
        if isinstance(tree, exp.Summarize) and isinstance(tree.this, exp.Literal) and tree.this.is_string:
            tree.set("this", exp.Table(this=exp.to_identifier(tree.this.this, quoted=True)))
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        found: list[tuple[exp.Table, LanceRef | None, str]] = []
        names = {c.name for c in tree.find_all(exp.Column)}
        mentioned = tuple(h for h in HIDDEN_COLUMNS if h in names)
        for table in list(tree.find_all(exp.Table)):
            if is_changes_call(table):
                found.append((table, None, self.changes(table.this)))
                continue
            if is_catalog_call(table):
                found.append((table, None, self.catalog(table.this)))
                continue
            if is_search(table):      # lance_vector_search(...): its rows are registered under a new name
                search_name = f"__lance_search_{next(_SEARCHES)}_{_TOKEN}"
                self.objects[search_name] = parse_search(table, self.values, _scan_ref)
                found.append((table, None, search_name))
                continue
            ref = _table_ref(table, self.probes)
            if ref is not None:
                if mentioned:      # the statement names hidden columns: the reference shows them
                    ref = dataclasses.replace(ref, hidden=tuple(dict.fromkeys(ref.hidden + mentioned)))
                found.append((table, ref, ""))
            elif isinstance(table.parent, (exp.From, exp.Join, exp.Describe, exp.Summarize)):
                generated = self.variable(table, ctes)
                if generated is not None:
                    found.append((table, None, generated))
        stems = [_stem(r.uri) for _, r, _ in found if r is not None]
        for table, ref, generated in found:
            in_from = isinstance(table.parent, (exp.From, exp.Join))
            new = exp.Table(this=exp.to_identifier(generated if ref is None else self.name_of(ref), quoted=True))
            alias = table.args.get("alias")
            if alias is not None:
                new.set("alias", alias)
            elif in_from and ref is None and is_catalog_call(table):
                new.set("alias", exp.TableAlias(this=exp.to_identifier(catalog_name(table), quoted=True)))
            elif in_from and ref is None and (_plain_name(table) is not None or is_search(table)):
                new.set("alias", exp.TableAlias(this=exp.to_identifier(
                    _plain_name(table) or "lance_vector_search", quoted=True)))
            elif in_from and ref is not None and stems.count(_stem(ref.uri)) == 1 and _stem(ref.uri).isidentifier():
                new.set("alias", exp.TableAlias(this=exp.to_identifier(_stem(ref.uri), quoted=True)))
            for key in ("sample", "pivots", "joins", "laterals"):
                if table.args.get(key):
                    new.set(key, table.args[key])
            table.replace(new)
        return tree, bool(found)

    def prefixed(self, keyword: str, rest: str) -> str | None:
        """``EXPLAIN`` / ``DESCRIBE`` / ``SHOW`` / ``SUMMARIZE`` + a table or a query, rewritten."""
        keyword = " ".join(keyword.upper().split())
        alone = _parse(rest)
        is_statement = bool(alone) and alone is not None and not isinstance(
            alone[0], (exp.Literal, exp.Column, exp.Anonymous, exp.Identifier, exp.Dot))
        if not keyword.startswith("EXPLAIN") and not is_statement:
            probe = _parse(f"SELECT * FROM {rest}")
            if probe and len(probe) == 1 and isinstance(probe[0], exp.Select):
                sel = probe[0]
                tables = list(sel.find_all(exp.Table))
                bare = (len(tables) == 1 and len(sel.expressions) == 1 and isinstance(sel.expressions[0], exp.Star)
                        and not any(sel.args.get(k) for k in ("joins", "where", "group", "having", "order",
                                                               "limit", "qualify", "with"))
                        and not tables[0].args.get("alias"))
                if bare:
                    tree, changed = self.statement(probe[0])
                    if not changed:
                        return None
                    table = next(tree.find_all(exp.Table))
                    table.set("alias", None)
                    return f"{keyword} {table.sql('duckdb')}"
        inner = self.text(rest, allow_prefix=False)
        self.trees = None  # EXPLAIN SELECT count(*) ... is not a count
        return None if inner is None else f"{keyword} {inner}"

    def text(self, query: str, allow_prefix: bool = True, generate: bool = True) -> str | None:
        """The rewritten SQL, or None when nothing in it needs rewriting. ``generate=False``: a
        rewritten query without a prefix comes back as :data:`UNGENERATED`, its text left to
        :func:`generated` of :attr:`trees` (once the caller has changed them)."""
        with _quiet_sqlglot():  # the generator warns too, and this may run on a worker thread
            return self._text(query, allow_prefix, generate)

    def _text(self, query: str, allow_prefix: bool, generate: bool = True) -> str | None:
        m = _PREFIX.match(query) if allow_prefix else None
        if m is not None:
            return self.prefixed(m.group(1), m.group(2))
        statements = _parse(query)
        if not statements:
            return None
        out, changed = [], False
        for s in statements:
            tree, c = self.statement(s)
            changed |= c
            out.append(tree)
        if not changed:
            return None
        self.trees = out
        return generated(out) if generate else UNGENERATED


#: what :meth:`_Rewriter.text` returns for a rewrite whose text it did not generate
UNGENERATED = ""


def generated(trees: list[exp.Expression]) -> str:
    """The SQL text of rewritten statements (DuckDB's dialect)."""
    with _quiet_sqlglot():
        return ";\n".join(t.sql(dialect="duckdb") for t in trees)


def rewrite(query: str, resolve: Resolver | None = None, lookup: Lookup | None = None) -> Rewritten:
    """Find Lance references (and caller's variables) in ``query``; replace them with generated names.

    ``resolve(ref)`` names a reference (default: :attr:`LanceRef.name`, nothing opened);
    ``lookup(name)`` returns the caller's object for a table name, or None.  SQL that needs no
    rewriting, or that sqlglot cannot parse, is returned unchanged.
    """
    return _rewrite_with(_Rewriter(resolve, lookup), query)


def _rewrite_with(rw: _Rewriter, query: str) -> Rewritten:
    if not isinstance(query, str):
        raise InvalidArgumentError(f"query must be a SQL string, got {type(query).__name__}")
    query = rename_reserved(query)
    text = call_deep(lambda: rw.text(query, generate=False), "SQL query")
    if text is None:
        return Rewritten(query, {}, objects={})
    count_ref = count_alias = where = None
    qualifiers: frozenset[str] = frozenset()
    trees = rw.trees
    if trees and len(trees) == 1 and len(rw.refs) == 1 and not rw.objects:
        tree = trees[0]
        from_ = tree.args.get("from_", tree.args.get("from"))
        tables = list(tree.find_all(exp.Table))
        if isinstance(tree, exp.Select) and len(tables) == 1 and from_ is not None and tables[0].parent is from_:
            count_alias = _count_star_alias(tree)
            if count_alias is not None:
                count_ref = next(iter(rw.refs.values()))
                where = tree.args.get("where")
                qualifiers = frozenset({tables[0].alias_or_name, tables[0].name})
    views: dict[str, tuple[str, list[Term]]] = {}
    whole: dict[str, str] = {}
    if trees and len(trees) == 1 and len(rw.refs) == 1 and not rw.objects and (count_ref is None or where):
        _substring_view(trees[0], rw.refs, views)
        _read_whole(trees[0], rw.refs, whole)
    if text == UNGENERATED:           # (generated once, after the changes above)
        assert trees is not None
        text = call_deep(lambda: generated(trees), "SQL query")
    reads = trees is not None and len(trees) == 1 and isinstance(trees[0], exp.Query)
    return Rewritten(text, rw.refs, count_ref, count_alias, rw.objects, views, where, qualifiers, whole, reads)


#: a token unique to this process, in generated names (a user's text cannot hold them by chance)
_TOKEN = secrets.token_hex(6)


def _substring_view(tree: exp.Expression, refs: dict[str, LanceRef],
                    views: dict[str, tuple[str, list[Term]]]) -> bool:
    """Point the query's one table at a view filtered by its substring and float comparison conjuncts (see
    :mod:`.pushdown`); whether it did."""
    found = substring_terms(tree)
    if found is None:
        return False
    table, terms = found
    old = table.name
    if old not in refs:
        return False
    new = view_name(old, terms)
    if not table.args.get("alias"):
        table.set("alias", exp.TableAlias(this=exp.to_identifier(old, quoted=True)))
    table.set("this", exp.to_identifier(new, quoted=True))
    refs[new] = refs.pop(old)
    views[new] = (old, terms)
    return True


#: nodes after which DuckDB may stop reading a table before its end (or read it more than once)
_EARLY_STOPS = (exp.Limit, exp.Offset, exp.Fetch, exp.TableSample, exp.Subquery, exp.Join, exp.Window,
                exp.Union, exp.Intersect, exp.Except, exp.Exists, exp.Lateral, exp.Unnest)


def reads_whole(tree: exp.Expression) -> bool:
    """``tree`` reads its one table to the end whatever plan DuckDB picks: a single SELECT that
    aggregates (an aggregate function in its select list, or GROUP BY) with no LIMIT, OFFSET,
    FETCH, SAMPLE, join, subquery, window or set operation anywhere."""
    if not isinstance(tree, exp.Select) or any(True for _ in tree.find_all(*_EARLY_STOPS)):
        return False
    if sum(1 for _ in tree.find_all(exp.Select)) != 1 or len(list(tree.find_all(exp.Table))) != 1:
        return False
    return bool(tree.args.get("group")) or any(e.find(exp.AggFunc) is not None for e in tree.expressions)


def whole_name(table: str) -> str:
    """The registration name of the read-to-the-end dataset of the registered table ``table``."""
    return f"{table}_w"


def _read_whole(tree: exp.Expression, refs: dict[str, LanceRef], whole: dict[str, str]) -> bool:
    """Point a query that :func:`reads_whole` its one table at a dataset whose scans go straight from
    their first small task to full-size ones (no ramp kept for an engine that may stop early); whether
    it did."""
    if not reads_whole(tree):
        return False
    table = next(tree.find_all(exp.Table))
    old = table.name
    if old not in refs:
        return False
    new = whole_name(old)
    if not table.args.get("alias"):
        table.set("alias", exp.TableAlias(this=exp.to_identifier(old, quoted=True)))
    table.set("this", exp.to_identifier(new, quoted=True))
    refs[new] = refs.pop(old)
    whole[new] = old
    return True
