#!/usr/bin/env bash
# Set up a virtual environment (.venv) with lance_duck and its test dependencies, then run the tests.
# Usage: bash scripts/test.sh [pytest args]
# Needs: Python >= 3.10 (python3, or $PYTHON), Java 17+ on PATH (the Spark tests), and for a full run
# (no arguments) also Python 3.10 and 3.13: the reader, scan and SQL tests run again on the oldest and
# the newest supported Python, each in its own venv (.venv-py3.10, .venv-py3.13).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_lib.sh
OLDEST_PYTHON=3.10
NEWEST_PYTHON=3.13

# Fail before anything is installed, with the fix, when something the run needs is missing.
check_java
if [ $# -eq 0 ]; then
  PY_OLDEST=$(find_python "$OLDEST_PYTHON")
  PY_NEWEST=$(find_python "$NEWEST_PYTHON")
fi

ensure_venv .venv "${PYTHON:-python3}" '.[test]'
# The suite runs on the oldest protobuf we support (grpcio-tools 1.62 pins 4.25); the metadata and
# file readers then run again on the newest protobuf 7 (installed beside, first on the path).
.venv/bin/python -m ruff check lance_duck
.venv/bin/python -m mypy                  # [tool.mypy] in pyproject.toml: strict on every module
# The documentation site (mkdocs.yml): a broken link or anchor, an unknown API reference or a docstring
# mkdocstrings cannot read fails here.
NO_MKDOCS_2_WARNING=1 .venv/bin/python -m mkdocs build --strict --quiet
.venv/bin/python -m pytest -n 2 --dist loadfile "$@"
if [ $# -eq 0 ]; then
  rm -rf .venv/protobuf-newest
  .venv/bin/python -m pip install -q --no-deps --target .venv/protobuf-newest 'protobuf>=7,<8'
  LANCE_DUCK_EXPECT_PROTOBUF_MAJOR=7 PYTHONPATH=.venv/protobuf-newest .venv/bin/python -m pytest -n 2 -q -p no:cacheprovider \
    tests/meta/test_meta_protos.py::test_protobuf_runtime_is_the_one_on_the_path tests/table tests/file_v2
  # The oldest and the newest supported Python: the newest pyarrow / DuckDB / numpy each has wheels for
  # (the `test-core` extra; no Spark there).
  for py in "$PY_OLDEST" "$PY_NEWEST"; do
    ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    ensure_venv ".venv-py$ver" "$py" '.[test-core]'
    echo "== Python $ver: tests/table tests/scan tests/sql tests/predicate tests/index"
    ".venv-py$ver/bin/python" -m pytest -n 2 --dist loadfile -q -p no:cacheprovider tests/table tests/scan tests/sql tests/predicate tests/index
  done
fi
