"""The CLI on long jobs and on errors: --overwrite, a progress bar only on a terminal, storage options,
one-line errors (--debug for the traceback), and a plain directory named as a table in SQL."""
from __future__ import annotations

import os
import re
import pty
import select
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import lance
import lance_duck

from .test_sql_cli import ROOT, run


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def test_an_existing_output_file_is_refused_without_overwrite(history, tmp_path):
    out = tmp_path / "o.parquet"
    assert run("scan", history, "-o", str(out)).returncode == 0
    before = out.read_bytes()
    r = run("scan", history, "--limit", "3", "-o", str(out))
    assert r.returncode == 1 and "--overwrite" in r.stderr and r.stderr.count("\n") == 1
    assert out.read_bytes() == before
    r = run("sql", f"SELECT id FROM '{history}' LIMIT 2", "-o", str(out))
    assert r.returncode == 1 and "exists" in r.stderr and out.read_bytes() == before
    r = run("scan", history, "--limit", "3", "-o", str(out), "--overwrite")
    assert r.returncode == 0, r.stderr
    assert pq.read_table(out)["id"].to_pylist() == lance.dataset(history).to_table(limit=3)["id"].to_pylist()
    r = run("sql", f"SELECT id FROM '{history}' ORDER BY id LIMIT 2", "-o", str(out), "--overwrite")
    assert r.returncode == 0 and pq.read_table(out)["id"].to_pylist() == [0, 1]


def _run_on_a_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    """Run the CLI with stderr on a pseudo-terminal; (exit code, what the terminal showed)."""
    master, slave = pty.openpty()
    env = dict(_env(), TQDM_MININTERVAL="0")     # tqdm's own setting: draw on every batch, however fast
    proc = subprocess.Popen([sys.executable, "-m", "lance_duck", *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    shown = b""
    poller = select.poll()       # (select.select refuses descriptors above 1023, which a long worker reaches)
    poller.register(master, select.POLLIN)
    while True:
        ready = poller.poll(60_000)
        if not ready:
            proc.kill()
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:      # the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    return proc.wait(timeout=60), shown.decode("utf-8", "replace")


def test_progress_bar_on_a_terminal_shows_rows_and_bytes_written(history, tmp_path):
    out = tmp_path / "p.parquet"
    code, shown = _run_on_a_terminal(["scan", history, "-o", str(out)], tmp_path)
    assert code == 0, shown
    n = lance.dataset(history).count_rows()
    assert re.search(rf"/{n}(\.0)? \[", shown) and "rows/s" in shown and "written" in shown   # of n rows
    assert pq.read_table(out).num_rows == n
    code, shown = _run_on_a_terminal(["sql", f"SELECT id FROM '{history}'", "-o", str(tmp_path / "q.csv")], tmp_path)
    assert code == 0 and "rows" in shown and "written" in shown


def test_no_progress_bar_when_stderr_is_not_a_terminal(history, tmp_path):
    r = run("sql", f"SELECT id FROM '{history}'", "-o", str(tmp_path / "q.csv"))
    assert r.returncode == 0 and r.stderr == ""


def test_storage_option_pairs_reach_the_dataset_and_bad_ones_are_refused(history):
    # keys of another store are ignored for a local path (as pylance does), so the command reads
    r = run("scan", history, "--limit", "2", "--format", "csv", "--storage-option", "aws_region=eu-west-1",
            "-s", "prefetch_bytes=0")
    assert r.returncode == 0, r.stderr
    r = run("scan", history, "--storage-option", "no-equals-sign")
    assert r.returncode == 1 and "KEY=VALUE" in r.stderr
    r = run("scan", history, "--storage-option", "prefetch_bytes=-3")
    assert r.returncode == 1 and "prefetch_bytes" in r.stderr and r.stderr.count("\n") == 1
    r = run("versions", history, "-s", "aws_region=eu-west-1", "--format", "json")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == len(lance.dataset(history).versions())


def test_every_error_is_one_line_and_debug_shows_the_traceback(tmp_path):
    bad = tmp_path / "x.parquet"
    bad.write_text("not parquet")
    r = run("sql", f"SELECT * FROM read_parquet('{bad}')")
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    r = run("--debug", "sql", f"SELECT * FROM read_parquet('{bad}')")
    assert r.returncode == 1 and "Traceback" in r.stderr


def test_sql_names_a_plain_directory_as_not_a_lance_table(tmp_path):
    (tmp_path / "notlance").mkdir()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for q in ("select count(*) from 'notlance'", "select * from 'notlance' limit 1"):
            with pytest.raises(FileNotFoundError, match="Not a Lance table"):
                lance_duck.sql(q).fetchall()
    finally:
        os.chdir(cwd)
    r = run("sql", "select count(*) from 'notlance'", cwd=tmp_path)
    assert r.returncode == 1 and "Not a Lance table" in r.stderr and "pg_tables" not in r.stderr


def test_sql_storage_options_apply_to_references_without_their_own(history):
    got = lance_duck.sql(f"select count(*) from '{history}'", storage_options={"prefetch_bytes": "0"}).fetchall()
    assert got == [(lance.dataset(history).count_rows(),)]
    with pytest.raises(lance_duck.InvalidArgumentError, match="prefetch_bytes"):
        lance_duck.sql(f"select count(*) from '{history}' AT (VERSION => 1)", storage_options={"prefetch_bytes": "x"})
