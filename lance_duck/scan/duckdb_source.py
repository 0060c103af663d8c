"""A dataset as its own DuckDB Arrow source: row count, exact filters in DuckDB's meaning, the stream.

DuckDB 2 reads a Python object through its Arrow *source* protocol (``duckdb._sources``, private):
``adapt(obj)`` picks a source for the object -- ``PyArrowDatasetSource`` for a
``pyarrow.dataset.Dataset`` -- unless the object already *is* a ``Source``, which it then uses as it
is. :class:`DuckDBSource` is a base of :class:`~lance_duck.scan.dataset.LanceDataset` and derives
from DuckDB's ``ArrowScanSource`` when the running DuckDB has one (checked when this module is
imported; with DuckDB 1.x it derives from ``object`` and DuckDB scans the dataset as any pyarrow
dataset). So ``duckdb.sql("select ... from ds")`` and ``con.register("t", ds)`` reach the methods
below, and the dataset stays a ``pyarrow.dataset.Dataset`` for everyone else.

* ``rows()``: live rows from the manifest (no file read), DuckDB's cardinality for join order; a
  fifth of them for a dataset with a filter of its own. DuckDB does not answer ``count(*)`` from it:
  it still asks for the first column.
* ``accepts(predicate)``: every predicate DuckDB's own pyarrow-dataset source pushes (its
  ``to_arrow`` translation, scanned here as that pyarrow Expression), and also the ones it refuses
  because a NaN could satisfy them (``x > 1.5``, ``x >= c``, ``x != c``, ``NOT`` over a float
  column): pyarrow's statistics pruning leaves NaN out, so it cannot take them. Those are
  translated here into lance_duck's filter model (:mod:`lance_duck.predicate.bound`), whose
  floats follow DuckDB's total order -- NaN equals NaN and sorts above every number, ``-0.0 = 0.0``
  -- and whose pruning (zone maps' NaN counts, fragment statistics) keeps every row that may match:
  ``AND`` / ``OR`` / ``NOT``, ``col op literal`` (``= != < <= > >=``), ``IN`` (literals, no NULL,
  no NaN), ``IS [NOT] NULL``, on boolean, integer, float, string, binary, date, naive
  timestamp, zoned timestamp (microseconds) and decimal columns (struct fields too), with a literal
  that is exactly a value of the column's type. Anything else is refused and DuckDB filters it.
* ``stream(columns, filters)``: ``scanner(columns=..., filter=...)`` with the accepted predicates
  ANDed, as an Arrow C stream.
"""
from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from ..predicate import CompiledFilter, compile_bound
from ..predicate.bound import BAnd, BCompare, BIn, BIsNull, BLit, BNot, BOr, BRef, BoundExpr
from ..predicate.compiled import and_filters
from .filters import bind_filter

if TYPE_CHECKING:
    from ..table.snapshot import Snapshot

#: The share of rows a dataset with a filter of its own is estimated to keep (DuckDB's default
#: selectivity of a filter it cannot estimate).
FILTERED_SHARE = 0.2


def _protocol() -> tuple[Any, Any, Any]:
    """DuckDB's (ArrowScanSource, to_arrow, nan_may_satisfy), or Nones without the protocol."""
    try:
        import duckdb._sources as sources
        from duckdb._sources.arrow import ArrowScanSource
        from duckdb._sources.to_arrow import nan_may_satisfy, to_arrow
    except ImportError:
        return None, None, None
    if not (callable(getattr(sources, "adapt", None)) and callable(getattr(ArrowScanSource, "stream", None))
            and callable(getattr(ArrowScanSource, "accepts", None))):
        return None, None, None
    return ArrowScanSource, to_arrow, nan_may_satisfy


_BASE, _TO_ARROW, _NAN_MAY_SATISFY = _protocol()
#: Whether the running DuckDB reads datasets through its Arrow-source protocol (DuckDB >= 2.0).
HAS_PROTOCOL = _BASE is not None

if TYPE_CHECKING:
    class _SourceBase:
        pass
else:
    _SourceBase = _BASE if _BASE is not None else object


class NotPushable(Exception):
    """A DuckDB predicate with no exact translation here (DuckDB keeps applying it)."""


class DuckDBSource(_SourceBase):
    """DuckDB's Arrow-source protocol on a dataset (its methods are called by DuckDB 2, nothing else).

    Examples:
        >>> import duckdb, lance_duck
        >>> ds = lance_duck.dataset(lance_duck.sample_path())
        >>> duckdb.sql("select count(*) from ds where amount > 490").fetchall()
        [(51,)]
    """

    one_shot = False
    #: A dataset is one pinned version: its schema never changes.
    schema_is_stable = True
    pull_under_gil = False

    _snapshot: Snapshot
    _base_filter: CompiledFilter | None

    if TYPE_CHECKING:   # the dataset class (a pyarrow Dataset) has these
        schema: pa.Schema

        def scanner(self, columns: Any = None, filter: Any = None, *args: Any, **kwargs: Any) -> Any: ...

    @property
    def obj(self) -> DuckDBSource:
        """The object DuckDB reads: the dataset itself."""
        return self

    def rows(self) -> int | None:
        """Live rows from the manifest (deletion counts as recorded, no file read); a fifth of them
        for a dataset with a filter of its own. DuckDB's cardinality estimate for the scan."""
        n = 0
        for f in self._snapshot.fragments:
            n += f.physical_rows - (f.deletion.num_deleted_rows if f.deletion is not None else 0)
        return int(n * FILTERED_SHARE) if self._base_filter is not None else n

    def __arrow_c_schema__(self) -> object:
        """The dataset's schema as an Arrow PyCapsule (DuckDB binds with it without opening a scan)."""
        return self.schema.__arrow_c_schema__()

    def accepts(self, predicate: Any) -> bool:
        """Whether every stream can apply ``predicate`` exactly as DuckDB would (see the module)."""
        try:
            self._pushed(predicate)
        except NotPushable:
            return False
        return True

    def stream(self, columns: Sequence[int] | None, filters: Sequence[Any]) -> tuple[object, bool]:
        """An Arrow C stream of ``columns`` (schema positions; None: all) of the rows passing every
        predicate in ``filters`` (each one accepted), and True when it holds exactly ``columns``."""
        names = self.schema.names
        if columns is not None and (not isinstance(columns, Sequence) or not all(
                isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(names) for i in columns)):
            raise InvalidArgumentError(f"columns must be positions in the schema of {len(names)} columns, "
                                       f"got {columns!r:.80}")
        if not isinstance(filters, Sequence) or isinstance(filters, (str, bytes)):
            raise InvalidArgumentError(f"filters must be a sequence of DuckDB predicates, got {filters!r:.80}")
        chosen = None if columns is None else [names[i] for i in columns]
        scanner = type(self).scanner(self, columns=chosen, filter=self._duckdb_filter(filters))
        return scanner.to_reader().__arrow_c_stream__(), chosen is not None

    def _duckdb_filter(self, filters: Sequence[Any]) -> pc.Expression | CompiledFilter | None:
        """The AND of DuckDB's accepted predicates (None for none): the pyarrow Expression DuckDB's
        pyarrow-dataset source would pass when that covers them all, else one compiled filter."""
        expressions: list[pc.Expression] = []
        bound: list[BoundExpr] = []
        for predicate in filters:
            try:
                kind, part = self._pushed(predicate)
            except NotPushable as exc:
                raise InvalidArgumentError(f"DuckDB's predicate {predicate!r:.80} cannot be applied exactly; "
                                           "accepts() refuses it") from exc
            if kind == "arrow":
                expressions.append(part)
            else:
                bound.append(part)
        mask = None
        for e in expressions:
            mask = e if mask is None else mask & e
        if not bound:
            return mask
        compiled = compile_bound(bound[0] if len(bound) == 1 else BAnd(tuple(bound)), self.schema)
        return compiled if mask is None else and_filters(compiled, bind_filter(mask, self.schema))

    def _pushed(self, predicate: Any) -> tuple[str, Any]:
        """("arrow", Expression) when DuckDB's pyarrow-dataset source would push ``predicate``,
        else ("bound", tree) in DuckDB's meaning; NotPushable when neither is exact."""
        schema = self.schema
        if _TO_ARROW is not None:
            try:
                expression = _TO_ARROW(predicate, schema)
            except ValueError:          # DuckDB's Untranslatable
                pass
            else:
                if not _NAN_MAY_SATISFY(predicate, schema):
                    return "arrow", expression
        try:
            return "bound", duckdb_predicate(predicate, schema)
        except RecursionError as exc:
            raise NotPushable(predicate) from exc


# -- DuckDB's predicate nodes -> the bound model -------------------------------------------------------

_OPS = {"=": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

_INTEGERS = {"int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT",
             "uint8": "UTINYINT", "uint16": "USMALLINT", "uint32": "UINTEGER", "uint64": "UBIGINT"}
_NAIVE = {"s": "TIMESTAMP_S", "ms": "TIMESTAMP_MS", "us": "TIMESTAMP"}
_MICROS_PER = {"s": 1_000_000, "ms": 1_000, "us": 1}


def duckdb_predicate(node: Any, schema: pa.Schema) -> BoundExpr:
    """DuckDB's predicate tree (``duckdb._sources.nodes``) as a bound tree over ``schema``, with
    DuckDB's meaning (the bound model's: SQL three-valued logic, floats totally ordered with NaN
    above every number).

    Raises:
        NotPushable: a node, a column type or a literal without an exact translation.
    """
    kind = type(node).__name__
    if kind == "Binary" and node.op in ("AND", "OR"):
        parts = (duckdb_predicate(node.left, schema), duckdb_predicate(node.right, schema))
        return BAnd(parts) if node.op == "AND" else BOr(parts)
    if kind == "Unary" and node.op == "NOT":
        return BNot(duckdb_predicate(node.operand, schema))
    if kind == "Postfix" and node.op in ("IS NULL", "IS NOT NULL"):
        ref, _ = _column(node.operand, schema)
        return BIsNull(ref) if node.op == "IS NULL" else BNot(BIsNull(ref))
    if kind == "Binary" and node.op in _OPS:
        ref, t = _column(node.left, schema)
        return BCompare(_OPS[node.op], ref, BLit(_literal(node.right, t)))
    if kind == "In" and node.values:
        ref, t = _column(node.operand, schema)
        scalars = [_literal(v, t) for v in node.values]
        return BIn(ref, pa.array(scalars, t), False)
    raise NotPushable(node)


def _column(node: Any, schema: pa.Schema) -> tuple[BRef, pa.DataType]:
    if type(node).__name__ != "Col" or not node.parts:
        raise NotPushable(node)
    parts = tuple(node.parts)
    index = schema.get_field_index(parts[0])      # -1 for a missing or repeated name
    if index < 0:
        raise NotPushable(parts)
    t = schema.field(index).type
    for name in parts[1:]:
        child = t.get_field_index(name) if pa.types.is_struct(t) else -1
        if child < 0:
            raise NotPushable(parts)
        t = t.field(child).type
    if _engine_type(t) is None:
        raise NotPushable(t)
    return BRef(parts, t), t


def _engine_type(t: pa.DataType) -> str | None:
    """DuckDB's name for the type it reads ``t`` as, for the types translated here."""
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_integer(t):
        return _INTEGERS[str(t)]
    if pa.types.is_float32(t):
        return "FLOAT"
    if pa.types.is_float64(t):
        return "DOUBLE"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "VARCHAR"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "BLOB"
    if pa.types.is_date32(t):
        return "DATE"
    if pa.types.is_timestamp(t) and t.unit in _MICROS_PER:
        return _NAIVE[t.unit] if t.tz is None else "TIMESTAMP WITH TIME ZONE"
    if pa.types.is_decimal128(t):
        return f"DECIMAL({t.precision},{t.scale})"
    return None


def _literal(node: Any, t: pa.DataType) -> pa.Scalar:
    """The constant as a scalar of the column's type, holding exactly its value."""
    if type(node).__name__ != "Lit" or node.type != _engine_type(t):
        raise NotPushable(node)
    v = node.value
    ok = False
    if pa.types.is_boolean(t):
        ok = isinstance(v, bool)
    elif pa.types.is_integer(t):
        ok = isinstance(v, int) and not isinstance(v, bool)
    elif pa.types.is_floating(t):
        ok = isinstance(v, float) and not math.isnan(v)
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        ok = isinstance(v, str)
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
        ok = isinstance(v, bytes)
    elif pa.types.is_date32(t):
        ok = isinstance(v, datetime.date) and not isinstance(v, datetime.datetime)
    elif pa.types.is_timestamp(t) and t.tz is None:
        ok = isinstance(v, datetime.datetime) and v.tzinfo is None and v.microsecond % _MICROS_PER[t.unit] == 0
    elif pa.types.is_timestamp(t):
        # an instant: an int of microseconds since the epoch, on the column's grid
        ok = isinstance(v, int) and not isinstance(v, bool) and v % _MICROS_PER[t.unit] == 0
        if ok:
            v = v // _MICROS_PER[t.unit]
    elif pa.types.is_decimal128(t):
        ok = isinstance(v, decimal.Decimal) and v.is_finite()
    if not ok:
        raise NotPushable(node)
    try:
        scalar = pa.scalar(v, t)
    except (pa.ArrowException, OverflowError, TypeError, ValueError) as exc:
        raise NotPushable(node) from exc
    held = scalar.value if pa.types.is_timestamp(t) and t.tz is not None else scalar.as_py()
    if held != v:           # rounded (a float32, a decimal's scale) or wrapped: not the same value
        raise NotPushable(node)
    return scalar


__all__ = ["FILTERED_SHARE", "HAS_PROTOCOL", "DuckDBSource", "NotPushable", "duckdb_predicate"]
