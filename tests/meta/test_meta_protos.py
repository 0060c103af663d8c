"""The committed generated protobuf modules match protos/*.proto."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_generated_protos_are_up_to_date(tmp_path):
    if importlib.util.find_spec("grpc_tools") is None:
        pytest.fail("grpcio-tools is a test dependency; install the 'test' extra")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_protos.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True)
    committed = ROOT / "lance_duck" / "_proto"
    fresh = sorted(p.name for p in tmp_path.glob("*_pb2.py"))
    assert fresh == sorted(p.name for p in committed.glob("*_pb2.py"))
    for name in fresh:
        assert (tmp_path / name).read_text() == (committed / name).read_text(), (
            f"{name} is stale: run `python scripts/gen_protos.py`")


def test_lance_duck_never_imports_pylance():
    code = ("import sys, lance_duck, lance_duck.table, lance_duck.file, lance_duck.scan, "
            "lance_duck.predicate, lance_duck.integrations; "
            "assert 'lance' not in sys.modules, 'lance_duck imported pylance'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
