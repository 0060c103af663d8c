"""Change-reader fixtures: the histories of histories.py, written once per session."""
from __future__ import annotations

import pytest

from .histories import make_history


@pytest.fixture(scope="session")
def stable_table(tmp_path_factory) -> str:
    return make_history(str(tmp_path_factory.mktemp("changes") / "stable.lance"), stable=True)


@pytest.fixture(scope="session")
def plain_table(tmp_path_factory) -> str:
    return make_history(str(tmp_path_factory.mktemp("changes") / "plain.lance"), stable=False)


@pytest.fixture(scope="session", params=["stable", "plain"])
def history(request, stable_table, plain_table) -> str:
    return stable_table if request.param == "stable" else plain_table
