"""Wall time of the first query of a fresh process, over ``python -c pass``; and what it imports.

    python bench/first_query.py [--runs 7] [TABLE ...]

For each table (default: the packaged sample, lance_duck/_sample/sample.lance), runs
``python -c "import lance_duck; lance_duck.sql(\\"select count(*) from '<table>'\\")"`` and
``python -c pass`` interleaved, prints their medians (wall, and CPU: steadier on a loaded machine)
and the differences, then the costliest
top-level imports of one run (``-X importtime``, cumulative microseconds). The children run with
bytecode written and read (``PYTHONDONTWRITEBYTECODE`` removed from their environment, one warm-up
run first), as an installed package imports: compiling lance_duck's sources on every start would
be measured otherwise.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

import lance_duck

SAMPLE = os.path.join(os.path.dirname(lance_duck.__file__), "_sample", "sample.lance")
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def wall(args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one child process."""
    r0, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, env=ENV)
    w, r1 = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN)
    return w, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def top_imports(code: str, n: int = 12) -> list[tuple[int, str]]:
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", code], check=True,
                         capture_output=True, text=True, env=ENV).stderr
    rows = []
    for line in err.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cum, name = line[len("import time:"):].split("|")
        if len(name) - len(name.lstrip()) <= 3:        # top-level and first nesting level
            rows.append((int(cum), name.strip()))
    return sorted(rows, reverse=True)[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("tables", nargs="*", default=[SAMPLE])
    args = ap.parse_args()
    for table in args.tables:
        code = f"import lance_duck; lance_duck.sql(\"select count(*) from '{table}'\").fetchall()"
        base, first = [], []
        wall(["-c", code])          # warm-up: bytecode written, files cached
        print(f"{table}  (median of {args.runs}, load {os.getloadavg()[0]:.2f})")
        for _ in range(args.runs):
            base.append(wall(["-c", "pass"]))
            first.append(wall(["-c", code]))
        for k, what in ((0, "wall"), (1, "CPU ")):
            b = statistics.median(x[k] for x in base)
            f = statistics.median(x[k] for x in first)
            print(f"  {what}: python -c pass {b * 1000:.0f} ms  first query {f * 1000:.0f} ms  "
                  f"over pass {(f - b) * 1000:.0f} ms")
        for cum, name in top_imports(code):
            print(f"    {cum / 1000:8.1f} ms  {name}")


if __name__ == "__main__":
    main()
