"""``fsst.decompress_many``: several inputs (each its own symbol table, offsets and bytes -- the
pages of a column) decoded into one output, on the numpy and the compiled kernels, equal to each
input decoded alone and joined: empty inputs and strings, escapes, a table with the encoder
switch off, offsets not starting at zero, int32 offsets, pieces across inputs, corrupt inputs."""
from __future__ import annotations

import numpy as np
import pytest

from lance_duck.encodings import fsst
from lance_duck.errors import CorruptFileError
from lance_duck.trace import decode_trace
from tests._kernels import KERNELS, use_kernels
from tests.encodings.test_encodings_fsst import SYMS, make_table, ref_decode, ref_encode

PIECE = 1 << 12   # small pieces, so that a few thousand codes are cut in several


@pytest.fixture(params=KERNELS)
def kernels(request, monkeypatch):
    use_kernels(monkeypatch, request.param)
    monkeypatch.setattr(fsst, "PIECE_TOKENS", PIECE)
    monkeypatch.setattr(fsst, "PAIR_MIN_TOKENS", 64)      # long strings: the code-pair path too
    return request.param


def _input(rng, n_strings, syms, lo, hi, escape_every=0, lead=0):
    """(table, offsets, bytes, decoded strings) of ``n_strings`` strings of ``lo..hi`` symbols;
    ``escape_every``: one string in that many gets bytes outside the table; ``lead``: junk bytes
    before the first string (offsets not starting at zero)."""
    strings = [b"".join(syms[c] for c in rng.integers(0, len(syms), int(k)).tolist())
               for k in rng.integers(lo, hi + 1, n_strings)]
    if escape_every:
        strings = [s + b"Z\xff" if i % escape_every == 0 else s for i, s in enumerate(strings)]
    comp = [ref_encode(s, syms) for s in strings]
    assert [ref_decode(c, syms) for c in comp] == strings
    offs = lead + np.cumsum([0] + [len(c) for c in comp])
    return make_table(syms), offs, b"\x07" * lead + b"".join(comp), strings


def _check(inputs, int32_offsets=False):
    with decode_trace() as trace:
        o, d = fsst.decompress_many([(t, offs, data) for t, offs, data, _ in inputs], int32_offsets=int32_offsets)
    want = [s for *_, strings in inputs for s in strings]
    assert o.size == len(want) + 1 and o[0] == 0 and int(o[-1]) == d.size
    assert [d[a:b].tobytes() for a, b in zip(o[:-1].tolist(), o[1:].tolist())] == want
    alone = [fsst.decompress(t, offs, data, int32_offsets=int32_offsets) for t, offs, data, _ in inputs]
    assert o.dtype == alone[0][0].dtype
    assert d.tobytes() == b"".join(x.tobytes() for _, x in alone)
    return trace


@pytest.mark.parametrize("int32_offsets", [False, True])
def test_long_and_short_strings_of_several_inputs_land_in_one_output(kernels, int32_offsets):
    rng = np.random.default_rng(1)
    syms2 = [b"w1", b"w23 ", b"long sym", b"z"]
    inputs = [_input(rng, 600, SYMS[:4], 20, 60), _input(rng, 3, syms2, 0, 2), _input(rng, 900, syms2, 1, 5),
              _input(rng, 400, SYMS[:4], 30, 90, lead=5)]
    trace = _check(inputs, int32_offsets)
    if kernels == "numpy":
        ((n_inputs, pieces),) = trace.values("path:fsst:many")
        assert n_inputs == 4 and pieces > 4       # the large inputs were cut
    else:
        assert trace.values("path:fsst:compiled")[0] > 4


def test_escapes_empty_inputs_empty_strings_and_a_switched_off_table(kernels):
    rng = np.random.default_rng(2)
    raw = [b"plain", b"", b"bytes as they are"]
    off_table = (make_table(SYMS, enabled=False), np.cumsum([0] + [len(s) for s in raw]), b"".join(raw), raw)
    empty = (make_table(SYMS), np.zeros(1, np.int64), b"", [])
    empties = (make_table(SYMS), np.zeros(4, np.int64), b"", [b"", b"", b""])
    inputs = [_input(rng, 500, SYMS, 0, 40, escape_every=7), empty, off_table, empties,
              _input(rng, 300, SYMS, 0, 3, escape_every=2)]
    _check(inputs)
    _check([empty, empties])


def test_one_input_is_decompress(kernels):
    rng = np.random.default_rng(3)
    inp = _input(rng, 700, SYMS[:4], 10, 40)
    o, d = fsst.decompress_many([inp[:3]])
    want_o, want_d = fsst.decompress(*inp[:3])
    assert o.tolist() == want_o.tolist() and d.tobytes() == want_d.tobytes()


@pytest.mark.parametrize("damage", ["undefined code", "dangling escape", "offsets backwards", "offsets past the data"])
def test_a_corrupt_input_among_good_ones_raises(kernels, damage):
    rng = np.random.default_rng(4)
    good = _input(rng, 400, SYMS[:4], 10, 40)
    table, offs, data, strings = _input(rng, 400, SYMS[:4], 10, 40)
    data = bytearray(data)
    if damage == "undefined code":
        data[len(data) // 2] = 200                # 5 symbols: code 200 is not defined
    elif damage == "dangling escape":
        data[-1] = 255
    elif damage == "offsets backwards":
        offs = offs.copy()
        offs[5], offs[6] = offs[6], offs[5] - 1
    else:
        offs = offs.copy()
        offs[-1] += 3
    with pytest.raises(CorruptFileError):
        fsst.decompress_many([good[:3], (table, offs, bytes(data))])
