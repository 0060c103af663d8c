"""Run ``python -m lance_duck ARGS`` as its own process, without paying the interpreter's imports each time.

A CLI test checks what a user's process does: its exit code, stdout and stderr. Starting Python and
importing DuckDB, pyarrow (which imports pandas) and lance_duck costs 1-3 s per process on the test
machine, and the CLI tests start dozens. So each test process starts one *zygote* (``_cli_zygote.py``):
a Python that has only imported what ``python -m lance_duck`` imports, then waits. Every run forks it:
the child is a new process (own exit code, own stdout and stderr at the file-descriptor level, own
caches and connections, nothing but imports done) that runs ``lance_duck``'s ``__main__`` exactly as
``python -m`` does. Whatever the imports printed to stderr is part of every run's stderr, so a test of a
clean stderr still sees it.

``LANCE_DUCK_TEST_CLI_SUBPROCESS=1`` (or a platform without ``fork``) runs a plain subprocess instead.
"""
from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ZYGOTE = Path(__file__).with_name("_cli_zygote.py")
_LOCK = threading.Lock()
_zygote: subprocess.Popen | None = None


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _start() -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, str(ZYGOTE)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=_env(), cwd=ROOT, start_new_session=True, text=True, bufsize=1)
    ready = proc.stdout.readline()
    assert ready.strip() == "ready", f"the CLI zygote did not start: {ready!r}"
    atexit.register(_stop, proc)
    return proc


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def _decode(data: bytes) -> str:
    # as subprocess.run(text=True) does: the locale's encoding, universal newlines
    import locale
    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


def run_cli(*args: str, cwd: str | Path = ROOT, text: bool = True, timeout: float = 120,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``subprocess.run([python, "-m", "lance_duck", *args], capture_output=True, ...)``, forked."""
    global _zygote
    env = env if env is not None else _env()
    if os.environ.get("LANCE_DUCK_TEST_CLI_SUBPROCESS") == "1" or not hasattr(os, "fork"):
        return subprocess.run([sys.executable, "-m", "lance_duck", *args], cwd=cwd, capture_output=True,
                              text=text, timeout=timeout, env=env)
    with _LOCK, tempfile.TemporaryDirectory() as tmp:
        if _zygote is None or _zygote.poll() is not None:
            _zygote = _start()
        out, err = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
        request = {"args": list(map(str, args)), "cwd": str(cwd), "env": env, "stdout": out, "stderr": err}
        _zygote.stdin.write(json.dumps(request) + "\n")
        _zygote.stdin.flush()
        if not select.select([_zygote.stdout], [], [], timeout)[0]:
            _stop(_zygote)
            raise subprocess.TimeoutExpired([sys.executable, "-m", "lance_duck", *args], timeout)
        reply = json.loads(_zygote.stdout.readline())
        stdout, stderr = Path(out).read_bytes(), Path(err).read_bytes()
    if text:
        stdout, stderr = _decode(stdout), _decode(stderr)
    return subprocess.CompletedProcess([sys.executable, "-m", "lance_duck", *args], reply["rc"], stdout, stderr)
