"""The compiled FSST kernels (numba, the ``fast`` extra) against the reference decoder and the
numpy kernels, and on pylance-written pages against pylance (the path-independent tests of
test_encodings_fsst_pylance.py run again here, with every input decoded by the compiled
kernels). Skipped where numba is not installed."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import lance_duck
from lance_duck import _state
from lance_duck.encodings import _compiled, _threads, fsst
from lance_duck.errors import CorruptFileError
from lance_duck.trace import decode_trace
from tests._kernels import use_kernels
from tests.encodings.test_encodings_fsst import SYMS, make_table, ref_decode, ref_encode
from tests.encodings.test_encodings_fsst_pylance import (  # noqa: F401  (the fixture they use)
    fsst_tables, test_fsst_columns_decode_like_pylance, test_fsst_escapes_and_multiple_pages_really_occur,
    test_fsst_ranges_and_taken_rows_equal_pylance_take, test_fsst_strings_through_the_dataset_api)


@pytest.fixture(autouse=True)
def _kernels(monkeypatch):
    """Every FSST input here, small ones too, decoded by the compiled kernels."""
    use_kernels(monkeypatch, "compiled")


def _both(table, offs, data, **kw):
    with decode_trace() as trace:
        got = fsst.decompress(table, offs, data, **kw)
    if offs[-1] > offs[0]:   # (no codes: nothing to decode on either path)
        assert trace.values("path:fsst:compiled"), "the compiled kernels did not run"
    lance_duck.configure(compiled_kernels=0)
    try:
        want = fsst.decompress(table, offs, data, **kw)
    finally:
        lance_duck.configure(compiled_kernels=1)
    assert got[0].dtype == want[0].dtype
    assert got[0].tolist() == want[0].tolist() and got[1].tobytes() == want[1].tobytes()
    return got


def test_known_answer_with_escapes_and_runs_of_ff():
    comp = bytes([0, 255, 255, 1, 255, 255, 255, 0x41, 3, 4])  # ab, lit ff, xyz, lit ff, lit A, q, \xff\xfe
    o, d = _both(make_table(SYMS), np.array([0, 3, 10]), comp)
    assert d.tobytes() == b"ab\xff" + b"xyz\xffAq\xff\xfe" and o.tolist() == [0, 3, 11]


def test_offsets_not_starting_at_zero_and_empty_strings():
    comp = b"\x00\x00" + ref_encode(b"hello world", SYMS) + b"\x01"
    o, d = _both(make_table(SYMS), np.array([2, 2, len(comp) - 1, len(comp) - 1]), comp)
    assert d.tobytes() == b"hello world" and o.tolist() == [0, 0, 11, 11]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=60), st.booleans())
def test_roundtrip_property_matches_reference_and_numpy(strings, int32):
    comp = [ref_encode(s, SYMS) for s in strings]
    offs = np.cumsum([0] + [len(c) for c in comp])
    o, d = _both(make_table(SYMS), offs, b"".join(comp), int32_offsets=int32)
    assert [d[o[i]:o[i + 1]].tobytes() for i in range(len(strings))] == strings
    assert [ref_decode(c, SYMS) for c in comp] == strings


def test_eight_byte_symbols_at_the_very_end_of_the_output():
    """Each code writes 8 bytes where it can: the last symbols must be written exactly."""
    syms = [b"abcdefgh", b"x", b"yz"]
    comp = bytes([0, 1, 0, 2, 1, 0])
    o, d = _both(make_table(syms), np.array([0, 2, 4, 6]), comp, int32_offsets=True)
    assert d.tobytes() == b"abcdefghx" + b"abcdefghyz" + b"xabcdefgh" and o.tolist() == [0, 9, 19, 28]


@pytest.mark.parametrize("escapes", [False, True])
def test_pieces_on_the_kernel_pool_write_one_output(monkeypatch, escapes):
    rng = np.random.default_rng(3)
    strings = [rng.integers(97, 123, int(k)).astype(np.uint8).tobytes() + (b"\xe6\x97\xa5" if escapes and i % 7 == 0 else b"")
               for i, k in enumerate(rng.integers(0, 30, 4000))]
    syms = [b"ab", b"cde", b"fghijklm", b"n", b"op"] + [bytes([c]) for c in range(97, 123)]
    comp = [ref_encode(s, syms) for s in strings]
    offs = np.cumsum([0] + [len(c) for c in comp])
    monkeypatch.setattr(fsst, "PIECE_TOKENS", 1000)
    monkeypatch.setattr(fsst, "PARALLEL_MIN_TOKENS", 1000)
    monkeypatch.setattr(_threads, "workers", lambda: 2)
    with decode_trace() as trace:
        o, d = _both(make_table(syms), offs, b"".join(comp))
    assert max(trace.values("path:fsst:compiled")) > 2
    assert ("path:fsst:escapes" in trace.names()) == escapes
    assert [d[o[i]:o[i + 1]].tobytes() for i in range(len(strings))] == strings


def test_corrupt_inputs_raise_like_the_numpy_kernels():
    table = make_table(SYMS)
    with pytest.raises(CorruptFileError, match="dangling escape"):
        fsst.decompress(table, np.array([0, 2]), bytes([0, 255]))
    with pytest.raises(CorruptFileError, match="outside the 5-symbol table"):
        fsst.decompress(table, np.array([0, 2]), bytes([0, 9]))
    with pytest.raises(CorruptFileError, match="not increasing"):
        fsst.decompress(table, np.array([0, 5]), bytes([0, 1]))


def test_setting_off_keeps_the_numpy_kernels():
    comp = ref_encode(b"hello world" * 10, SYMS)
    lance_duck.configure(compiled_kernels=0)
    try:
        with decode_trace() as trace:
            fsst.decompress(make_table(SYMS), np.array([0, len(comp)]), comp)
        assert "path:fsst:compiled" not in trace.names() and _compiled.fsst_kernels(1 << 30) is None
    finally:
        lance_duck.configure(compiled_kernels=1)
    assert _compiled.fsst_kernels(1 << 30) is not None


def test_a_process_loads_the_compiled_kernels_after_warm_codes_in_the_background(monkeypatch):
    """Until WARM_CODES codes were decoded the numpy kernels serve and numba is not loaded; then a
    background thread loads the kernels and later inputs use them."""
    import subprocess
    import sys
    code = (
        "import time, sys, numpy as np\n"
        "from lance_duck.encodings import _compiled, fsst\n"
        "from tests.encodings.test_encodings_fsst import SYMS, make_table, ref_encode\n"
        "one = ref_encode(b'xyz hello wo', SYMS)\n"
        "comp = one * 20000\n"
        "assert len(comp) >= _compiled.FSST_MIN_CODES\n"
        "_compiled.WARM_CODES = int(2.5 * len(comp))   # loaded after the third input\n"
        "offs = np.arange(0, len(comp) + 1, len(one))\n"
        "seen = []\n"
        "for _ in range(3):\n"
        "    seen.append(_compiled.loaded() is not None or 'numba' in sys.modules)\n"
        "    fsst.decompress(make_table(SYMS), offs, comp)\n"
        "deadline = time.time() + 60\n"
        "while _compiled.loaded() is None and time.time() < deadline:\n"
        "    time.sleep(0.05)\n"
        "from lance_duck.trace import decode_trace\n"
        "with decode_trace() as tr:\n"
        "    o, d = fsst.decompress(make_table(SYMS), offs, comp)\n"
        "assert d.tobytes() == b'xyz hello wo' * 20000\n"
        "print(seen, _compiled.loaded() is not None, 'path:fsst:compiled' in tr.names())\n")
    root = str(__import__("pathlib").Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=root,
                         env={**__import__("os").environ, "PYTHONPATH": root})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[False,", "False,", "False]", "True", "True"]


def test_a_first_query_over_fsst_strings_does_not_import_numba(fsst_tables):
    """A fresh process reading a whole FSST column (100,000 strings, far below WARM_CODES) decodes
    it with numpy and never imports numba, whatever the setting."""
    import os
    import subprocess
    import sys
    uri, expected = fsst_tables("mini", "2.2")
    code = ("import sys, lance_duck\n"
            f"n = lance_duck.sql(\"select count(distinct short), max(text) from '{uri}'\").fetchall()\n"
            "print('numba' in sys.modules, 'lance_duck.encodings.fsst' in sys.modules)\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(lance_duck.__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": root})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"]


def test_kernels_that_fail_to_build_leave_the_numpy_kernels_in_charge(monkeypatch):
    from lance_duck.encodings import _numba_kernels

    def broken() -> None:
        raise RuntimeError("LLVM cannot build this here")
    monkeypatch.setattr(_numba_kernels, "warm_up", broken)
    loader = _state.WarmLoader(_compiled._import, _compiled.WARM_CODES, "test-compile-load")
    assert loader.load() is None and loader.module is False
    assert loader.note(1 << 30) is None       # and it is not tried again
