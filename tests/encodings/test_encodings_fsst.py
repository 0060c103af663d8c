"""FSST: reference-encoder round trips, escapes, real 2.0 / 2.1 / 2.2 pylance pages, corrupt input."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lance_duck.encodings import fsst
from lance_duck.errors import CorruptFileError

SYMS = [b"ab", b"xyz", b"hello wo", b"q", b"\xff\xfe"]


def make_table(syms, enabled=True, pad=True) -> bytes:
    hdr = (fsst.FSST_MAGIC << 32) | (int(enabled) << 24) | len(syms)
    raw = hdr.to_bytes(8, "little") + b"".join(s.ljust(8, b"\0") for s in syms) + bytes(len(s) for s in syms)
    return raw.ljust(fsst.SYMBOL_TABLE_SIZE, b"\0") if pad else raw


def ref_encode(s: bytes, syms) -> bytes:
    """Greedy reference encoder: longest symbol first, else escape + literal."""
    out, i = bytearray(), 0
    order = sorted(range(len(syms)), key=lambda c: -len(syms[c]))
    while i < len(s):
        for c in order:
            if s.startswith(syms[c], i):
                out.append(c)
                i += len(syms[c])
                break
        else:
            out += bytes([255, s[i]])
            i += 1
    return bytes(out)


def ref_decode(s: bytes, syms) -> bytes:
    out, i = bytearray(), 0
    while i < len(s):
        if s[i] == 255:
            out.append(s[i + 1])
            i += 2
        else:
            out += syms[s[i]]
            i += 1
    return bytes(out)


def roundtrip(strings, syms=SYMS):
    comp = [ref_encode(s, syms) for s in strings]
    offs = np.cumsum([0] + [len(c) for c in comp])
    o, d = fsst.decompress(make_table(syms), offs, b"".join(comp))
    assert o.dtype == np.int64 and d.dtype == np.uint8
    return [d[o[i]:o[i + 1]].tobytes() for i in range(len(strings))]


def test_known_answer_with_escapes_and_runs_of_ff():
    table = make_table(SYMS)
    comp = bytes([0, 255, 255, 1, 255, 255, 255, 0x41, 3, 4])  # ab, lit ff, xyz, lit ff, lit A, q, \xff\xfe
    o, d = fsst.decompress(table, np.array([0, 3, 10]), comp)
    assert d.tobytes() == b"ab\xff" + b"xyz\xffAq\xff\xfe"
    assert o.tolist() == [0, 3, 11]


def test_empty_strings_and_empty_input():
    assert roundtrip([b"", b"ab", b"", b""]) == [b"", b"ab", b"", b""]
    o, d = fsst.decompress(make_table(SYMS), np.array([0]), b"")
    assert o.tolist() == [0] and d.size == 0


def test_offsets_not_starting_at_zero():
    comp = b"\x00\x00" + ref_encode(b"hello world", SYMS) + b"\x01"
    o, d = fsst.decompress(make_table(SYMS), np.array([2, len(comp) - 1]), comp)
    assert d.tobytes() == b"hello world" and o.tolist() == [0, 11]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=60))
def test_roundtrip_property(strings):
    assert roundtrip(strings) == strings


def test_large_input_is_processed_in_blocks():
    rng = np.random.default_rng(1)
    alpha = [b"ab", b"xyz", b"hello wo", b"q", b"\xff", b"\xff\xff", b"Z", b"\x00"]
    strings = [b"".join(alpha[i] for i in rng.integers(0, len(alpha), rng.integers(0, 40)))
               for _ in range(30000)]
    assert roundtrip(strings) == strings


def test_switch_off_copies_bytes_through():
    o, d = fsst.decompress(make_table(SYMS, enabled=False), np.array([0, 2, 5]), b"\x00\xffabc")
    assert d.tobytes() == b"\x00\xffabc" and o.tolist() == [0, 2, 5]


def test_corrupt_inputs_raise():
    with pytest.raises(CorruptFileError):
        fsst.parse_symbol_table(b"\0" * 16)  # no magic
    with pytest.raises(CorruptFileError):
        fsst.parse_symbol_table(make_table(SYMS, pad=False)[:20])  # truncated symbols
    with pytest.raises(CorruptFileError):
        fsst.decompress(make_table(SYMS), np.array([0, 3]), b"\x00\x01")  # offsets past the data
    with pytest.raises(CorruptFileError):
        fsst.decompress(make_table(SYMS), np.array([0, 1]), b"\x07")  # undefined code
    with pytest.raises(CorruptFileError):
        fsst.decompress(make_table(SYMS), np.array([0, 2]), b"\x00\xff")  # dangling escape
    with pytest.raises(CorruptFileError):
        fsst.decompress(make_table(SYMS), np.array([3, 1]), b"\x00\x00\x00")  # decreasing


# ------------------------------------------------------------------ real pylance 14.0.2 pages

@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("column", ["hex", "text"])
def test_miniblock_fsst_pages_match_pylance(pylance_files, version, column):
    page = pylance_files.page(version, column)
    vc = page.mini.value_compression
    assert vc.WhichOneof("compression") == "fsst"
    st_ = fsst.parse_symbol_table(vc.fsst.symbol_table)
    data = page.buffers[1]
    got = []
    for c in page.chunks():  # per-chunk loop is fine in a test
        off, size = c.bufs[0]
        offs = np.frombuffer(data, "<u4", c.count + 1, off).astype(np.int64) + off
        o, d = fsst.decompress(st_, offs, data)
        got += [d[o[i]:o[i + 1]].tobytes().decode() for i in range(c.count)]
    assert got == pylance_files.expected(version, column).to_pylist()


def test_2_0_fsst_binary_page_matches_pylance(pylance_files):
    page = pylance_files.page("2.0", "s_fsst")
    enc = page.layout.fsst
    binary = enc.binary.binary
    ends = np.frombuffer(page.buffers[binary.indices.nullable.no_nulls.values.flat.buffer.buffer_index], "<u8")
    adj = binary.null_adjustment
    null = ends >= adj
    ends = np.where(null, ends - adj, ends).astype(np.int64)
    offs = np.concatenate([[0], ends])
    data = page.buffers[binary.bytes.flat.buffer.buffer_index]
    o, d = fsst.decompress(enc.symbol_table, offs, data)
    got = [None if null[i] else d[o[i]:o[i + 1]].tobytes().decode() for i in range(len(ends))]
    assert got == pylance_files.expected("2.0", "s_fsst").to_pylist()[: len(ends)]


def _random_codes(rng, n_bytes, n_syms):
    comp = rng.integers(0, n_syms, n_bytes).astype(np.uint8)
    cuts = np.sort(rng.integers(0, n_bytes + 1, n_bytes // 5))  # odd and even starts, empty strings
    return comp, np.concatenate([[0], cuts, [n_bytes]])


@pytest.mark.parametrize("n_bytes", [fsst._PAIRS_FROM + 1, fsst._PAIRS_FROM + 2])
def test_large_escape_free_input_decodes_by_code_pairs_exactly(n_bytes):
    syms = SYMS[:4]
    comp, offs = _random_codes(np.random.default_rng(n_bytes), n_bytes, len(syms))
    o, d = fsst.decompress(make_table(syms), offs, comp.tobytes())
    whole = b"".join(syms[c] for c in comp.tolist())
    starts = np.cumsum([0] + [len(syms[c]) for c in comp.tolist()])
    assert d.tobytes() == whole
    assert o.tolist() == starts[offs].tolist()


def test_large_input_with_escapes_matches_reference():
    rng = np.random.default_rng(7)
    comp, offs = _random_codes(rng, fsst._PAIRS_FROM + 3, len(SYMS))
    strings = [ref_decode(comp[a:b].tobytes(), SYMS) for a, b in zip(offs[:-1], offs[1:])]
    strings = [s + b"Z\xff" if i % 7 == 0 else s for i, s in enumerate(strings)]  # need escapes
    comp_strings = [ref_encode(s, SYMS) for s in strings]
    data = b"".join(comp_strings)
    assert b"\xffZ\xff\xff" in data and len(data) > fsst._PAIRS_FROM
    o, d = fsst.decompress(make_table(SYMS), np.cumsum([0] + [len(c) for c in comp_strings]), data)
    assert [d[o[i]:o[i + 1]].tobytes() for i in range(len(strings))] == strings


def test_large_input_with_undefined_code_is_corrupt():
    comp, offs = _random_codes(np.random.default_rng(3), fsst._PAIRS_FROM + 10, 4)
    comp[12345] = 200
    with pytest.raises(CorruptFileError, match="outside the 4-symbol table"):
        fsst.decompress(make_table(SYMS[:4]), offs, comp.tobytes())
