"""Every version of every history reads exactly like pylance: schema, values, row order, row ids."""
from __future__ import annotations

import lance
import pyarrow as pa
import pyarrow.compute as pc

import lance_duck


def _assert_tables_equal(got: pa.Table, exp: pa.Table, where: str) -> None:
    assert got.schema.equals(exp.schema, check_metadata=False), f"{where}: {got.schema} != {exp.schema}"
    assert got.num_rows == exp.num_rows, where
    for name in exp.column_names:
        g, e = got[name].combine_chunks(), exp[name].combine_chunks()
        assert g.equals(e), f"{where}: column {name} differs"


def _all_refs(path):
    ds = lance.dataset(path)
    refs = [(v["version"], None) for v in ds.versions()]
    for branch in ds.branches.list():
        br = ds.checkout_version((branch, None))
        refs += [(v["version"], branch) for v in br.versions() if v["version"] >= min(br.versions()[0]["version"], br.version)]
    return refs


def test_every_version_and_branch_reads_like_pylance(history):
    for version, branch in _all_refs(history):
        ref = (branch, version) if branch else version
        exp = lance.dataset(history).checkout_version(ref).to_table(with_row_id=True)
        ours = lance_duck.dataset(history, version=version, branch=branch)
        got = ours.to_table(with_row_id=True)
        _assert_tables_equal(got, exp, f"{history} {ref}")
        assert ours.count_rows() == exp.num_rows


def test_every_version_filtered_scan_reads_like_pylance(history):
    flt = "id >= 100 and id < 9000 and id % 3 = 1"
    for version, branch in _all_refs(history):
        ref = (branch, version) if branch else version
        exp = lance.dataset(history).checkout_version(ref).to_table(filter=flt)
        got = lance_duck.dataset(history, version=version, branch=branch).to_table(filter=flt)
        _assert_tables_equal(got, exp, f"{history} {ref} filter")


def test_tables_mixing_file_formats_read_like_pylance(mixed_formats):
    for v in lance.dataset(mixed_formats).versions():
        exp = lance.dataset(mixed_formats, version=v["version"]).to_table(with_row_id=True)
        got = lance_duck.dataset(mixed_formats, version=v["version"]).to_table(with_row_id=True)
        _assert_tables_equal(got, exp, f"mixed v{v['version']}")


def test_duckdb_over_mixed_formats_matches_duckdb_over_pylance(mixed_formats):
    import duckdb

    ds = lance_duck.dataset(mixed_formats)
    ref = lance.dataset(mixed_formats).to_table()
    q = ("select count(*), sum(id), count(name), min(ts), max(s.a) from {t} "
         "where id between 500 and 5000 and (name like 'name-1%' or name is null)")
    con = duckdb.connect()
    con.register("ours", ds)
    con.register("ref", ref)
    def run(query):
        out = con.sql(query).arrow()
        return out.read_all() if hasattr(out, "read_all") else out

    got, exp = run(q.format(t="ours")), run(q.format(t="ref"))
    assert got.equals(exp) and exp.column(0)[0].as_py() > 0
    assert pc.sum(ref["id"]).as_py() == con.sql("select sum(id) from ours").fetchall()[0][0]
