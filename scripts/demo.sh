#!/usr/bin/env bash
# Set up a virtual environment (.venv) with lance_duck, then run the SQL time-travel demo over the
# committed sample table (sql_examples/data/sample.lance) or over a table you name.
# The install is skipped when .venv already holds it for the same pyproject.toml.
# Usage: bash scripts/demo.sh [path/to/table.lance]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_lib.sh
ensure_venv .venv "${PYTHON:-python3}" .
exec .venv/bin/python -m lance_duck demo "$@"
