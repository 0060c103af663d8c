"""``count_rows(filter)`` and ``lance_duck.sql``'s ``SELECT count(*) ... WHERE`` answered from exact
indices (BTREE, BITMAP) alone when the filter is ANDs and ORs of indexed columns' predicates -- an
OR across two or more indexed columns, an AND of such ORs -- counting the union of the indices'
rows minus deletions with no data page read; fragments outside an index's coverage are counted
by scanning them (only them).

Oracles: pylance's count with its indices off (with them, on stable-row-id tables, its BITMAP
path also counts rows an update moved away: pinned below) and lance_duck's unindexed count, at
every version of
histories that make coverage partial (append after the indices, deletes, an update moving rows,
``optimize_indices`` delta segments, another append, compaction), with and without stable row
ids, in files 2.1 and 2.2.
"""
from __future__ import annotations

import warnings

import duckdb
import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_duck
from lance_duck.index import index_segments
from lance_duck.predicate.bool_tree import AllOf, EitherOf, tree_from_expression

from .conftest import batch
from .test_index_scan import data_bytes  # noqa: F401  (fixture)

FIRST_INDEXED = 4          # version 1 write, 2-4 the three indices


def _rows(start: int, n: int) -> pa.Table:
    return batch(start, n).select(["id", "grp", "cat", "amount"])


def _make(path: str, version: str, stable: bool) -> str:
    """1 write, 2-4 BTREE id, BITMAP cat, BTREE grp, 5 append, 6 delete, 7 update (rows move),
    8 optimize_indices (delta segments), 9 append, 10 compaction."""
    warnings.simplefilter("ignore", DeprecationWarning)
    ds = lance.write_dataset(_rows(0, 6000), path, max_rows_per_file=1500, enable_stable_row_ids=stable,
                             data_storage_version=version)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    ds.create_scalar_index("grp", "BTREE")
    ds.insert(_rows(6000, 1500))
    ds.delete("id % 13 = 5 OR (id >= 3000 AND id < 3100)")
    ds.update({"cat": "'moved'", "grp": "7"}, "id % 97 = 3")
    ds.optimize.optimize_indices(num_indices_to_merge=0)
    lance.dataset(path).insert(_rows(7500, 900))
    lance.dataset(path).optimize.compact_files(target_rows_per_fragment=4000)
    return path


@pytest.fixture(scope="module", params=[("2.1", False), ("2.1", True), ("2.2", False), ("2.2", True)],
                ids=["2.1-plain", "2.1-stable", "2.2-plain", "2.2-stable"])
def history(request, tmp_path_factory) -> str:
    version, stable = request.param
    return _make(str(tmp_path_factory.mktemp("count_or") / "t.lance"), version, stable)


def _pylance_count(path: str, version: int, sql: str) -> int:
    """pylance's count with its indices off; on tables without stable row ids, checked against its
    indexed ``count_rows(filter)``."""
    ds = lance.dataset(path, version=version)
    n = ds.scanner(filter=sql, use_scalar_index=False).count_rows()
    if not ds.has_stable_row_ids:
        assert ds.count_rows(sql) == n, (version, sql)
    return n


def _versions(path: str) -> list[int]:
    return [v["version"] for v in lance.dataset(path).versions()][FIRST_INDEXED - 1:]


ORS = [
    ("id < 10 OR cat = 'c3'", (pc.field("id") < 10) | (pc.field("cat") == "c3")),
    ("id IN (5, 18, 1234, 6100, 7777) OR cat IS NULL",
     pc.field("id").isin([5, 18, 1234, 6100, 7777]) | pc.field("cat").is_null()),
    ("(id < 500 OR cat = 'c2') AND (grp = 7 OR id > 5900)",
     ((pc.field("id") < 500) | (pc.field("cat") == "c2")) & ((pc.field("grp") == pa.scalar(7, pa.int32())) | (pc.field("id") > 5900))),
    ("id BETWEEN 100 AND 200 OR grp IS NULL OR cat = 'moved'",
     ((pc.field("id") >= 100) & (pc.field("id") <= 200)) | pc.field("grp").is_null()
     | (pc.field("cat") == "moved")),
    ("(id < 100 AND cat = 'c1') OR grp = 3",
     ((pc.field("id") < 100) & (pc.field("cat") == "c1")) | (pc.field("grp") == pa.scalar(3, pa.int32()))),
    ("grp IN (1, 2) OR cat = 'c6' OR id = 4321",
     pc.field("grp").isin(pa.array([1, 2], pa.int32())) | (pc.field("cat") == "c6") | (pc.field("id") == 4321)),
]


@pytest.mark.parametrize("sql, expr", ORS, ids=[s for s, _ in ORS])
def test_or_counts_equal_pylance_and_the_unindexed_count_at_every_version(history, sql, expr):
    for v in _versions(history):
        ours = lance_duck.dataset(history, version=v)
        want = _pylance_count(history, v, sql)
        assert ours.count_rows(filter=sql) == want, (v, sql)
        assert ours.count_rows(filter=expr) == want, (v, sql)
        assert ours.count_rows(filter=sql, use_scalar_index=False) == want, (v, sql)
        assert ours.to_table(filter=sql, use_scalar_index=False).num_rows == want, (v, sql)


def _covered(path: str, version: int) -> bool:
    """Every fragment of ``version`` is covered by each of the three indices."""
    snap = lance_duck.dataset(path, version=version)._snapshot
    frags = {f.id for f in snap.fragments}
    segs = index_segments(snap)
    return all(frags <= set().union(*(s.fragment_ids for s in segs if s.name == name))
               for name in ("id_idx", "cat_idx", "grp_idx"))


@pytest.mark.parametrize("sql, expr", ORS, ids=[s for s, _ in ORS])
def test_an_or_across_indexed_columns_is_counted_with_no_data_byte_read(history, data_bytes, sql, expr):  # noqa: F811
    answered = []
    for v in _versions(history):
        if not _covered(history, v):
            continue
        want = _pylance_count(history, v, sql)
        ours = lance_duck.dataset(history, version=v)
        data_bytes["bytes"] = 0
        assert ours.count_rows(filter=sql) == want, (v, sql)
        assert ours.count_rows(filter=expr) == want, (v, sql)
        assert data_bytes["bytes"] == 0, (v, sql)
        assert ours.count_rows(filter=sql, use_scalar_index=False) == want
        assert data_bytes["bytes"] > 0, (v, sql)
        answered.append(v)
    assert FIRST_INDEXED in answered


def test_fragments_outside_the_coverage_are_the_only_ones_scanned(history, data_bytes):  # noqa: F811
    sql = "id < 10 OR cat = 'c3'"
    v = FIRST_INDEXED + 1                            # the append after the indices: one new fragment
    ours = lance_duck.dataset(history, version=v)
    want = _pylance_count(history, v, sql)
    data_bytes["bytes"] = 0
    assert ours.count_rows(filter=sql, use_scalar_index=False) == want
    unindexed = data_bytes["bytes"]
    data_bytes["bytes"] = 0
    assert ours.count_rows(filter=sql) == want
    assert 0 < data_bytes["bytes"] < unindexed / 2, (data_bytes["bytes"], unindexed)


@pytest.mark.parametrize("sql", ["id < 10 OR amount < 3", "id < 10 OR cat <> 'c3'", "id < 10 OR id + 1 = 5",
                                 "(id < 10 OR cat = 'c3') AND amount > 100"])
def test_an_or_with_a_part_no_index_answers_is_counted_by_reading_data(history, data_bytes, sql):  # noqa: F811
    v = FIRST_INDEXED
    data_bytes["bytes"] = 0
    assert lance_duck.dataset(history, version=v).count_rows(filter=sql) == _pylance_count(history, v, sql)
    assert data_bytes["bytes"] > 0


def _plain_or(a: pc.Expression, b: pc.Expression) -> pc.Expression:
    return pc.Expression._call("or", [a, b])


def test_a_plain_or_is_not_read_as_kleene():
    """Arrow's plain ``or`` is null when an operand is null even if another is true: no tree is made
    of it."""
    schema = pa.schema([("id", pa.int64()), ("cat", pa.string())])
    assert tree_from_expression(_plain_or(pc.field("id") < 3, pc.field("cat").is_null()), schema) is None
    assert tree_from_expression(pc.field("id") < 3, schema) is not None
    tree = tree_from_expression(((pc.field("id") < 3) | (pc.field("cat") == "a")) & (pc.field("id") > 1), schema)
    assert isinstance(tree, AllOf) and isinstance(tree.parts[0], EitherOf)


def test_a_plain_or_with_a_null_operand_is_counted_as_arrow_evaluates_it(tmp_path):
    """A row where one operand of a plain OR is null and the other true does not pass (it would
    under Kleene's OR, which the indices' union counts)."""
    path = str(tmp_path / "t.lance")
    t = pa.table({"id": pa.array(range(2000), pa.int64()),
                  "cat": pa.array([None if i % 4 == 0 else f"c{i % 5}" for i in range(2000)])})
    lance.write_dataset(t, path).create_scalar_index("cat", "BITMAP")
    lance.dataset(path).create_scalar_index("id", "BTREE")
    expr = _plain_or(pc.field("cat") == "c1", pc.field("id") < 8)
    ds = lance_duck.dataset(path)
    plain = pc.or_(pc.equal(t["cat"], "c1"), pc.less(t["id"], 8))
    want = pc.sum(pc.fill_null(plain, False).cast(pa.int64())).as_py()
    kleene = ds.count_rows(filter=(pc.field("cat") == "c1") | (pc.field("id") < 8))
    assert kleene == want + 2                       # ids 0 and 4: null cat, id < 8
    assert ds.count_rows(filter=expr) == want == ds.count_rows(filter=expr, use_scalar_index=False)


@pytest.mark.parametrize("where", ["id < 10 OR cat = 'c3'", "(id IN (5, 18, 1234) OR cat IS NULL) AND grp = 7",
                                   "t.id = 77 OR t.cat = 'moved' OR t.grp IS NULL"])
def test_sql_count_where_with_an_or_is_answered_from_indices(history, data_bytes, where):  # noqa: F811
    con = duckdb.connect()
    for v in (FIRST_INDEXED, max(_versions(history))):
        oracle = duckdb.connect()
        oracle.register("t", lance.dataset(history, version=v).to_table())
        want = oracle.execute(f"SELECT count(*) FROM t WHERE {where}").fetchall()
        data_bytes["bytes"] = 0
        got = lance_duck.sql(f"SELECT count(*) FROM '{history}' AT (VERSION => {v}) t WHERE {where}", con).fetchall()
        assert got == want, (v, where)
        if _covered(history, v):
            assert data_bytes["bytes"] == 0, (v, where)
