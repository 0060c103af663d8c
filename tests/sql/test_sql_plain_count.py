"""``lance_duck.sql("SELECT count(*) FROM 't.lance'")`` (that text alone) is answered from the latest
manifest before sqlglot or ``pyarrow.dataset`` is imported (``integrations/duckdb/entry.py``): the same
count, column name and type as the full path, and the full path's errors when the table cannot be read.

Oracle: pylance's ``count_rows()`` of the latest version; the full path is ``api.run_sql``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import duckdb
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.integrations.duckdb import entry
from lance_duck.integrations.duckdb.api import run_sql
from lance_duck.table import snapshot as snapshot_module

lance = pytest.importorskip("lance")

ROOT = os.path.dirname(os.path.dirname(lance_duck.__file__))

FORMS = ["select count(*) from '{t}'", "SELECT COUNT(*) FROM '{t}';", "  select count( * )\n  from '{t}'  ; ",
         "Select Count(*) From '{t}/'"]


@pytest.mark.parametrize("form", FORMS)
def test_plain_count_forms_equal_pylance_and_the_full_path(history, form):
    q = form.format(t=history)
    con = duckdb.connect()
    full = run_sql(q, con, None, sys._getframe())
    assert entry._manifest_count(q, con) == lance.dataset(history).count_rows()
    assert full.fetchall() == [(lance.dataset(history).count_rows(),)]


@pytest.mark.parametrize("q,expected", [
    ("select count(*) from '{t}' where id > 3", lambda t: [(lance.dataset(t).count_rows("id > 3"),)]),
    ("select count(*) as n from '{t}'", lambda t: [(lance.dataset(t).count_rows(),)]),
    ("select count(*) from '{t}' AT (VERSION => 1)", lambda t: [(100,)]),
    ("select count(id) from '{t}'", lambda t: [(lance.dataset(t).count_rows(),)]),
    ("select count(*) from '{t}' limit 0", lambda t: []),
])
def test_other_counts_take_the_full_path(history, q, expected):
    q = q.format(t=history)
    assert entry._manifest_count(q, duckdb.connect()) is None
    assert lance_duck.sql(q).fetchall() == expected(history)


def test_plain_count_in_a_fresh_process_imports_no_parser_and_no_dataset_layer(history):
    code = (f"import json, sys, lance_duck\n"
            f"rel = lance_duck.sql(\"select count(*) from '{history}'\")\n"
            "r = rel.fetchall()\n"
            "print(json.dumps([r, [m for m in ('sqlglot', 'pyarrow.dataset', 'pandas', 'lance_duck.scan.dataset',"
            " 'lance_duck.integrations.duckdb.api') if m in sys.modules]]))\n"
            "from lance_duck.integrations.duckdb.api import run_sql\n"
            f"full = run_sql(\"select count(*) from '{history}'\", None, None, sys._getframe())\n"
            "print(json.dumps([rel.columns, full.columns, [str(t) for t in rel.types], [str(t) for t in full.types],"
            " r == full.fetchall()]))")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                         timeout=120).stdout
    first, second = out.strip().splitlines()[-2:]
    rows, imported = json.loads(first)
    assert rows == [[lance.dataset(history).count_rows()]]
    assert imported == []
    # the relation of the manifest count (made before the full path loaded) is the full path's
    cols, full_cols, types, full_types, same = json.loads(second)
    assert cols == full_cols == ["count_star()"] and types == full_types and same


def test_missing_table_raises_the_full_paths_error(tmp_path):
    missing = str(tmp_path / "nope.lance")
    with pytest.raises(FileNotFoundError, match="nope.lance"):
        lance_duck.sql(f"select count(*) from '{missing}'")
    empty = tmp_path / "empty.lance"
    empty.mkdir()
    with pytest.raises(FileNotFoundError) as plain:
        lance_duck.sql(f"select count(*) from '{empty}'")
    with pytest.raises(FileNotFoundError) as full:
        run_sql(f"select count(*) from '{empty}'", None, None, sys._getframe())
    assert str(plain.value) == str(full.value)


def test_corrupt_latest_manifest_raises_the_full_paths_error(history, tmp_path):
    copy = str(tmp_path / "copy.lance")
    shutil.copytree(history, copy)
    vdir = os.path.join(copy, "_versions")
    latest = min(n for n in os.listdir(vdir) if n.endswith(".manifest"))     # V2 names: the smallest is newest
    with open(os.path.join(vdir, latest), "r+b") as f:
        f.seek(-4, os.SEEK_END)
        f.write(b"XXXX")
    q = f"select count(*) from '{copy}'"
    assert entry._manifest_count(q, duckdb.connect()) is None
    with pytest.raises(lance_duck.CorruptFileError) as plain:
        lance_duck.sql(q)
    with pytest.raises(lance_duck.CorruptFileError) as full:
        run_sql(q, None, None, sys._getframe())
    assert str(plain.value) == str(full.value) and copy in str(plain.value)


def test_a_repeated_plain_count_is_kept_per_manifest_and_sees_new_commits(tmp_path, monkeypatch):
    """The count of a manifest is kept (no manifest read on a repeat, with the full path loaded too);
    a commit by pylance makes a new latest manifest, counted once."""
    path = str(tmp_path / "c.lance")
    lance.write_dataset(pa.table({"id": list(range(10))}), path)
    q = f"select count(*) from '{path}'"
    con = duckdb.connect()
    assert lance_duck.sql(q, con).fetchall() == [(10,)]
    reads: list[str] = []
    orig = snapshot_module.read_manifest
    monkeypatch.setattr(snapshot_module, "read_manifest", lambda io, p, *a: reads.append(p) or orig(io, p, *a))
    assert lance_duck.sql(q, con).fetchall() == [(10,)]
    assert lance_duck.sql(q).fetchall() == [(10,)]
    assert reads == []
    lance.write_dataset(pa.table({"id": [10, 11]}), path, mode="append")
    assert lance_duck.sql(q, con).fetchall() == [(lance.dataset(path).count_rows(),)] == [(12,)]
    lance.dataset(path).delete("id < 3")
    assert lance_duck.sql(q).fetchall() == [(lance.dataset(path).count_rows(),)] == [(9,)]
    assert lance_duck.sql(q, con).fetchall() == [(9,)]
    assert len(reads) == 2          # one per new version
    lance.write_dataset(pa.table({"id": [1]}), path, mode="overwrite")
    assert lance_duck.sql(q, con).fetchall() == [(1,)]


def test_a_count_on_the_default_connection_is_the_relation_duckdb_makes():
    """Counts answered without DuckDB on the default connection (plain, or through the full path with an
    alias) give DuckDB's relation when it is asked for: same rows, column name and type."""
    sample = lance_duck.sample_path()
    n = lance.dataset(sample).count_rows()
    for q, name in ((f"select count(*) from '{sample}'", "count_star()"),
                    (f"select count(*) as n from '{sample}'", "n")):
        rel = lance_duck.sql(q)
        assert rel.fetchall() == [(n,)] and rel.fetchall() == [(n,)]
        assert rel.columns == [name] and [str(t) for t in rel.types] == ["BIGINT"]
        assert rel.relation.fetchall() == [(n,)] and rel.fetchall() == [(n,)]
        assert rel.df()[name].tolist() == [n]


def test_a_relative_path_counts_the_table_of_the_current_directory(tmp_path, monkeypatch):
    """The kept count of ``'t.lance'`` is the table under the working directory of each call."""
    for name, n in (("a", 3), ("b", 5)):
        (tmp_path / name).mkdir()
        lance.write_dataset(pa.table({"id": list(range(n))}), str(tmp_path / name / "t.lance"))
    for name, n in (("a", 3), ("b", 5), ("a", 3)):
        monkeypatch.chdir(tmp_path / name)
        assert lance_duck.sql("select count(*) from 't.lance'").fetchall() == [(n,)]
        assert lance_duck.sql("select count(*) from 't.lance'", duckdb.connect()).fetchall() == [(n,)]
