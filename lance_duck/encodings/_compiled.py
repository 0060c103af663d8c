"""Optional compiled kernels (numba), used when the ``fast`` extra is installed.

``pip install 'lance-duck[fast]'`` adds numba; the numpy / Arrow kernels stay the default and are
what every install runs. Only kernels measured to win end to end are compiled (``bench/README.md``,
"The compiled-kernel question"): today FSST decoding, where the numpy path is bound by Arrow's
variable-width ``take`` (~5-7 ns per code) and a compiled loop writes each code's 8 symbol bytes
with one store (~1-2 ns per code).

numba is imported on the first input of at least :data:`FSST_MIN_CODES` codes (never for a point
lookup's few strings), and its functions come from numba's on-disk cache (``cache=True``) after
their first compile on the machine. ``lance_duck.configure(compiled_kernels=0)`` turns the compiled
path off for the process (``1``, the default, uses it when numba is importable).
"""
from __future__ import annotations

from types import ModuleType
from .. import _state

#: FSST inputs with fewer codes than this keep the numpy path (and do not import numba)
FSST_MIN_CODES = 1 << 15


def enabled() -> bool:
    """Whether compiled kernels may be used (the ``compiled_kernels`` setting)."""
    return _state.settings()["compiled_kernels"] > 0


def fsst_kernels(codes: int) -> ModuleType | None:
    """The compiled kernels' module (``fsst_sizes``, ``fsst_expand``) for an FSST input of
    ``codes`` codes, or None (numba not installed, the setting off, or an input too small to be
    worth them)."""
    if codes < FSST_MIN_CODES or not enabled():
        return None
    got = _state.slot("compiled_kernels", _load)
    return got if isinstance(got, ModuleType) else None


def _load() -> ModuleType | bool:
    """The kernels' module, or False when numba cannot be imported (asked once per process)."""
    try:
        from . import _numba_kernels
    except ImportError:      # numba not installed: the numpy kernels serve
        return False
    return _numba_kernels


def loaded() -> ModuleType | None:
    """The compiled kernels' module if this process uses it (numba installed, the setting on)."""
    return fsst_kernels(FSST_MIN_CODES)
