"""Fixtures for the 2.1 / 2.2 data-file reader: pylance-written tables, written once per session."""
from __future__ import annotations

import pyarrow as pa
import pytest

from . import tables_v2 as T

VERSIONS = ["2.1", "2.2", "2.3"]
NULL_DENSITIES = {"nonull": 0.0, "p02": 0.02, "p60": 0.6, "allnull": 1.0}


def table_specs() -> dict[str, tuple]:
    """name -> (builder(version) -> table or batches, versions)."""
    specs = {}
    for tag, p in NULL_DENSITIES.items():
        specs[f"prim_{tag}"] = (lambda v, p=p: T.primitives(p), VERSIONS)
        specs[f"wide_{tag}"] = (lambda v, p=p: T.wide(p), VERSIONS)
    for tag in ("nonull", "p02", "p60"):
        p = NULL_DENSITIES[tag]
        specs[f"nested_{tag}"] = (lambda v, p=p: T.nested(p, v22=v != "2.1"), VERSIONS)
        specs[f"fsl_struct_{tag}"] = (lambda v, p=p: T.fsl_struct(p), ["2.2", "2.3"])
    specs["bigbin"] = (lambda v: T.big_binary(0.2), VERSIONS)
    specs["compressed"] = (lambda v: T.compressed(), VERSIONS)
    specs["packed"] = (lambda v: T.packed(v22=v != "2.1"), VERSIONS)
    specs["blobs"] = (lambda v: T.blobs(), VERSIONS)
    specs["tiny"] = (lambda v: T.primitives(0.3, n=3, seed=11), VERSIONS)
    return specs


SPECS = table_specs()

# file format 2.3: per table, the columns whose encodings lance_duck refuses (UnsupportedFeatureError);
# every other column of the matrix reads identically to pylance. Nothing pylance 14.0.2 writes for
# the matrix is refused today.
REFUSED_23: dict[str, list[str]] = {}


def refused(name: str, version: str) -> set[str]:
    """Columns of a matrix table that lance_duck refuses at ``version`` (2.3 only)."""
    return set(REFUSED_23.get(name, ())) if version == "2.3" else set()


def write(path: str, data, version: str, **options) -> None:
    import lance
    if isinstance(data, list):
        reader = pa.RecordBatchReader.from_batches(data[0].schema, data)
        lance.write_dataset(reader, path, data_storage_version=version, max_rows_per_file=10**7,
                            max_rows_per_group=10**7, **options)
    else:
        lance.write_dataset(data, path, data_storage_version=version, **options)


class Fixture:
    """One pylance-written dataset plus lance_duck readers of its (single) fragment."""

    def __init__(self, path: str):
        import lance
        from lance_duck.file import open_data_file
        from lance_duck.table.snapshot import open_snapshot
        self.path = path
        self.ds = lance.dataset(path)
        self.snap = open_snapshot(path)
        self._expected = None
        self._open = open_data_file

    @property
    def expected(self) -> pa.Table:
        if self._expected is None:
            self._expected = self.ds.to_table()
        return self._expected

    def fields(self):
        return self.snap.schema.fields

    def reader(self, frag: int = 0):
        f = self.snap.fragments[frag]
        assert len(f.files) == 1
        return self._open(self.snap.io, f.files[0])


@pytest.fixture(scope="session")
def v2_datasets(tmp_path_factory):
    """(table name, version) -> Fixture, written lazily once per session."""
    root = tmp_path_factory.mktemp("file_v2")
    cache: dict[tuple[str, str], Fixture] = {}

    def get(name: str, version: str) -> Fixture:
        key = (name, version)
        if key not in cache:
            builder, _ = SPECS[name] if name in SPECS else EXTRA[name]
            path = str(root / f"{name}_{version.replace('.', '_')}")
            write(path, builder(version), version, **WRITE_OPTIONS.get(name, {}))
            cache[key] = Fixture(path)
        return cache[key]
    return get


def _batches(builder, k: int, **kw) -> list[pa.RecordBatch]:
    """``k`` batches of separately built tables (pylance 14.0.2 panics on sliced nested batches)."""
    out = []
    for i in range(k):
        b = builder(0.3, seed=100 + i, **kw).combine_chunks().to_batches()
        assert len(b) == 1
        out.append(b[0])
    return out


EXTRA = {
    "big": (lambda v: T.big(), VERSIONS),
    "big_lists": (lambda v: T.big_lists(), VERSIONS),
    "sparse_lists": (lambda v: T.sparse_lists(), ["2.3"]),
    "sparse_zipped_lists": (lambda v: T.sparse_zipped_lists(), ["2.3"]),
    # larger 2.3 pages: run-length coded string offsets (95 % nulls), structs with null rows over lists
    "prim_large_p95": (lambda v: T.primitives(0.95, n=60_000).select(
        ["bin", "bin_ff", "lbin", "const_str", "str_hex", "lstr", "empty_str", "i32"]), ["2.3"]),
    "nested_large_p02": (lambda v: T.nested(0.02, n=40_000).select(
        ["struct_list", "struct", "struct_struct", "list_struct", "llist_str"]), ["2.3"]),
    "wide_large_p95": (lambda v: T.wide(0.95, n=3000).select(["bin40k", "long_str", "emb128"]), ["2.3"]),
    # more nested shapes (test_file_v2_nested23); "_pages": written in batches, a page each
    "more_nonull": (lambda v: T.nested_more(0.0), ["2.2", "2.3"]),
    "more_p30": (lambda v: T.nested_more(0.3), ["2.2", "2.3"]),
    "more_pages_p30": (lambda v: _batches(T.nested_more, 6, n=500), ["2.2", "2.3"]),
    "fsl_nested_nonull": (lambda v: T.fsl_structs_nested(0.0), ["2.3"]),
    "fsl_nested_p30": (lambda v: T.fsl_structs_nested(0.3), ["2.3"]),
    "fsl_nested_pages_p30": (lambda v: _batches(T.fsl_structs_nested, 5, n=400), ["2.3"]),
    "fsl_top_p30": (lambda v: T.fsl_struct_lists_top(0.3), ["2.2", "2.3"]),
}
# write_dataset options per table (small flushes: one page per batch)
WRITE_OPTIONS = {"more_pages_p30": {"data_cache_bytes": 4096}, "fsl_nested_pages_p30": {"data_cache_bytes": 4096}}


def assert_same(got: pa.Array, exp, what: str = "") -> None:
    """Same type, values and nulls (NaN equal to NaN)."""
    if isinstance(exp, pa.ChunkedArray):
        exp = exp.combine_chunks() if exp.num_chunks != 1 else exp.chunk(0)
    assert got.type == exp.type, f"{what}: type {got.type} != {exp.type}"
    assert len(got) == len(exp), f"{what}: length {len(got)} != {len(exp)}"
    got.validate(full=True)
    if pa.types.is_struct(exp.type):  # equals() ignores children under null structs; pylance does not
        for i in range(exp.type.num_fields):
            assert_same(got.field(i), exp.field(i), f"{what}.{exp.type.field(i).name}")
    if got.equals(exp):
        return
    if _has_float(exp.type):
        assert _nan_safe(got) == _nan_safe(exp), f"{what}: values differ"
        return
    g, e = got.to_pylist(), exp.to_pylist()
    bad = [i for i, (a, b) in enumerate(zip(g, e)) if a != b][:5]
    if not bad and _has_dictionary(exp.type):
        return   # same values; pylance concatenates the dictionaries of pages, lance_duck unifies them
    raise AssertionError(f"{what}: values differ at {bad}: {[g[i] for i in bad]} != {[e[i] for i in bad]}")


def _has_dictionary(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        return True
    return any(_has_dictionary(t.field(i).type) for i in range(t.num_fields)) if t.num_fields else False


def _has_float(t: pa.DataType) -> bool:
    if pa.types.is_floating(t):
        return True
    return any(_has_float(t.field(i).type) for i in range(t.num_fields)) if t.num_fields else False


def _nan_safe(a: pa.Array):
    def norm(x):
        if isinstance(x, float) and x != x:
            return "NaN"
        if isinstance(x, list):
            return [norm(y) for y in x]
        if isinstance(x, dict):
            return {k: norm(v) for k, v in x.items()}
        return x
    return norm(a.to_pylist())
