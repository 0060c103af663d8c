"""Vector segment files: only the probed partitions are read; an IVF_RQ width lance_duck does not read is refused by name; damage is a
CorruptFileError naming the file."""
from __future__ import annotations

import shutil

import lance
import numpy as np
import pytest

import lance_duck
from lance_duck.errors import CorruptFileError, InvalidArgumentError
from lance_duck.index import index_segments
from lance_duck.index.files import IndexFile, segment_file_path
from lance_duck.index.vector import open_vector_segment
from lance_duck.table.snapshot import open_snapshot
from lance_duck.trace import decode_trace

from .conftest import queries


def test_only_probed_partitions_are_read(vector_table):
    path = vector_table("IVF_PQ", "l2")
    snap = open_snapshot(path)
    seg = open_vector_segment(snap, index_segments(snap)[0])
    q = queries(1, seed=21)[0]
    with decode_trace() as tr:
        seg.search(q, 10, minimum_nprobes=3, maximum_nprobes=3, ef=None, keep=None)
    read = tr.values("vector:read-partition")
    probed = [p for _, p in tr.values("vector:probe")]
    assert len(probed) == 3 and {p for _, p, _ in read} <= set(probed)
    order, _ = seg.partition_order(q)
    assert probed == order[:3].tolist()
    assert sum(n for _, _, n in read) <= sum(int(seg.lengths[p]) for p in probed) < 3000


def test_ivf_rq_of_one_bit_codes_is_read_as_pylance_reads_it(tmp_path):
    """The narrowest width pylance writes (sign bits only, no extra codes and their columns)."""
    from .conftest import table, vectors
    path = str(tmp_path / "rq.lance")
    ds = lance.write_dataset(table(vectors()), path)
    ds.create_index("vec", index_type="IVF_RQ", num_partitions=4, num_bits=1)
    snap = open_snapshot(path)
    seg = open_vector_segment(snap, index_segments(snap)[0])
    assert seg.storage.ex_bits == 0 and "__blocked_ex_codes" not in seg.storage.columns
    for q in queries(3):
        spec = {"column": "vec", "q": q, "k": 5, "nprobes": 2}
        ours = lance_duck.dataset(path).to_table(nearest=spec, with_row_id=True)
        theirs = ds.to_table(nearest=spec, with_row_id=True)
        assert ours["_rowid"].to_pylist() == theirs["_rowid"].to_pylist()


def _copy(vector_table, tmp_path, index_type="IVF_FLAT"):
    dst = str(tmp_path / "copy.lance")
    shutil.copytree(vector_table(index_type, "l2"), dst)
    snap = open_snapshot(dst)
    return snap, index_segments(snap)[0]


def _overwrite(path: str, pos: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(pos)
        f.write(data)


def test_damaged_partition_table_names_the_aux_file(vector_table, tmp_path):
    snap, seg = _copy(vector_table, tmp_path)
    aux = segment_file_path(snap, seg, "auxiliary.idx")
    pos, size = IndexFile(snap.io, aux).reader.container.global_buffers[1]   # the IVF message
    _overwrite(aux, pos, b"\xff" * size)
    with pytest.raises(CorruptFileError, match="auxiliary.idx"):
        open_vector_segment(snap, seg)


def test_partition_lengths_that_do_not_tile_the_rows_are_corrupt(vector_table, tmp_path):
    from lance_duck._proto import index_pb2
    snap, seg = _copy(vector_table, tmp_path)
    aux = segment_file_path(snap, seg, "auxiliary.idx")
    pos, size = IndexFile(snap.io, aux).reader.container.global_buffers[1]
    ivf = index_pb2.IVF()
    with open(aux, "rb") as f:
        f.seek(pos)
        ivf.ParseFromString(f.read(size))
    ivf.lengths[0] += 1
    ivf.lengths[1] -= 1       # same size on disk (small values keep their varint width), no longer the offsets
    data = ivf.SerializeToString()
    assert len(data) == size
    _overwrite(aux, pos, data)
    with pytest.raises(CorruptFileError, match="auxiliary.idx.*do not tile"):
        open_vector_segment(snap, seg)


def test_damaged_centroids_name_the_index_file(vector_table, tmp_path):
    snap, seg = _copy(vector_table, tmp_path, "IVF_PQ")
    idx = segment_file_path(snap, seg, "index.idx")
    pos, size = IndexFile(snap.io, idx).reader.container.global_buffers[1]
    _overwrite(idx, pos, b"\x22\x05\x08\x02\x12\x01\x09" + b"\x00" * (size - 7))   # a tensor of shape [9]
    with pytest.raises(CorruptFileError, match="index.idx"):
        open_vector_segment(snap, seg)


def test_search_rejects_a_query_of_the_wrong_dimension(vector_table):
    snap = open_snapshot(vector_table("IVF_FLAT", "l2"))
    seg = open_vector_segment(snap, index_segments(snap)[0])
    with pytest.raises(InvalidArgumentError, match="16-dimensional"):
        seg.search(np.zeros(5, np.float32), 3, minimum_nprobes=1, maximum_nprobes=1, ef=None, keep=None)


def test_hnsw_levels_that_do_not_fit_the_partition_are_corrupt(vector_table, tmp_path):
    """lance:hnsw level offsets are checked against the graph rows and vectors before the walk uses them."""
    import re
    snap, seg = _copy(vector_table, tmp_path, "IVF_HNSW_SQ")
    idx = segment_file_path(snap, seg, "index.idx")
    raw = open(idx, "rb").read()
    m = re.search(rb"level_offsets[^\[]*\[0,(\d+)", raw)
    last = m.end(1) - 1                  # partition 0's level-0 count, one digit changed in place
    digit = raw[last] - 48
    _overwrite(idx, last, bytes([48 + (digit + 1 if digit < 9 else digit - 1)]))
    opened = open_vector_segment(snap, seg)
    q = queries(1)[0]
    with pytest.raises(CorruptFileError, match="index.idx.*HNSW levels"):
        opened.search(q, 5, minimum_nprobes=8, maximum_nprobes=8, ef=None, keep=None)


def test_damaged_pq_codebook_names_the_aux_file(vector_table, tmp_path):
    snap, seg = _copy(vector_table, tmp_path, "IVF_PQ")
    aux = segment_file_path(snap, seg, "auxiliary.idx")
    pos, size = IndexFile(snap.io, aux).reader.container.global_buffers[2]     # the codebook Tensor
    _overwrite(aux, pos, b"\x08\x02\x12\x02\x04\x04\x1a\x00" + b"\x00" * (size - 8))
    with pytest.raises(CorruptFileError, match="auxiliary.idx"):
        open_vector_segment(snap, seg)
