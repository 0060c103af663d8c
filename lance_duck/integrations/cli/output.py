"""Writing query results for the CLI: terminal tables, CSV, JSON lines, Parquet, Arrow IPC.

The format follows ``--format`` or else the output file's extension (an unknown extension is refused,
never guessed). CSV and JSON keep values typed where the format can: numbers and booleans stay bare,
timestamps are ISO 8601 with their zone, nested values (structs, lists, maps) are JSON, binary values
base64.
"""
from __future__ import annotations

import base64
import datetime as _dt
import decimal
import json
import sys
import uuid
from pathlib import Path
from typing import Any, Iterable, TextIO

import pyarrow as pa

from ...errors import InvalidArgumentError
from .render import render_table

FORMATS = ("table", "csv", "json", "parquet", "arrow")
# Extension (lower case, with the dot) -> format.
EXTENSIONS = {
    ".csv": "csv", ".json": "json", ".jsonl": "json", ".ndjson": "json",
    ".parquet": "parquet", ".pq": "parquet", ".arrow": "arrow", ".feather": "arrow", ".ipc": "arrow",
    ".txt": "table",
}
_BINARY_FILE_FORMATS = ("parquet", "arrow")


def format_for(path: str | None, fmt: str | None) -> str:
    """The output format: ``fmt`` if given, else from ``path``'s extension, else ``table``."""
    if fmt:
        return fmt
    if not path:
        return "table"
    ext = Path(path).suffix.lower()
    if ext not in EXTENSIONS:
        known = ", ".join(EXTENSIONS)
        raise InvalidArgumentError(
            f"cannot tell the output format from {path!r} (extension {ext or 'none'!r}; known: {known}); "
            "give --format")
    return EXTENSIONS[ext]


def json_value(o: Any) -> Any:
    """``json.dumps``'s ``default``: ISO 8601 times, exact decimals (as strings), base64 bytes."""
    if isinstance(o, (_dt.datetime, _dt.date, _dt.time)):
        return o.isoformat()
    if isinstance(o, _dt.timedelta):
        return o.total_seconds()
    if isinstance(o, decimal.Decimal):
        return str(o)
    if isinstance(o, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(o)).decode("ascii")
    if isinstance(o, uuid.UUID):
        return str(o)
    return str(o)


def _pylist(arr: pa.Array) -> list[Any]:
    try:
        values: list[Any] = arr.to_pylist(maps_as_pydicts="strict")
    except (TypeError, ValueError, KeyError):  # duplicate keys, or an older pyarrow: (key, value) pairs
        values = arr.to_pylist()
    return values


def _csv_column(arr: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A column pyarrow's CSV writer can write: nested -> JSON text, binary -> base64, uuid -> text."""
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if isinstance(t, pa.BaseExtensionType):   # uuid -> its text form; others -> JSON of the Python value
        return pa.array([None if v is None else str(v) if isinstance(v, (str, uuid.UUID)) else
                         json.dumps(v, default=json_value) for v in _pylist(arr)], pa.string())
    if pa.types.is_nested(t):
        return pa.array([None if v is None else json.dumps(v, default=json_value) for v in _pylist(arr)],
                        pa.string())
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) \
            or pa.types.is_binary_view(t):
        return pa.array([None if v is None else base64.b64encode(v).decode("ascii") for v in arr.to_pylist()],
                        pa.string())
    return arr


def _write_csv(batches: Iterable[pa.RecordBatch], schema: pa.Schema, sink: TextIO) -> int:
    """CSV with LF line endings, a plain header, fields quoted only when needed."""
    import csv

    import pyarrow.csv as pacsv

    csv.writer(sink, lineterminator="\n").writerow(schema.names)
    opts = pacsv.WriteOptions(include_header=False, quoting_style="needed")
    n = 0
    for b in batches:
        out = pa.RecordBatch.from_arrays([_csv_column(c) for c in b.columns], names=schema.names)
        buf = pa.BufferOutputStream()
        pacsv.write_csv(out, buf, opts)
        sink.write(buf.getvalue().to_pybytes().decode("utf-8"))
        n += b.num_rows
    return n


def _write_json(batches: Iterable[pa.RecordBatch], sink: TextIO) -> int:
    n = 0
    for b in batches:
        names = b.schema.names
        cols = [_pylist(c) for c in b.columns]
        for row in zip(*cols):
            sink.write(json.dumps(dict(zip(names, row)), default=json_value) + "\n")
        n += b.num_rows
    return n


def write(batches: Iterable[pa.RecordBatch], schema: pa.Schema, fmt: str, output: str | None,
          max_rows: int) -> int:
    """Write ``batches`` in ``fmt`` to ``output`` (stdout when None); returns the number of rows."""
    if fmt == "table":
        table = pa.Table.from_batches(list(batches), schema=schema)
        text = render_table(table, max_rows)
        if output:
            Path(output).write_text(text + "\n")
        else:
            print(text)
        rows: int = table.num_rows
        return rows
    if fmt in _BINARY_FILE_FORMATS and not output:
        raise InvalidArgumentError(f"{fmt} output needs --output FILE")
    n = 0
    if fmt == "parquet":
        import pyarrow.parquet as pq
        with pq.ParquetWriter(output, schema) as w:
            for b in batches:
                w.write_batch(b)
                n += b.num_rows
        return n
    if fmt == "arrow":
        with pa.OSFile(output, "wb") as f, pa.ipc.new_file(f, schema) as w:
            for b in batches:
                w.write_batch(b)
                n += b.num_rows
        return n
    if fmt not in ("csv", "json"):
        raise InvalidArgumentError(f"unknown output format {fmt!r} (known: {', '.join(FORMATS)})")
    sink = open(output, "w", newline="", encoding="utf-8") if output else sys.stdout
    try:
        return _write_csv(batches, schema, sink) if fmt == "csv" else _write_json(batches, sink)
    finally:
        if output:
            sink.close()
