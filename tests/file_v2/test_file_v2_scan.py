"""Full scans of every column of pylance-written 2.1 / 2.2 / 2.3 files equal pylance's to_table()
(2.3: or are refused by name, as ``REFUSED_23`` lists)."""
from __future__ import annotations

import pytest

from lance_duck.errors import UnsupportedFeatureError

from .conftest import SPECS, assert_same, refused

CASES = [(name, v) for name, (_, versions) in SPECS.items() for v in versions]


@pytest.mark.parametrize("name,version", CASES, ids=[f"{n}-{v}" for n, v in CASES])
def test_every_column_full_scan_equals_pylance(v2_datasets, name, version):
    fx = v2_datasets(name, version)
    reader = fx.reader()
    skip = refused(name, version)
    failures = []
    for f in fx.fields():
        if f.name in skip:
            with pytest.raises(UnsupportedFeatureError, match=r"\.lance column \d+ page \d+"):
                reader.read_field(f)
            continue
        try:
            assert_same(reader.read_field(f), fx.expected.column(f.name), f"{name} {version} {f.name}")
        except Exception as exc:  # collect every column's failure in one report
            failures.append(f"{f.name}: {type(exc).__name__}: {exc}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
def test_read_fields_batches_all_columns_in_two_fetch_rounds(v2_datasets, version):
    fx = v2_datasets("prim_p02", version)
    reader = fx.reader()
    before = reader.file.requests
    arrays = reader.read_fields(fx.fields())
    assert reader.file.requests - before <= 2
    for f, a in zip(fx.fields(), arrays):
        assert_same(a, fx.expected.column(f.name), f.name)
