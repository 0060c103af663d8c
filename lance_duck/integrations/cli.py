"""``lance-duck``: query and inspect Lance tables from the shell.

Exit codes: 0 success, 1 a lance_duck / I/O / SQL error (one line on stderr), 2 bad usage.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Iterable, Sequence

import pyarrow as pa

from ..errors import LanceDuckError
from .render import render_table

FORMATS = ("table", "csv", "json", "parquet")
SAMPLE_URI = "sql_examples/data/sample.lance"


# -- helpers ------------------------------------------------------------------------------------
def _version(v: str | None):
    if v is None:
        return None
    return int(v) if v.isdigit() else v


def _open(args):
    from ..scan.dataset import dataset
    return dataset(args.uri, _version(getattr(args, "version", None)), getattr(args, "asof", None),
                   branch=getattr(args, "branch", None))


def _format_for(path: str | None, fmt: str | None) -> str:
    if fmt:
        return fmt
    if path:
        ext = Path(path).suffix.lower().lstrip(".")
        return {"csv": "csv", "json": "json", "jsonl": "json", "ndjson": "json", "parquet": "parquet",
                "pq": "parquet"}.get(ext, "csv")
    return "table"


def _json_default(o):
    return str(o)


def _write(batches: Iterable[pa.RecordBatch], schema: pa.Schema, fmt: str, output: str | None,
           max_rows: int) -> int:
    """Write batches in ``fmt`` to ``output`` (stdout when None); returns the row count."""
    n = 0
    if fmt == "table":
        table = pa.Table.from_batches(list(batches), schema=schema)
        text = render_table(table, max_rows)
        if output:
            Path(output).write_text(text + "\n")
        else:
            print(text)
        return table.num_rows
    if fmt == "parquet":
        import pyarrow.parquet as pq
        if not output:
            raise LanceDuckError("parquet output needs --output FILE")
        with pq.ParquetWriter(output, schema) as w:
            for b in batches:
                w.write_batch(b)
                n += b.num_rows
        return n
    sink = open(output, "w", newline="") if output else sys.stdout
    try:
        if fmt == "csv":
            import csv
            w = csv.writer(sink)
            w.writerow(schema.names)
            for b in batches:
                for row in b.to_pylist():
                    w.writerow(["" if row[c] is None else row[c] for c in schema.names])
                n += b.num_rows
        else:  # json lines
            for b in batches:
                for row in b.to_pylist():
                    sink.write(json.dumps(row, default=_json_default) + "\n")
                n += b.num_rows
    finally:
        if output:
            sink.close()
    return n


class _Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, total: int | None, enabled: bool):
        self.total, self.done = total, 0
        self.enabled = enabled and sys.stderr.isatty()

    def wrap(self, batches: Iterable[pa.RecordBatch]) -> Iterable[pa.RecordBatch]:
        for b in batches:
            self.done += b.num_rows
            self._draw()
            yield b
        if self.enabled:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()

    def _draw(self) -> None:
        if not self.enabled:
            return
        if self.total:
            frac = min(1.0, self.done / self.total)
            bar = "█" * int(frac * 30)
            sys.stderr.write(f"\r[{bar:<30}] {self.done:,}/{self.total:,} rows")
        else:
            sys.stderr.write(f"\r{self.done:,} rows")
        sys.stderr.flush()


def _batches_of(rel_or_reader) -> tuple[pa.Schema, Iterable[pa.RecordBatch]]:
    reader = rel_or_reader
    return reader.schema, iter(reader)


# -- commands -----------------------------------------------------------------------------------
def cmd_sql(args) -> int:
    from .duckdb import sql
    query = args.query
    if args.file:
        query = Path(args.file).read_text()
    if not query:
        raise LanceDuckError("give a query, or --file FILE")
    rel = sql(query)
    reader = rel.arrow() if not hasattr(rel, "fetch_record_batch") else rel.fetch_record_batch()
    if isinstance(reader, pa.Table):
        reader = reader.to_reader()
    schema, batches = _batches_of(reader)
    _write(batches, schema, _format_for(args.output, args.format), args.output, args.max_rows)
    return 0


def cmd_scan(args) -> int:
    ds = _open(args)
    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    scanner = ds.scanner(columns=columns, filter=args.filter, limit=args.limit)
    total = ds.count_rows() if args.filter is None else None
    if args.limit is not None and total is not None:
        total = min(total, args.limit)
    reader = scanner.to_reader()
    progress = _Progress(total, enabled=args.output is not None or args.format not in (None, "table"))
    _write(progress.wrap(reader), reader.schema, _format_for(args.output, args.format), args.output,
           args.max_rows)
    return 0


def cmd_versions(args) -> int:
    from ..scan.dataset import dataset
    ds = dataset(args.uri)
    tags_by_version: dict[int, list[str]] = {}
    for name, t in ds.tags.list().items():
        tags_by_version.setdefault(int(t["version"]), []).append(name)
    rows = [{"version": v["version"], "timestamp": str(v["timestamp"]),
             "rows": int(v.get("metadata", {}).get("total_rows", 0) or 0)
             if v.get("metadata", {}).get("total_rows") is not None else None,
             "tags": ", ".join(sorted(tags_by_version.get(v["version"], []))),
             "current": "*" if v["version"] == ds.version else ""} for v in ds.versions()]
    table = pa.Table.from_pylist(rows, schema=pa.schema([("version", pa.int64()), ("timestamp", pa.string()),
                                                         ("rows", pa.int64()), ("tags", pa.string()),
                                                         ("current", pa.string())]))
    _write(table.to_batches(), table.schema, _format_for(None, args.format), None, 10**9)
    return 0


def cmd_tags(args) -> int:
    from ..scan.dataset import dataset
    tags = dataset(args.uri).tags.list()
    rows = [{"tag": k, "version": int(v["version"])} for k, v in sorted(tags.items())]
    table = pa.Table.from_pylist(rows, schema=pa.schema([("tag", pa.string()), ("version", pa.int64())]))
    _write(table.to_batches(), table.schema, _format_for(None, args.format), None, 10**9)
    return 0


def describe_dataset(ds) -> dict:
    """The facts ``describe`` prints: version, format, schema, fragments, deletions, sizes."""
    frags = ds.get_fragments()
    snap = getattr(ds, "_snapshot", None)
    size = None
    if snap is not None:
        sizes = [f.size for fi in snap.fragments for f in fi.files]
        size = sum(s for s in sizes if s) if all(sizes) else None
    physical = sum(f.physical_rows for f in frags)
    deleted = sum(f.num_deletions for f in frags)
    return {
        "uri": ds.uri, "version": ds.version, "latest_version": ds.latest_version,
        "data_storage_version": ds.data_storage_version, "fragments": len(frags),
        "physical_rows": physical, "deleted_rows": deleted, "rows": physical - deleted,
        "fragments_with_deletions": sum(1 for f in frags if f.num_deletions),
        "data_file_bytes": size,
        "schema": [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in ds.schema],
    }


def cmd_describe(args) -> int:
    info = describe_dataset(_open(args))
    if args.format == "json":
        print(json.dumps(info, indent=2, default=_json_default))
        return 0
    for k, v in info.items():
        if k != "schema":
            print(f"{k + ':':<26}{'unknown' if v is None else v}")
    print("schema:")
    schema = pa.Table.from_pylist(info["schema"], schema=pa.schema(
        [("name", pa.string()), ("type", pa.string()), ("nullable", pa.bool_())]))
    print(render_table(schema, 10**9))
    return 0


def examples_dir() -> Path:
    """sql_examples/ of a source checkout (the demo's queries)."""
    here = Path(__file__).resolve().parents[2] / "sql_examples"
    return here if here.is_dir() else Path.cwd() / "sql_examples"


def example_queries(table: str | None = None) -> list[tuple[str, str]]:
    """(file name, SQL) for each example, with the sample table path replaced by ``table``."""
    d = examples_dir()
    if not d.is_dir():
        raise LanceDuckError(f"no sql_examples directory found (looked in {d})")
    target = table or str(d / "data" / "sample.lance")
    out = []
    for p in sorted(d.glob("*.sql")):
        out.append((p.name, p.read_text().replace(SAMPLE_URI, target)))
    return out


def generic_demo_queries(uri: str, versions: list[int]) -> list[tuple[str, str]]:
    """Time-travel queries that work on any table: live rows per version, and a first look."""
    quoted = uri.replace("'", "''")
    per_version = "\nUNION ALL\n".join(
        f"SELECT {v} AS version, count(*) AS live_rows FROM '{quoted}' AT (VERSION => {v})" for v in versions)
    return [
        ("live rows per version", f"-- Live rows at every version (time travel with AT (VERSION => n)).\n"
                                  f"{per_version}\nORDER BY version"),
        ("first rows", f"-- The first rows of the latest version.\nSELECT * FROM '{quoted}' LIMIT 5"),
    ]


def _print_query(name: str, query: str, max_rows: int) -> None:
    from .duckdb import sql
    comment = "\n".join(l[2:].strip() for l in query.splitlines() if l.startswith("--"))
    print(f"=== {name}")
    if comment:
        print(comment)
    t = sql(query).arrow()
    t = t.read_all() if hasattr(t, "read_all") else t
    print(render_table(t, max_rows))
    print()


def cmd_demo(args) -> int:
    """Describe the table, list its versions and tags, then run SQL with time travel over it."""
    from ..scan.dataset import dataset
    uri = args.table or str(examples_dir() / "data" / "sample.lance")
    ds = dataset(uri)
    print(f"=== table {uri}")
    cmd_describe(argparse.Namespace(uri=uri, version=None, tag=None, branch=None, asof=None, format=None))
    print("\n=== versions and tags")
    cmd_versions(argparse.Namespace(uri=uri, format=None))
    print()
    if args.table is None:
        queries = example_queries()
    else:
        queries = generic_demo_queries(uri, [v["version"] for v in ds.versions()][-8:])
    for name, query in queries:
        _print_query(name, query, args.max_rows)
    return 0


# -- entry point --------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lance-duck", description="Query and inspect Lance tables (no pylance needed).")
    sub = p.add_subparsers(dest="command", required=True)

    def out_opts(sp, formats=FORMATS):
        sp.add_argument("--format", choices=formats, help="output format (default: table, or from --output's suffix)")
        sp.add_argument("--output", "-o", help="write to this file instead of the terminal")
        sp.add_argument("--max-rows", type=int, default=40, help="rows shown in table output (default 40)")

    def ref_opts(sp):
        sp.add_argument("uri", help="table location (path or URL)")
        sp.add_argument("--version", "-v", help="version number or tag name")
        sp.add_argument("--asof", help="the version current at this time (ISO 8601)")
        sp.add_argument("--branch", help="branch name")

    s = sub.add_parser("sql", help="run DuckDB SQL; FROM 'x.lance' AT (VERSION => 3) etc. are understood")
    s.add_argument("query", nargs="?", help="the SQL text")
    s.add_argument("--file", "-f", help="read the SQL from this file")
    out_opts(s)
    s.set_defaults(func=cmd_sql)

    s = sub.add_parser("scan", help="read rows (columns, filter, limit) to the terminal or a file")
    ref_opts(s)
    s.add_argument("--columns", "-c", help="comma-separated column names (nested: s.a)")
    s.add_argument("--filter", "-w", help="SQL filter (pylance's dialect)")
    s.add_argument("--limit", "-n", type=int)
    out_opts(s)
    s.set_defaults(func=cmd_scan)

    s = sub.add_parser("versions", help="list versions with timestamps, row counts and tags")
    s.add_argument("uri")
    s.add_argument("--format", choices=("table", "csv", "json"))
    s.set_defaults(func=cmd_versions)

    s = sub.add_parser("tags", help="list tags")
    s.add_argument("uri")
    s.add_argument("--format", choices=("table", "csv", "json"))
    s.set_defaults(func=cmd_tags)

    s = sub.add_parser("describe", help="schema, format version, fragments, deletions, sizes")
    ref_opts(s)
    s.add_argument("--format", choices=("text", "json"), default="text")
    s.set_defaults(func=cmd_describe)

    s = sub.add_parser("demo", help="run every SQL example on the sample table and print the results")
    s.add_argument("table", nargs="?", help="run the examples on this table instead of the sample")
    s.add_argument("--max-rows", type=int, default=20)
    s.set_defaults(func=cmd_demo)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("lance-duck: interrupted", file=sys.stderr)
        return 130
    except (LanceDuckError, FileNotFoundError, PermissionError) as e:
        print(f"lance-duck: error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - DuckDB errors: one line, not a traceback
        import duckdb
        if isinstance(e, duckdb.Error):
            print(f"lance-duck: error: {str(e).splitlines()[0]}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
