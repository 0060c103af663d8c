"""The zygote of ``tests/cli_runner.py``: import the modules named on the command line (``pkg.*``: the
package and every module under it), then fork one
child per request (a JSON line on stdin: module or code, args, cwd, env, stdout / stderr files) and answer
its exit code.

The child runs ``python -m MODULE ARGS`` (``runpy``, ``sys.argv``, ``sys.path[0]`` the working directory) or
``python -c CODE ARGS`` as the interpreter would, with fresh ``sys.stdin`` / ``sys.stdout`` /
``sys.stderr`` on its own file descriptors, and exits as the interpreter would: ``SystemExit``'s code, or
1 with the traceback (a signal ends it as it would end any process).
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
for _name in sys.argv[1:]:
    if _name.endswith(".*"):   # a package and every module under it (never a __main__: that would run it)
        import importlib
        import pkgutil
        _package = importlib.import_module(_name[:-2])
        for _info in pkgutil.walk_packages(_package.__path__, _package.__name__ + "."):
            if not _info.name.endswith("__main__"):
                try:
                    importlib.import_module(_info.name)
                except ImportError:     # an optional dependency this Python lacks (pyspark): not preloaded
                    pass
    else:
        __import__(_name)

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
        for option in request.get("warnoptions", []):   # python -W OPTION
            import warnings
            sys.warnoptions.append(option)
            warnings._setoption(option)
        try:
            if "module" in request:
                sys.argv = ["-m", *request["args"]]
                sys.path[0] = os.getcwd()
                runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
            else:
                sys.argv = ["-c", *request["args"]]
                sys.path[0] = ""
                import builtins
                exec(compile(request["code"], "<string>", "exec"), {"__name__": "__main__", "__builtins__": builtins})
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
    import warnings
    filters = warnings.filters[:]
    # Python 3.12+ warns here that this process has (native: Arrow's, jemalloc's) threads; they hold no
    # lock a child needs, as for any fork of a process that imported pyarrow. The child gets the filters
    # as they were.
    warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
    print("ready", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            warnings.filters[:] = filters
            child(request)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"rc": os.waitstatus_to_exitcode(status)}), flush=True)


if __name__ == "__main__":
    main()
