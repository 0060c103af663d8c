"""The lance-duck CLI, run as a process of its own: outputs equal pylance's answers; exit codes."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow.parquet as pq

from ..cli_runner import run_cli

ROOT = Path(__file__).resolve().parents[2]


def run(*args, cwd=ROOT):
    """``python -m lance_duck ARGS`` in a process of its own (forked from a warm one: tests/cli_runner.py)."""
    return run_cli(*args, cwd=cwd)


def _pl(uri, **kw):
    import lance
    return lance.dataset(uri, **kw)


def test_scan_to_csv_equals_pylance(history):
    r = run("scan", history, "--columns", "id,name", "--filter", "id < 30 AND name IS NOT NULL",
            "--version", "3", "--format", "csv")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    exp = _pl(history, version=3).to_table(columns=["id", "name"], filter="id < 30 AND name IS NOT NULL")
    assert [(int(x["id"]), x["name"]) for x in rows] == list(zip(exp["id"].to_pylist(), exp["name"].to_pylist()))


def test_scan_to_parquet_file_equals_pylance(history, tmp_path):
    out = tmp_path / "o.parquet"
    r = run("scan", history, "--columns", "id", "--limit", "17", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert pq.read_table(out)["id"].to_pylist() == _pl(history).to_table(columns=["id"], limit=17)["id"].to_pylist()
    assert r.stderr == ""  # no progress bar when stderr is not a terminal


def test_sql_json_output_and_table_rendering(history):
    r = run("sql", f"SELECT count(*) AS n FROM '{history}' AT (VERSION => 2)", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"n": _pl(history, version=2).count_rows()}
    r = run("sql", f"SELECT id FROM '{history}' AT (VERSION => 1) ORDER BY id LIMIT 3")
    assert r.returncode == 0 and "│ id" in r.stdout and "3 rows" in r.stdout


def test_versions_and_tags_list_what_pylance_lists(history):
    r = run("versions", history, "--format", "json")
    assert r.returncode == 0, r.stderr
    got = [json.loads(l) for l in r.stdout.splitlines()]
    assert [g["version"] for g in got] == [v["version"] for v in _pl(history).versions()]
    assert [g for g in got if g["tags"] == ["cleaned"]][0]["version"] == 3
    r = run("tags", history, "--format", "json")
    assert [json.loads(l) for l in r.stdout.splitlines()] == [{"tag": "cleaned", "version": 3}]


def test_describe_reports_fragments_and_deletions_like_pylance(history):
    r = run("describe", history, "--version", "3", "--format", "json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    ds = _pl(history, version=3)
    frags = ds.get_fragments()
    assert info["version"] == 3 and info["fragments"] == len(frags)
    assert info["rows"] == ds.count_rows()
    assert info["deleted_rows"] == sum(f.metadata.deletion_file.num_deleted_rows for f in frags
                                       if f.metadata.deletion_file is not None)
    assert info["data_storage_version"] == ds.data_storage_version
    assert [f["name"] for f in info["schema"]] == ds.schema.names


def test_errors_exit_1_with_one_line_and_usage_exits_2(history, tmp_path):
    r = run("scan", str(tmp_path / "missing.lance"))
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "missing.lance" in r.stderr
    r = run("scan", history, "--version", "99")
    assert r.returncode == 1 and "99" in r.stderr and "Traceback" not in r.stderr
    r = run("scan", history, "--filter", "nope = 1")
    assert r.returncode == 1 and "nope" in r.stderr
    r = run("sql", "SELECT * FROM no_such_table")
    assert r.returncode == 1 and "no_such_table" in r.stderr
    assert run("frobnicate").returncode == 2
    assert run("scan").returncode == 2


def test_demo_runs_every_example(tmp_path):
    r = run("demo", cwd=tmp_path)  # works from any directory
    assert r.returncode == 0, r.stderr
    examples = sorted(p.name for p in (ROOT / "sql_examples").glob("*.sql"))
    sections = [l[4:] for l in r.stdout.splitlines() if l.startswith("=== ")]
    assert sections[0].startswith("table ") and sections[1] == "versions and tags"
    assert sections[2:] == examples


def test_demo_over_a_user_table_counts_every_version_like_pylance(history):
    r = run("demo", history)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    block = out[out.index("=== live rows per version"):out.index("=== first rows")]
    got = {}
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if len(cells) == 2 and cells[0].isdigit():
            got[int(cells[0])] = int(cells[1])
    ds = _pl(history)
    assert got == {v["version"]: _pl(history, version=v["version"]).count_rows() for v in ds.versions()}
