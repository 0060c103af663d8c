"""The process's pools and caches (lance_duck/_state.py): ``lance_duck.clear_caches`` empties every
one and reads still equal pylance's; ``lance_duck.configure`` bounds them (unknown settings refused
by name); a forked child reads correctly; a table's ``metadata_cache_bytes`` is its own."""
from __future__ import annotations

import os
import threading
import time

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck
from lance_duck import _state
from lance_duck.errors import InvalidArgumentError
from lance_duck.scan.filters import bind_filter

ROWS = 6000


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> str:
    """Two 2.1 fragments (integers, FSST-able strings), a BTREE on ``id``, a deletion."""
    path = str(tmp_path_factory.mktemp("state") / "t.lance")
    ids = np.arange(ROWS, dtype=np.int64)
    t = pa.table({"id": ids, "v": (ids * 7) % 1000,
                  "name": pa.array([f"customer-{i % 300:05d}-from-the-city-of-{i % 17}" for i in ids])})
    lance.write_dataset(t, path, data_storage_version="2.1", max_rows_per_file=ROWS // 2)
    ds = lance.dataset(path)
    ds.create_scalar_index("id", "BTREE")
    ds.delete("id % 97 = 0")
    return path


@pytest.fixture
def restored():
    """Whatever a test configures is undone after it."""
    before = lance_duck.configure()
    yield
    lance_duck.configure(**before)


def _reads(path: str) -> list[pa.Table]:
    """The reads every test compares with pylance: a scan, an indexed filter, an Expression filter."""
    ds = lance_duck.dataset(path)
    return [ds.to_table(), ds.to_table(filter="id < 1500 and v > 10"),
            ds.to_table(columns=["id", "name"], filter=pc.field("v") < 100)]


def _pylance_reads(path: str) -> list[pa.Table]:
    ds = lance.dataset(path)
    return [ds.to_table(), ds.to_table(filter="id < 1500 and v > 10"),
            ds.to_table(columns=["id", "name"], filter=pc.field("v") < 100)]


def _assert_equal(got: list[pa.Table], want: list[pa.Table]) -> None:
    for g, w in zip(got, want, strict=True):
        assert g.schema == w.schema
        assert g.to_pydict() == w.to_pydict()


def test_clear_caches_empties_every_named_cache_and_the_next_read_equals_pylance(table):
    want = _pylance_reads(table)
    _assert_equal(_reads(table), want)
    # (not a plain count: a fresh process answers that from the manifest, before any cache)
    lance_duck.sql(f"select count(*) from '{table}' where true").fetchall()
    filled = {name for name, c in _state._caches.items() if len(c)}
    assert {"file_metadata", "index_files", "index_sections", "filter_bindings", "sql_tables",
            "sql_shapes"} <= filled, filled          # (a text with a literal shape is kept by its shape)
    lance_duck.clear_caches()
    assert {name: len(c) for name, c in _state._caches.items() if len(c) or c.nbytes} == {}
    assert all(len(c) == 0 for c in list(_state._ALL))          # the per-table caches too
    _assert_equal(_reads(table), want)


def test_every_named_cache_pool_and_switch_has_a_setting_that_configure_reports():
    for name in _state.CACHES:
        _state.cache(name)
    settings = lance_duck.configure()
    assert set(settings) == ({s for s, _, _ in [*_state.POOLS.values(), *_state.CACHES.values()]}
                             | set(_state.SWITCHES))
    for name, c in _state._caches.items():
        assert c.limit == settings[_state.CACHES[name][0]], name


def test_configure_bounds_the_caches_and_reads_still_equal_pylance(table, restored):
    want = _pylance_reads(table)
    lance_duck.clear_caches()
    lance_duck.configure(file_metadata_cache_bytes=64 * 1024, filter_cache_entries=2, index_cache_bytes=0)
    _assert_equal(_reads(table), want)
    lance_duck.dataset(table).to_table(filter="v = 3")
    assert 0 < _state.cache("file_metadata").nbytes <= 64 * 1024
    assert len(_state.cache("filter_bindings")) <= 2
    assert len(_state.cache("index_files")) == 0
    before = _state.cache("file_metadata").nbytes
    lance_duck.configure(file_metadata_cache_bytes=0)                # shrinks at once
    assert before and _state.cache("file_metadata").nbytes == 0
    _assert_equal(_reads(table), want)
    assert len(_state.cache("file_metadata")) == 0


def test_configure_sizes_the_pools(table, restored):
    want = _pylance_reads(table)
    old = _state.pool("scan")
    lance_duck.configure(scan_threads=1, kernel_threads=1)
    assert _state.pool("scan") is not old and _state.pool("scan")._max_workers == 1
    assert _state.pool("kernel")._max_workers == 1
    _assert_equal(_reads(table), want)
    lance_duck.configure(scan_threads=3)
    assert _state.pool("scan")._max_workers == 3
    _assert_equal(_reads(table), want)


def test_a_scan_under_way_finishes_when_configure_replaces_its_pool(table, restored):
    want = lance.dataset(table).to_table(columns=["id", "name"])
    lance_duck.configure(scan_threads=2)
    reader = lance_duck.dataset(table).scanner(columns=["id", "name"], batch_size=256).to_reader()
    batches = [reader.read_next_batch()]
    lance_duck.configure(scan_threads=1)             # the pool the scan submits to is replaced
    batches += list(reader)
    assert pa.Table.from_batches(batches).to_pydict() == want.to_pydict()


@pytest.mark.parametrize("settings, message", [
    ({"scan_thread": 2}, "unknown lance_duck setting 'scan_thread'"),
    ({"metadata_cache_bytes": 10}, "unknown lance_duck setting 'metadata_cache_bytes'"),
    ({"scan_threads": 0}, "scan_threads must be an integer of at least 1"),
    ({"index_cache_bytes": -1}, "index_cache_bytes must be an integer of at least 0"),
    ({"index_cache_bytes": "1"}, "index_cache_bytes must be an integer"),
    ({"io_threads": True}, "io_threads must be an integer"),
])
def test_configure_refuses_unknown_settings_and_bad_values_by_name(settings, message, restored):
    before = lance_duck.configure()
    with pytest.raises(InvalidArgumentError, match=message):
        lance_duck.configure(**settings)
    assert lance_duck.configure() == before


def test_a_filter_binding_evicted_by_the_bound_is_bound_again_equal(table, restored):
    lance_duck.configure(filter_cache_entries=1)
    schema = lance_duck.dataset(table).schema
    first = bind_filter("v > 3", schema)
    bind_filter("v > 4", schema)
    again = bind_filter("v > 3", schema)
    assert again is not first and str(again.expression) == str(first.expression)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX only")
def test_a_child_forked_while_another_thread_holds_a_cache_lock_reads_like_pylance(table):
    """os.fork() in this (threaded) process, with the pools running and a cache lock held by another
    thread: the child starts with no pools and empty caches, and reads what pylance reads."""
    want = _pylance_reads(table)
    _assert_equal(_reads(table), want)                  # pools and caches in use in the parent
    assert _state._pools and len(_state.cache("file_metadata"))
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with _state.cache("file_metadata")._lock, _state._lock:
            held.set()
            release.wait(60)
    threading.Thread(target=hold, daemon=True).start()
    held.wait(10)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                         # the child: report, never return to pytest
        code = 1
        try:
            assert not _state._pools and len(_state.cache("file_metadata")) == 0
            _assert_equal(_reads(table), want)
            code = 0
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            os.write(w, repr(exc).encode()[:2000])
        finally:
            os._exit(code)
    release.set()
    os.close(w)
    deadline = time.monotonic() + 120
    status = None
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung")
    message = os.read(r, 4096).decode()       # (the child has exited: every write end is closed, no wait)
    os.close(r)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, message


def test_metadata_cache_bytes_gives_its_table_its_own_caches_and_changes_no_setting(table, restored):
    before = lance_duck.configure()
    own = lance_duck.dataset(table, storage_options={"metadata_cache_bytes": "4096"})
    shared = lance_duck.dataset(table)
    assert lance_duck.configure() == before
    for cache, name in ((own._snapshot.io.tails, "footers"), (own._snapshot.io.whole, "small_files")):
        assert cache._lru is not _state.cache(name) and cache._lru.limit == 4096
    assert shared._snapshot.io.tails._lru is _state.cache("footers")
    assert shared._snapshot.io.whole._lru is _state.cache("small_files")
    assert _state.cache("footers").limit == before["footer_cache_bytes"]
    _assert_equal([own.to_table()], [lance.dataset(table).to_table()])
