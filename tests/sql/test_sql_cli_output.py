"""The lance-duck CLI as a user runs it (a subprocess): ``--version``, the output format chosen by the
file's extension, CSV / JSON renderings of typed and nested values, typed ``versions`` output, and what
it prints after writing a file. Every value is checked against pylance's reading of the same table."""
from __future__ import annotations

import base64
import csv
import datetime as dt
import decimal
import io
import json
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import lance_duck

from ..cli_runner import run_cli

ROOT = Path(__file__).resolve().parents[2]


def run(*args, cwd=ROOT, text=True):
    """``python -m lance_duck ARGS`` in a process of its own (forked from a warm one: tests/cli_runner.py)."""
    return run_cli(*args, cwd=cwd, text=text)


def _pl(uri, **kw):
    import lance
    return lance.dataset(uri, **kw)


@pytest.fixture(scope="module")
def typed_table(tmp_path_factory):
    """Nested, binary, decimal, zoned-timestamp columns; strings that need CSV quoting; nulls."""
    import lance
    uri = str(tmp_path_factory.mktemp("cli_out") / "typed.lance")
    utc = dt.timezone.utc
    t = pa.table({
        "id": pa.array([1, 2, 3], pa.int64()),
        "text": pa.array(['plain', 'a "quoted", comma\nand newline', None]),
        "ts": pa.array([dt.datetime(2025, 1, 1, 1, 10, tzinfo=utc), None,
                        dt.datetime(2025, 6, 30, 23, 59, 59, 123456, tzinfo=utc)], pa.timestamp("us", "UTC")),
        "amount": pa.array([decimal.Decimal("1.20"), decimal.Decimal("-3.05"), None], pa.decimal128(10, 2)),
        "flag": pa.array([True, None, False]),
        "s": pa.array([{"a": 1, "b": "x"}, None, {"a": None, "b": "z"}],
                      pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "l": pa.array([[1, 2], [], None], pa.list_(pa.int64())),
        "m": pa.array([[("k", 1)], None, [("a", 2), ("b", 3)]], pa.map_(pa.string(), pa.int64())),
        "bin": pa.array([b"\x00\xff", None, b"ok"]),
        "u": pa.array([uuid.UUID(int=1), uuid.UUID(int=2**128 - 1), None], pa.uuid()),
    })
    lance.write_dataset(t, uri)
    return uri


def test_version_flag_prints_the_package_version():
    r = run("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"lance-duck {lance_duck.__version__}\n"


def _read_back(path: Path, fmt: str) -> pa.Table:
    if fmt == "parquet":
        return pq.read_table(path)
    if fmt == "arrow":
        return feather.read_table(path)   # Feather v2 is the Arrow IPC file format
    if fmt == "csv":
        assert b"\r" not in path.read_bytes()
        return pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(strings_can_be_null=True))
    return pa.Table.from_pylist([json.loads(l) for l in path.read_text().splitlines()])


@pytest.mark.parametrize("ext,fmt", [(".parquet", "parquet"), (".arrow", "arrow"), (".feather", "arrow"),
                                     (".csv", "csv"), (".json", "json"), (".jsonl", "json")])
def test_scan_output_format_follows_the_extension_and_reports_rows_written(history, tmp_path, ext, fmt):
    out = tmp_path / f"rows{ext}"
    r = run("scan", history, "--columns", "id,name", "--filter", "id < 60", "-o", str(out))
    assert r.returncode == 0, r.stderr
    exp = _pl(history).to_table(columns=["id", "name"], filter="id < 60")
    assert r.stdout == f"wrote {exp.num_rows} rows to {out} ({fmt})\n"
    got = _read_back(out, fmt)
    assert got.column_names == ["id", "name"]
    assert got["id"].to_pylist() == exp["id"].to_pylist()
    assert got["name"].to_pylist() == exp["name"].to_pylist()
    if fmt in ("parquet", "arrow"):
        assert got.schema == exp.schema


def test_scan_refuses_an_output_extension_it_cannot_map(history, tmp_path):
    out = tmp_path / "rows.xyz"
    r = run("scan", history, "--columns", "id", "-o", str(out))
    assert r.returncode == 1
    assert ".xyz" in r.stderr and "--format" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()
    r = run("scan", history, "--columns", "id", "-o", str(out), "--format", "csv")   # explicit: allowed
    assert r.returncode == 0, r.stderr
    assert out.read_text().splitlines()[1:] == [str(i) for i in _pl(history).to_table(columns=["id"])["id"].to_pylist()]


def test_sql_output_file_reports_rows_written(history, tmp_path):
    out = tmp_path / "q.parquet"
    r = run("sql", f"SELECT id FROM '{history}' AT (VERSION => 2) WHERE id % 2 = 0", "-o", str(out))
    assert r.returncode == 0, r.stderr
    exp = [i for i in _pl(history, version=2).to_table(columns=["id"])["id"].to_pylist() if i % 2 == 0]
    assert r.stdout == f"wrote {len(exp)} rows to {out} (parquet)\n"
    assert sorted(pq.read_table(out)["id"].to_pylist()) == exp


def _expected_rows(uri):
    t = _pl(uri).to_table()
    return [dict(r, m=None if r["m"] is None else dict(r["m"])) for r in t.to_pylist()]


def test_csv_has_lf_endings_a_plain_header_and_json_for_nested_values(typed_table):
    r = run("scan", typed_table, "--format", "csv", text=False)
    assert r.returncode == 0, r.stderr
    assert b"\r\n" not in r.stdout.replace(b'comma\nand', b"")
    text = r.stdout.decode()
    assert text.splitlines()[0] == "id,text,ts,amount,flag,s,l,m,bin,u"
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    exp = _expected_rows(typed_table)
    assert len(rows) == len(exp) == 3
    for got, want in zip(rows, exp):
        assert int(got["id"]) == want["id"]
        assert got["text"] == (want["text"] or "")
        assert (dt.datetime.fromisoformat(got["ts"].replace("Z", "+00:00")) if got["ts"] else None) == want["ts"]
        assert (decimal.Decimal(got["amount"]) if got["amount"] else None) == want["amount"]
        assert {"true": True, "false": False, "": None}[got["flag"]] == want["flag"]
        for col in ("s", "l", "m"):
            assert (json.loads(got[col]) if got[col] else None) == want[col], col
        assert (base64.b64decode(got["bin"]) if got["bin"] else None) == want["bin"]
        assert (uuid.UUID(got["u"]) if got["u"] else None) == want["u"]


def test_json_lines_keep_values_typed(typed_table):
    r = run("scan", typed_table, "--format", "json")
    assert r.returncode == 0, r.stderr
    got = [json.loads(l) for l in r.stdout.splitlines()]
    exp = _expected_rows(typed_table)
    assert len(got) == len(exp) == 3
    for g, w in zip(got, exp):
        assert (g["id"], g["text"], g["flag"], g["s"], g["l"], g["m"]) == \
            (w["id"], w["text"], w["flag"], w["s"], w["l"], w["m"])
        assert (dt.datetime.fromisoformat(g["ts"]) if g["ts"] else None) == w["ts"]
        assert (decimal.Decimal(g["amount"]) if g["amount"] else None) == w["amount"]
        assert (base64.b64decode(g["bin"]) if g["bin"] else None) == w["bin"]
        assert (uuid.UUID(g["u"]) if g["u"] else None) == w["u"]


def test_versions_json_has_typed_tags_current_flag_and_zoned_timestamps(history):
    r = run("versions", history, "--format", "json")
    assert r.returncode == 0, r.stderr
    got = [json.loads(l) for l in r.stdout.splitlines()]
    ds = _pl(history)
    tags = ds.tags.list()
    assert [g["version"] for g in got] == [v["version"] for v in ds.versions()]
    for g, v in zip(got, ds.versions()):
        assert g["tags"] == sorted(n for n, t in tags.items() if t["version"] == v["version"])
        assert g["current"] is (v["version"] == ds.version)
        ts = dt.datetime.fromisoformat(g["timestamp"])
        assert ts.utcoffset() == dt.timedelta(0)
        assert ts == v["timestamp"].astimezone(dt.timezone.utc)   # pylance's naive local time
        assert g["rows"] == _pl(history, version=v["version"]).count_rows()
    assert any(g["tags"] == ["cleaned"] for g in got)


def test_versions_table_and_demo_show_timestamps_with_their_zone(history):
    r = run("versions", history)
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stdout.splitlines() if l.startswith("│") and l.split("│")[1].strip().isdigit()]
    assert len(lines) == len(_pl(history).versions())
    assert all("+00:00" in l for l in lines)
    r = run("demo", history)
    assert r.returncode == 0, r.stderr
    block = r.stdout[r.stdout.index("=== versions and tags"):r.stdout.index("=== live rows per version")]
    assert block.count("+00:00") == len(_pl(history).versions())
