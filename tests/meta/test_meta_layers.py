"""Layers run one way: no module of lance_duck imports a package drawn above its own in
docs/architecture.md, and the drawing lists every package and top-level module."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "lance_duck"


def layer_order(doc: str) -> list[str]:
    """The units (``name/`` or ``name.py``) of the first code block after "Data flows", top first."""
    block = doc[doc.index("Data flows"):].split("```")[1]
    return re.findall(r"^([A-Za-z0-9_]+/|[A-Za-z0-9_]+\.py)\s", block, flags=re.M)


def unit_of(parts: list[str]) -> str:
    """The unit of a module path inside lance_duck (``["file", "v2", "page"]`` -> ``file/``)."""
    if not parts:
        return "__init__.py"
    return parts[0] + "/" if (PACKAGE / parts[0]).is_dir() else parts[0] + ".py"


def imported_units(source: str, module: list[str], is_package: bool) -> set[str]:
    """Units of lance_duck that ``source`` (the module at ``module`` parts) imports, at any depth."""
    found = set()
    package = module if is_package else module[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names = alias.name.split(".")
                if names[0] == "lance_duck":
                    found.add(unit_of(names[1:]))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
            elif (node.module or "").split(".")[0] == "lance_duck":
                base = []
            else:
                continue
            names = (node.module or "").split(".") if node.module else []
            if not node.level:
                names = names[1:]
            target = base + names
            if target:
                found.add(unit_of(target))
            else:  # `from lance_duck import x` / `from .. import x` at the root: x is a unit itself
                found.update(unit_of([alias.name]) if alias.name != "*" and (
                    (PACKAGE / alias.name).is_dir() or (PACKAGE / f"{alias.name}.py").exists())
                    else "__init__.py" for alias in node.names)
    return found


def upward_imports(order: list[str]) -> list[str]:
    rank = {unit: i for i, unit in enumerate(order)}
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        module = list(rel.with_suffix("").parts)
        is_package = module[-1] == "__init__"
        if is_package:
            module = module[:-1]
        own = unit_of(module) if module else "__init__.py"
        if rel.name == "__main__.py" and len(rel.parts) == 1:
            own = "__main__.py"
        for target in imported_units(path.read_text(), module, is_package):
            if target != own and rank.get(target, -1) <= rank.get(own, len(order)):
                problems.append(f"lance_duck/{rel} ({own}) imports {target}, drawn above it")
    return problems


def test_architecture_drawing_lists_every_package_and_module():
    order = layer_order((ROOT / "docs" / "architecture.md").read_text())
    present = {p.name + "/" for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    present |= {p.name for p in PACKAGE.glob("*.py")}
    assert len(order) == len(set(order)), order
    assert set(order) == present, (f"missing from docs/architecture.md: {sorted(present - set(order))}; "
                                   f"drawn but absent: {sorted(set(order) - present)}")


def test_no_module_imports_a_layer_drawn_above_it():
    order = layer_order((ROOT / "docs" / "architecture.md").read_text())
    assert upward_imports(order) == []


def test_import_parser_sees_relative_absolute_and_nested_imports():
    source = ("from ...scan.dataset import LanceDataset\n"
              "def f():\n    import lance_duck.index.search\n    from ... import schema\n"
              "from ..v2_0 import page\n")
    assert imported_units(source, ["file", "v2", "reader"], False) == {"scan/", "index/", "schema.py", "file/"}
    assert imported_units("from . import snapshot\n", ["table"], True) == {"table/"}


def test_an_upward_import_is_reported():
    order = layer_order((ROOT / "docs" / "architecture.md").read_text())
    # Draw file/ above table/: table's imports of file/ must then be reported.
    swapped = [u for u in order if u != "file/"]
    swapped.insert(swapped.index("table/"), "file/")
    assert any("lance_duck/table/" in p and "imports file/" in p for p in upward_imports(swapped))
