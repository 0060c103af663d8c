"""FSST: reference-encoder round trips, escapes, real 2.0 / 2.1 / 2.2 pylance pages, corrupt input."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lance_duck.encodings import fsst
from lance_duck.errors import CorruptFileError
from lance_duck.trace import decode_trace
from tests._kernels import use_kernels


@pytest.fixture(autouse=True)
def _numpy_kernels(monkeypatch):
    """The numpy kernels (the compiled ones: test_encodings_fsst_compiled.py)."""
    use_kernels(monkeypatch, "numpy")


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

@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
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


PIECE = 1 << 14  # the split tests shrink the piece size so that inputs stay small


@pytest.fixture(autouse=True)
def _small_pieces(monkeypatch):
    monkeypatch.setattr(fsst, "PIECE_TOKENS", PIECE)


@pytest.mark.parametrize("n_bytes", [2 * PIECE, 2 * PIECE + 1, 5 * PIECE + 3])
def test_large_escape_free_input_split_into_pieces_decodes_exactly(n_bytes):
    syms = SYMS[:4]
    comp, offs = _random_codes(np.random.default_rng(n_bytes), n_bytes, len(syms))
    o, d = fsst.decompress(make_table(syms), offs, comp.tobytes())
    whole = b"".join(syms[c] for c in comp.tolist())
    starts = np.cumsum([0] + [len(syms[c]) for c in comp.tolist()])
    assert d.tobytes() == whole
    assert o.dtype == np.int64 and o.tolist() == starts[offs].tolist()


def test_large_input_with_escapes_matches_reference():
    rng = np.random.default_rng(7)
    comp, offs = _random_codes(rng, 3 * PIECE + 3, len(SYMS))
    strings = [ref_decode(comp[a:b].tobytes(), SYMS) for a, b in zip(offs[:-1], offs[1:])]
    strings = [s + b"Z\xff" if i % 7 == 0 else s for i, s in enumerate(strings)]  # need escapes
    comp_strings = [ref_encode(s, SYMS) for s in strings]
    data = b"".join(comp_strings)
    assert b"\xffZ\xff\xff" in data and len(data) > 2 * PIECE
    o, d = fsst.decompress(make_table(SYMS), np.cumsum([0] + [len(c) for c in comp_strings]), data)
    assert [d[o[i]:o[i + 1]].tobytes() for i in range(len(strings))] == strings


def _unsplit(table, offs, data):
    """The same decode in one piece (the split must not change any byte or offset)."""
    old = fsst.PIECE_TOKENS
    fsst.PIECE_TOKENS = 1 << 40
    try:
        return fsst.decompress(table, offs, data)
    finally:
        fsst.PIECE_TOKENS = old


def _check_split(table, offs, data, min_parts=2):
    seen = []
    real = fsst._threads.map_parts

    def spy(fn, parts):
        parts = list(parts)
        seen.append(len(parts))
        return real(fn, parts)
    fsst._threads.map_parts = spy
    try:
        o, d = fsst.decompress(table, offs, data)
    finally:
        fsst._threads.map_parts = real
    assert (seen[0] if seen else 1) >= min_parts  # the split path really ran
    ro, rd = _unsplit(table, offs, data)
    assert o.dtype == np.int64 and o.tolist() == ro.tolist()
    assert d.tobytes() == rd.tobytes()
    return o, d


def test_split_with_escapes_right_at_every_piece_boundary():
    # strings of one escaped literal each (255, x): every string boundary, so every cut, sits
    # between a literal and the next escape
    n = 2 * PIECE // 2 + 5
    lits = (np.arange(n) % 256).astype(np.uint8)
    comp = np.empty(2 * n, np.uint8)
    comp[0::2] = 255
    comp[1::2] = lits
    offs = np.arange(0, 2 * n + 1, 2)
    o, d = _check_split(make_table(SYMS), offs, comp.tobytes())
    assert d.tobytes() == lits.tobytes() and o.tolist() == list(range(n + 1))


def test_split_with_runs_of_ff_across_cut_points():
    # literal 0xFF (255 255) next to codes and empty strings around every cut
    rng = np.random.default_rng(11)
    strings = [bytes(rng.choice([0, 1, 255, 3], rng.integers(0, 6)).astype(np.uint8)) for _ in range(60000)]
    comp = [ref_encode(s.replace(b"\x00", b"ab").replace(b"\x01", b"q").replace(b"\x03", b"xyz"), SYMS)
            for s in strings]
    data = b"".join(comp)
    offs = np.cumsum([0] + [len(c) for c in comp])
    assert len(data) >= 2 * PIECE
    o, d = _check_split(make_table(SYMS), offs, data)
    want = [ref_decode(c, SYMS) for c in comp]
    assert [d[o[i]:o[i + 1]].tobytes() for i in range(len(comp))] == want


def test_split_with_empty_strings_at_the_ends_and_one_huge_string():
    syms = SYMS[:4]
    comp = np.random.default_rng(5).integers(0, 4, 3 * PIECE).astype(np.uint8)
    # empty strings first and last, and one string holding most of the data
    offs = np.array([0, 0, 0, 10, 3 * PIECE - 7, 3 * PIECE, 3 * PIECE, 3 * PIECE])
    o, d = _check_split(make_table(syms), offs, comp.tobytes())
    assert d.tobytes() == b"".join(syms[c] for c in comp.tolist())
    assert o[:3].tolist() == [0, 0, 0] and o[-3:].tolist() == [d.size] * 3


def test_one_large_string_is_not_split():
    syms = SYMS[:4]
    comp = np.random.default_rng(6).integers(0, 4, 3 * PIECE).astype(np.uint8)
    o, d = _check_split(make_table(syms), np.array([0, comp.size]), comp.tobytes(), min_parts=1)
    assert d.tobytes() == b"".join(syms[c] for c in comp.tolist())


def test_large_input_with_undefined_code_is_corrupt():
    comp, offs = _random_codes(np.random.default_rng(3), 3 * PIECE + 10, 4)
    comp[12345] = 200
    with pytest.raises(CorruptFileError, match="outside the 4-symbol table"):
        fsst.decompress(make_table(SYMS[:4]), offs, comp.tobytes())


def test_large_input_with_dangling_escape_is_corrupt():
    comp, offs = _random_codes(np.random.default_rng(4), 3 * PIECE, 4)
    comp[-1] = 255
    with pytest.raises(CorruptFileError, match="dangling escape"):
        fsst.decompress(make_table(SYMS[:4]), offs, comp.tobytes())


def _decode_in_pairs(monkeypatch, table, offs, data, min_tokens=64):
    """Decode with the code-pair path forced on for inputs of ``min_tokens`` codes or more."""
    monkeypatch.setattr(fsst, "PAIR_MIN_TOKENS", min_tokens)
    monkeypatch.setattr(fsst, "PAIR_MIN_CODES_PER_STRING", 1)
    with decode_trace() as trace:
        o, d = fsst.decompress(table, offs, data)
    monkeypatch.setattr(fsst, "PAIR_MIN_TOKENS", 1 << 40)
    return o, d, trace


@pytest.mark.parametrize("n_bytes", [1000, 1001, 2 * PIECE + 1, 5 * PIECE + 3])
def test_code_pairs_give_the_same_bytes_and_offsets_as_single_codes(monkeypatch, n_bytes):
    # odd and even code counts, strings ending inside a pair (odd ends) and empty strings,
    # one piece and several pieces
    syms = SYMS[:4]
    comp, offs = _random_codes(np.random.default_rng(n_bytes), n_bytes, len(syms))
    table = make_table(syms)
    o, d, trace = _decode_in_pairs(monkeypatch, table, offs, comp.tobytes())
    assert "path:fsst:pairs" in trace.names()
    whole = b"".join(syms[c] for c in comp.tolist())
    starts = np.cumsum([0] + [len(syms[c]) for c in comp.tolist()])
    assert d.tobytes() == whole
    assert o.tolist() == starts[offs].tolist()
    assert (offs[1:-1] % 2 == 1).any()
    so, sd = fsst.decompress(table, offs, comp.tobytes())
    assert so.tolist() == o.tolist() and sd.tobytes() == d.tobytes()


def test_code_pairs_int32_offsets_and_a_last_odd_code(monkeypatch):
    syms = SYMS[:4]
    comp = np.random.default_rng(9).integers(0, 4, 999).astype(np.uint8)
    offs = np.array([0, 1, 2, 3, 500, 997, 998, 999, 999])
    monkeypatch.setattr(fsst, "FEW_STRINGS", 0)          # (a few short strings are joined by symbols)
    monkeypatch.setattr(fsst, "PAIR_MIN_TOKENS", 64)
    monkeypatch.setattr(fsst, "PAIR_MIN_CODES_PER_STRING", 1)
    with decode_trace() as trace:
        o, d = fsst.decompress(make_table(syms), offs, comp.tobytes(), int32_offsets=True)
    starts = np.cumsum([0] + [len(syms[c]) for c in comp.tolist()])
    assert "path:fsst:pairs" in trace.names()
    assert o.dtype == np.int32 and o.tolist() == starts[offs].tolist()
    assert d.tobytes() == b"".join(syms[c] for c in comp.tolist())


def test_inputs_with_escapes_never_take_code_pairs(monkeypatch):
    comp = np.array([0, 255, 65, 1] * 100, np.uint8)
    o, d, trace = _decode_in_pairs(monkeypatch, make_table(SYMS), np.array([0, 200, 400]), comp.tobytes())
    assert "path:fsst:pairs" not in trace.names()
    assert d.tobytes() == b"abAxyz" * 100


def test_code_pairs_still_refuse_undefined_codes(monkeypatch):
    comp, offs = _random_codes(np.random.default_rng(13), 4000, 4)
    comp[777] = 200
    monkeypatch.setattr(fsst, "PAIR_MIN_TOKENS", 64)
    monkeypatch.setattr(fsst, "PAIR_MIN_CODES_PER_STRING", 1)
    with pytest.raises(CorruptFileError, match="outside the 4-symbol table"):
        fsst.decompress(make_table(SYMS[:4]), offs, comp.tobytes())


def test_short_strings_keep_single_codes(monkeypatch):
    # strings of ~5 codes: the pair path would spend its gain on the odd ends
    comp, offs = _random_codes(np.random.default_rng(17), 4000, 4)
    monkeypatch.setattr(fsst, "PAIR_MIN_TOKENS", 64)
    with decode_trace() as trace:
        fsst.decompress(make_table(SYMS[:4]), offs, comp.tobytes())
    assert "path:fsst:pairs" not in trace.names()


@pytest.mark.parametrize("n_strings", [0, 1, 3, 16])
def test_a_few_short_strings_join_their_symbols_as_the_vectorised_path_decodes(monkeypatch, n_strings):
    rng = np.random.default_rng(n_strings)
    table = make_table(SYMS)
    comp = rng.integers(0, len(SYMS), 5 * n_strings).astype(np.uint8)
    offs = np.sort(np.r_[0, rng.integers(0, comp.size + 1, max(n_strings - 1, 0)), comp.size])
    if n_strings == 0:
        offs = np.array([0])
    for small in (False, True):
        with decode_trace() as trace:
            o, d = fsst.decompress(table, offs, comp.tobytes(), int32_offsets=small)
        assert "path:fsst:few" in trace.names() or n_strings == 0
        monkeypatch.setattr(fsst, "FEW_STRINGS", 0)
        wo, wd = fsst.decompress(table, offs, comp.tobytes(), int32_offsets=small)
        monkeypatch.setattr(fsst, "FEW_STRINGS", 16)
        assert o.dtype == wo.dtype and o.tolist() == wo.tolist() and d.tobytes() == wd.tobytes()
        assert d.tobytes() == b"".join(SYMS[c] for c in comp.tolist())


def test_a_few_strings_with_an_escape_or_an_undefined_code_take_the_vectorised_path():
    table = make_table(SYMS)
    with decode_trace() as trace:
        o, d = fsst.decompress(table, np.array([0, 2, 4]), bytes([0, 255, 65, 1]))
    assert "path:fsst:few" not in trace.names()
    assert d.tobytes() == b"abAxyz" and o.tolist() == [0, 2, 6]
    with pytest.raises(CorruptFileError):
        fsst.decompress(table, np.array([0, 2]), bytes([0, 200]))
