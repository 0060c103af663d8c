"""Hand-built 2.0 files with encodings current pylance no longer writes (sequential Bitpacked,
FastLanes BitpackedForNonNeg, zstd / lz4 Flat buffers in both framings, FixedSizeBinary), decoded
by pylance 14.0.2's own 2.0 reader as the oracle; 2.1-only encodings must be refused by name."""
from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest
from google.protobuf import any_pb2

from .conftest import assert_same
from lance_duck._proto import encodings_v2_0_pb2 as E
from lance_duck._proto import file2_pb2, file_pb2
from lance_duck.encodings.bitpack import pack_sequential
from lance_duck.errors import CorruptFileError, UnsupportedFeatureError
from lance_duck.file import DataFileRef, open_data_file
from lance_duck.io.fs import open_io


def _any(msg, name):
    return any_pb2.Any(type_url=f"/lance.encodings.{name}", value=msg.SerializeToString()).SerializeToString()


def _buf(i):
    return E.Buffer(buffer_index=i, buffer_type=E.Buffer.page)


def flat(bits, i, compression=None):
    f = E.Flat(bits_per_value=bits, buffer=_buf(i))
    if compression:
        f.compression.scheme = compression
    return E.ArrayEncoding(flat=f)


def write_file(path, columns, num_rows, footer_version=(0, 3)):
    """columns: list of (name, logical_type, [(page length, ArrayEncoding, [buffer bytes])])."""
    out = bytearray()
    metas = []
    for name, _lt, pages in columns:
        cm = file2_pb2.ColumnMetadata()
        cm.encoding.direct.encoding = _any(E.ColumnEncoding(values={}), "ColumnEncoding")
        for length, enc, bufs in pages:
            p = cm.pages.add(length=length)
            for b in bufs:
                out += b"\0" * (-len(out) % 64)
                p.buffer_offsets.append(len(out))
                p.buffer_sizes.append(len(b))
                out += b
            p.encoding.direct.encoding = _any(enc, "ArrayEncoding")
        metas.append(cm.SerializeToString())
    fd = file_pb2.FileDescriptor(length=num_rows)
    for i, (name, lt, _) in enumerate(columns):
        fd.schema.fields.add(name=name, id=i, parent_id=-1, logical_type=lt, nullable=True)
    out += b"\0" * (-len(out) % 64)
    gb = (len(out), len(fd.SerializeToString()))
    out += fd.SerializeToString()
    col_start = len(out)
    table = []
    for m in metas:
        table.append((len(out), len(m)))
        out += m
    cmo = len(out)
    for p, s in table:
        out += struct.pack("<QQ", p, s)
    gbo = len(out)
    out += struct.pack("<QQ", *gb)
    out += struct.pack("<QQQIIHH4s", col_start, cmo, gbo, 1, len(columns), *footer_version, b"LANC")
    with open(path, "wb") as f:
        f.write(out)


def our_read(path, columns, rows=None):
    io, root = open_io(path)
    ref = DataFileRef(path=root, fields=tuple(range(len(columns))), column_indices=tuple(range(len(columns))),
                      major=2, minor=0)
    reader = open_data_file(io, ref)
    from lance_duck.schema import LanceField
    return {name: reader.read_field(LanceField(id=i, parent_id=-1, name=name, logical_type=lt), rows)
            for i, (name, lt, _) in enumerate(columns)}


def pylance_read(path):
    from lance.file import LanceFileReader
    return LanceFileReader(path).read_all().to_table()


FL_ORDER = np.array([0, 4, 2, 6, 1, 5, 3, 7])


def fastlanes_pack(values: np.ndarray, w: int, t: int) -> bytes:
    """Reference FastLanes packer (test-only): 1024-value chunks, lane-transposed bit streams."""
    lanes = 1024 // t
    chunks = -(-len(values) // 1024)
    v = np.zeros(chunks * 1024, dtype=np.uint64)
    v[: len(values)] = values.astype(np.uint64)
    v = v.reshape(chunks, 1024)
    r = np.arange(t)
    elem = (FL_ORDER[r // 8] * 16 + (r % 8) * 128)[None, :] + np.arange(lanes)[:, None]   # [lane, T]
    vals = v[:, elem]                                                                      # [chunk, lane, T]
    bits = ((vals[..., None] >> np.arange(w, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8)
    stream = bits.reshape(chunks, lanes, t * w)                                           # bit r*W + j
    words = np.packbits(stream.reshape(chunks, lanes, w, t), axis=-1, bitorder="little")  # [chunk, lane, k, T/8]
    words = words.reshape(chunks, lanes, w, t // 8).transpose(0, 2, 1, 3)                  # [chunk, k, lane]
    return np.ascontiguousarray(words).tobytes()


def _zstd_prefixed(raw: bytes) -> bytes:
    import zstandard
    return struct.pack("<Q", len(raw)) + zstandard.ZstdCompressor().compress(raw)


def _zstd_bare(raw: bytes) -> bytes:
    import zstandard
    return zstandard.ZstdCompressor(write_content_size=False).compress(raw)


def _lz4(raw: bytes) -> bytes:
    import lz4.block
    return lz4.block.compress(raw, store_size=True)


def one_page(name, lt, n, enc, bufs):
    return (name, lt, [(n, enc, bufs)])


def bitpacked(w, t, signed, buf=0):
    return E.ArrayEncoding(bitpacked=E.Bitpacked(compressed_bits_per_value=w, uncompressed_bits_per_value=t,
                                                 buffer=_buf(buf), signed=signed))


def no_nulls(values):
    return E.ArrayEncoding(nullable=E.Nullable(no_nulls=E.Nullable.NoNull(values=values)))


def crafted_columns(n: int):
    rng = np.random.default_rng(1)
    cols = []
    s10 = rng.integers(-500, 500, n).astype(np.int64)
    cols.append(one_page("bp_signed_w10_i32", "int32", n, bitpacked(10, 32, True),
                         [pack_sequential(s10 & 0x3FF, 10)]))
    u11 = rng.integers(0, 2000, n).astype(np.int64)
    cols.append(one_page("bp_unsigned_w11_u16", "uint16", n, bitpacked(11, 16, False),
                         [pack_sequential(u11, 11)]))
    for t, w, lt in ((8, 3, "uint8"), (32, 7, "uint32"), (64, 33, "uint64")):
        vals = rng.integers(0, 2 ** w, n, dtype=np.uint64)
        enc = E.ArrayEncoding(bitpacked_for_non_neg=E.BitpackedForNonNeg(
            compressed_bits_per_value=w, uncompressed_bits_per_value=t, buffer=_buf(0)))
        cols.append(one_page(f"fl_{t}_{w}", lt, n, enc, [fastlanes_pack(vals, w, t)]))
    s5 = rng.integers(-16, 16, n).astype(np.int64)
    valid = rng.random(n) < 0.7
    enc = E.ArrayEncoding(nullable=E.Nullable(some_nulls=E.Nullable.SomeNull(
        validity=flat(1, 0), values=bitpacked(5, 16, True, buf=1))))
    cols.append(one_page("somenull_bp_w5_i16", "int16", n, enc,
                         [np.packbits(valid, bitorder="little").tobytes(), pack_sequential(s5 & 0x1F, 5)]))
    f64 = rng.normal(size=n).tobytes()
    for name, comp, data in (("zstd_prefixed", "zstd", _zstd_prefixed(f64)),
                             ("zstd_bare", "zstd", _zstd_bare(f64)), ("lz4", "lz4", _lz4(f64))):
        cols.append(one_page(f"flat_{name}", "double", n, no_nulls(flat(64, 0, comp)), [data]))
    # two pages: the second one starts at row n // 2
    h = n // 2
    i64 = rng.integers(-10**9, 10**9, n).astype(np.int64)
    cols.append(("two_pages_i64", "int64", [(h, no_nulls(flat(64, 0)), [i64[:h].tobytes()]),
                                            (n - h, no_nulls(flat(64, 0)), [i64[h:].tobytes()])]))
    return cols


N = 2500  # a partial last FastLanes chunk


@pytest.fixture(scope="session")
def crafted(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("crafted") / "crafted.lance")
    cols = crafted_columns(N)
    write_file(path, cols, N)
    return path, cols, pylance_read(path)


def test_crafted_encodings_decode_like_pylance(crafted):
    path, cols, expected = crafted
    ours = our_read(path, cols)
    for name, _, _ in cols:
        assert_same(ours[name], expected[name], name)


@pytest.mark.parametrize("sel", [range(1000, 2100), np.array([0, 1023, 1024, 2047, 2499], dtype=np.int64)])
def test_crafted_encodings_row_selection(crafted, sel):
    path, cols, expected = crafted
    ours = our_read(path, cols, sel)
    idx = pa.array(np.arange(sel.start, sel.stop) if isinstance(sel, range) else sel, pa.int64())
    for name, _, _ in cols:
        assert_same(ours[name], expected[name].take(idx), name)


def test_fixed_size_binary_strings_decode_like_pylance(tmp_path):
    path = str(tmp_path / "fsb.lance")
    n = 300
    data = b"".join(f"{i:04d}".encode() for i in range(n))
    enc = E.ArrayEncoding(fixed_size_binary=E.FixedSizeBinary(bytes=flat(8, 0), byte_width=4))
    cols = [("s", "string", [(n, enc, [data])])]
    write_file(path, cols, n)
    assert_same(our_read(path, cols)["s"], pylance_read(path)["s"])


@pytest.mark.parametrize("enc,name", [
    (E.ArrayEncoding(constant=E.Constant(value=b"\x01\0\0\0")), "Constant"),
    (E.ArrayEncoding(block=E.Block(scheme="zstd")), "Block"),
    (E.ArrayEncoding(rle=E.Rle(bits_per_value=32)), "Rle"),
    (E.ArrayEncoding(byte_stream_split=E.ByteStreamSplit(bits_per_value=32)), "ByteStreamSplit"),
])
def test_newer_encodings_in_a_20_file_are_refused_by_name(tmp_path, enc, name):
    path = str(tmp_path / "c.lance")
    cols = [("x", "int32", [(10, enc, [b"\0" * 64])])]
    write_file(path, cols, 10)
    with pytest.raises(UnsupportedFeatureError, match=name):
        our_read(path, cols)


def test_truncated_bitpacked_buffer_is_corrupt(tmp_path):
    path = str(tmp_path / "t.lance")
    enc = E.ArrayEncoding(bitpacked=E.Bitpacked(compressed_bits_per_value=10, uncompressed_bits_per_value=32,
                                                 buffer=_buf(0)))
    cols = [("x", "int32", [(1000, enc, [b"\x01" * 100])])]
    write_file(path, cols, 1000)
    with pytest.raises(CorruptFileError):
        our_read(path, cols)


def test_page_buffer_index_out_of_range_is_corrupt(tmp_path):
    path = str(tmp_path / "t.lance")
    cols = [("x", "int64", [(10, flat(64, 3), [b"\0" * 80])])]
    write_file(path, cols, 10)
    with pytest.raises(CorruptFileError, match="page buffer 3"):
        our_read(path, cols)
