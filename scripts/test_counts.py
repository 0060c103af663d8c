"""Count the collected tests by what they compare against, not in one total.

A test module is classified by the oracle it imports (directly or through a helper module of the
test tree) or takes as a fixture: ``pylance`` (imports ``lance``, or a test takes a conftest fixture
built with ``lance``), else ``duckdb``, else ``spark`` (pyspark), else
``own`` (unit tests: hand-written expectations, pyarrow compute, round trips). The largest
parametrized tests are listed too, since one matrix can dominate a total.

Usage: python scripts/test_counts.py [pytest args, e.g. tests/scan]
"""
from __future__ import annotations

import ast
import collections
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORACLES = ("pylance", "duckdb", "spark")  # in priority order; anything else is "own"
_MODULE_ORACLE = {"lance": "pylance", "duckdb": "duckdb", "pyspark": "spark"}


@lru_cache(maxsize=None)
def _imports(path: Path) -> frozenset[str]:
    """Oracles a module imports, following imports of sibling modules of the test tree once deep."""
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError):
        return frozenset()
    found: set[str] = set()
    helpers: list[Path] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # from .helpers import x / from . import helpers
                base = path.parent
                for _ in range(node.level - 1):
                    base = base.parent
                mods = [node.module] if node.module else [a.name for a in node.names]
                helpers += [base / (m.replace(".", "/") + ".py") for m in mods]
            else:
                names = [node.module or ""]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip" and node.args:
            arg = node.args[0]
            names = [arg.value] if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else []
        for n in names:
            top = n.split(".")[0]
            if top in _MODULE_ORACLE:
                found.add(_MODULE_ORACLE[top])
            elif (path.parent / f"{top}.py").exists():  # sys.path-style helper beside the test
                helpers.append(path.parent / f"{top}.py")
    for h in helpers:
        if h.exists() and h != path and h.name != "__init__.py":
            found |= {o for o in _direct(h)}
    return frozenset(found)


@lru_cache(maxsize=None)
def _direct(path: Path) -> frozenset[str]:
    """Oracles a helper module imports itself (no further following)."""
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        mods = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        out |= {_MODULE_ORACLE[m.split(".")[0]] for m in mods if m.split(".")[0] in _MODULE_ORACLE}
    return frozenset(out)


@lru_cache(maxsize=None)
def _pylance_fixtures(conftest: Path) -> frozenset[str]:
    """Fixtures of a conftest.py whose body uses ``lance`` (a pylance-written or pylance-read table)."""
    if not conftest.exists():
        return frozenset()
    names = set()
    for node in ast.parse(conftest.read_text()).body:
        if isinstance(node, ast.FunctionDef) and any("fixture" in ast.unparse(d) for d in node.decorator_list):
            body = ast.walk(node)
            if any(isinstance(n, ast.Name) and n.id == "lance" or
                   isinstance(n, (ast.Import, ast.ImportFrom)) and "lance" in ast.unparse(n).split()
                   for n in body):
                names.add(node.name)
    return frozenset(names)


def _uses_pylance_fixture(path: Path) -> bool:
    fixtures = _pylance_fixtures(path.parent / "conftest.py")
    tree = ast.parse(path.read_text())
    return any(isinstance(n, ast.FunctionDef) and n.name.startswith("test") and
               any(a.arg in fixtures for a in n.args.args) for n in ast.walk(tree))


def classify(path: Path) -> str:
    """The strongest oracle a test module uses."""
    used = set(_imports(path))
    if _uses_pylance_fixture(path):
        used.add("pylance")
    return next((o for o in ORACLES if o in used), "own")


def collect(args: list[str]) -> list[str]:
    """Test ids pytest collects (``path::name[params]``)."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                         cwd=ROOT, capture_output=True, text=True)
    ids = [line for line in out.stdout.splitlines() if "::" in line]
    if out.returncode != 0 or not ids:
        sys.exit(f"collection failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return ids


def main(args: list[str]) -> None:
    ids = collect(args or ["tests"])
    by_oracle: collections.Counter[str] = collections.Counter()
    by_dir: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    by_function: collections.Counter[str] = collections.Counter()
    for tid in ids:
        file = tid.split("::")[0]
        oracle = classify(ROOT / file)
        by_oracle[oracle] += 1
        by_dir[str(Path(file).parent)][oracle] += 1
        by_function[tid.split("[")[0]] += 1
    cols = (*ORACLES, "own")
    print(f"{'directory':<28}" + "".join(f"{c:>9}" for c in cols) + f"{'total':>9}")
    for d in sorted(by_dir):
        print(f"{d:<28}" + "".join(f"{by_dir[d][c]:>9}" for c in cols) + f"{sum(by_dir[d].values()):>9}")
    print(f"{'all':<28}" + "".join(f"{by_oracle[c]:>9}" for c in cols) + f"{len(ids):>9}")
    print("\nlargest parametrized tests (one function, many ids):")
    for name, n in by_function.most_common(5):
        print(f"{n:>7}  {name}  ({n / len(ids):.0%} of all)")


if __name__ == "__main__":
    main(sys.argv[1:])
