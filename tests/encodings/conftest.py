"""Fixtures for the encoding-kernel tests: small pylance-written files and a test-only page parser.

The parser here is deliberately simple (a per-chunk Python loop over mini-block headers); it only
locates buffers so the kernels under test can be fed bytes taken from real pylance 14.0.2 files.
"""
from __future__ import annotations

import glob
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pytest
from google.protobuf import any_pb2

from lance_duck._proto import encodings_v2_0_pb2 as e20
from lance_duck._proto import encodings_v2_1_pb2 as e21
from lance_duck.file.container import V2Container
from lance_duck.file.v2_1.planar23 import SparseLayout, planar_to_page_layout
from lance_duck.io.fs import open_io

N = 5000
VERSIONS = ("2.1", "2.2", "2.3")   # the 2.1+ versions the kernel tests read pages of


def _table() -> pa.Table:
    rng = np.random.default_rng(42)
    few_null = rng.integers(0, 1000, N)
    return pa.table({
        "small_i64": pa.array(rng.integers(0, 1000, N), pa.int64()),
        "u8_small": pa.array(rng.integers(0, 7, N), pa.uint8()),
        "u16_small": pa.array(rng.integers(0, 3000, N), pa.uint16()),
        "i32_null": pa.array([None if i % 10 == 0 else int(v) for i, v in enumerate(rng.integers(0, 1 << 20, N))],
                             pa.int32()),
        "i64_null_few": pa.array([None if i in (17, 3999) else int(v) for i, v in enumerate(few_null)], pa.int64()),
        "hex": pa.array([f"{v:x}" for v in rng.integers(0, 1 << 40, N)]),
        "text": pa.array([("héllo wörld ÿ\xff " * int(v % 4)) + str(v) + "日本語"
                          for v in rng.integers(0, 1 << 30, N)]),
        "runs": pa.array(np.repeat(np.arange(N // 100), 100).astype(np.uint8)),
        "f64": pa.array(rng.random(N)),
        "flag": pa.array(rng.random(N) < 0.3),
        "f64_bss": pa.array(rng.standard_normal(N)),
        "i64_lz4": pa.array(rng.integers(-(1 << 40), 1 << 40, N)),
        "f64_zstd": pa.array(rng.random(N)),
        "dict_str": pa.array([f"category-{v}" for v in rng.integers(0, 10, N)]),
    })


def _schema(t: pa.Table) -> pa.Schema:
    meta = {"f64_bss": {"lance-encoding:compression": "zstd", "lance-encoding:bss": "on"},
            "i64_lz4": {"lance-encoding:compression": "lz4"},
            "f64_zstd": {"lance-encoding:compression": "zstd"}}
    return pa.schema([f.with_metadata(meta[f.name]) if f.name in meta else f for f in t.schema])


def _table20() -> pa.Table:
    rng = np.random.default_rng(7)
    words = [f"{v:x}-{'é' * int(v % 3)}\xff" for v in rng.integers(0, 1 << 36, N)]
    s = [None if i % 13 == 0 else w for i, w in enumerate(words)]
    t = pa.table({"s_fsst": pa.array(s), "s_zstd": pa.array(s), "s_lz4": pa.array(s),
                  "b_null": pa.array([None if i % 7 == 0 else bool(v) for i, v in
                                      enumerate(rng.integers(0, 2, N))], pa.bool_())})
    meta = {"s_fsst": "fsst", "s_zstd": "zstd", "s_lz4": "lz4"}
    return t.cast(pa.schema([f.with_metadata({"lance-encoding:compression": meta[f.name]})
                             if f.name in meta else f for f in t.schema]))


@dataclass
class Chunk:
    count: int                      # value slots
    num_levels: int
    rep: tuple[int, int] | None     # (offset, size) inside the chunk buffer
    defs: tuple[int, int] | None
    bufs: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class Page:
    layout: object                  # PageLayout (2.1/2.2, 2.3 translated) or ArrayEncoding (2.0)
    buffers: list[bytes]
    length: int
    sparse: SparseLayout | None = None   # 2.3 sparse structure: ``layout`` holds its values

    @property
    def mini(self):
        return self.layout.mini_block_layout

    def chunks(self) -> list[Chunk]:
        """Test-only mini-block parser (per-chunk loop)."""
        mb = self.mini
        large = mb.has_large_chunk
        words = np.frombuffer(self.buffers[0], "<u4" if large else "<u2").astype(np.int64)
        data = self.buffers[1]
        sizes = ((words >> 4) + 1) * 8
        starts = np.cumsum(sizes) - sizes
        counts = (1 << (words & 15)).astype(np.int64)
        counts[-1] = mb.num_items - counts[:-1].sum()
        has_rep, has_def = mb.HasField("rep_compression"), mb.HasField("def_compression")
        out = []
        for start, count in zip(starts.tolist(), counts.tolist()):
            pos = start
            num_levels = int.from_bytes(data[pos:pos + 2], "little"); pos += 2
            rep_size = def_size = 0
            if has_rep:
                rep_size = int.from_bytes(data[pos:pos + 2], "little"); pos += 2
            if has_def:
                def_size = int.from_bytes(data[pos:pos + 2], "little"); pos += 2
            w = 4 if large else 2
            bsizes = [int.from_bytes(data[pos + w * i: pos + w * i + w], "little") for i in range(mb.num_buffers)]
            pos += w * mb.num_buffers
            pos = (pos + 7) // 8 * 8
            rep = defs = None
            if has_rep:
                rep = (pos, rep_size); pos = (pos + rep_size + 7) // 8 * 8
            if has_def:
                defs = (pos, def_size); pos = (pos + def_size + 7) // 8 * 8
            bufs = []
            for s in bsizes:
                bufs.append((pos, s)); pos = (pos + s + 7) // 8 * 8
            out.append(Chunk(count, num_levels, rep, defs, bufs))
        return out


class Files:
    def __init__(self, paths: dict[str, str], tables: dict[str, pa.Table]):
        self.paths, self.tables = paths, tables
        self._containers = {}

    def container(self, version: str) -> V2Container:
        if version not in self._containers:
            f = glob.glob(self.paths[version] + "/data/*.lance")[0]
            io, root = open_io(f)
            inp = io.open_input(root)
            self._containers[version] = V2Container.open(inp, inp.read_tail(1 << 16))
        return self._containers[version]

    def expected(self, version: str, column: str) -> pa.Array:
        import lance
        return lance.dataset(self.paths[version]).to_table(columns=[column]).column(0).combine_chunks()

    def page(self, version: str, column: str, page: int = 0) -> Page:
        c = self.container(version)
        names = [f.name for f in c.descriptor.schema.fields]
        cm = c.column(names.index(column))  # flat tables: column index = field position
        pg = cm.pages[page]
        a = any_pb2.Any()
        a.ParseFromString(pg.encoding.direct.encoding)
        bufs = [bytes(c.file.read(o, s)) for o, s in zip(pg.buffer_offsets, pg.buffer_sizes)]
        if version == "2.3":   # planar layout: the equivalent 2.1 layout of its values
            layout = planar_to_page_layout(a.value, f"{column} page {page}", int(pg.length))
            if isinstance(layout, SparseLayout):
                return Page(layout.values, bufs, pg.length, layout)
            return Page(layout, bufs, pg.length)
        layout = e20.ArrayEncoding() if version == "2.0" else e21.PageLayout()
        assert a.Unpack(layout), a.type_url
        return Page(layout, bufs, pg.length)


@pytest.fixture(scope="session")
def pylance_files(tmp_path_factory) -> Files:
    import lance
    root = tmp_path_factory.mktemp("enc_files")
    t = _table()
    t = t.cast(_schema(t))
    t20 = _table20()
    paths = {}
    for v in VERSIONS:
        paths[v] = str(root / f"t{v}")
        lance.write_dataset(t, paths[v], data_storage_version=v)
    paths["2.0"] = str(root / "t2.0")
    lance.write_dataset(t20, paths["2.0"], data_storage_version="2.0")
    return Files(paths, {**{v: t for v in VERSIONS}, "2.0": t20})
