"""``lance-duck``: query and inspect Lance tables from the shell.

Exit codes: 0 success, 1 an error (one line on stderr; ``--debug`` prints the traceback), 2 bad usage.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import pyarrow as pa

from ..._version import __version__
from ..._sample import QUERY_TABLE_PATH, TABLE as SAMPLE_TABLE, queries as _sample_queries
from ...errors import InvalidArgumentError, LanceDuckError
from .output import FORMATS, format_for, json_value, write
from .render import render_table

if TYPE_CHECKING:
    from ...scan.dataset import LanceDataset

SAMPLE_URI = QUERY_TABLE_PATH   # how the example queries name the sample table


# -- helpers ------------------------------------------------------------------------------------
def _version(v: str | None) -> int | str | None:
    if v is None:
        return None
    return int(v) if v.isdigit() else v


def storage_options(pairs: Sequence[str] | None) -> dict[str, str] | None:
    """``--storage-option KEY=VALUE`` (repeatable) as a dict; ``None`` when none was given."""
    if not pairs:
        return None
    opts: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidArgumentError(f"--storage-option {pair!r}: expected KEY=VALUE")
        opts[key.strip()] = value
    return opts


def _open(args: argparse.Namespace) -> LanceDataset:
    from ...scan.dataset import dataset
    return dataset(args.uri, _version(getattr(args, "version", None)), getattr(args, "asof", None),
                   branch=getattr(args, "branch", None),
                   storage_options=storage_options(getattr(args, "storage_option", None)))


def _check_output(args: argparse.Namespace) -> None:
    """Refuse to replace an existing output file unless ``--overwrite`` says so (before any read)."""
    out = getattr(args, "output", None)
    if out and os.path.exists(out) and not getattr(args, "overwrite", False):
        raise InvalidArgumentError(f"{out} exists; pass --overwrite to replace it")


def _report_written(n: int, fmt: str, output: str | None) -> None:
    """After writing to a file, say how many rows went where (the terminal shows nothing else)."""
    if output:
        print(f"wrote {n:,} row{'s' if n != 1 else ''} to {output} ({fmt})")


class _Progress:
    """A progress bar on stderr (tqdm) while rows are written to a file, only when stderr is a terminal.

    Shows rows written, the rate, the ETA when the row count is known, and the output file's size."""

    def __init__(self, total: int | None, output: str | None):
        self.total, self.output = total, output
        self.enabled = output is not None and sys.stderr.isatty()

    def wrap(self, batches: Iterable[pa.RecordBatch]) -> Iterable[pa.RecordBatch]:
        if not self.enabled:
            yield from batches
            return
        import shutil

        from tqdm import tqdm  # type: ignore[import-untyped]  # tqdm ships no type information
        size = shutil.get_terminal_size()     # 80 x 24 when the terminal does not say (tqdm would draw nothing)
        with tqdm(total=self.total, unit=" rows", unit_scale=True, file=sys.stderr, leave=False,
                  ncols=size.columns, nrows=size.lines, desc=os.path.basename(self.output or "")) as bar:
            for b in batches:
                yield b          # written by the consumer before the next batch is asked for
                bar.set_postfix_str(f"{_size(self.output)} written", refresh=False)   # drawn by the update
                bar.update(b.num_rows)


def _size(path: str | None) -> str:
    try:
        n = float(os.path.getsize(path)) if path else 0.0
    except OSError:
        return "0 B"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _batches_of(rel_or_reader: pa.RecordBatchReader) -> tuple[pa.Schema, Iterable[pa.RecordBatch]]:
    reader = rel_or_reader
    return reader.schema, iter(reader)


# -- commands -----------------------------------------------------------------------------------
def cmd_sql(args: argparse.Namespace) -> int:
    from ..duckdb import sql
    query = args.query
    if args.file:
        query = Path(args.file).read_text()
    if not query:
        raise LanceDuckError("give a query, or --file FILE")
    _check_output(args)
    rel = sql(query, storage_options=storage_options(args.storage_option))
    if rel is None:      # a statement without a result (CREATE TABLE ... AS): it has run
        return 0
    reader = rel.arrow() if not hasattr(rel, "fetch_record_batch") else rel.fetch_record_batch()
    if isinstance(reader, pa.Table):
        reader = reader.to_reader()
    schema, batches = _batches_of(reader)
    fmt = format_for(args.output, args.format)
    progress = _Progress(None, args.output)
    _report_written(write(progress.wrap(batches), schema, fmt, args.output, args.max_rows), fmt, args.output)
    return 0


def cmd_scan(args: argparse.Namespace) -> int:
    fmt = format_for(args.output, args.format)
    _check_output(args)
    ds = _open(args)
    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    scanner = ds.scanner(columns=columns, filter=args.filter, limit=args.limit)
    total = ds.count_rows() if args.filter is None else None
    if args.limit is not None and total is not None:
        total = min(total, args.limit)
    reader = scanner.to_reader()
    progress = _Progress(total, args.output)
    n = write(progress.wrap(reader), reader.schema, fmt, args.output, args.max_rows)
    _report_written(n, fmt, args.output)
    return 0


def _utc(ts: datetime) -> datetime:
    """A version timestamp as UTC (``versions()`` gives pylance's naive local time)."""
    return ts.astimezone(timezone.utc)


def cmd_versions(args: argparse.Namespace) -> int:
    ds = _open(args)
    tags_by_version: dict[int, list[str]] = {}
    for name, t in ds.tags.list().items():
        tags_by_version.setdefault(int(t["version"]), []).append(name)
    rows = []
    for v in ds.versions():
        total = (v.get("metadata") or {}).get("total_rows")
        rows.append({"version": v["version"], "timestamp": _utc(v["timestamp"]),
                     "rows": None if total is None else int(total),
                     "tags": sorted(tags_by_version.get(v["version"], [])),
                     "current": v["version"] == ds.version})
    table = pa.Table.from_pylist(rows, schema=pa.schema([
        ("version", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC")), ("rows", pa.int64()),
        ("tags", pa.list_(pa.string())), ("current", pa.bool_())]))
    write(table.to_batches(), table.schema, format_for(None, args.format), None, 10**9)
    return 0


def cmd_tags(args: argparse.Namespace) -> int:
    tags = _open(args).tags.list()
    rows = [{"tag": k, "version": int(v["version"])} for k, v in sorted(tags.items())]
    table = pa.Table.from_pylist(rows, schema=pa.schema([("tag", pa.string()), ("version", pa.int64())]))
    write(table.to_batches(), table.schema, format_for(None, args.format), None, 10**9)
    return 0


def describe_dataset(ds: LanceDataset) -> dict[str, Any]:
    """The facts ``describe`` prints: version, format, schema, fragments, deletions, sizes, indices."""
    from ...scan.dataset import LanceDataset, data_file_bytes   # (lazy, as _open: `--version` stays light)
    frags = ds.get_fragments()
    size = data_file_bytes(ds) if isinstance(ds, LanceDataset) else None
    physical = sum(f.physical_rows for f in frags)
    deleted = sum(f.num_deletions for f in frags)
    return {
        "uri": ds.uri, "version": ds.version, "latest_version": ds.latest_version,
        "data_storage_version": ds.data_storage_version, "fragments": len(frags),
        "physical_rows": physical, "deleted_rows": deleted, "rows": physical - deleted,
        "fragments_with_deletions": sum(1 for f in frags if f.num_deletions),
        "data_file_bytes": size,
        "schema": [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in ds.schema],
        "indices": [{"name": d.name, "type": d.index_type, "fields": ", ".join(d.field_names),
                     "segments": d.num_segments, "rows_indexed": d.num_rows_indexed}
                    for d in (ds.describe_indices() if hasattr(ds, "describe_indices") else [])],
    }


def cmd_describe(args: argparse.Namespace) -> int:
    info = describe_dataset(_open(args))
    if args.format == "json":
        print(json.dumps(info, indent=2, default=json_value))
        return 0
    for k, v in info.items():
        if k not in ("schema", "indices"):
            print(f"{k + ':':<26}{'unknown' if v is None else v}")
    print("schema:")
    schema = pa.Table.from_pylist(info["schema"], schema=pa.schema(
        [("name", pa.string()), ("type", pa.string()), ("nullable", pa.bool_())]))
    print(render_table(schema, 10**9))
    if info["indices"]:
        print("indices:")
        indices = pa.Table.from_pylist(info["indices"], schema=pa.schema(
            [("name", pa.string()), ("type", pa.string()), ("fields", pa.string()),
             ("segments", pa.int64()), ("rows_indexed", pa.int64())]))
        print(render_table(indices, 10**9))
    return 0


def example_queries(table: str | None = None) -> list[tuple[str, str]]:
    """(file name, SQL) for each example query, the sample table's path replaced by ``table``.

    The queries and the sample table ship inside the package (``lance_duck/_sample``), so this works
    from an installed wheel as well as from a source checkout, whatever the current directory.
    """
    target = (table or str(SAMPLE_TABLE)).replace("'", "''")
    return [(p.name, p.read_text().replace(SAMPLE_URI, target)) for p in _sample_queries()]


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
    from ..duckdb import sql
    comment = "\n".join(l[2:].strip() for l in query.splitlines() if l.startswith("--"))
    print(f"=== {name}")
    if comment:
        print(comment)
    rel = sql(query)
    if rel is None:
        raise LanceDuckError(f"{name}: the query returns no result")
    t = rel.arrow()
    t = t.read_all() if hasattr(t, "read_all") else t
    print(render_table(t, max_rows))
    print()


def cmd_demo(args: argparse.Namespace) -> int:
    """Describe the table, list its versions and tags, then run SQL with time travel over it."""
    from ...scan.dataset import dataset
    uri = args.table or str(SAMPLE_TABLE)
    ds = dataset(uri)
    print(f"=== table {uri}")
    cmd_describe(argparse.Namespace(uri=uri, version=None, tag=None, branch=None, asof=None, format=None))
    print("\n=== versions and tags")
    cmd_versions(argparse.Namespace(uri=uri, format=None, storage_option=None))
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
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("--debug", action="store_true", help="on an error, print the whole traceback")
    sub = p.add_subparsers(dest="command", required=True)

    def store_opts(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--storage-option", "-s", action="append", metavar="KEY=VALUE",
                        help="an object-store option (repeatable; pylance's keys, e.g. aws_region=eu-west-1, or "
                             "fsspec's); credentials also come from the usual environment (AWS_*, ...)")

    def out_opts(sp: argparse.ArgumentParser, formats: Sequence[str] = FORMATS) -> None:
        sp.add_argument("--format", choices=formats,
                        help="output format (default: table, or from --output's extension: .csv, .json/.jsonl, "
                             ".parquet, .arrow/.feather)")
        sp.add_argument("--output", "-o", help="write to this file instead of the terminal")
        sp.add_argument("--max-rows", type=int, default=40, help="rows shown in table output (default 40)")
        sp.add_argument("--overwrite", action="store_true", help="replace --output if it exists")

    def ref_opts(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("uri", help="table location (path or URL)")
        sp.add_argument("--version", "-v", help="version number or tag name")
        sp.add_argument("--asof", help="the version current at this time (ISO 8601)")
        sp.add_argument("--branch", help="branch name")
        store_opts(sp)

    s = sub.add_parser("sql", help="run DuckDB SQL; FROM 'x.lance' AT (VERSION => 3) etc. are understood")
    s.add_argument("query", nargs="?", help="the SQL text")
    s.add_argument("--file", "-f", help="read the SQL from this file")
    out_opts(s)
    store_opts(s)
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
    store_opts(s)
    s.add_argument("--format", choices=("table", "csv", "json"))
    s.set_defaults(func=cmd_versions)

    s = sub.add_parser("tags", help="list tags")
    s.add_argument("uri")
    store_opts(s)
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
        code: int = args.func(args)
        return code
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("lance-duck: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - every error is one line; --debug shows the traceback
        if args.debug:
            raise
        print(f"lance-duck: error: {one_line(e)}", file=sys.stderr)
        return 1


def one_line(e: BaseException) -> str:
    """An error as one line: the message's first line; the type's name too when it is not ours."""
    import duckdb
    text = (str(e).strip().splitlines() or [""])[0]
    if isinstance(e, (LanceDuckError, OSError, pa.ArrowException, duckdb.Error)):
        return text or type(e).__name__
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
