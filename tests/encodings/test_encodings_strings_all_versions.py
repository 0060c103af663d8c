"""String columns of every storage version (2.0-2.3) written by pylance -- nulls, empty strings,
values over 64 KiB, long FSST-compressible text -- decoded with the numpy and with the compiled
kernels (skipped without numba) and compared with pylance's own read."""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

from lance_duck.file import open_data_file
from lance_duck.table.snapshot import open_snapshot
from lance_duck.trace import decode_trace
from tests._kernels import KERNELS, use_kernels

VERSIONS = ["2.0", "2.1", "2.2", "2.3"]
WORDS = np.array([f"w{i:03d}" for i in range(800)])


def _hex(rng: np.random.Generator, n: int) -> list[str]:
    return [f"{v:012x}"[:w] for v, w in zip(rng.integers(0, 1 << 48, n).tolist(), rng.integers(0, 13, n).tolist())]


def _table() -> pa.Table:
    rng = np.random.default_rng(32)
    n = 3_000

    def text(lo: int, hi: int) -> str:
        return " ".join(WORDS[rng.integers(0, WORDS.size, int(rng.integers(lo, hi)))])
    long = [text(40, 120) for _ in range(n)]
    for i in range(0, n, 97):
        long[i] = ""
    huge = [text(1, 20) for _ in range(n)]
    for i in (5, 1500, n - 1):
        huge[i] = text(14_000, 14_001)          # ~70 KB: over 64 KiB (pylance: zstd, not FSST)
    short = _hex(rng, n)
    return pa.table({
        "long": pa.array(long, mask=rng.random(n) < 0.1),
        "long_dense": pa.array([s or "x" for s in long]),
        "huge": pa.array(huge, mask=rng.random(n) < 0.1),
        "short": pa.array(short, mask=rng.random(n) < 0.05),
    })


@pytest.fixture(scope="module")
def string_tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("strings_all_versions")
    table = _table()
    short = pa.table({"hex": pa.array(_hex(np.random.default_rng(33), 100_000), mask=np.arange(100_000) % 31 == 0)})
    out = {}
    for v in VERSIONS:
        for name, t in (("s", table), ("hex", short)):
            uri = str(root / f"{name}_{v}.lance")
            lance.write_dataset(t, uri, data_storage_version=v, max_rows_per_group=1024)
            out[name, v] = uri, lance.dataset(uri).to_table()
    return out


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("version", VERSIONS)
def test_strings_decode_like_pylance_on_both_kernel_paths(string_tables, monkeypatch, version, kernels):
    use_kernels(monkeypatch, kernels)
    seen: set[str] = set()
    for table in ("s", "hex"):
        uri, expected = string_tables[table, version]
        snap = open_snapshot(uri)
        for name in expected.column_names:
            field = snap.schema.field(name)
            with decode_trace() as trace:
                got = pa.chunked_array([open_data_file(snap.io, f.files[0]).read_field(field)
                                        for f in snap.fragments], field.arrow_type)
            seen |= trace.names()
            want = expected.column(name)
            assert got.type == want.type and got.combine_chunks().equals(want.combine_chunks()), (name, version)
    assert max(len(s or "") for s in expected.column("hex").to_pylist()) <= 12
    assert max(len(s or "") for s in string_tables["s", version][1].column("huge").to_pylist()) > 1 << 16
    if version in ("2.1", "2.2", "2.3"):
        # (pylance compresses the long columns with FSST from 2.1 on: the kernels under test ran)
        assert ("path:fsst:compiled" in seen) == (kernels == "compiled"), sorted(seen)
        assert ("path:fsst:compiled-short" in seen) == (kernels == "compiled"), sorted(seen)
