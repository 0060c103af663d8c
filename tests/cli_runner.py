"""Run ``python -m lance_duck ARGS`` (or ``python -c CODE``) as its own process, without paying the
interpreter's imports each time.

A CLI test checks what a user's process does: its exit code, stdout and stderr. Starting Python and
importing DuckDB, pyarrow (which imports pandas) and lance_duck costs 1-3 s per process on the test
machine, and the CLI tests start dozens. So each test process starts a *zygote* (``_cli_zygote.py``)
per set of modules: a Python that has only imported them (for the CLI: what ``python -m lance_duck``
imports), then waits. Every run forks it: the child is a new process (own exit code, own stdout and
stderr at the file-descriptor level, own caches and connections, nothing but imports done; a crash kills
only the child) that runs ``lance_duck``'s ``__main__`` exactly as ``python -m`` does, or the code as
``python -c`` does. Whatever the imports printed to stderr is part of every run's stderr, so a test of a
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
_ZYGOTES: dict[tuple[str, ...], subprocess.Popen] = {}
# Every module of lance_duck (with what they import: DuckDB, pyarrow, pandas, sqlglot, fsspec, protobuf),
# so that a run pays for no import at all, whichever command it runs.
CLI_MODULES = ("lance_duck.*",)


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _start(modules: tuple[str, ...]) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, str(ZYGOTE), *modules], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
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
    return _run({"module": "lance_duck"}, [sys.executable, "-m", "lance_duck"], args, CLI_MODULES, cwd=cwd,
                text=text, timeout=timeout, env=env)


def run_python_code(code: str, *args: str, preload: tuple[str, ...], cwd: str | Path = ROOT, text: bool = True,
                    timeout: float = 120, env: dict[str, str] | None = None,
                    warnoptions: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """``subprocess.run([python, *("-W", o for o in warnoptions), "-c", code, *args], capture_output=True,
    ...)``, forked from a zygote that imported ``preload``."""
    flags = [f for o in warnoptions for f in ("-W", o)]
    return _run({"code": code, "warnoptions": list(warnoptions)}, [sys.executable, *flags, "-c", code], args,
                preload, cwd=cwd, text=text, timeout=timeout, env=env)


def _run(what: dict, argv: list[str], args, modules: tuple[str, ...], *, cwd, text, timeout,
         env) -> subprocess.CompletedProcess:
    env = env if env is not None else _env()
    if os.environ.get("LANCE_DUCK_TEST_CLI_SUBPROCESS") == "1" or not hasattr(os, "fork"):
        return subprocess.run([*argv, *map(str, args)], cwd=cwd, capture_output=True, text=text,
                              timeout=timeout, env=env)
    with _LOCK, tempfile.TemporaryDirectory() as tmp:
        zygote = _ZYGOTES.get(modules)
        if zygote is None or zygote.poll() is not None:
            zygote = _ZYGOTES[modules] = _start(modules)
        out, err = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
        request = {**what, "args": list(map(str, args)), "cwd": str(cwd), "env": env, "stdout": out, "stderr": err}
        zygote.stdin.write(json.dumps(request) + "\n")
        zygote.stdin.flush()
        poller = select.poll()          # not select(): a test process may hold more than 1024 descriptors
        poller.register(zygote.stdout, select.POLLIN)
        if not poller.poll(None if timeout is None else timeout * 1000):
            _stop(zygote)
            raise subprocess.TimeoutExpired([*argv, *args], timeout)
        reply = json.loads(zygote.stdout.readline())
        stdout, stderr = Path(out).read_bytes(), Path(err).read_bytes()
    if text:
        stdout, stderr = _decode(stdout), _decode(stderr)
    return subprocess.CompletedProcess([*argv, *args], reply["rc"], stdout, stderr)
