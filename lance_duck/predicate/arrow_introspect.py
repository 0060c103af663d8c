"""Read the tree of a ``pyarrow.compute.Expression`` (pyarrow has no public walker).

An Expression pickles to an Arrow IPC file whose schema metadata lists the tree in prefix
order (``call``/``end``, ``field_ref``, ``nested_field_ref``, ``literal``, ``options``, with
repeated keys) and whose single record batch holds the literals and function options.
Python's ``Schema.metadata`` dict would lose the repeated keys, so the metadata is read in
order from the C data interface export.  The payload is a private Arrow format: every
failure here raises :class:`IntrospectionError`, which callers turn into "no pruning".
"""
from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass
from typing import Any, Union

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from .. import _state


class IntrospectionError(Exception):
    """The Expression could not be decoded; callers must not prune with it."""


@dataclass(frozen=True)
class XField:
    path: tuple[str, ...]


@dataclass(frozen=True)
class XLiteral:
    scalar: pa.Scalar


@dataclass(frozen=True)
class XCall:
    name: str
    args: tuple["XNode", ...]
    options: Any  # a StructScalar of the FunctionOptions, or None


XNode = Union[XField, XLiteral, XCall]


class _ArrowSchema(ctypes.Structure):
    pass


_ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_void_p),
    ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64), ("children", ctypes.c_void_p),
    ("dictionary", ctypes.c_void_p),
    ("release", ctypes.CFUNCTYPE(None, ctypes.POINTER(_ArrowSchema))), ("private_data", ctypes.c_void_p),
]


def _ordered_metadata(schema: pa.Schema, limit: int = 100_000) -> list[tuple[str, str]]:
    c = _ArrowSchema()
    schema._export_to_c(ctypes.addressof(c))
    try:
        if not c.metadata:
            return []
        (count,) = struct.unpack("<i", ctypes.string_at(c.metadata, 4))
        if count < 0 or count > limit:
            raise IntrospectionError("implausible metadata count")
        pos, out = c.metadata + 4, []
        for _ in range(count):
            (kl,) = struct.unpack("<i", ctypes.string_at(pos, 4))
            key = ctypes.string_at(pos + 4, kl).decode()
            pos += 4 + kl
            (vl,) = struct.unpack("<i", ctypes.string_at(pos, 4))
            val = ctypes.string_at(pos + 4, vl).decode()
            pos += 4 + vl
            out.append((key, val))
        return out
    finally:
        if c.release:
            c.release(ctypes.byref(c))


def decode(expr: pc.Expression) -> XNode:
    """The tree of ``expr``; raises :class:`IntrospectionError` if it cannot be read.

    Trees are immutable and memoised by the Expression's serialized form (a scan decodes its
    filter more than once: for its columns, its conjuncts, DuckDB's pushdown check). The same
    Expression object is recognised without serializing it again (that costs ~0.1 ms)."""
    hit = _BY_OBJECT.get(id(expr))
    if hit is not None and hit[0] is expr:
        return hit[1]  # type: ignore[no-any-return]
    tree = _decode_payload(_payload(expr))
    _BY_OBJECT.put(id(expr), (expr, tree))        # the entry keeps expr alive: its id stays its own
    return tree


_BY_OBJECT = _state.cache("expression_objects")


def _payload(expr: pc.Expression) -> bytes:
    try:
        fn, args = expr.__reduce__()
        payload: bytes = args[0].to_pybytes()
    except Exception as e:  # private format: anything unexpected means "don't know"
        raise IntrospectionError(f"cannot read expression payload: {e}") from None
    return payload


@_state.memo("expression_trees")
def _decode_payload(payload: bytes) -> XNode:
    try:
        reader = ipc.open_file(pa.BufferReader(payload))
        batch = reader.get_batch(0) if reader.num_record_batches else None
        items = _ordered_metadata(reader.schema)
    except IntrospectionError:
        raise
    except Exception as e:  # private format: anything unexpected means "don't know"
        raise IntrospectionError(f"cannot read expression payload: {e}") from None
    pos = 0

    def value_at(idx: str) -> Any:
        if batch is None:
            raise IntrospectionError("no literal batch")
        return batch.column(int(idx))[0]

    def node() -> XNode:
        nonlocal pos
        if pos >= len(items):
            raise IntrospectionError("truncated expression")
        key, val = items[pos]
        pos += 1
        if key == "literal":
            return XLiteral(value_at(val))
        if key == "field_ref":
            return XField((val,))
        if key == "nested_field_ref":
            names = []
            for _ in range(int(val)):
                k, v = items[pos]
                if k != "field_ref":
                    raise IntrospectionError(f"unexpected {k} in nested field ref")
                names.append(v)
                pos += 1
            return XField(tuple(names))
        if key == "call":
            args, options = [], None
            while True:
                if pos >= len(items):
                    raise IntrospectionError("unterminated call")
                k, v = items[pos]
                if k == "end":
                    pos += 1
                    break
                if k == "options":
                    options = value_at(v)
                    pos += 1
                    continue
                args.append(node())
            return XCall(val, tuple(args), options)
        raise IntrospectionError(f"unknown expression element {key!r}")

    try:
        root = node()
    except IntrospectionError:
        raise
    except Exception as e:
        raise IntrospectionError(f"cannot decode expression: {e}") from None
    if pos != len(items):
        raise IntrospectionError("trailing expression elements")
    return root


def option(options: Any, name: str) -> Any:
    """A FunctionOptions field from a decoded options struct (None if absent)."""
    if options is None:
        return None
    try:
        return options[name]
    except (KeyError, IndexError, TypeError):
        return None


def flag(options: Any, name: str) -> bool:
    """A boolean FunctionOptions field as a Python bool (False if absent): a BooleanScalar's own
    truthiness differs between pyarrow versions."""
    value = option(options, name)
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    return bool(value)


def function_options(options: Any) -> pc.FunctionOptions | None:
    """A decoded options struct (:attr:`XCall.options`) as the ``FunctionOptions`` it was made from
    (Arrow reads it back from the same one-row IPC form its ``serialize`` writes); None for none."""
    if options is None:
        return None
    try:
        batch = pa.record_batch([pa.array([options], type=options.type)], names=[""])
        sink = pa.BufferOutputStream()
        with ipc.new_file(sink, batch.schema) as writer:
            writer.write_batch(batch)
        return pc.FunctionOptions.deserialize(sink.getvalue())
    except Exception as e:  # private format: anything unexpected means "don't know"
        raise IntrospectionError(f"cannot read function options: {e}") from None
