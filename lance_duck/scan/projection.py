"""Which columns a scan outputs and which top-level fields it must read for them.

``columns`` is ``None`` (every field), a list of names (top-level, nested ``"s.a"``,
``"_rowid"``, ``"_rowaddr"``) or a dict ``alias -> SQL expression | pyarrow Expression``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from ..schema import LanceSchema
from ..predicate.compiled import compile_expression
from .filters import ROW_ADDR, ROW_ID, VIRTUAL_COLUMNS, evaluate, expression_columns


@dataclass(frozen=True)
class OutputColumn:
    """One output column: a top-level field, a nested path in one, a row id, or an expression."""

    name: str
    field: pa.Field                      # output name and type
    source: str                          # top-level column read ("_rowid"/"_rowaddr" for virtual)
    path: tuple[int, ...] = ()           # child indices below ``source`` for nested names
    expression: pc.Expression | None = None


@dataclass(frozen=True)
class Projection:
    outputs: tuple[OutputColumn, ...]
    sources: tuple[str, ...]             # top-level columns (incl. virtual) the outputs need
    metadata: Any = None                 # the dataset's schema metadata: pylance keeps it on every result

    @cached_property
    def schema(self) -> pa.Schema:
        """The output schema (made once: a scan asks for it several times)."""
        return pa.schema([o.field for o in self.outputs], metadata=self.metadata)

    @property
    def is_plain(self) -> bool:
        """Every output is a whole column read as is (no nesting, no expression)."""
        return all(not o.path and o.expression is None for o in self.outputs)


def resolve_projection(columns: Any, schema: pa.Schema, lance_schema: LanceSchema,
                       with_row_id: bool = False, with_row_address: bool = False) -> Projection:
    """Validate ``columns`` against the dataset schema and plan the outputs."""
    outs: list[OutputColumn] = []
    if columns is None:
        outs = [OutputColumn(f.name, f, f.name) for f in schema]
    elif isinstance(columns, dict):
        for alias, spec in columns.items():
            outs.append(_aliased(str(alias), spec, schema))
    elif isinstance(columns, (list, tuple)):
        for name in columns:
            if not isinstance(name, str):
                raise InvalidArgumentError(f"column names must be strings, got {name!r}")
            outs.append(_named(name, schema))
    else:
        raise InvalidArgumentError(f"columns must be a list of names or a dict, got {type(columns).__name__}")
    names = [o.name for o in outs]
    if with_row_id and ROW_ID not in names:
        outs.append(_virtual(ROW_ID))
    if with_row_address and ROW_ADDR not in names:
        outs.append(_virtual(ROW_ADDR))
    sources: list[str] = []
    for o in outs:
        needed = (o.source,) if o.expression is None else expression_columns(o.expression, schema)
        for s in needed:
            if s not in sources:
                sources.append(s)
    return Projection(tuple(outs), tuple(sources), schema.metadata)


def _virtual(name: str) -> OutputColumn:
    return OutputColumn(name, pa.field(name, pa.uint64()), name)


def _named(name: str, schema: pa.Schema) -> OutputColumn:
    if name in VIRTUAL_COLUMNS:
        return _virtual(name)
    idx = schema.get_field_index(name)
    if idx >= 0:
        return OutputColumn(name, schema.field(idx), name)
    parts = name.split(".")
    top = schema.get_field_index(parts[0])
    if top < 0 or len(parts) < 2:
        raise InvalidArgumentError(f"column {name!r} is not in the dataset schema {schema.names}")
    f = schema.field(top)
    path: list[int] = []
    for p in parts[1:]:
        if not pa.types.is_struct(f.type) or f.type.get_field_index(p) < 0:
            raise InvalidArgumentError(f"column {name!r}: {f.name!r} has no child {p!r}")
        i = f.type.get_field_index(p)
        path.append(i)
        f = f.type.field(i)
    return OutputColumn(name, f.with_name(name), parts[0], tuple(path))


def _aliased(alias: str, spec: Any, schema: pa.Schema) -> OutputColumn:
    if isinstance(spec, str):
        try:
            return _renamed(_named(spec.strip(), schema), alias)
        except InvalidArgumentError:
            pass
        expr = compile_expression(spec, schema)
    elif isinstance(spec, pc.Expression):
        expr = spec
    else:
        raise InvalidArgumentError(f"column {alias!r}: expected a SQL expression or a pyarrow Expression")
    sources = expression_columns(expr, schema)
    empty = pa.RecordBatch.from_arrays([pa.nulls(0, schema.field(s).type) if s in schema.names
                                        else pa.array([], pa.uint64()) for s in sources],
                                       names=list(sources))
    typ = evaluate(empty, expr).type
    return OutputColumn(alias, pa.field(alias, typ), sources[0] if sources else "", (), expr)


def _renamed(o: OutputColumn, alias: str) -> OutputColumn:
    return OutputColumn(alias, o.field.with_name(alias), o.source, o.path, o.expression)


def extract(column: pa.Array, path: Sequence[int]) -> pa.Array:
    """A nested child of a struct column (parent nulls propagate, like pylance)."""
    if not path:
        return column
    return pc.struct_field(column, list(path))
