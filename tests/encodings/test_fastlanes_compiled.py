"""The compiled FastLanes kernels (numba, the ``fast`` extra) against the independent reference
packer and the numpy kernels at every width of 16-, 32- and 64-bit blocks, and on pylance-written
tables (nulls, deletions, 2.1 / 2.2 / 2.3 files) against pylance. Skipped where numba is not
installed."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck
from lance_duck.encodings import _compiled, fastlanes as fl
from lance_duck.trace import decode_trace
from tests._kernels import use_kernels
from tests.encodings.test_encodings_fastlanes import (  # noqa: F401  (the fixture they use)
    rand_values, ref_pack_block, test_inline_bitpacking_2_1_int64_and_nullable_values,
    test_inline_bitpacking_pages_match_pylance)


@pytest.fixture(autouse=True)
def _kernels(monkeypatch):
    """Every FastLanes unpack of 16-, 32- or 64-bit blocks here, small ones too, by the compiled kernels."""
    use_kernels(monkeypatch, "compiled")
    monkeypatch.setattr(_compiled, "FASTLANES_MIN_VALUES", 0)


def _unpack_both(buf, offs, w, t):
    with decode_trace() as trace:
        got = fl.unpack_blocks_at(buf, offs, w, t)
    if w:
        assert trace.values("path:fastlanes:compiled"), "the compiled kernels did not run"
    lance_duck.configure(compiled_kernels=0)
    try:
        with decode_trace() as trace:
            want = fl.unpack_blocks_at(buf, offs, w, t)
        assert not trace.values("path:fastlanes:compiled")
    finally:
        lance_duck.configure(compiled_kernels=1)
    assert got.dtype == want.dtype
    return got, want


@pytest.mark.parametrize("t", [16, 32, 64])
def test_every_width_matches_reference_packer_and_numpy(t):
    """Blocks at odd byte offsets (unaligned words), unevenly spaced, every width 0..T."""
    rng = np.random.default_rng(t)
    for w in range(t + 1):
        vals = [rand_values(rng, 1024, w, t) for _ in range(3)]
        blocks = [ref_pack_block(v, w, t).tobytes() for v in vals]
        gaps = [3, 0, 11]                     # bytes before each block
        buf = b"".join(b"\xee" * g + blk for g, blk in zip(gaps, blocks)) + b"\xee" * 5
        offs = np.cumsum([g + (len(blocks[i - 1]) if i else 0) for i, g in enumerate(gaps)])
        got, want = _unpack_both(np.frombuffer(buf, np.uint8), offs, w, t)
        exp = np.stack(vals).astype(f"u{t // 8}")
        np.testing.assert_array_equal(got, exp, err_msg=f"T={t} W={w}")
        np.testing.assert_array_equal(want, exp, err_msg=f"T={t} W={w}")


def test_mixed_widths_with_short_last_blocks():
    rng = np.random.default_rng(5)
    widths = [62, 62, 3, 64, 62, 17]
    vals = [rand_values(rng, 1024, w, 64) for w in widths]
    blocks = [ref_pack_block(v, w, 64).tobytes() for v, w in zip(vals, widths)]
    offs = np.cumsum([0] + [len(b) for b in blocks[:-1]])
    counts = [1024, 1024, 1000, 1024, 1024, 7]
    got = fl.unpack_mixed(b"".join(blocks), 64, offs, np.array(widths), np.array(counts))
    exp = np.concatenate([v[:c] for v, c in zip(vals, counts)]).astype(np.uint64)
    np.testing.assert_array_equal(got, exp)


def _numpy_too(fn):
    """``fn()`` with the compiled kernels, then with numpy's: both results (the compiled run must
    have used them)."""
    with decode_trace() as trace:
        got = fn()
    assert trace.values("path:fastlanes:compiled"), "the compiled kernels did not run"
    lance_duck.configure(compiled_kernels=0)
    try:
        want = fn()
    finally:
        lance_duck.configure(compiled_kernels=1)
    return got, want


@pytest.mark.parametrize("t", [16, 32, 64])
@pytest.mark.parametrize("w", [1, 3, 13])
def test_level_buffers_of_chunks_land_in_place(t, w):
    """Out-of-line buffers (a mini-block chunk's levels) holding counts that are not whole blocks,
    packed or raw tails: every block's values written at their place in the result."""
    w = min(w, t - 1)
    rng = np.random.default_rng(t * 100 + w)
    counts = [1024, 3000, 17, 0, 2048, 4096, 1500, 1]
    vals, bufs, sizes = [], [], []
    for i, c in enumerate(counts):
        v = rand_values(rng, c, w, t).astype(f"u{t // 8}")
        full = c // 1024
        b = fl.pack(v[: full * 1024], w, t).tobytes() if full else b""
        if c % 1024:
            b += v[full * 1024:].tobytes() if i % 2 else fl.pack(v[full * 1024:], w, t).tobytes()
        vals.append(v)
        sizes.append(len(b))
        bufs.append(b + b"\0" * (-len(b) % 8 + 3))
    offs = np.cumsum([0] + [len(b) for b in bufs])
    got, want = _numpy_too(lambda: fl.unpack_out_of_line_batch(b"".join(bufs), offs[:-1], sizes, counts, w, t))
    np.testing.assert_array_equal(got, np.concatenate(vals))
    np.testing.assert_array_equal(want, np.concatenate(vals))


def test_many_short_blocks_of_mixed_widths_land_in_place():
    """More short blocks than ``MAX_SHORT_RUNS`` (every chunk's last block short), two widths."""
    rng = np.random.default_rng(11)
    k = 3 * (fl.MAX_SHORT_RUNS + 4)
    widths = [5 if i % 3 else 29 for i in range(k)]
    counts = [1024 if i % 3 != 2 else int(rng.integers(1, 1024)) for i in range(k)]
    vals = [rand_values(rng, 1024, w, 32) for w in widths]
    blocks = [ref_pack_block(v, w, 32).tobytes() for v, w in zip(vals, widths)]
    offs = np.cumsum([0] + [len(b) + 4 for b in blocks[:-1]])
    data = b"".join(b + b"\xee" * 4 for b in blocks)
    got, want = _numpy_too(lambda: fl.unpack_mixed(data, 32, offs, np.array(widths), np.array(counts)))
    exp = np.concatenate([v[:c] for v, c in zip(vals, counts)]).astype(np.uint32)
    np.testing.assert_array_equal(got, exp)
    np.testing.assert_array_equal(want, exp)


def test_block_past_the_end_is_refused_before_the_kernel():
    from lance_duck.errors import CorruptFileError
    buf = np.zeros(1024 * 62 // 8, np.uint8)
    with pytest.raises(CorruptFileError):
        fl.unpack_blocks_at(buf, np.array([1]), 62, 64)


def _per_version(root, t: pa.Table, split: int, deleted: str) -> dict[str, str]:
    """``t`` written by pylance per file version (2.1 / 2.2 / 2.3) as two fragments split at row
    ``split``, then the rows matching ``deleted`` deleted: {version: path}."""
    import lance
    paths = {}
    for v in ("2.1", "2.2", "2.3"):
        p = str(root / f"t{v}.lance")
        lance.write_dataset(t.slice(0, split), p, data_storage_version=v)
        lance.write_dataset(t.slice(split), p, mode="append", data_storage_version=v)
        lance.dataset(p).delete(deleted)
        paths[v] = p
    return paths


@pytest.fixture(scope="module")
def wide_tables(tmp_path_factory):
    """pylance-written tables of wide-width values (random doubles, random int64 / int32), a
    dictionary string column, nulls, two fragments and deleted rows, per file version."""
    rng = np.random.default_rng(32)
    n = 6000
    f = rng.random(n)
    nullable = pa.array(np.where(rng.random(n) < 0.1, np.nan, rng.random(n) * 1e6), mask=rng.random(n) < 0.1)
    t = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "f": pa.array(f),
        "g": nullable,
        "big": pa.array(rng.integers(-(1 << 62), 1 << 62, n, dtype=np.int64)),
        "i32": pa.array(rng.integers(0, 1 << 31, n, dtype=np.int64).astype(np.int32)),
        "cat": pa.array([f"cat_{i}" for i in rng.integers(0, 20, n)]),
    })
    return _per_version(tmp_path_factory.mktemp("fl_compiled"), t, 3500, "id % 7 = 3 or (id > 100 and id < 900)")


@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
def test_tables_read_like_pylance(wide_tables, version):
    import lance
    p = wide_tables[version]
    with decode_trace() as trace:
        got = lance_duck.dataset(p).to_table()
    assert trace.values("path:fastlanes:compiled"), "the compiled kernels did not run"
    want = lance.dataset(p).to_table()
    assert got.schema == want.schema and got.num_rows == want.num_rows
    for name in got.column_names:   # (NaN in "g": compared as bits, nulls by validity)
        a, b = got[name].combine_chunks(), want[name].combine_chunks()
        assert a.is_valid().equals(b.is_valid()), name
        if pa.types.is_floating(a.type):
            a, b = (pc.fill_null(x, 0.0).to_numpy().view(np.uint64) for x in (a, b))
            np.testing.assert_array_equal(a, b, err_msg=name)
        else:
            assert a.equals(b), name


@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
def test_sql_group_by_and_string_equality_like_pylance(wide_tables, version):
    import lance
    p = wide_tables[version]
    want = lance.dataset(p).to_table()
    got = lance_duck.sql(f"select cat, count(*) as n, sum(i32) as s, min(big) as b, min(f) as lo, max(f) as hi "
                         f"from '{p}' group by cat order by cat").fetchall()
    exp = want.group_by("cat").aggregate([("cat", "count"), ("i32", "sum"), ("big", "min"), ("f", "min"), ("f", "max")])
    exp = exp.sort_by("cat")
    assert got == list(zip(*[exp.column(c).to_pylist() for c in ("cat", "cat_count", "i32_sum", "big_min", "f_min", "f_max")]))
    n = lance_duck.sql(f"select count(*) from '{p}' where cat = 'cat_7'").fetchall()[0][0]
    assert n == pc.sum(pc.equal(want["cat"], "cat_7")).as_py()


def test_no_new_signature_is_compiled_in_a_decode():
    """Strided offsets reach the kernels as the contiguous arrays warm_up() loaded them for."""
    from lance_duck.encodings import _numba_kernels as nk
    before = len(nk.fastlanes.signatures)
    rng = np.random.default_rng(9)
    for t in (16, 32, 64):
        vals = [rand_values(rng, 1024, 7, t) for _ in range(4)]
        blocks = np.frombuffer(b"".join(ref_pack_block(v, 7, t).tobytes() for v in vals), np.uint8)
        offs = np.arange(4, dtype=np.int64) * (1024 * 7 // 8)
        with decode_trace() as trace:
            got = fl.unpack_blocks_at(blocks, offs[::2], np.uint8(7), t)
        assert trace.values("path:fastlanes:compiled")
        np.testing.assert_array_equal(got, np.stack(vals[::2]).astype(f"u{t // 8}"))
    assert len(nk.fastlanes.signatures) == before == 3   # one per word width, all from warm_up()


def test_no_new_placing_signature_is_compiled_in_a_decode():
    """Level buffers placed in a pool-allocated result reach the placing kernel as warm_up() loaded it."""
    from lance_duck.encodings import _numba_kernels as nk
    before = len(nk.fastlanes_place.signatures)
    rng = np.random.default_rng(10)
    for t in (16, 32, 64):
        vals = rand_values(rng, 100_000, 5, t).astype(f"u{t // 8}")
        counts = [3000] * 33 + [1000]
        packed = [fl.pack(vals[i * 3000: i * 3000 + c], 5, t).tobytes() for i, c in enumerate(counts)]
        offs = np.cumsum([0] + [len(b) for b in packed[:-1]])
        with decode_trace() as trace:
            got = fl.unpack_out_of_line_batch(b"".join(packed), offs, [len(b) for b in packed], counts, 5, t)
        assert trace.values("path:fastlanes:compiled")
        np.testing.assert_array_equal(got, vals)
    assert len(nk.fastlanes_place.signatures) == before == 3


@pytest.fixture(scope="module")
def nested_tables(tmp_path_factory):
    """pylance-written ``list<struct<int32?, double>?>`` and ``list<list<int32>>`` columns with nulls
    at every level (repetition and definition levels bit-packed per mini-block chunk), two fragments
    and deleted rows, per file version."""
    rng = np.random.default_rng(33)
    n = 20_000
    lens = rng.integers(0, 9, n)
    k = int(lens.sum())
    a = pa.array(rng.integers(0, 1 << 16, k).astype(np.int32), mask=rng.random(k) < 0.05)
    items = pa.StructArray.from_arrays([a, pa.array(rng.random(k))], names=["a", "b"],
                                       mask=pa.array(rng.random(k) < 0.05))
    offsets = pa.array(np.concatenate([[0], np.cumsum(lens)]).astype(np.int32))
    structs = pa.ListArray.from_arrays(offsets, items, mask=pa.array(rng.random(n) < 0.05))
    inner_lens = rng.integers(0, 5, 3 * n)
    inner_vals = pa.array(rng.integers(0, 1 << 16, int(inner_lens.sum())).astype(np.int32))
    inner = pa.ListArray.from_arrays(pa.array(np.concatenate([[0], np.cumsum(inner_lens)]).astype(np.int32)),
                                     inner_vals, mask=pa.array(rng.random(3 * n) < 0.05))
    nested = pa.ListArray.from_arrays(pa.array((np.arange(n + 1) * 3).astype(np.int32)), inner,
                                      mask=pa.array(rng.random(n) < 0.05))
    t = pa.table({"id": pa.array(np.arange(n, dtype=np.int64)), "s": structs, "ll": nested})
    return _per_version(tmp_path_factory.mktemp("fl_compiled_nested"), t, 12_000,
                        "id % 11 = 4 or (id > 3000 and id < 3500)")


@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
@pytest.mark.parametrize("batch_size", [None, 1000])
def test_nested_levels_read_like_pylance(nested_tables, version, batch_size):
    """Repetition / definition levels unpacked by the compiled kernels, whole fragments and a scan's
    small tasks (each task's level buffers a few chunks long), with a filter too."""
    import lance
    p = nested_tables[version]
    ds = lance_duck.dataset(p)
    with decode_trace() as trace:
        got = ds.to_table(batch_size=batch_size) if batch_size else ds.to_table()
        filtered = ds.to_table(columns=["id", "s"], filter="id >= 5000 and id < 17000")
    assert trace.values("path:fastlanes:compiled"), "the compiled kernels did not run"
    ref = lance.dataset(p)
    assert got.equals(ref.to_table())
    assert filtered.equals(ref.to_table(columns=["id", "s"], filter="id >= 5000 and id < 17000"))
