"""Pinning the decode kernels a test runs: the numpy ones (every install) or the compiled ones
(numba, the ``fast`` extra)."""
from __future__ import annotations

import pytest

from lance_duck import _state
from lance_duck.encodings import _compiled

KERNELS = ["numpy", "compiled"]


def use_kernels(monkeypatch: pytest.MonkeyPatch, which: str) -> None:
    """Decode with ``which`` kernels until the test ends; "compiled" for inputs of any size (a
    test's small pages too), skipped where numba is not installed (the runs without the extra)."""
    monkeypatch.setitem(_state._settings, "compiled_kernels", int(which == "compiled"))
    if which == "compiled":
        if not _compiled.load():
            pytest.skip("numba is not installed (the fast extra)")
        monkeypatch.setattr(_compiled, "FSST_MIN_CODES", 0)
        monkeypatch.setattr(_compiled, "FASTLANES_MIN_VALUES", 0)
        from lance_duck.encodings import fsst
        monkeypatch.setattr(fsst, "FEW_STRINGS", 0)     # (a few short strings are joined by symbols otherwise)


def use_walk_kernels(monkeypatch: pytest.MonkeyPatch, which: str) -> None:
    """Walk HNSW graphs with ``which`` kernels until the test ends: "numpy", or "compiled" (numba's
    level-0 walk of SQ partitions, loaded at once; skipped where numba is not installed)."""
    from lance_duck.index.vector import hnsw
    monkeypatch.setitem(_state._settings, "compiled_kernels", int(which == "compiled"))
    if which == "compiled" and hnsw.compiled_walk(load=True) is None:
        pytest.skip("numba is not installed (the fast extra)")
