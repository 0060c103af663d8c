"""The CLI zygote of ``tests/cli_runner.py``: import what ``python -m lance_duck`` imports, then fork one
child per request (a JSON line on stdin: args, cwd, env, stdout / stderr files) and answer its exit code.

The child runs ``lance_duck.__main__`` as ``python -m lance_duck`` would (``runpy``, ``sys.argv``,
``sys.path[0]`` the working directory), with fresh ``sys.stdin`` / ``sys.stdout`` / ``sys.stderr`` on its
own file descriptors, and exits as the interpreter would: ``SystemExit``'s code, or 1 with the traceback.
"""
import io
import json
import os
import runpy
import sys
import tempfile
import traceback

_imports_err = tempfile.TemporaryFile()
_saved = os.dup(2)
os.dup2(_imports_err.fileno(), 2)
import lance_duck.integrations.cli  # noqa: E402,F401  (what `python -m lance_duck` imports first)
import lance_duck.integrations.duckdb  # noqa: E402,F401  (and, for every command reading a table, next)
import lance_duck.scan.dataset  # noqa: E402,F401

sys.stderr.flush()
os.dup2(_saved, 2)
os.close(_saved)
_imports_err.seek(0)
IMPORT_STDERR = _imports_err.read()
_imports_err.close()
STDOUT_ENCODING, STDOUT_ERRORS = sys.stdout.encoding, sys.stdout.errors
STDERR_ENCODING = sys.stderr.encoding


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def child(request: dict) -> None:
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(err, IMPORT_STDERR)
        nul = os.open(os.devnull, os.O_RDONLY)
        for fd, target in ((nul, 0), (out, 1), (err, 2)):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)))
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)),
                                      encoding=STDOUT_ENCODING, errors=STDOUT_ERRORS)
        sys.stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
                                      encoding=STDERR_ENCODING, errors="backslashreplace", line_buffering=True)
        sys.argv = ["-m", *request["args"]]
        sys.path[0] = os.getcwd()
        try:
            runpy.run_module("lance_duck", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            code = _exit_code(e.code)
        except BaseException:  # noqa: BLE001 - the interpreter prints it and exits 1
            traceback.print_exc()
            code = 1
        import atexit
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                code = code or 120   # the interpreter's code when flushing stdout fails at exit
    finally:
        os._exit(code)


def main() -> None:
    print("ready", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            child(request)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"rc": os.waitstatus_to_exitcode(status)}), flush=True)


if __name__ == "__main__":
    main()
