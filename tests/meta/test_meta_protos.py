"""The committed generated protobuf modules and their type stubs match protos/*.proto."""
import importlib.util
import os
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
    fresh = sorted(p.name for p in tmp_path.glob("*_pb2.py*"))       # modules and their type stubs
    assert fresh == sorted(p.name for p in committed.glob("*_pb2.py*"))
    assert len(fresh) == 2 * len(list((ROOT / "protos").glob("*.proto")))
    for name in fresh:
        assert (tmp_path / name).read_text() == (committed / name).read_text(), (
            f"{name} is stale: run `python scripts/gen_protos.py`")


def test_protobuf_runtime_is_the_one_on_the_path():
    """The generated modules load on protobuf 4.25 ... 7.x; scripts/test.sh runs the readers again
    with the newest protobuf first on the path and says which major it expects."""
    import google.protobuf
    import lance_duck._proto.table_pb2  # noqa: F401 - loading the generated code is the point
    major, minor = (int(x) for x in google.protobuf.__version__.split(".")[:2])
    assert (4, 25) <= (major, minor) < (8, 0), google.protobuf.__version__
    expected = os.environ.get("LANCE_DUCK_EXPECT_PROTOBUF_MAJOR")
    if expected:
        assert major == int(expected), google.protobuf.__version__


def test_lance_duck_never_imports_pylance():
    code = ("import sys, lance_duck, lance_duck.table, lance_duck.file, lance_duck.scan, "
            "lance_duck.predicate, lance_duck.integrations; "
            "assert 'lance' not in sys.modules, 'lance_duck imported pylance'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
