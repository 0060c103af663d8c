"""``SELECT * | cols FROM '<local path>.lance' LIMIT n [OFFSET m]``: the first live rows, taken directly.

DuckDB gives an Arrow source no limit: it starts a scan and stops pulling, so a plain LIMIT through
the registered dataset decodes a whole first task of every column and pays DuckDB's planning of
the scan. That exact statement (``*`` or plain column names spelled as in the schema, a quoted
local table path, integer ``LIMIT`` and ``OFFSET``, nothing else) is answered here instead: the
live rows at positions ``m .. m+n-1`` (after deletions, in table order: what the scan returns
first) are read with :meth:`~lance_duck.scan.dataset.LanceDataset.take`, which decodes only the
chunks that hold them. The result is DuckDB's relation over those rows; when every column's type
converts to Python as DuckDB converts it (numbers, booleans, strings, dates, naive timestamps),
``fetchall()`` returns the rows without running DuckDB. Anything else returns None: the full path
runs the statement.
"""
from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING, Any, Callable

from .relation import LanceRelation

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

#: Rows a direct take answers (a larger LIMIT goes through the scan, whose tasks read ahead).
MAX_ROWS = 10_000

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_PLAIN_LIMIT = re.compile(
    rf"\s*select\s+(\*|{_IDENT}(?:\s*,\s*{_IDENT})*)\s+from\s+'([^']+)'\s+limit\s+(\d+)"
    r"(?:\s+offset\s+(\d+))?\s*;?\s*", re.IGNORECASE)
_KEYWORDS = {"all", "distinct", "from", "limit", "offset", "select", "where", "as", "on", "by"}
_NAMESPACES = __name__.rsplit(".", 1)[0] + ".namespaces"


def plain_limit(query: str, con: duckdb.DuckDBPyConnection | None, made: duckdb.DuckDBPyConnection | None,
                default: Callable[[], duckdb.DuckDBPyConnection]) -> LanceRelation | None:
    """The result of a plain ``SELECT ... FROM '<path>' LIMIT n [OFFSET m]``, or None (the full path).

    ``con``: the caller's connection (None: the default one, ``made`` if made yet, else made by
    ``default()`` when needed)."""
    m = _PLAIN_LIMIT.fullmatch(query)
    if m is None:
        return None
    cols_text, path, n_text, off_text = m.groups()
    n, offset = int(n_text), int(off_text or 0)
    if n > MAX_ROWS or offset > MAX_ROWS:
        return None
    if not path.rstrip("/").lower().endswith(".lance") or "://" in path:
        return None
    namespaces = sys.modules.get(_NAMESPACES)
    probe = con if con is not None else made
    if namespaces is not None and probe is not None and namespaces.attached(probe):
        return None
    if not os.path.isdir(path):
        return None
    columns = None if cols_text == "*" else [c.strip() for c in cols_text.split(",")]
    try:
        table = _first_rows(path, columns, n, offset)
    except Exception:  # noqa: BLE001 - the full path raises it, naming the reference
        return None
    if table is None:
        return None
    rows = _python_rows(table)
    if con is not None:
        if rows is None:
            return LanceRelation(con.from_arrow(table))
        con.query_progress()                # a closed connection fails here, as a relation made now would
        return LanceRelation._known(lambda: con.from_arrow(table), rows)
    if rows is None:
        return LanceRelation(default().from_arrow(table))
    return LanceRelation._known(lambda: default().from_arrow(table), rows)


def _first_rows(path: str, columns: list[str] | None, n: int, offset: int) -> pa.Table | None:
    """Live rows ``offset .. offset+n-1`` of the latest version of ``path``, or None (not answerable here)."""
    import pyarrow as pa

    from .rewrite import LanceRef
    ds = LanceRef(path).cached()
    names = ds.schema.names
    if columns is not None:
        if len(set(columns)) != len(columns) or any(c not in names or c.lower() in _KEYWORDS for c in columns):
            return None     # a hidden column, an expression, a duplicate or another spelling: DuckDB decides
    schema = ds.schema
    for name in columns if columns is not None else names:
        field = schema.field(name)
        meta = field.metadata or {}
        if isinstance(field.type, pa.BaseExtensionType) or any(b"blob" in k or b"blob" in v for k, v in meta.items()):
            return None     # blob and extension columns: the full path decides how DuckDB sees them
    total = ds.count_rows()
    stop = min(total, offset + n)
    return ds.take(range(offset, max(offset, stop)), columns=columns)


def _python_rows(table: pa.Table) -> list[tuple[Any, ...]] | None:
    """The rows as DuckDB's ``fetchall()`` gives them, when pyarrow converts every column alike; else None."""
    import pyarrow.types as t
    for f in table.schema:
        ty = f.type
        if not (t.is_integer(ty) or t.is_float32(ty) or t.is_float64(ty) or t.is_boolean(ty)
                or t.is_string(ty) or t.is_large_string(ty) or t.is_date32(ty)
                or (t.is_timestamp(ty) and ty.tz is None and ty.unit in ("s", "ms", "us"))):
            return None
    return list(zip(*(c.to_pylist() for c in table.columns))) if table.num_columns else None
