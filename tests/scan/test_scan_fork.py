"""Issue 17 item 8: a process forked after lance_duck was used must still scan.

The library's thread pools are created lazily; ``fork()`` copies a pool object but none of its
threads, so a child that reuses the parent's pool queues work that nothing ever runs. Each test
runs its parent in a process of its own (so the pools really exist before the fork, whatever ran
earlier in pytest) and bounds the child with a timeout: a hang fails the test.
"""
from __future__ import annotations

import json
import os
import subprocess
import textwrap

import lance
import pytest

import lance_duck

from ..cli_runner import run_python_code

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(lance_duck.__file__)))
CHILD_TIMEOUT = 60

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX only")


def run_parent(code: str, timeout: float = 4 * CHILD_TIMEOUT) -> subprocess.CompletedProcess:
    """Run ``code`` in a process of its own that imports this checkout's lance_duck (forked from a Python
    that has only imported it, with no thread or pool started: tests/cli_runner.py)."""
    env = dict(os.environ, PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return run_python_code(textwrap.dedent(code), preload=("multiprocessing", "lance_duck.*"), timeout=timeout,
                           env=env, warnoptions=("ignore::DeprecationWarning",))


FORK_HELPERS = f"""
import multiprocessing, os, sys
import lance_duck

def in_forked_child(fn, *args):
    '''fn(*args) in a child forked now; its result, or exit 3 if the child hangs.'''
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=lambda: q.put(fn(*args)))
    p.start()
    p.join({CHILD_TIMEOUT})
    if p.is_alive():
        p.kill()
        print("child hung", file=sys.stderr)
        sys.exit(3)
    if p.exitcode != 0:
        print("child failed", p.exitcode, file=sys.stderr)
        sys.exit(4)
    return q.get(timeout=10)
"""


def test_forked_child_scans_after_parent_used_readahead_pool(table_path):
    want = lance.dataset(table_path).to_table(columns=["id", "name"], filter="id > 100")
    r = run_parent(FORK_HELPERS + f"""
def scan(path):
    return lance_duck.dataset(path).to_table(columns=["id", "name"], filter="id > 100").to_pydict()

ds = lance_duck.dataset({table_path!r})
ds.to_table()                                   # the parent's read-ahead pool now has threads
assert any(t.name.startswith("lance_duck_scan") for t in __import__("threading").enumerate())
import json
print(json.dumps(in_forked_child(scan, {table_path!r})))
""")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == want.to_pydict()


def test_forked_child_runs_kernel_pool_after_parent_used_it():
    r = run_parent(FORK_HELPERS + """
from lance_duck.encodings import _threads
def squares():
    return list(_threads._get_pool().map(lambda x: x * x, range(8)))
assert squares() == [x * x for x in range(8)]    # the parent's kernel pool now has threads
print(in_forked_child(squares))
""")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str([x * x for x in range(8)])


def test_forked_child_scans_while_a_parent_thread_holds_the_cache_locks(table_path):
    """A fork while another thread is inside a process-wide cache (its lock held): the child's caches
    start empty with new locks, so the child still scans and gets the same rows."""
    want = lance.dataset(table_path).to_table(columns=["id", "name"], filter="id > 100")
    r = run_parent(FORK_HELPERS + f"""
import threading
from lance_duck.file.container import METADATA_CACHE
from lance_duck.index.files import CACHE as INDEX_CACHE
from lance_duck import _state

def scan(path):
    assert len(METADATA_CACHE) == 0          # emptied in the child
    return lance_duck.dataset(path).to_table(columns=["id", "name"], filter="id > 100").to_pydict()

lance_duck.dataset({table_path!r}).to_table()
held = threading.Event()
def hold():
    with METADATA_CACHE._lock, INDEX_CACHE._lock, _state.cache("footers")._lock, _state._lock:
        held.set()
        threading.Event().wait(3 * {CHILD_TIMEOUT})
threading.Thread(target=hold, daemon=True).start()
held.wait()
import json
print(json.dumps(in_forked_child(scan, {table_path!r})))
""")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == want.to_pydict()
