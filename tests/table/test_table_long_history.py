"""Long histories (2,000 versions): ``versions()`` and ``asof`` equal pylance's and read few bytes.

The table starts with a real pylance history (appends, a delete, a new column, an update) and is
continued to 2,000 versions by re-framing its last manifest with one more fragment per version
(what an append commits), some versions reusing fragments that carry deletion files, and some
commit clocks skewed minutes into the past. Reads are counted through a real fsspec filesystem
(``LocalFileSystem`` registered under a test protocol), not through lance_duck internals.
"""
from __future__ import annotations

import os
import struct
import threading
from datetime import timedelta

import fsspec
import lance
import numpy as np
import pyarrow as pa
import pytest
from fsspec.implementations.local import LocalFileSystem

import lance_duck
from lance_duck._proto import table_pb2
from lance_duck.errors import VersionNotFoundError
from lance_duck.table.history import TAIL_WINDOW
from lance_duck.table.manifest import decode_manifest, encode_manifest
from lance_duck.table.snapshot import open_snapshot

N_VERSIONS = 2000
REAL_VERSIONS = 40
SKEWED_EVERY = 97          # these versions' clocks run 10 minutes behind


class CountingFS(LocalFileSystem):
    """The local filesystem under ``countfile://``, recording every byte range read."""

    protocol = ("countfile",)
    reads: list[tuple[str, int | None, int | None]] = []
    _lock = threading.Lock()

    @classmethod
    def _strip_protocol(cls, path):
        path = str(path)
        if path.startswith("countfile://"):
            path = path[len("countfile://"):]
        return super()._strip_protocol(path)

    _inside = threading.local()

    def cat_file(self, path, start=None, end=None, **kwargs):
        with self._lock:
            CountingFS.reads.append((self._strip_protocol(path), start, end))
        self._inside.cat = True
        try:
            return super().cat_file(path, start, end, **kwargs)
        finally:
            self._inside.cat = False

    def _open(self, path, mode="rb", **kwargs):
        if "r" in mode and not getattr(self._inside, "cat", False):
            with self._lock:
                CountingFS.reads.append((self._strip_protocol(path), "open", None))
        return super()._open(path, mode, **kwargs)


fsspec.register_implementation("countfile", CountingFS, clobber=True)


@pytest.fixture
def reads():
    lance_duck.clear_caches()      # manifests are cached per process: each test measures a first read
    CountingFS.reads.clear()
    yield CountingFS.reads
    CountingFS.reads.clear()


def manifest_reads(reads):
    return [r for r in reads if r[0].endswith(".manifest")]


def _write_long_history(path: str) -> None:
    rng = np.random.default_rng(18)

    def batch(start, n):
        ids = np.arange(start, start + n)
        return pa.table({"id": ids, "x": rng.normal(size=n), "s": [f"s{i % 5}" for i in ids]})

    lance.write_dataset(batch(0, 100), path, max_rows_per_file=50)
    for v in range(2, REAL_VERSIONS - 2):
        lance.write_dataset(batch(v * 100, 10), path, mode="append")
    ds = lance.dataset(path)
    ds.delete("id % 3 = 0 and id < 300")
    ds.add_columns({"y": "id * 2"})
    lance.dataset(path).update({"x": "x + 1"}, where="id < 50")
    ds = lance.dataset(path)
    assert ds.version == REAL_VERSIONS
    vdir = os.path.join(path, "_versions")
    last = os.path.join(vdir, f"{(1 << 64) - 1 - REAL_VERSIONS:020d}.manifest")
    raw = open(last, "rb").read()
    m = decode_manifest(raw, last)
    (pos,) = struct.unpack_from("<q", raw, len(raw) - 16)
    prefix = raw[:pos]
    real_frags = list(m.fragments)
    # body = schema entries + fragment entries + the other fields (protobuf's field order); fragment
    # entries are appended one per version instead of re-serialising the whole manifest.
    head = table_pb2.Manifest(fields=m.fields).SerializeToString()
    frags = bytearray(table_pb2.Manifest(fragments=m.fragments).SerializeToString())
    rest = table_pb2.Manifest()
    rest.CopyFrom(m)
    del rest.fields[:]
    del rest.fragments[:]
    next_id = m.max_fragment_id + 1
    base_ns = m.timestamp.seconds * 10**9 + m.timestamp.nanos
    for v in range(REAL_VERSIONS + 1, N_VERSIONS + 1):
        f = table_pb2.DataFragment()
        f.CopyFrom(real_frags[v % len(real_frags)])  # some carry deletion files
        f.id = next_id
        frags += table_pb2.Manifest(fragments=[f]).SerializeToString()
        rest.max_fragment_id = next_id
        next_id += 1
        rest.version = v
        ns = base_ns + (v - REAL_VERSIONS) * 3_000_000  # 3 ms apart
        if v % SKEWED_EVERY == 0:
            ns -= 600 * 10**9
        rest.timestamp.seconds, rest.timestamp.nanos = divmod(ns, 10**9)
        body = head + frags + rest.SerializeToString()
        with open(os.path.join(vdir, f"{(1 << 64) - 1 - v:020d}.manifest"), "wb") as out:
            out.write(prefix + struct.pack("<I", len(body)) + body + struct.pack("<qHH", len(prefix), 0, 2) + b"LANC")
    assert decode_manifest(open(out.name, "rb").read(), out.name).version == N_VERSIONS


@pytest.fixture(scope="session")
def long_history(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("long_history") / "long.lance")
    _write_long_history(path)
    return path


@pytest.fixture(scope="session")
def pylance_versions(long_history):
    return lance.dataset(long_history).versions()


def test_versions_of_2000_versions_equal_pylance_reading_each_manifest_once(long_history, pylance_versions,
                                                                              reads):
    snap = open_snapshot("countfile://" + long_history)
    assert snap.version == N_VERSIONS
    assert len(manifest_reads(reads)) == 1            # opening the latest reads one manifest
    reads.clear()
    got = snap.versions()
    assert len(got) == N_VERSIONS
    assert got == pylance_versions
    paths = [r[0] for r in manifest_reads(reads)]
    assert len(paths) == N_VERSIONS == len(set(paths))
    sizes = {os.path.join(long_history, "_versions", n): os.path.getsize(os.path.join(long_history, "_versions", n))
             for n in os.listdir(os.path.join(long_history, "_versions"))}
    # each whole: the listing's size asked for as a range (or no range where a listing gives none)
    assert all((r[1], r[2]) in ((None, None), (0, sizes[r[0]])) for r in manifest_reads(reads)), reads[:3]
    assert not [r for r in reads if not r[0].endswith(".manifest")]   # no data or deletion file
    # the history really is non-monotonic, has deletions and a schema change
    ts = [v["timestamp"] for v in got]
    assert any(b < a for a, b in zip(ts, ts[1:]))
    assert int(got[-1]["metadata"]["total_deletion_files"]) > 0
    assert got[-1]["metadata"]["total_fragments"] == str(len(snap.fragments))


def pylance_rule(versions, cutoff) -> int | None:
    """pylance 14's ``asof`` (lance/__init__.py): max version whose timestamp < cutoff, over all versions.

    Each pylance ``asof`` call lists and decodes all 2,000 manifests (seconds each), so the tests
    call pylance itself for one cutoff per case and apply its rule to its ``versions()`` for the others.
    """
    return max((v["version"] for v in versions if v["timestamp"] < cutoff), default=None)


@pytest.mark.parametrize("target", [1000, 10 * SKEWED_EVERY, 1999])
def test_asof_mid_history_equals_pylance_and_fetches_only_tails(long_history, pylance_versions, target, reads):
    ts = {v["version"]: v["timestamp"] for v in pylance_versions}
    cutoffs = (ts[target] + timedelta(microseconds=1), ts[target], ts[target] - timedelta(microseconds=1))
    assert lance.dataset(long_history, asof=cutoffs[0]).version == pylance_rule(pylance_versions, cutoffs[0])
    for cutoff in cutoffs:
        want = pylance_rule(pylance_versions, cutoff)
        reads.clear()
        lance_duck.clear_caches()
        snap = open_snapshot("countfile://" + long_history, asof=cutoff)
        assert snap.version == want, (target, cutoff)
        mreads = manifest_reads(reads)
        full = [r for r in mreads if r[1] is None]
        tails = [r for r in mreads if r[1] is not None]
        assert len(full) == 1 and full[0][0].endswith(f"{(1 << 64) - 1 - want:020d}.manifest")
        # every version newer than the answer is checked (clocks may skew), each by its tail only
        assert N_VERSIONS - want + 1 <= len(tails) <= 2 * (N_VERSIONS - want + 1) + 4
        assert all(end - start <= TAIL_WINDOW for _, start, end in tails)
        assert not [r for r in reads if not r[0].endswith(".manifest")]


def test_asof_picks_the_newest_version_before_the_cutoff_even_with_skewed_clocks(long_history, pylance_versions):
    # A skewed version's timestamp is earlier than many older versions': pylance takes the largest
    # version number among all versions strictly before the cutoff, so must we.
    skewed = 10 * SKEWED_EVERY
    ts = {v["version"]: v["timestamp"] for v in pylance_versions}
    assert ts[skewed] < ts[skewed - 50]
    cutoff = ts[skewed] + timedelta(microseconds=1)
    want = lance.dataset(long_history, asof=cutoff).version
    assert want == pylance_rule(pylance_versions, cutoff) >= skewed
    assert open_snapshot(long_history, asof=cutoff).version == want
    first = min(ts.values())
    with pytest.raises(VersionNotFoundError):
        open_snapshot(long_history, asof=first)


def test_asof_reads_the_whole_manifest_when_its_tail_is_longer_than_the_window(long_history, pylance_versions,
                                                                               tmp_path, reads):
    # A manifest whose trailing fields (here table config) exceed the tail window is read whole.
    import shutil
    path = str(tmp_path / "t.lance")
    os.makedirs(path)
    for d in os.listdir(long_history):
        if d == "_versions":
            shutil.copytree(os.path.join(long_history, d), os.path.join(path, d))
        else:
            os.symlink(os.path.join(long_history, d), os.path.join(path, d))
    vdir = os.path.join(path, "_versions")
    name = f"{(1 << 64) - 1 - N_VERSIONS:020d}.manifest"
    raw = open(os.path.join(vdir, name), "rb").read()
    m = decode_manifest(raw, name)
    m.config["big"] = "x" * (2 * TAIL_WINDOW)
    (pos,) = struct.unpack_from("<q", raw, len(raw) - 16)
    with open(os.path.join(vdir, name), "wb") as out:
        out.write(encode_manifest(m, raw[:pos]))
    assert lance.dataset(path).get_version()["timestamp"] == pylance_versions[-1]["timestamp"]
    versions = pylance_versions    # the copy only changed the latest manifest's config
    ts = {v["version"]: v["timestamp"] for v in versions}
    for cutoff in (ts[N_VERSIONS] + timedelta(seconds=1), ts[N_VERSIONS]):
        want = pylance_rule(versions, cutoff)
        reads.clear()
        assert open_snapshot("countfile://" + path, asof=cutoff).version == want
        assert any(r[0].endswith(name) and r[1] is None for r in reads)
    assert open_snapshot(path).manifest.config["big"] == m.config["big"]
