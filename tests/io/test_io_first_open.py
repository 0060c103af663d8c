"""The first open of a process (``lance_duck.dataset`` before the scan layer is loaded): on an object
store the manifest is read on a helper thread while the scan layer is imported (``_open.py``); the
dataset, its rows and its errors are the same as any later open's, and pylance's."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import lance_duck

from .conftest import lance

ROOT = os.path.dirname(os.path.dirname(lance_duck.__file__))

#: run in a fresh process: records the thread that opens the snapshot, then opens ``URI`` with
#: ``ARGS`` and prints what it got (or the error's type and its message's start)
PROGRAM = """
import json, sys, threading
import lance_duck
import lance_duck.table.snapshot as snapshot
threads = []
real = snapshot.open_snapshot
def recording(*a, **k):
    threads.append(threading.current_thread().name)
    return real(*a, **k)
snapshot.open_snapshot = recording
loaded_before = "lance_duck.scan.dataset" in sys.modules
try:
    ds = lance_duck.dataset(URI, **ARGS)
    got = [ds.version, ds.to_table(columns=["id"], filter="id % 3 = 0").column("id").to_pylist(), type(ds).__name__]
except Exception as exc:
    got = ["error", type(exc).__name__, isinstance(exc, ValueError), str(exc)[:60]]
print(json.dumps([loaded_before, threads, got]))
"""


def _fresh(uri: str, **args) -> tuple[bool, list[str], list]:
    prog = f"URI, ARGS = {uri!r}, {args!r}\n" + PROGRAM
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=env, check=True, timeout=120)
    loaded, threads, got = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded, threads, got


def _pylance_ids(uri: str, **args) -> list[int]:
    return lance.dataset(uri, **args).to_table(columns=["id"], filter="id % 3 = 0").column("id").to_pylist()


@pytest.mark.parametrize("args", [{}, {"version": 2}, {"version": "v2"}], ids=["latest", "version", "tag"])
def test_a_first_open_on_s3_reads_the_manifest_beside_the_import_and_gives_pylances_rows(s3_table, pylance_options, args):
    loaded, threads, got = _fresh(s3_table, storage_options=pylance_options, **args)
    theirs = lance.dataset(s3_table, storage_options=pylance_options, **args)
    assert not loaded
    assert threads == ["lance_duck-open"]
    assert got == [theirs.version, _pylance_ids(s3_table, storage_options=pylance_options, **args), "LanceDataset"]


@pytest.mark.parametrize(("where", "args", "error"), [
    ("missing.lance", {}, "FileNotFoundError"),
    ("history.lance", {"version": 99}, "VersionNotFoundError"),
    ("history.lance", {"version": "no-such-tag"}, "TagNotFoundError"),
])
def test_a_first_open_on_s3_raises_the_errors_of_any_open(s3_table, pylance_options, where, args, error):
    uri = s3_table.rsplit("/", 1)[0] + "/" + where
    _, threads, got = _fresh(uri, storage_options=pylance_options, **args)
    assert threads == ["lance_duck-open"]
    assert got[:2] == ["error", error]
    with pytest.raises(Exception) as later:      # the same error from an open in this process
        lance_duck.dataset(uri, storage_options=pylance_options, **args)
    assert type(later.value).__name__ == error and got[2] == isinstance(later.value, ValueError)


def test_a_first_open_of_a_local_table_stays_on_the_callers_thread(tmp_path):
    import pyarrow as pa
    path = str(tmp_path / "t.lance")
    lance.write_dataset(pa.table({"id": list(range(100))}), path)
    loaded, threads, got = _fresh(path)
    assert not loaded
    assert threads == ["MainThread"]
    assert got == [1, _pylance_ids(path), "LanceDataset"]
