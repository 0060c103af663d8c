"""docs/reference.md covers the public surface: every public member of the dataset, scanner and
fragment classes (each with a docstring), the entry points, and every Spark source option."""
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
REFERENCE = (ROOT / "docs" / "reference.md").read_text()


def public_members(cls: type) -> list[str]:
    """Public names the class itself defines (not those only inherited from pyarrow)."""
    return sorted(n for n in vars(cls) if not n.startswith("_"))


@pytest.mark.parametrize("cls", [LanceDataset, LanceScanner, LanceFragment], ids=lambda c: c.__name__)
def test_every_public_member_is_documented_and_in_the_reference(cls):
    members = public_members(cls)
    assert len(members) >= 8
    undocumented = [n for n in members if not inspect.getdoc(getattr(cls, n))]
    assert undocumented == []
    section = REFERENCE.split(f"## `{cls.__name__}`\n", 1)[1].split("\n## ", 1)[0]
    missing = [n for n in members if not re.search(rf"\b{n}\b", section)]
    assert missing == []


def test_entry_points_and_errors_are_in_the_reference():
    for name in ("dataset", "sql", "register", "configure", "clear_caches"):
        assert f"## `lance_duck.{name}(" in REFERENCE, name
        signature = str(inspect.signature(getattr(lance_duck, name)))
        for param in inspect.signature(getattr(lance_duck, name)).parameters:
            assert param in REFERENCE, (name, param, signature)
    for name in lance_duck.__all__:
        if name.endswith("Error"):
            assert f"`{name}`" in REFERENCE, name
    from lance_duck._state import CACHES, POOLS
    for setting, _, _ in [*POOLS.values(), *CACHES.values()]:
        assert f"| `{setting}` |" in REFERENCE, setting


def test_every_spark_option_is_in_the_reference():
    from lance_duck.integrations.spark.options import OPTION_NAMES, STORAGE_PREFIX
    for spelled in OPTION_NAMES.values():
        assert f"`{spelled}`" in REFERENCE, spelled
    assert f"`{STORAGE_PREFIX}<key>`" in REFERENCE
