"""Nested shapes beyond the type matrix, at 2.2 and 2.3: lists of structs of lists, structs of
lists, large lists, lists of maps / dictionary strings / fixed-size binaries, null and empty list
mixes (one page and many pages), and fixed-size lists of structs inside lists (2.3: a sparse
fixed-size-list layer; 2.2: refused, pylance cannot read them back). Every column whole, a row
selection and a range equal pylance's; where pylance's own reader fails on a file it wrote, the
table it was given is the reference.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lance_duck.errors import UnsupportedFeatureError
from lance_duck.trace import decode_trace

from . import tables_v2 as T
from .conftest import EXTRA, assert_same, write

MORE = [(name, v) for name in ("more_nonull", "more_p30", "more_pages_p30") for v in EXTRA[name][1]]
FSL_NESTED = ["fsl_nested_nonull", "fsl_nested_p30", "fsl_nested_pages_p30"]


def _compare_every_column(fx, name: str, expected=None) -> list[str]:
    """Whole column, a row selection and a range of every field; the failures, one per field."""
    reader = fx.reader()
    n = fx.ds.count_rows()
    sel = np.sort(np.random.default_rng(3).choice(n, 300, replace=False)).astype(np.int64)
    failures = []
    for f in fx.fields():
        exp = expected.column(f.name) if expected is not None else fx.ds.to_table(columns=[f.name]).column(0)
        try:
            assert_same(reader.read_field(f), exp, f"{name} {f.name}")
            assert_same(reader.read_field(f, sel), exp.take(pa.array(sel)), f"{name} take {f.name}")
            assert_same(reader.read_field(f, range(37, n - 111)), exp.slice(37, n - 148), f"{name} range {f.name}")
        except Exception as exc:  # noqa: BLE001 - one report for every column
            failures.append(f"{f.name}: {type(exc).__name__}: {str(exc)[:300]}")
    return failures


@pytest.mark.parametrize("name,version", MORE, ids=[f"{n}-{v}" for n, v in MORE])
def test_more_nested_shapes_equal_pylance(v2_datasets, name, version):
    fx = v2_datasets(name, version)
    if name.endswith("_pages_p30"):
        assert len(fx.reader().container.column(0).pages) > 1
    failures = _compare_every_column(fx, f"{name} {version}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("version", ["2.2", "2.3"])
def test_more_nested_shapes_through_the_table_api_and_duckdb_equal_pylance(v2_datasets, version):
    import duckdb

    import lance_duck
    fx = v2_datasets("more_p30", version)
    ds = lance_duck.dataset(fx.path)
    flt = "id % 5 = 2 and st_ll.c is not null"
    assert ds.to_table(filter=flt).equals(fx.ds.to_table(filter=flt))
    idx = np.array([0, 1, 2, 999, 2998, 2999], np.int64)
    assert ds.take(idx).equals(fx.ds.take(idx))
    con = duckdb.connect()
    lance_duck.register(con, "t", ds)
    got = con.execute("select id, len(l_st_l), st_ll.c, len(large_ll), l_fsb[1], l_dict[1], len(l_map), "
                      "l_st_l[1].l[1] from t where id < 1200 order by id").fetchall()

    def first(v):   # a list's first item in DuckDB (NULL for a null or empty list)
        return v[0] if v else None

    def length(v):
        return None if v is None else len(v)
    exp = [(r["id"], length(r["l_st_l"]), (r["st_ll"] or {}).get("c"), length(r["large_ll"]), first(r["l_fsb"]),
            first(r["l_dict"]), length(r["l_map"]), first((first(r["l_st_l"]) or {}).get("l")))
           for r in fx.ds.to_table(filter="id < 1200").to_pylist()]
    assert got == exp
    assert all(any(g[i] is not None for g in got) and any(g[i] is None for g in got) for i in range(1, 8))


def test_more_nested_shapes_at_2_3_use_sparse_layers(v2_datasets):
    """The 2.3 files of the sweep store some structures sparse (else the sweep would only
    repeat the dense 2.2 paths)."""
    fx = v2_datasets("more_p30", "2.3")
    with decode_trace() as trace:
        fx.reader().read_fields(fx.fields())
    assert "layout:sparse23:nested" in trace.names()


@pytest.mark.parametrize("name", FSL_NESTED)
def test_2_3_fixed_size_lists_of_structs_in_lists_equal_pylance(v2_datasets, name):
    """list<fixed_size_list<struct>> (also in a list of lists, a large list, a list of structs,
    with null fixed-size lists, with lists, maps, vectors and long strings in the struct)."""
    fx = v2_datasets(name, "2.3")
    with decode_trace() as trace:
        failures = _compare_every_column(fx, name, fx.expected)
    assert not failures, "\n".join(failures)
    assert "sparse23:fixed_size_list" in trace.names()
    if "pages" in name:
        assert len(fx.reader().container.column(0).pages) > 1


def test_2_3_fixed_size_lists_of_structs_in_lists_through_the_table_api_and_duckdb(v2_datasets):
    import duckdb

    import lance_duck
    fx = v2_datasets("fsl_nested_p30", "2.3")
    ds = lance_duck.dataset(fx.path)
    flt = "id % 3 = 1"
    assert ds.to_table(filter=flt).equals(fx.ds.to_table(filter=flt))
    idx = np.array([0, 7, 8, 1500, 1999], np.int64)
    assert ds.take(idx, columns=["l_fsl_st", "id"]).equals(fx.ds.take(idx, columns=["l_fsl_st", "id"]))
    con = duckdb.connect()
    lance_duck.register(con, "t", ds)
    got = con.execute("select id, len(l_fsl_st), l_fsl_st[1][2].s from t where id between 10 and 400 "
                      "order by id").fetchall()
    exp = fx.ds.to_table(columns=["id", "l_fsl_st"], filter="id between 10 and 400").to_pylist()

    def second_s(lists):   # l_fsl_st[1][2].s in DuckDB (1-based; NULL through a null or empty list)
        item = lists[0][1] if lists else None
        return None if item is None else item["s"]
    assert got == [(r["id"], None if r["l_fsl_st"] is None else len(r["l_fsl_st"]), second_s(r["l_fsl_st"]))
                   for r in exp]
    assert any(g[2] is not None for g in got) and any(g[1] is None for g in got)


def test_fixed_size_list_of_structs_of_lists_equals_pylance_at_2_3_and_the_written_table_at_2_2(v2_datasets):
    """fixed_size_list<struct<list, int>> at the top: pylance 14.0.2 reads it at 2.3; at 2.2 its
    reader panics ("Not yet supported FSL<...List<...>>"), lance_duck reads the table written."""
    source = T.fsl_struct_lists_top(0.3)
    fx = v2_datasets("fsl_top_p30", "2.3")
    assert fx.expected.equals(source)
    failures = _compare_every_column(fx, "fsl_top 2.3", source)
    fx = v2_datasets("fsl_top_p30", "2.2")
    with pytest.raises(BaseException, match="FSL"):   # pyo3 panics are BaseExceptions
        fx.ds.to_table()
    failures += _compare_every_column(fx, "fsl_top 2.2", source)
    assert not failures, "\n".join(failures)


def _two_field_structs_in_null_fixed_size_lists() -> pa.Table:
    r = np.random.default_rng(18)
    n = 1500
    st = pa.StructArray.from_arrays([pa.array(r.integers(0, 99, 8 * n).astype(np.int32)),
                                     pa.array([f"s{i}" for i in range(8 * n)], mask=r.random(8 * n) < 0.2)],
                                    names=["a", "s"], mask=pa.array(r.random(8 * n) < 0.2))
    fsl = pa.FixedSizeListArray.from_arrays(st, 2, mask=pa.array(r.random(4 * n) < 0.2))
    off = np.concatenate([[0], np.cumsum(r.integers(0, 4, n))]).astype(np.int32)
    return pa.table({"c": pa.ListArray.from_arrays(pa.array(off), fsl.slice(0, int(off[-1])),
                                                   mask=pa.array(r.random(n) < 0.1))})


def test_2_3_null_fixed_size_lists_of_two_field_structs_equal_the_written_table(tmp_path):
    """Null fixed-size lists of structs of two fields in a list: pylance 14.0.2 writes them and
    its reader refuses them ("Structural sibling fields have incompatible validity"); lance_duck
    reads the table written (whole, selected rows, a range)."""
    import lance

    import lance_duck
    t = _two_field_structs_in_null_fixed_size_lists()
    path = str(tmp_path / "nullfsl")
    write(path, t, "2.3")
    with pytest.raises(Exception, match="incompatible validity"):
        lance.dataset(path).to_table()
    ds = lance_duck.dataset(path)
    assert ds.to_table().equals(t)
    idx = np.array([0, 3, 4, 5, 700, 1499], np.int64)
    assert ds.take(idx).equals(t.take(idx))
    assert ds.to_table(offset=11, limit=1400).equals(t.slice(11, 1400))


def test_2_2_fixed_size_lists_of_structs_in_lists_are_refused_by_name(tmp_path):
    """At 2.2 pylance 14.0.2's writer panics on list<fixed_size_list<struct>>, and writes a
    list<fixed_size_list<struct<list>>> its reader cannot read: lance_duck refuses the field by name
    and reads the other columns."""
    import lance

    import lance_duck
    t = T.fsl_structs_nested(0.0, n=300)
    with pytest.raises(BaseException):   # pyo3 PanicException
        write(str(tmp_path / "panics"), t.select(["l_fsl_st"]), "2.2")
    path = str(tmp_path / "unreadable")
    write(path, t.select(["l_fsl_st_l", "id"]), "2.2")
    with pytest.raises(Exception):
        lance.dataset(path).to_table(columns=["l_fsl_st_l"])
    ds = lance_duck.dataset(path)
    assert ds.to_table(columns=["id"]).column(0).equals(t.column("id"))
    with pytest.raises(UnsupportedFeatureError, match=r"\['l_fsl_st_l'\].*fixed-size list of structs "
                                                      r"inside a list.*2\.2"):
        ds.to_table(columns=["l_fsl_st_l"])


@pytest.mark.parametrize("version", ["2.2", "2.3"])
def test_struct_holding_a_fixed_size_list_of_structs_equals_the_written_table(tmp_path, version):
    """struct<f: fixed_size_list<struct<a, s>>, x>, nulls at every level: pylance 14.0.2 writes it and
    its reader fails ("its children have differing lengths"); lance_duck reads the table written."""
    import lance

    import lance_duck
    r = np.random.default_rng(19)
    k = T._nested_tools(r, 0.3)
    n = 1000
    t = pa.table({"c": k.st(n, f=lambda j: k.fsl(lambda i: k.st(i, a=k.ints, s=k.strs), 2, j, 0.3), x=k.ints)})
    path = str(tmp_path / "st_fsl")
    write(path, t, version)
    with pytest.raises(Exception, match="differing lengths"):
        lance.dataset(path).to_table()
    ds = lance_duck.dataset(path)
    assert ds.to_table().equals(t)
    idx = np.array([0, 1, 500, 998, 999], np.int64)
    assert ds.take(idx).equals(t.take(idx))


@pytest.mark.parametrize("version", ["2.2", "2.3"])
def test_pylance_refuses_fixed_size_lists_of_fixed_size_lists_of_structs(tmp_path, version):
    """The one fixed-size-list shape pylance 14.0.2 does not write at all (so none to read)."""
    st = pa.StructArray.from_arrays([pa.array(np.arange(12, dtype=np.int32))], names=["a"])
    col = pa.FixedSizeListArray.from_arrays(pa.FixedSizeListArray.from_arrays(st, 2), 3)
    with pytest.raises(OSError, match="Unsupported data type: FixedSizeList"):
        write(str(tmp_path / "ff"), pa.table({"c": col}), version)
