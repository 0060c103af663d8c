"""Row selections (sparse arrays, dense arrays, ranges) equal pylance's take() on the same rows."""
from __future__ import annotations

import numpy as np
import pytest

from lance_duck.trace import decode_trace

from .conftest import assert_same, refused

TABLES = ["prim_p02", "prim_p60", "wide_p02", "nested_p02", "nested_p60", "bigbin", "compressed", "packed", "blobs"]
CASES = [(t, v) for t in TABLES for v in ("2.1", "2.2", "2.3")] + [("fsl_struct_p02", "2.2"),
                                                                   ("fsl_struct_p02", "2.3"), ("prim_allnull", "2.3"),
                                                                   ("wide_p60", "2.3"), ("nested_nonull", "2.3"),
                                                                   ("sparse_lists", "2.3")]


def selections(n: int, seed: int = 0) -> dict[str, object]:
    r = np.random.default_rng(seed)
    return {
        "sparse": np.sort(r.choice(n, size=min(n, 37), replace=False)).astype(np.int64),
        "dense": np.sort(r.choice(n, size=n // 2, replace=False)).astype(np.int64),
        "first": np.array([0], np.int64),
        "last": np.array([n - 1], np.int64),
        "range_mid": range(n // 3, n // 3 + n // 4),
        "range_head": range(0, min(n, 5)),
        "range_tail": range(n - 3, n),
        "range_odd": range(n // 7 + 3, max(n // 7 + 4, n - n // 5 - 1)),   # ends inside chunks
        "range_one": range(n // 2, n // 2 + 1),
        "empty": np.zeros(0, np.int64),
    }


@pytest.mark.parametrize("name,version", CASES, ids=[f"{n}-{v}" for n, v in CASES])
def test_selected_rows_equal_pylance_take(v2_datasets, name, version):
    fx = v2_datasets(name, version)
    reader = fx.reader()
    n = fx.ds.count_rows()
    failures = []
    fields = [f for f in fx.fields() if f.name not in refused(name, version)]
    for sel_name, sel in selections(n).items():
        idx = np.asarray(list(sel) if isinstance(sel, range) else sel, np.int64)
        exp = fx.ds.take(idx) if idx.size else fx.expected.slice(0, 0)
        for f in fields:
            try:
                assert_same(reader.read_field(f, sel), exp.column(f.name), f"{sel_name} {f.name}")
            except Exception as exc:
                failures.append(f"{sel_name} {f.name}: {type(exc).__name__}: {str(exc)[:300]}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("bad", [range(-1, 3), "past_end", "offsets_past_end", "two_d"])
def test_selections_outside_the_file_raise_invalid_argument(v2_datasets, bad):
    from lance_duck.errors import InvalidArgumentError
    fx = v2_datasets("prim_p02", "2.2")
    reader = fx.reader()
    n = fx.ds.count_rows()
    sel = {"past_end": range(0, n + 1), "offsets_past_end": np.array([0, n], np.int64),
           "two_d": np.zeros((2, 2), np.int64)}.get(bad, bad)
    with pytest.raises(InvalidArgumentError):
        reader.read_field(fx.fields()[0], sel)


@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
def test_sparse_take_of_fsst_strings_decompresses_only_selected_strings(tmp_path, version):
    import lance
    import pyarrow as pa

    from lance_duck.scan import dataset

    r = np.random.default_rng(4)
    n = 200_000
    words = np.array(["alpha", "beta", "gamma", "delta", "omega"])
    text = [None if k % 23 == 0 else "" if k % 31 == 0 else f"{words[k % 5]}-{r.integers(0, 10**9):x}"
            for k in range(n)]
    p = str(tmp_path / "fsst.lance")
    lance.write_dataset(pa.table({"s": pa.array(text)}), p, data_storage_version=version)
    edges = np.array([0, 1, n - 1] + [k for b in range(256, n, 4096) for k in (b - 1, b)])
    idx = np.union1d(r.choice(n, 500, replace=False), edges)
    with decode_trace() as trace:
        got = dataset(p).take(idx)
    assert got.equals(lance.dataset(p).take(idx))
    decoded = trace.values("path:fsst:decompress")
    assert decoded and sum(decoded) == idx.size       # only the selected strings were decompressed


@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
def test_sparse_take_reads_only_selected_flat_bitpacked_variable_and_dictionary_values(tmp_path, version):
    import lance
    import pyarrow as pa

    from lance_duck.scan import dataset

    r = np.random.default_rng(8)
    n = 150_000
    t = pa.table({
        "flat": pa.array(r.integers(-2**62, 2**62, n), pa.int64()),            # Flat64
        "raw": pa.array([None if k % 17 == 0 else r.bytes(int(r.integers(0, 24))) for k in range(n)]),
        "dict": pa.array([None if k % 13 == 0 else f"v{k % 9}" for k in range(n)]),
        "packed": pa.array(r.integers(0, 5000, n), pa.int64()),                  # InlineBitpacking
    })
    p = str(tmp_path / "sel.lance")
    lance.write_dataset(t, p, data_storage_version=version)
    edges = np.array([0, 1, n - 1, 4095, 4096, 65535, 65536])
    idx = np.union1d(r.choice(n, 300, replace=False), edges)
    with decode_trace() as trace:
        got = dataset(p).take(idx)
    assert got.equals(lance.dataset(p).take(idx))
    seen = trace.names()
    assert "path:selected:flat" in seen                    # the selected paths really ran
    assert "path:selected:inline_bitpacking" in seen
    assert {"path:selected:variable", "path:selected:fsst"} & seen
