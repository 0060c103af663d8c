#!/usr/bin/env bash
# Set up a virtual environment (.venv) with lance_duck, then run the SQL time-travel demo over the
# committed sample table (sql_examples/data/sample.lance) or over a table you name.
# Usage: bash scripts/demo.sh [path/to/table.lance]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e .
exec .venv/bin/python -m lance_duck demo "$@"
