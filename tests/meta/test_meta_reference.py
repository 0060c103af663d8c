"""The documentation site (docs/, mkdocs.yml) covers the public surface: the API reference page renders
every public name from its docstring (mkdocstrings `::: path` directives), each public member of the
dataset, scanner and fragment classes has a docstring (so it is rendered), the entry points document
every parameter, every Spark source option is in the Spark page, every page is in the navigation, and
no page labels anything by how the project is worked on."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import lance_duck
from lance_duck.scan.dataset import LanceDataset
from lance_duck.scan.fragment import LanceFragment
from lance_duck.scan.scanner import LanceScanner

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = {p.name: p.read_text() for p in sorted(DOCS.glob("*.md"))}
MKDOCS = (ROOT / "mkdocs.yml").read_text()
# `::: dotted.path` (mkdocstrings), with the options block indented under it.
DIRECTIVE = re.compile(r"^::: *([\w.]+)[ \t]*\n((?:[ \t]+.*\n?)*)", re.M)


def directives() -> dict[str, str]:
    """Every rendered object path -> its options block, over all pages."""
    return {m.group(1): m.group(2) for text in PAGES.values() for m in DIRECTIVE.finditer(text)}


def rendered(path: str) -> bool:
    """``path`` is rendered by a directive for it or for a module / class holding it (no member list)."""
    found = directives()
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        owner = ".".join(parts[:i])
        if owner in found:
            options = found[owner]
            return owner == path or "members:" not in options or re.search(rf"\b{parts[i]}\b", options) is not None
    return False


def public_members(cls: type) -> list[str]:
    """Public names the class itself defines (not those only inherited from pyarrow)."""
    return sorted(n for n in vars(cls) if not n.startswith("_"))


@pytest.mark.parametrize("cls", [LanceDataset, LanceScanner, LanceFragment], ids=lambda c: c.__name__)
def test_every_public_member_has_a_docstring_and_is_rendered(cls):
    members = public_members(cls)
    assert len(members) >= 8
    undocumented = [n for n in members if not inspect.getdoc(getattr(cls, n))]
    assert undocumented == []   # mkdocstrings leaves out members without one
    path = f"{cls.__module__}.{cls.__name__}"
    assert [n for n in members if not rendered(f"{path}.{n}")] == []


def test_every_public_name_of_the_package_is_rendered_in_the_api_reference():
    import importlib
    for name in lance_duck.__all__:
        if name == "__version__":
            continue
        obj = getattr(lance_duck, name)
        module = importlib.import_module(obj.__module__)
        paths = {f"lance_duck.{name}", f"{obj.__module__}.{obj.__qualname__}"}
        assert getattr(module, obj.__qualname__, None) is obj
        assert any(rendered(p) for p in paths), (name, paths)
    for extra in ("lance_duck.integrations.duckdb.LanceRelation", "lance_duck.integrations.spark.register",
                  "lance_duck.scan.params.Filter", "lance_duck.trace.decode_trace"):
        assert rendered(extra), extra


def test_every_process_setting_is_in_the_docs():
    """lance_duck.configure's settings (every pool and named cache) each have a row in a docs table."""
    from lance_duck._state import CACHES, POOLS
    text = "\n".join(PAGES.values())
    for setting, _, _ in [*POOLS.values(), *CACHES.values()]:
        assert f"| `{setting}` |" in text, setting


def test_entry_points_document_every_parameter_and_show_an_example():
    for name in ("dataset", "sql", "register"):
        fn = getattr(lance_duck, name)
        doc = inspect.getdoc(fn)
        args = doc.split("Args:", 1)[1].split("\n\n", 1)[0]
        for param in inspect.signature(fn).parameters:
            assert re.search(rf"^\s+{param}\b.*:", args, re.M), (name, param)
        assert "Examples:" in doc and ">>>" in doc, name


def test_every_spark_option_is_in_the_spark_page():
    from lance_duck.integrations.spark.options import OPTION_NAMES, STORAGE_PREFIX
    spark = PAGES["spark.md"]
    for spelled in OPTION_NAMES.values():
        assert f"`{spelled}`" in spark, spelled
    assert f"`{STORAGE_PREFIX}<key>`" in spark


def test_every_page_is_in_the_navigation_and_every_chart_exists():
    for name in PAGES:
        assert re.search(rf":\s*{re.escape(name)}\s*$", MKDOCS, re.M), f"docs/{name} is not in mkdocs.yml's nav"
    for text in PAGES.values():
        for img in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text):
            assert (DOCS / img).is_file(), img


def test_no_page_labels_numbers_by_how_the_project_is_worked_on():
    internal = re.compile(r"\b(first|second|third|\w+th|eleventh|twelfth) session\b|\bsession \d+\b"
                          r"|\bissue \d+\b|\bmilestone\b|\bthe lead\b", re.I)
    for name, text in [*PAGES.items(), ("README.md", (ROOT / "README.md").read_text())]:
        assert not internal.search(text), (name, internal.search(text).group(0))


def test_readme_is_a_front_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 120
    assert "bash scripts/demo.sh" in readme and "bash scripts/test.sh" in readme
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).is_file(), link
