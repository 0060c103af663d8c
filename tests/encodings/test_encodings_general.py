"""zstd / lz4 framings: round trips, bare zstd frames, real pylance pages, refusals."""
from __future__ import annotations

import numpy as np
import pytest
import zstandard

from lance_duck.encodings import fastlanes as fl
from lance_duck.encodings import general
from lance_duck.errors import CorruptFileError, UnsupportedFeatureError

PAYLOAD = b"lance_duck " * 500 + bytes(range(256))


@pytest.mark.parametrize("scheme", ["zstd", "lz4", 1, 2, "ZSTD"])
def test_roundtrip_in_lance_framing(scheme):
    unit = general.compress(PAYLOAD, scheme)
    assert general.decompress(unit, scheme).tobytes() == PAYLOAD
    assert general.decompress(memoryview(unit), scheme, expected_size=len(PAYLOAD)).tobytes() == PAYLOAD


def test_framing_prefixes_are_little_endian_lengths():
    z = general.compress(PAYLOAD, "zstd")
    assert int.from_bytes(z[:8], "little") == len(PAYLOAD)
    lz = general.compress(PAYLOAD, "lz4")
    assert int.from_bytes(lz[:4], "little") == len(PAYLOAD)


def test_bare_zstd_frame_is_accepted():
    frame = zstandard.ZstdCompressor().compress(PAYLOAD)
    assert general.decompress(frame, "zstd").tobytes() == PAYLOAD


def test_empty_units():
    assert general.decompress(general.compress(b"", "zstd"), "zstd").size == 0
    assert general.decompress(general.compress(b"", "lz4"), "lz4").size == 0


def test_decompress_many_per_value_units():
    vals = [b"a" * 100, b"", b"xyz" * 7, bytes(range(50))]
    units = [general.compress(v, "zstd") if v else b"" for v in vals]
    offs = np.cumsum([0] + [len(u) for u in units])
    o, d = general.decompress_many(b"".join(units), offs, 2)
    assert [d[o[i]:o[i + 1]].tobytes() for i in range(len(vals))] == vals


def test_unknown_scheme_is_refused_by_name():
    with pytest.raises(UnsupportedFeatureError, match="snappy"):
        general.decompress(b"\0" * 16, "snappy")
    with pytest.raises(UnsupportedFeatureError, match="7"):
        general.decompress(b"\0" * 16, 7)
    with pytest.raises(UnsupportedFeatureError):
        general.scheme_name(0)


def test_corrupt_units_raise():
    z = general.compress(PAYLOAD, "zstd")
    with pytest.raises(CorruptFileError):
        general.decompress(z[:5], "zstd")  # shorter than its prefix
    with pytest.raises(CorruptFileError):
        general.decompress(z[:-10], "zstd")  # truncated frame
    with pytest.raises(CorruptFileError):
        general.decompress((1 << 50).to_bytes(8, "little") + z[8:], "zstd")  # absurd length: no allocation
    with pytest.raises(CorruptFileError):
        general.decompress(z, "zstd", expected_size=3)
    lz = general.compress(PAYLOAD, "lz4")
    with pytest.raises(CorruptFileError):
        general.decompress(lz[:3], "lz4")
    with pytest.raises(CorruptFileError):
        general.decompress((10 ** 9).to_bytes(4, "little") + lz[4:], "lz4")
    with pytest.raises(CorruptFileError):
        general.decompress((len(PAYLOAD) + 5).to_bytes(4, "little") + lz[4:], "lz4")


# ------------------------------------------------------------------ real pylance 14.0.2 pages

@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_zstd_wrapped_inline_bitpacking_page_matches_pylance(pylance_files, version):
    page = pylance_files.page(version, "f64_zstd")
    g = page.mini.value_compression.general
    assert g.values.WhichOneof("compression") == "inline_bitpacking"
    data = page.buffers[1]
    blocks, widths, counts = [], [], []
    for c in page.chunks():
        off, size = c.bufs[0]
        raw = general.decompress(data[off:off + size], g.compression.scheme)
        widths.append(int(raw[:8].view("<u8")[0]))
        blocks.append(raw[8:].tobytes())
        counts.append(c.count)
    offs = np.cumsum([0] + [len(b) for b in blocks])[:-1]
    got = fl.unpack_mixed(b"".join(blocks), 64, offs, widths, counts)
    exp = pylance_files.expected(version, "f64_zstd").to_numpy()
    np.testing.assert_array_equal(got.view(np.float64), exp)


@pytest.mark.parametrize("version", ["2.2", "2.3"])
def test_lz4_string_dictionary_2_2_and_2_3_matches_pylance(pylance_files, version):
    """2.2 / 2.3 LZ4-compress string dictionaries (block form: u32 32, u32 bytes_start, offsets, bytes)."""
    page = pylance_files.page(version, "dict_str")
    mb = page.mini
    g = mb.dictionary.general
    assert general.scheme_name(g.compression.scheme) == "lz4"
    raw = general.decompress(page.buffers[2], g.compression.scheme)
    assert int(raw[:4].view("<u4")[0]) == 32
    start = int(raw[4:8].view("<u4")[0])
    offs = raw[8:start].view("<u4").astype(np.int64)
    assert offs.size == mb.num_dictionary_items + 1
    items = [raw[start + offs[i]: start + offs[i + 1]].tobytes().decode() for i in range(offs.size - 1)]
    data = page.buffers[1]
    chunks = page.chunks()
    coffs = np.array([c.bufs[0][0] for c in chunks])
    widths = [int.from_bytes(data[o:o + 4], "little") for o in coffs]
    idx = fl.unpack_mixed(data, 32, coffs + 4, widths, [c.count for c in chunks])
    assert [items[i] for i in idx] == pylance_files.expected(version, "dict_str").to_pylist()


@pytest.mark.parametrize("scheme", ["s_zstd", "s_lz4"])
def test_2_0_compressed_binary_bytes_match_pylance(pylance_files, scheme):
    page = pylance_files.page("2.0", scheme)
    binary = page.layout.binary
    flat = binary.bytes.flat
    assert flat.compression.scheme == scheme[2:]
    ends = np.frombuffer(page.buffers[binary.indices.nullable.no_nulls.values.flat.buffer.buffer_index], "<u8")
    null = ends >= binary.null_adjustment
    ends = np.where(null, ends - binary.null_adjustment, ends).astype(np.int64)
    data = general.decompress(page.buffers[flat.buffer.buffer_index], flat.compression.scheme)
    offs = np.concatenate([[0], ends])
    got = [None if null[i] else data[offs[i]:offs[i + 1]].tobytes().decode() for i in range(len(ends))]
    assert got == pylance_files.expected("2.0", scheme).to_pylist()[: len(ends)]
