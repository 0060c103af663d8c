"""The demo's sample table and SQL queries, shipped inside the package.

``sql_examples/`` of a source checkout links here, so the demo reads the same files whether
lance_duck is installed from a wheel or used from the checkout.
"""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
TABLE = HERE / "sample.lance"
# The path the queries name the sample table by (relative to a source checkout's root).
QUERY_TABLE_PATH = "sql_examples/data/sample.lance"


def queries() -> list[Path]:
    """The example queries (``NN_name.sql``), in order."""
    return sorted(HERE.glob("*.sql"))
