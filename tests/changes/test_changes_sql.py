"""``lance_changes(...)`` in ``lance_duck.sql`` and the CLI returns ``lance_duck.changes``'s rows:
``from`` / ``to`` (reserved words) renamed before DuckDB and sqlglot read the statement."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lance_duck
from lance_duck.errors import InvalidArgumentError, TagNotFoundError
from lance_duck.integrations.duckdb.changes import rename_reserved

ROOT = Path(__file__).resolve().parents[2]


def test_sql_returns_the_python_feeds_rows(history):
    got = lance_duck.sql(f"select * from lance_changes('{history}', from => 3, to => 'after-merge')").arrow()
    got = got.read_all() if hasattr(got, "read_all") else got
    want = lance_duck.changes(history, 3, "after-merge").read_all()
    assert got.cast(want.schema).equals(want) and want.num_rows > 5     # DuckDB names UTC Etc/UTC


@pytest.mark.parametrize("call", [
    "lance_changes('{u}', 2, 9, columns => ['id', 's'], filter => 'id < 10')",
    "lance_changes('{u}', FROM => 2, TO := 9, filter => 'id < 10', columns => ['id', 's'])",
    "LANCE_CHANGES('{u}', from=>'release-2', to=>9, columns=>['id','s'], filter=>'id < 10')",
])
def test_arguments_by_position_name_and_tag_agree(stable_table, call):
    q = f"select * from {call.format(u=stable_table)} order by _commit_version, _rowid, _change_type"
    got = lance_duck.sql(q).fetchall()
    want = lance_duck.changes(stable_table, 2, 9, columns=["id", "s"], filter="id < 10").read_all()
    want_rows = sorted((tuple(r.values()) for r in want.to_pylist()), key=lambda r: (r[3], r[5], r[2]))
    assert got == want_rows and len(got) > 5


def test_the_feed_joins_and_aggregates_like_any_table(stable_table):
    q = (f"select c._commit_version, count(*) from lance_changes('{stable_table}', from => 0) c "
         f"join '{stable_table}' t on t.id = c.id where c._change_type = 'insert' group by all order by 1")
    got = dict(lance_duck.sql(q).fetchall())
    assert got[1] > 0 and set(got) <= set(range(1, 14))


def test_reserved_words_are_renamed_only_inside_the_call():
    q = "select 'from => 1' as x from lance_changes('a from => b.lance', from => 1, to=>2) where y = 'to =>'"
    assert rename_reserved(q) == ("select 'from => 1' as x from lance_changes('a from => b.lance', "
                                  "from_version => 1, to_version=>2) where y = 'to =>'")


@pytest.mark.parametrize("call, error, message", [
    ("lance_changes('{u}', from => 5, to => 3)", InvalidArgumentError, "is newer than"),
    ("lance_changes('{u}', from => 'nope')", TagNotFoundError, "no tag 'nope'"),
    ("lance_changes('{u}')", InvalidArgumentError, "from => <version> is required"),
    ("lance_changes('{u}', from => 1, frm => 2)", InvalidArgumentError, "unknown argument 'frm'"),
])
def test_bad_calls_raise_lance_duck_errors(stable_table, call, error, message):
    with pytest.raises(error, match=message):
        lance_duck.sql(f"select * from {call.format(u=stable_table)}")


def test_the_cli_runs_a_changes_query(stable_table):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    q = (f"select _commit_version v, _change_type t, count(*) n from lance_changes('{stable_table}', from => 3, "
         f"to => 5) group by all order by all")
    r = subprocess.run([sys.executable, "-m", "lance_duck", "sql", q, "--format", "json"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines() if line.strip()] if not r.stdout.lstrip().startswith("[") \
        else json.loads(r.stdout)
    want = lance_duck.sql(q).fetchall()
    assert [(x["v"], x["t"], x["n"]) for x in rows] == want
