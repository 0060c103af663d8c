"""Optional compiled kernels (numba), used when the ``fast`` extra is installed.

``pip install 'lance-duck[fast]'`` adds numba; the numpy / Arrow kernels stay the default and are
what every install runs. Only kernels measured to win are compiled (``bench/README.md``, "The
compiled-kernel question"): today FSST decoding, where the numpy path is bound by Arrow's
variable-width ``take`` (~5-7 ns per code) and a compiled loop writes each code's symbol with one
8-byte store (~1-2 ns per code); and FastLanes unpacking of 16-, 32- and 64-bit blocks, one pass where
numpy makes ~6 (62-bit doubles 3.0 -> 1.3 ms per 1M values, 5-bit uint32 indices 0.9 -> 0.35 ms).
FastLanes values unpacked count towards :data:`WARM_CODES` like FSST codes.

Loading them costs a process ~0.45 s of CPU (importing numba, then every signature the decoder
calls from numba's on-disk cache, ``cache=True``; a kernel that fails to build leaves numpy in
charge), as much as the numpy kernels spend on ~60M codes. So a process first decodes
:data:`WARM_CODES` FSST codes with numpy (a short-lived process, a first query, never pays the
load), then loads the compiled kernels on a background thread and uses them once they are ready; :func:`load` loads them at once instead (a long-running service at start-up).
Inputs under :data:`FSST_MIN_CODES` codes always keep numpy. ``lance_duck.configure(
compiled_kernels=0)`` turns the compiled path off for the process (``1``, the default, uses it
when numba is importable).
"""
from __future__ import annotations

from types import ModuleType

from .. import _state

#: FSST inputs with fewer codes than this keep the numpy path
FSST_MIN_CODES = 1 << 15
#: FastLanes unpacks of fewer values than this keep the numpy path (four blocks: a scan task's
#: level buffers of a few mini-block chunks are ~20-30K values, which at 32K stayed on numpy's
#: ~36 calls a batch -- list<struct> scans 1.5x slower)
FASTLANES_MIN_VALUES = 1 << 12
#: FSST codes a process decodes with numpy before the compiled kernels are loaded in the background
WARM_CODES = 1 << 25


def enabled() -> bool:
    """Whether compiled kernels may be used (the ``compiled_kernels`` setting)."""
    return _state.settings()["compiled_kernels"] > 0


def _import() -> ModuleType | None:
    """The kernels' module with every signature the decoder calls loaded (from numba's cache, or
    compiled once), or None when numba cannot be imported or a kernel fails to compile here."""
    try:
        from . import _numba_kernels
    except ImportError:      # numba not installed: the numpy kernels serve
        return None
    try:
        _numba_kernels.warm_up()
    except Exception:        # a numba / LLVM that cannot build them: the numpy kernels serve
        return None
    return _numba_kernels


def _loader() -> _state.WarmLoader:
    return _state.slot("compiled_kernels",
                       lambda: _state.WarmLoader(_import, WARM_CODES, "lance_duck-compile-load"))


def fsst_kernels(codes: int) -> ModuleType | None:
    """The compiled kernels' module (``fsst_total``, ``fsst_sizes``, ``fsst_expand``,
    ``fsst_expand_short``) for an FSST input of ``codes`` codes, or None: numba not installed or
    not loaded yet, the setting off, or an input too small to be worth them."""
    if codes < FSST_MIN_CODES or not enabled():
        return None
    return _loader().note(codes)


def fastlanes_kernels(values: int) -> ModuleType | None:
    """The compiled kernels' module (``fastlanes``, for 16-, 32- and 64-bit blocks) for a FastLanes unpack of
    ``values`` values, or None (as :func:`fsst_kernels`; the values count towards :data:`WARM_CODES`)."""
    if values < FASTLANES_MIN_VALUES or not enabled():
        return None
    return _loader().note(values)


def load() -> bool:
    """Load the compiled kernels now (not after :data:`WARM_CODES` codes); whether they are
    available (numba installed and the ``compiled_kernels`` setting on)."""
    return enabled() and _loader().load() is not None


def loaded() -> ModuleType | None:
    """The compiled kernels' module if this process has loaded it and may use it."""
    m = _loader().module
    return m if enabled() and isinstance(m, ModuleType) else None
