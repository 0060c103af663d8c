"""lance_versions / lance_tags / lance_indices in lance_duck.sql: what pylance's versions(), tags.list() and
describe_indices() return, as rows to join with the data."""
from __future__ import annotations

from datetime import timezone

import pyarrow as pa
import pytest

import lance
import lance_duck


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("catalog") / "ix.lance")
    t = pa.table({"id": list(range(300)), "cat": [f"c{i % 7}" for i in range(300)]})
    lance.write_dataset(t, path, max_rows_per_file=100)
    ds = lance.dataset(path)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    lance.write_dataset(t, path, mode="append")
    ds = lance.dataset(path)
    ds.tags.create("indexed", 3)
    return path


def test_lance_versions_equals_pylance_versions(history):
    got = lance_duck.sql(f"select * from lance_versions('{history}') order by version").arrow()
    got = got.read_all() if hasattr(got, "read_all") else got
    want = lance.dataset(history).versions()
    assert got["version"].to_pylist() == [v["version"] for v in want]
    assert got["timestamp"].to_pylist() == [v["timestamp"].astimezone(timezone.utc) for v in want]
    assert [dict(m) for m in got["metadata"].to_pylist()] == [v["metadata"] for v in want]
    tags = {n: t["version"] for n, t in lance.dataset(history).tags.list().items()}
    assert got["tags"].to_pylist() == [sorted(n for n, v in tags.items() if v == w["version"]) for w in want]


def test_lance_tags_equals_pylance_tags(history, indexed):
    for path in (history, indexed):
        rows = lance_duck.sql(f"select tag, version, branch, created_at, updated_at, manifest_size "
                              f"from lance_tags('{path}') order by tag").fetchall()
        want = sorted(lance.dataset(path).tags.list().items())
        assert rows == [(n, t["version"], t["branch"], t["created_at"], t["updated_at"], t["manifest_size"])
                        for n, t in want]


def test_lance_indices_equals_pylance_describe_indices_at_each_version(indexed):
    for version in (1, 2, 3, 4, "indexed"):
        rows = lance_duck.sql(f"select name, type_url, fields, field_names, num_rows_indexed, num_segments, "
                              f"total_size_bytes from lance_indices('{indexed}', version => "
                              f"{version if isinstance(version, int) else repr(version)}) order by name").fetchall()
        want = sorted(lance.dataset(indexed, version=version).describe_indices(), key=lambda d: d.name)
        assert rows == [(d.name, d.type_url, list(d.fields), list(d.field_names), d.num_rows_indexed,
                         len(d.segments), d.total_size_bytes) for d in want]
    types = lance_duck.sql(f"select list(index_type order by name) from lance_indices('{indexed}')").fetchall()
    assert types == [([d.index_type for d in sorted(lance.dataset(indexed).describe_indices(), key=lambda d: d.name)],)]


def test_history_joins_with_the_data_of_each_version(history):
    got = lance_duck.sql(f"""
        select v.version, v.metadata['total_rows'] as total, c.n
        from lance_versions('{history}') v
        join (select 3 as version, count(*) as n from '{history}' AT (VERSION => 3)) c using (version)""").fetchall()
    assert got == [(3, str(lance.dataset(history, version=3).count_rows()), lance.dataset(history, version=3).count_rows())]


@pytest.mark.parametrize("query,match", [
    ("select * from lance_versions()", "uri"),
    ("select * from lance_tags('{p}', version => 2)", "version"),
    ("select * from lance_indices('{p}', nope => 1)", "nope"),
    ("select * from lance_versions('{p}', 3)", "named"),
])
def test_bad_arguments_are_refused_by_name(history, query, match):
    with pytest.raises(lance_duck.InvalidArgumentError, match=match):
        lance_duck.sql(query.format(p=history))


def test_a_missing_table_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        lance_duck.sql(f"select * from lance_versions('{tmp_path / 'none.lance'}')")
