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
# The suite runs on the oldest protobuf we support (grpcio-tools 1.62 pins 4.25); the metadata and
# file readers then run again on the newest protobuf 7 (installed beside, first on the path).
.venv/bin/python -m pytest -n 2 --dist loadfile "$@"
if [ $# -eq 0 ]; then
  rm -rf .venv/protobuf-newest
  .venv/bin/python -m pip install -q --no-deps --target .venv/protobuf-newest 'protobuf>=7,<8'
  LANCE_DUCK_EXPECT_PROTOBUF_MAJOR=7 PYTHONPATH=.venv/protobuf-newest .venv/bin/python -m pytest -n 2 -q -p no:cacheprovider \
    tests/meta/test_meta_protos.py::test_protobuf_runtime_is_the_one_on_the_path tests/table tests/file_v2
fi
