"""Seeded random ``WHERE`` clauses (``pushdown_fuzz.duck_predicate``: every scalar type at its edges,
LIKE / ILIKE with escapes, IN with NULL, BETWEEN with reversed bounds, IS DISTINCT FROM, casts, struct
fields, lists, nested AND / OR / NOT) select the same rows through every DuckDB path that pushes
filters into lance_duck: ``lance_duck.sql`` (its filtered views, its count from indices, LIMIT) and
``duckdb.sql`` over a registered ``lance_duck.dataset``; on a table with fragments, deletions, an
update, with and without scalar indices (and unindexed rows after them), at the latest version and an
older one (time travel).

Oracle: DuckDB over the same rows (pylance's read of that version) copied into DuckDB's own storage
(an Arrow table registered in DuckDB 1.x would have float filters pushed into it with Arrow's NaN
meaning). A refusal is allowed only where DuckDB 1.x's own translation loses the predicate
(``scan/duckdb_v1.refuse_lossy``, and DuckDB 1.x's own overflow on a uint64 ``IN``). Set
``LANCE_DUCK_FUZZ_CASES`` (cases per seed, default 60) and ``LANCE_DUCK_FUZZ_SEEDS`` (default 0,1,2) to search further.
"""
from __future__ import annotations

import os
import random

import duckdb
import lance
import pytest

import lance_duck
from lance_duck.scan.duckdb_source import HAS_PROTOCOL

from .pushdown_fuzz import duck_predicate, write_table

CASES = int(os.environ.get("LANCE_DUCK_FUZZ_CASES", "60"))
SEEDS = [int(s) for s in os.environ.get("LANCE_DUCK_FUZZ_SEEDS", "0,1,2").split(",")]
#: DuckDB 1.x: refusals of what its own translation loses, and its own error on a uint64 IN
ALLOWED_UNDER_1X = ("DuckDB 1.x cannot push it exactly", "Python int too large to convert to C long")


@pytest.fixture(scope="module", params=["plain", "indexed", "older"])
def target(request, tmp_path_factory):
    """(path, version or None, the DuckDB oracle connection, the dataset registered in DuckDB)."""
    kind = request.param
    path = str(tmp_path_factory.mktemp(f"fuzz_{kind}") / "t.lance")
    older = write_table(path, indexed=kind == "indexed")
    version = older if kind == "older" else None
    oracle = duckdb.connect()
    rows = lance.dataset(path, version=version).to_table()      # noqa: F841 - read by DuckDB below
    oracle.execute("CREATE TABLE t AS SELECT * FROM rows")
    con = duckdb.connect()
    con.register("ds", lance_duck.dataset(path, version=version))
    return path, version, oracle, con


def _allowed(err: Exception) -> bool:
    return not HAS_PROTOCOL and any(m in str(err) for m in ALLOWED_UNDER_1X)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_where_selects_duckdbs_rows_through_every_duckdb_path(target, seed):
    path, version, oracle, con = target
    ref = f"'{path}'" + (f" AT (VERSION => {version})" if version is not None else "")
    r = random.Random(seed)
    wrong: list[str] = []
    checked = 0
    for _ in range(CASES):
        where = duck_predicate(r)
        try:
            want = oracle.execute(f"SELECT id FROM t WHERE {where} ORDER BY id").fetchall()
        except duckdb.Error:
            continue                    # DuckDB refuses it on its own storage too
        checked += 1
        runs = {
            "lance_duck.sql": lambda: lance_duck.sql(f"SELECT id FROM {ref} WHERE {where} ORDER BY id").fetchall(),
            "duckdb over dataset": lambda: con.sql(f"SELECT id FROM ds WHERE {where} ORDER BY id").fetchall(),
            "count": lambda: lance_duck.sql(f"SELECT count(*) FROM {ref} WHERE {where}").fetchall(),
            "limit": lambda: lance_duck.sql(f"SELECT id FROM {ref} WHERE {where} LIMIT 5").fetchall(),
        }
        for name, run in runs.items():
            try:
                got = run()
            except Exception as err:                # noqa: BLE001 - any error but the allowed ones fails
                if not _allowed(err):
                    wrong.append(f"{name}: {where}: {type(err).__name__}: {str(err)[:160]}")
                continue
            if name == "count":
                ok = got == [(len(want),)]
            elif name == "limit":
                ok = len(got) == min(5, len(want)) and set(got) <= set(want)
            else:
                ok = got == want
            if not ok:
                wrong.append(f"{name}: {where}: {len(want)} rows wanted, got {str(got)[:120]}")
    assert not wrong, "\n".join(wrong[:10])
    assert checked >= CASES // 2
