"""A table being written to never looks like "not a Lance table" (issue 28 §1).

Writers leave temporary files in ``_versions/`` and remove old manifests (cleanup): an entry that
vanishes between a directory listing and its ``stat()`` is skipped, a latest manifest removed
between the listing and its read makes the open list again. Only a listing truly holding no
manifest is "not a Lance table". Each test is bounded in time (a few seconds).
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import lance
import numpy as np
import pyarrow as pa
import pytest
from fsspec.implementations.local import LocalFileSystem

import lance_duck
from lance_duck.io.fs import FileIO
from lance_duck.table.versions import list_versions

HERE = os.path.dirname(os.path.abspath(__file__))


def _table(path: str) -> str:
    lance.write_dataset(pa.table({"i": np.arange(1000, dtype=np.int64), "s": [f"s{j % 7}" for j in range(1000)]}),
                        path)
    ds = lance.dataset(path)
    ds.tags.create("first", 1)
    return path


class _Churn:
    """A thread creating and removing scratch files and directories in the given folders."""

    def __init__(self, folders: list[str]):
        self.folders, self.rounds, self._stop = folders, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        k = 0
        while not self._stop.is_set():
            for d in self.folders:      # a burst of entries, then all removed: listings race their stat()
                made = [os.path.join(d, f".tmp_{j}.manifest-scratch") for j in range(40)]
                for f in made:
                    open(f, "wb").close()
                sub = os.path.join(d, "scratch-dir")
                os.mkdir(sub)
                for f in made:
                    os.remove(f)
                os.rmdir(sub)
            k += 1
            self.rounds = k

    def __enter__(self) -> "_Churn":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def test_files_vanishing_from_versions_and_refs_never_fail_an_open(tmp_path):
    path = _table(str(tmp_path / "t.lance"))
    folders = [os.path.join(path, "_versions"), os.path.join(path, "_refs", "tags")]
    opened, deadline = 0, time.monotonic() + 1.5
    with _Churn(folders) as churn:
        while time.monotonic() < deadline:
            ds = lance_duck.dataset(path)
            assert ds.version == 1 and ds.count_rows() == 1000
            assert list(ds.tags.list()) == ["first"]
            assert [v["version"] for v in ds.versions()] == [1]
            opened += 1
    assert opened > 20 and churn.rounds > 5   # the race did run


def test_a_versions_folder_of_scratch_files_only_is_still_not_a_table(tmp_path):
    vdir = tmp_path / "t.lance" / "_versions"
    vdir.mkdir(parents=True)
    (vdir / ".tmp_1.manifest-scratch").write_bytes(b"")
    (vdir / "1.manifest-0b1c").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="Not a Lance table: no manifests"):
        lance_duck.dataset(str(tmp_path / "t.lance"))


class DescribeEachEntry(LocalFileSystem):
    """A local fsspec store whose detailed listing describes each entry and fails when one vanishes
    meanwhile (as fsspec's local ``ls`` did before 2023.x, and as stores that list names then stat do)."""

    protocol = ("describe-each",)

    def ls(self, path, detail=False, **kwargs):
        names = [os.path.join(path, n) for n in os.listdir(path)]
        return [self.info(n) for n in names] if detail else names


def test_fsspec_listing_that_fails_on_a_vanished_entry_is_retried(tmp_path):
    path = _table(str(tmp_path / "t.lance"))
    io = FileIO(DescribeEachEntry())
    assert not io.is_local
    listed, deadline = 0, time.monotonic() + 1.0
    with _Churn([os.path.join(path, "_versions")]) as churn:
        while time.monotonic() < deadline:
            assert [e.version for e in list_versions(io, path)] == [1]
            listed += 1
    assert listed > 20 and churn.rounds > 5
    assert io.list_names(str(tmp_path / "missing")) == []


def _truth(log_paths: list[str], first: tuple[int, int, int]) -> dict[int, tuple[int, int]]:
    truth = {first[0]: first[1:]}
    for p in log_paths:
        with open(p) as f:
            for line in f:
                v, n, s = map(int, line.split())
                assert truth.setdefault(v, (n, s)) == (n, s)
    return truth


def test_reads_while_pylance_appends_deletes_and_cleans_up_in_other_processes(tmp_path):
    path = _table(str(tmp_path / "t.lance"))
    lance_duck.sql(f"SELECT count(*) FROM '{path}'").fetchall()     # imports done before the clock starts
    seconds = 4.0
    logs = {role: str(tmp_path / f"{role}.log") for role in ("append", "delete", "cleanup")}
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "concurrent_writer.py"), path, role,
                               str(seconds), log], stderr=subprocess.PIPE, text=True)
             for role, log in logs.items()]
    seen: list[tuple[int, int, int, int]] = []   # version, count_rows, to_table rows, sum(i)
    failures: list[BaseException] = []
    sql_counts: list[int] = []
    try:
        ready = time.monotonic() + 60
        while not all(os.path.exists(p) for p in logs.values()) and time.monotonic() < ready:
            time.sleep(0.05)
        deadline = time.monotonic() + seconds - 0.5
        while time.monotonic() < deadline:
            try:
                ds = lance_duck.dataset(path)
                t = ds.to_table(columns=["i"])
                n = ds.count_rows()
                listed = [v["version"] for v in ds.versions()]   # manifests cleaned up meanwhile: listed again
                assert listed == sorted(listed) and listed[-1] >= ds.version
                sql_counts.append(lance_duck.sql(f"SELECT count(*) FROM '{path}' WHERE s <> 'zz'").fetchall()[0][0])
                seen.append((ds.version, n, t.num_rows, pa.compute.sum(t["i"]).as_py()))
            except Exception as exc:  # noqa: BLE001 - every failure is counted and shown
                failures.append(exc)
    finally:
        errs = [p.communicate(timeout=60)[1] for p in procs]
    assert not failures, failures[:3]
    truth = _truth(list(logs.values()), (1, 1000, 999 * 1000 // 2))
    assert len(truth) > 5 and not any("cleanup" in e for e in errs), errs   # the writers did their work
    versions = {v for v, *_ in seen}
    assert len(seen) > 5 and len(versions) > 2, (len(seen), versions)
    for v, n, rows, total in seen:
        assert v in truth, v
        assert (n, total) == truth[v] and rows == n, (v, n, rows, total, truth[v])
    counts = {n for n, _ in truth.values()}
    assert all(n in counts for n in sql_counts), sorted(set(sql_counts) - counts)
    assert len(lance.dataset(path).versions()) < len(truth)      # cleanup did remove versions
