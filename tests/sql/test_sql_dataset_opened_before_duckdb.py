"""A dataset opened before the process imports DuckDB (opening one does not import it) is still
DuckDB's Arrow source once DuckDB is imported (scan/duckdb_source.py's import hook): ``duckdb.sql``
reads it through ``rows()`` / ``accepts()`` / ``stream()``, with pylance's rows. Subprocesses: the
test process has imported DuckDB already."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import lance
import pytest

import lance_duck

ROOT = os.path.dirname(os.path.dirname(lance_duck.__file__))
SAMPLE = lance_duck.sample_path()
QUERY = "select count(*), sum(order_id) from ds where amount > 400"

PROG = f"""
import json, sys
import lance_duck
from lance_duck.scan.dataset import LanceDataset

calls = []
for name in ("rows", "accepts", "stream"):
    def spy(self, *a, _f=getattr(LanceDataset, name), _n=name):
        calls.append(_n)
        return _f(self, *a)
    setattr(LanceDataset, name, spy)
{{open_before}}
loaded_before = "duckdb" in sys.modules
import duckdb
{{open_after}}
from lance_duck.scan.duckdb_source import has_protocol
source = has_protocol() and isinstance(ds, __import__("duckdb._sources", fromlist=["Source"]).Source)
rows = duckdb.sql({QUERY!r}).fetchall()
print(json.dumps([loaded_before, has_protocol(), source, [list(r) for r in rows], sorted(set(calls))]))
"""


def _run(opened: str) -> list:
    open_line = f"ds = lance_duck.dataset({SAMPLE!r})"
    prog = PROG.format(open_before=open_line if opened == "before" else "",
                       open_after=open_line if opened == "after" else "")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=env,
                         check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _expected() -> list:
    t = lance.dataset(SAMPLE).to_table(columns=["order_id"], filter="amount > 400")
    return [[t.num_rows, sum(t.column("order_id").to_pylist())]]


@pytest.mark.parametrize("opened", ["before", "after"], ids=["opened before import duckdb",
                                                             "opened after import duckdb"])
def test_dataset_is_duckdbs_source_whenever_duckdb_is_imported(opened):
    loaded_before, protocol, source, rows, calls = _run(opened)
    assert loaded_before is False          # opening a dataset did not import DuckDB
    assert rows == _expected()
    if protocol:                           # DuckDB 2: our source, its row count and pushdown
        assert source is True
        assert calls == ["accepts", "rows", "stream"]
    else:                                  # DuckDB 1.x scans it as a pyarrow dataset
        assert calls == []
