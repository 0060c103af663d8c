"""Whole mini-block pages with equal encodings are decoded as one batch (column.LeafPlan.decode)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from .conftest import assert_same
from lance_duck.errors import CorruptFileError
from lance_duck.file.v2_1 import column as column_mod
from lance_duck.file.v2_1.column import LeafPlan
from lance_duck.trace import decode_trace


_WORDS = np.array([f"word-{i:03d}" for i in range(300)])


def _batches(n_batches: int = 6, k: int = 65_536, seed: int = 3) -> list[pa.RecordBatch]:
    r = np.random.default_rng(seed)
    out = []
    for b in range(n_batches):
        lens = r.integers(0, 7, k)
        offs = np.concatenate(([0], np.cumsum(lens))).astype(np.int32)
        nulls = b % 3 != 1   # batches without nulls give pages with other layers: batches break there
        items = pa.array(r.integers(0, 1 << 16, int(offs[-1])).astype(np.int32),
                         mask=(r.random(int(offs[-1])) < 0.05) if nulls else None)
        out.append(pa.record_batch({
            "bp": pa.array(r.integers(0, 1 << 20, k)),
            "f64": pa.array(r.random(k)),
            "lst": pa.ListArray.from_arrays(pa.array(offs), items,
                                            mask=pa.array(r.random(k) < 0.05) if nulls else None),
            "ni": pa.array(r.integers(0, 1000, k).astype(np.int32),
                           mask=np.ones(k, bool) if b % 3 == 1 else r.random(k) < 0.1),
            # strings from a few hundred words: a dictionary per page (2.1 / 2.2)
            "dstr": pa.array(_WORDS[r.integers(0, 300, k)], mask=r.random(k) < 0.05),
            "lstr": pa.ListArray.from_arrays(
                pa.array(offs), pa.array(_WORDS[r.integers(0, 300, int(offs[-1]))],
                                         mask=r.random(int(offs[-1])) < 0.05),
                mask=pa.array(r.random(k) < 0.05)),
        }))
    return out


@pytest.fixture(scope="module")
def batch_fx(tmp_path_factory):
    """(version, column) -> Fixture of a single-column dataset (several pages per column)."""
    import lance
    from .conftest import Fixture
    out = {}
    data = _batches()
    root = tmp_path_factory.mktemp("batch")
    for version in ("2.1", "2.2", "2.3"):
        for name in data[0].schema.names:
            path = str(root / f"{name}_{version.replace('.', '_')}")
            cols = [b.select([name]) for b in data]
            # default writer settings (as bench/decode.py): the column gets several pages
            lance.write_dataset(pa.RecordBatchReader.from_batches(cols[0].schema, cols), path,
                                data_storage_version=version)
            out[version, name] = Fixture(path)
    return out


def _leaf_plan(reader, field):
    leaf = list(field.walk())[-1]
    col = reader.container.column(reader.ref.column_of(leaf.id))
    return col, LeafPlan(col, 0, "t", leaf.arrow_type, None, reader.minor, None)


def _group_sizes(trace) -> list[int]:
    """Pages in each group of pages decoded together (one batch when more than one)."""
    return [last - first + 1 for first, last in trace.values("path:page-group")]


@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3"])
def test_batched_pages_equal_pylance(batch_fx, version):
    for name in ("bp", "f64", "lst", "ni", "dstr", "lstr"):
        fx = batch_fx[version, name]
        reader = fx.reader()
        (f,) = fx.fields()
        with decode_trace() as trace:
            assert_same(reader.read_field(f), fx.expected.column(f.name), f.name)
        if name in ("bp", "f64"):  # single-width bit-packed chunks take the contiguous-copy path
            assert "path:bitpack:one-width" in trace.names(), name
        if name == "lstr" and version != "2.3":  # pages with a dictionary each, taken at once
            assert max(_group_sizes(trace)) >= 3 and "concatenated" in trace.values("path:dictionary-batch")
        if name == "lst" and version != "2.3":  # list pages are small: this column always spans many pages
            # (2.3 stores these lists' nulls by position: sparse pages decode page by page)
            sizes = _group_sizes(trace)
            assert max(sizes) >= 3, (f.name, sizes)  # really decoded several pages at once
        # selections still go page by page and agree too
        sel = np.sort(np.random.default_rng(5).choice(fx.ds.count_rows(), 300, replace=False)).astype(np.int64)
        assert_same(reader.read_field(f, sel), fx.ds.take(sel, columns=[f.name]).column(0), f"take {f.name}")


def test_batch_breaks_where_page_encodings_change(batch_fx):
    fx = batch_fx["2.2", "lst"]
    reader = fx.reader()
    field = fx.snap.schema.field("lst")
    col, plan = _leaf_plan(reader, field)
    plan.set_meta(reader.file.read_ranges(plan.meta_ranges()))
    data = reader.file.read_ranges(plan.data_ranges())
    with decode_trace() as trace:
        leaf = plan.decode(data)
    assert leaf.num_rows == fx.ds.count_rows()
    groups = [range(first, last + 1) for first, last in trace.values("path:page-group")]
    covered = sorted(j for g in groups for j in g)
    assert len(groups) >= 2 and covered == list(range(len(plan.pages)))
    assert_same(reader.read_field(field), fx.expected.column("lst"), "lst")


@pytest.mark.parametrize("name", ["lst"])
def test_batched_page_with_wrong_declared_row_count_raises_corrupt(batch_fx, name):
    fx = batch_fx["2.2", name]
    reader = fx.reader()
    _, plan = _leaf_plan(reader, fx.snap.schema.field(name))
    plan.set_meta(reader.file.read_ranges(plan.meta_ranges()))
    data = reader.file.read_ranges(plan.data_ranges())
    assert len(plan.pages) >= 3
    plan.pages[1][0].rows += 1       # the page now claims one row more than its chunks hold
    with pytest.raises(CorruptFileError, match="page 1.*declares"):
        plan.decode(data)


def test_batches_are_capped_in_items_and_still_equal_pylance(batch_fx, monkeypatch):
    fx = batch_fx["2.2", "lst"]
    reader = fx.reader()
    (f,) = fx.fields()
    _, plan = _leaf_plan(reader, f)
    per_page = max(int(p.lay.num_items) for p, _ in plan.pages)
    monkeypatch.setattr(column_mod, "MAX_BATCH_ITEMS", 2 * per_page)
    with decode_trace() as trace:
        assert_same(reader.read_field(f), fx.expected.column("lst"), "lst")
    items = [int(p.lay.num_items) for p, _ in plan.pages]
    sizes = [sum(items[first:last + 1]) for first, last in trace.values("path:page-group") if last > first]
    assert len(sizes) >= 2 and max(sizes) <= 2 * per_page


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_batched_dictionary_pages_check_each_page_index_against_its_own_dictionary(batch_fx, version):
    fx = batch_fx[version, "lstr"]
    reader = fx.reader()
    _, plan = _leaf_plan(reader, fx.snap.schema.field("lstr"))
    plan.set_meta(reader.file.read_ranges(plan.meta_ranges()))
    data = reader.file.read_ranges(plan.data_ranges())
    assert len(plan.pages) >= 3 and all(p.has_dict for p, _ in plan.pages)
    page = plan.pages[2][0]
    items = page._dictionary_items()
    # page 2's dictionary loses its last items: the other pages' dictionaries must not cover for it
    page.__dict__["_dict_items"] = {page.ctx.arrow_type: items.slice(0, len(items) // 2)}
    with pytest.raises(CorruptFileError, match="page 2.*dictionary index"):
        plan.decode(data)


def test_leaves_of_a_many_row_read_decode_side_by_side_and_equal_pylance(tmp_path):
    import lance
    from .conftest import Fixture
    n = column_mod.PARALLEL_PAGE_ROWS + 5000
    r = np.random.default_rng(11)
    lens = r.integers(0, 4, n)
    offs = np.concatenate(([0], np.cumsum(lens))).astype(np.int32)
    col = pa.StructArray.from_arrays(
        [pa.array(r.integers(0, 1 << 20, n).astype(np.int32), mask=r.random(n) < 0.1),
         pa.array(_WORDS[r.integers(0, 300, n)]),
         pa.ListArray.from_arrays(pa.array(offs), pa.array(r.random(int(offs[-1]))))],
        names=["i", "s", "l"], mask=pa.array(r.random(n) < 0.05))
    lance.write_dataset(pa.table({"st": col, "x": pa.array(r.random(n))}), str(tmp_path / "t"),
                        data_storage_version="2.2")
    fx = Fixture(str(tmp_path / "t"))
    reader = fx.reader()
    fields = fx.fields()
    with decode_trace() as trace:
        got = reader.read_fields(fields)
    assert trace.values("path:parallel-leaves") == [4]   # st.i, st.s, st.l, x
    for f, a in zip(fields, got):
        assert_same(a, fx.expected.column(f.name), f.name)
    sel = np.arange(100, 1100, dtype=np.int64)      # a short read decodes its leaves in turn
    with decode_trace() as trace:
        got = reader.read_fields(fields, sel)
    assert not trace.values("path:parallel-leaves")
    for f, a in zip(fields, got):
        assert_same(a, fx.ds.take(sel, columns=[f.name]).column(0), f"take {f.name}")
