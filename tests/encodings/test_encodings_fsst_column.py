"""FSST columns decoded end to end (pylance 14.0.2 writes, lance_duck's 2.2 file reader reads):
the grouped mini-block path and the string-boundary pieces, against pylance's own result."""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

from lance_duck import _state
from lance_duck.encodings import fsst
from lance_duck.file import open_data_file
from lance_duck.file.v2_1.compression import miniblock
from lance_duck.table.snapshot import open_snapshot
from lance_duck.trace import decode_trace
from tests._kernels import KERNELS, use_kernels

ROWS = 60_000


@pytest.fixture(scope="session")
def fsst_dataset(tmp_path_factory):
    rng = np.random.default_rng(42)
    vals = rng.integers(0, 1 << 48, ROWS)
    widths = rng.integers(0, 13, ROWS)
    strings = [f"{v:012x}"[:w] for v, w in zip(vals.tolist(), widths.tolist())]
    for i in rng.choice(ROWS, 600, replace=False).tolist():  # bytes without a symbol: escapes
        strings[i] = strings[i] + "\u00ff\u0001~" + chr(0x3000 + i % 500)
    table = pa.table({"c": pa.array(strings)})
    uri = str(tmp_path_factory.mktemp("fsst_col") / "t.lance")
    reader = pa.RecordBatchReader.from_batches(table.schema, iter(table.to_batches(max_chunksize=20_000)))
    lance.write_dataset(reader, uri, data_storage_version="2.2")
    return uri, lance.dataset(uri).to_table(columns=["c"]).column(0).combine_chunks()


def _read(uri: str) -> pa.Array:
    snap = open_snapshot(uri)
    field = snap.schema.field("c")
    chunks = [open_data_file(snap.io, f.files[0]).read_field(field) for f in snap.fragments]
    return pa.chunked_array(chunks, field.arrow_type).combine_chunks()


@pytest.mark.parametrize("kernels", KERNELS)
def test_column_is_fsst_with_escapes(fsst_dataset, monkeypatch, kernels):
    use_kernels(monkeypatch, kernels)
    uri, expected = fsst_dataset
    with decode_trace() as trace:
        got = _read(uri)
    assert got.equals(expected)
    assert "mb:fsst" in trace.names()
    assert "path:fsst:escapes" in trace.names()  # some pages hold escapes (tokens widened to 256 + byte)


@pytest.mark.parametrize("group_values,min_group,piece_tokens,grouped", [
    (None, None, None, True),          # defaults: pages split in groups for the thread pool
    (1000, None, None, True),          # many groups of whole chunks
    (3000, None, 2048, True),          # groups, each split into string-boundary pieces
    (1 << 40, 1 << 40, 4096, False),   # one group (plain path), pieces only
])
@pytest.mark.parametrize("kernels", KERNELS)
def test_fsst_column_equals_pylance(fsst_dataset, monkeypatch, group_values, min_group, piece_tokens, grouped,
                                    kernels):
    use_kernels(monkeypatch, kernels)
    uri, expected = fsst_dataset
    monkeypatch.setitem(_state._settings, "kernel_threads", 2)  # same groups on any machine
    if group_values is not None:
        monkeypatch.setattr(miniblock, "_FSST_GROUP_VALUES", group_values)
    if min_group is not None:
        monkeypatch.setattr(miniblock, "_FSST_MIN_GROUP", min_group)
    if piece_tokens is not None:
        monkeypatch.setattr(fsst, "PIECE_TOKENS", piece_tokens)
    with decode_trace() as trace:
        got = _read(uri)
    assert got.type == expected.type and got.equals(expected)
    groups = trace.values("path:fsst:grouped")
    assert bool(groups) == grouped and all(g > 1 for g in groups)  # the intended path really ran
    if piece_tokens is not None:   # strings split at piece boundaries really ran
        assert any(p > 1 for p in trace.values("path:fsst:pieces" if kernels == "numpy" else "path:fsst:compiled"))
