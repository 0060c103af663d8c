#!/usr/bin/env bash
# Set up a virtual environment (.venv) with lance_duck and its test dependencies, then run the tests.
# Usage: bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test]'
# The Spark tests start a local[2] Spark session (Java 17+ must be on PATH).
exec .venv/bin/python -m pytest -n 2 --dist loadfile "$@"
