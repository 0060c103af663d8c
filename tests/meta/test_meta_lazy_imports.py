"""The first query of a fresh process imports only what it needs: modules of features it does not
use (the change feed, full-text search, Spark, the CLI) stay out of ``sys.modules``. Not timed: the
import cost is measured in bench/README.md ("First query of a fresh process")."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import lance_duck

ROOT = os.path.dirname(os.path.dirname(lance_duck.__file__))
SAMPLE = os.path.join(os.path.dirname(lance_duck.__file__), "_sample", "sample.lance")

# Never imported by `lance_duck.sql("select count(*) from '<table>'")`.
NOT_ON_COUNT_PATH = (
    "pyspark",
    "lance_duck.changefeed",
    "lance_duck.changefeed.feed",
    "lance_duck.search.fts",
    "lance_duck.search.query",
    "lance_duck.index.inverted.reader",
    "lance_duck.integrations.spark",
    "lance_duck.__main__",
    # a plain count is answered from the manifest (integrations/duckdb/entry.py): no parser, no
    # pyarrow.dataset (it imports pandas when installed), no scan layer
    "sqlglot",
    "pyarrow.dataset",
    "pandas",
    "lance_duck.scan.dataset",
    "lance_duck.integrations.duckdb.api",
    # its rows are known before DuckDB is needed: on the default connection, fetchall() returns them
    # and DuckDB is imported when the relation itself is asked for (integrations/duckdb/relation.py)
    "duckdb",
    # a local table is read with the standard library (io/fs.py): fsspec only for URLs
    "fsspec",
    "asyncio",
)


def _modules_after(code: str) -> tuple[list, set[str]]:
    prog = f"import json, sys\n{code}\nprint(json.dumps([result, sorted(sys.modules)]))"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=env,
                         check=True, timeout=120)
    result, mods = json.loads(out.stdout.strip().splitlines()[-1])
    return result, set(mods)


def test_first_count_query_leaves_unused_features_unimported():
    result, mods = _modules_after(
        "import lance_duck\n"
        f"result = lance_duck.sql(\"select count(*) from '{SAMPLE}'\").fetchall()")
    assert result == [[lance_duck.dataset(SAMPLE).count_rows()]]
    assert "lance_duck.integrations.duckdb" in mods     # the probe did run the SQL path
    assert sorted(m for m in NOT_ON_COUNT_PATH if m in mods) == []


def test_first_count_relation_loads_duckdb_when_asked_for_more_than_rows():
    result, mods = _modules_after(
        "import lance_duck\n"
        f"rel = lance_duck.sql(\"select count(*) from '{SAMPLE}'\")\n"
        "result = [rel.fetchall(), rel.columns, [str(t) for t in rel.types], rel.fetchall()]")
    n = lance_duck.dataset(SAMPLE).count_rows()
    assert result == [[[n]], ["count_star()"], ["BIGINT"], [[n]]]
    assert "duckdb" in mods


# Never imported by opening a dataset (`lance_duck.dataset(uri)`, `.version`, `.schema`): the scan
# machinery, the filter model with its SQL parser, the decoders, the searches load on the first read.
NOT_ON_OPEN_PATH = (
    "sqlglot",
    "lance_duck.predicate",
    "lance_duck.scan.scanner",
    "lance_duck.scan.filters",
    "lance_duck.scan.execution",
    "lance_duck.scan.take",
    "lance_duck.scan.delta",
    "lance_duck.search",
    "lance_duck.encodings",
    "lance_duck.file.dispatch",
    "lance_duck.file.v2_1",
    "lance_duck.file.v2_0",
    "lance_duck.file.legacy",
    "lance_duck.integrations.duckdb",
    # a dataset becomes DuckDB's source when DuckDB is imported (scan/duckdb_source.py's import hook)
    "duckdb",
)


@pytest.mark.parametrize("uri", [SAMPLE, "file://" + SAMPLE], ids=["local path", "fsspec URL"])
def test_opening_a_dataset_loads_no_scan_machinery(uri):
    result, mods = _modules_after(
        "import lance_duck\n"
        f"ds = lance_duck.dataset({uri!r})\n"
        "result = [ds.version, ds.schema.names, ds.count_rows()]")
    assert result == [6, lance_duck.dataset(SAMPLE).schema.names, lance_duck.dataset(SAMPLE).count_rows()]
    assert sorted(m for m in NOT_ON_OPEN_PATH if m in mods) == []


def test_first_read_still_reaches_the_lazily_imported_scanner():
    result, mods = _modules_after(
        "import lance_duck\n"
        f"ds = lance_duck.dataset('{SAMPLE}')\n"
        "result = ds.to_table(columns=['order_id'], filter='order_id < 3').column('order_id').to_pylist()")
    assert result == [0, 1, 2]
    assert {"lance_duck.scan.scanner", "sqlglot", "lance_duck.file.dispatch"} <= mods


def test_import_lance_duck_alone_imports_no_engine():
    _, mods = _modules_after("import lance_duck\nresult = None")
    assert sorted(m for m in ("duckdb", "sqlglot", "pyarrow.dataset", "pandas", "lance_duck.scan.dataset")
                  if m in mods) == []


def test_full_text_search_still_reaches_its_lazily_imported_module():
    """The lazy import is still reached: a full-text scan loads the search module, which refuses a
    table without an INVERTED index by name."""
    result, mods = _modules_after(
        "import lance_duck\n"
        f"ds = lance_duck.dataset('{SAMPLE}')\n"
        "result = None\n"
        "try:\n"
        "    ds.to_table(full_text_query='x')\n"
        "except Exception as exc:\n"
        "    result = type(exc).__name__")
    assert result == "InvalidArgumentError"
    assert "lance_duck.search.fts" in mods
