"""pyarrow functions handed a lance_duck dataset, fragment or scanner.

Each call runs in a process of its own (a segfault there fails the test instead of killing
pytest). It either returns data -- written to an Arrow IPC file and compared here with
pylance's read of the same table -- or raises a clear error, whose type and message are
checked. The DuckDB tests run in-process: DuckDB must keep using ``scanner()`` (projection
and filter pushdown), not the Arrow C stream export.
"""
from __future__ import annotations

import json
import os
import textwrap

import lance
import pyarrow as pa
import pyarrow.acero
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pytest

import lance_duck
from lance_duck.scan import LanceDataset
from lance_duck.predicate.compiled import CompiledFilter

from ..cli_runner import run_python_code
from .conftest import assert_tables_equal, write_history

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(lance_duck.__file__)))
# an as-of join partner for the simple table (no column named like its non-key columns)
ASOF_OTHER = ('pa.table({"t": pa.array(range(0, 2000, 6), pa.int64()), '
              '"v": [f"v{i % 17}" for i in range(0, 1000, 3)], "w": pa.array(range(334), pa.int64())})')

RUNNER = """
import json, sys, traceback
import pyarrow as pa, pyarrow.acero as ac, pyarrow.compute as pc, pyarrow.dataset as pads
import pyarrow.parquet as pq
import lance_duck

path, simple_path, out_dir = sys.argv[1:4]
ds = lance_duck.dataset(path)
frag = ds.get_fragments()[1]
simple = lance_duck.dataset(simple_path)
other = pads.dataset(pa.table({"id": pa.array([3, 5, 600], pa.int64()), "w": ["a", "b", "c"]}))
asof_other = pads.dataset(%s)
try:
%s
except Exception as e:
    print(json.dumps({"error": type(e).__name__, "message": str(e)}))
else:
    with pa.OSFile(out_dir + "/result.arrow", "wb") as f, pa.ipc.new_file(f, result.schema) as w:
        w.write_table(result)
    print(json.dumps({"rows": result.num_rows}))
"""


# What RUNNER imports (and lance_duck's modules): each case's process is forked from a Python that
# imported only these.
RUNNER_MODULES = ("pyarrow", "pyarrow.acero", "pyarrow.compute", "pyarrow.dataset", "pyarrow.parquet",
                  "lance_duck.*")


def run_case(code: str, path: str, simple_path: str, out_dir) -> dict:
    """Run ``code`` (which sets ``result`` to a Table, or raises) in a process of its own (forked from a
    warm one: tests/cli_runner.py)."""
    env = dict(os.environ, PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    script = RUNNER % (ASOF_OTHER, textwrap.indent(textwrap.dedent(code).strip(), "    "))
    r = run_python_code(script, path, simple_path, str(out_dir), preload=RUNNER_MODULES, timeout=300, env=env)
    assert r.returncode == 0, f"the interpreter died (exit {r.returncode}):\n{r.stderr[-3000:]}"
    outcome = json.loads(r.stdout.strip().splitlines()[-1])
    if "rows" in outcome:
        outcome["table"] = pa.ipc.open_file(str(out_dir / "result.arrow")).read_all()
    return outcome


@pytest.fixture(scope="module")
def paths(tmp_path_factory) -> tuple[str, str]:
    """The rich table (4 fragments, deletions, every column kind) and a join-friendly one."""
    rich = write_history(str(tmp_path_factory.mktemp("interop") / "t.lance"), "2.2")
    simple = str(tmp_path_factory.mktemp("interop_simple") / "s.lance")
    t = pa.table({"id": pa.array(range(1000), pa.int64()), "v": [f"v{i % 17}" for i in range(1000)],
                  "t": pa.array(range(0, 2000, 2), pa.int64())})
    lance.write_dataset(t, simple, max_rows_per_file=300)
    lance.dataset(simple).delete("id % 10 = 3")
    return rich, simple


def _rich(paths):
    return lance.dataset(paths[0])


def _simple(paths):
    return lance.dataset(paths[1])


# (case id, code run against lance_duck, pylance reference computed here)
WORKING = [
    ("write_dataset_dataset_parquet",
     ("pads.write_dataset(ds, out_dir + '/w', format='parquet', preserve_order=True)\n"
     "result = pads.dataset(out_dir + '/w', format='parquet').to_table()"),
     lambda p: _rich(p).to_table()),
    ("write_dataset_dataset_ipc",
     ("pads.write_dataset(ds, out_dir + '/w', format='ipc', preserve_order=True)\n"
     "result = pads.dataset(out_dir + '/w', format='ipc').to_table()"),
     lambda p: _rich(p).to_table()),
    ("write_dataset_scanner_with_columns_and_filter",
     ("sc = ds.scanner(columns=['id', 'name', 's'], filter='id > 700 AND x IS NOT NULL')\n"
     "pads.write_dataset(sc, out_dir + '/w', format='parquet', preserve_order=True)\n"
     "result = pads.dataset(out_dir + '/w', format='parquet').to_table()"),
     lambda p: _rich(p).to_table(columns=["id", "name", "s"], filter="id > 700 AND x IS NOT NULL")),
    ("write_dataset_filtered_dataset",
     ("pads.write_dataset(ds.filter(pc.field('id') < 300), out_dir + '/w', format='parquet',\n"
     "                   preserve_order=True)\n"
     "result = pads.dataset(out_dir + '/w', format='parquet').to_table()"),
     lambda p: _rich(p).to_table(filter="id < 300")),
    ("parquet_write_to_dataset",
     ("pq.write_to_dataset(ds.scanner(filter='id < 1200'), out_dir + '/w')  # no preserve_order\n"
     "result = pads.dataset(out_dir + '/w', format='parquet').to_table().sort_by('id')"),
     lambda p: _rich(p).to_table(filter="id < 1200").sort_by("id")),
    ("write_dataset_fragment",
     ("pads.write_dataset(frag, out_dir + '/w', format='parquet', preserve_order=True)\n"
     "result = pads.dataset(out_dir + '/w', format='parquet').to_table()"),
     lambda p: _rich(p).get_fragments()[1].to_table()),
    ("pa_table_of_dataset", "result = pa.table(ds)", lambda p: _rich(p).to_table()),
    ("pa_table_of_scanner", "result = pa.table(ds.scanner(columns=['ls', 'id'], filter='id >= 1990'))",
     lambda p: _rich(p).to_table(columns=["ls", "id"], filter="id >= 1990")),
    ("pa_table_of_fragment", "result = pa.table(frag)", lambda p: _rich(p).get_fragments()[1].to_table()),
    ("record_batch_reader_from_stream", "result = pa.RecordBatchReader.from_stream(ds).read_all()",
     lambda p: _rich(p).to_table()),
    ("record_batch_reader_from_stream_with_requested_schema",
     ("want = pa.schema([('id', pa.int64()), ('u', pa.int64())])\n"
     "result = pa.RecordBatchReader.from_stream(ds.scanner(columns=['id', 'u']), schema=want).read_all()"),
     lambda p: _rich(p).to_table(columns=["id", "u"]).cast(pa.schema([("id", pa.int64()), ("u", pa.int64())]))),
    ("write_dataset_of_older_version",
     ("pads.write_dataset(lance_duck.dataset(path, version=2), out_dir + '/w', format='parquet',\n"
     "                   preserve_order=True)\n"
     "result = pads.dataset(out_dir + '/w', format='parquet').to_table()"),
     lambda p: lance.dataset(p[0], version=2).to_table()),
    ("scanner_from_batches_of_dataset",
     "result = pads.Scanner.from_batches(ds, columns=['id', 'd'], filter=pc.field('id') < 30).to_table()",
     lambda p: _rich(p).to_table(columns=["id", "d"], filter="id < 30")),
    *([("acero_record_batch_reader_source",
     ("decl = ac.Declaration('record_batch_reader_source',\n"
     "                      ac.RecordBatchReaderSourceNodeOptions(ds.scanner(columns=['id', 'u']).to_reader()))\n"
     "result = decl.to_table(use_threads=False)"),
     lambda p: _rich(p).to_table(columns=["id", "u"]))]
      # pyarrow >= 26 only (the oldest Python's tests run on pyarrow 25)
      if hasattr(pyarrow.acero, "RecordBatchReaderSourceNodeOptions") else []),
    ("lance_scanner_from_dataset",
     ("from lance_duck.scan import LanceScanner\n"
     "result = LanceScanner.from_dataset(ds, columns=['id'], filter=pc.field('id') > 1000).to_table()"),
     lambda p: _rich(p).to_table(columns=["id"], filter="id > 1000")),
    ("fragment_scanner", "result = frag.scanner(columns=['id', 'l']).to_table()",
     lambda p: _rich(p).get_fragments()[1].to_table(columns=["id", "l"])),
    ("dataset_sort_by", "result = ds.sort_by([('id', 'descending')]).to_table(columns=['id', 'name'])",
     lambda p: _rich(p).to_table(columns=["id", "name"]).sort_by([("id", "descending")])),
    ("dataset_filter", "result = ds.filter(pc.field('u') == 7).to_table()",
     lambda p: _rich(p).to_table(filter="u = 7")),
    ("dataset_join_with_pyarrow_dataset",
     "result = simple.join(other, 'id', join_type='inner').to_table().sort_by('id')",
     lambda p: pads.dataset(_simple(p).to_table()).join(
         pads.dataset(pa.table({"id": pa.array([3, 5, 600], pa.int64()), "w": ["a", "b", "c"]})), "id",
         join_type="inner").to_table().sort_by("id")),
    ("dataset_join_with_lance_dataset",
     ("result = simple.join(simple.filter(pc.field('id') < 20), 'id', join_type='inner',\n"
     "                     right_suffix='_r').to_table().sort_by('id')"),
     lambda p: pads.dataset(_simple(p).to_table()).join(
         pads.dataset(_simple(p).to_table(filter="id < 20")), "id", join_type="inner",
         right_suffix="_r").to_table().sort_by("id")),
    ("dataset_join_asof",
     "result = simple.join_asof(asof_other, on='t', by='v', tolerance=-4).to_table().sort_by('id')",
     lambda p: pads.dataset(_simple(p).to_table()).join_asof(
         pads.dataset(eval(ASOF_OTHER)), on="t", by="v", tolerance=-4).to_table().sort_by("id")),
    ("in_memory_dataset_of_scan", "result = pads.InMemoryDataset(ds.scanner().to_reader()).to_table()",
     lambda p: _rich(p).to_table()),
]


@pytest.mark.parametrize("code,reference", [c[1:] for c in WORKING], ids=[c[0] for c in WORKING])
def test_pyarrow_function_reads_lance_duck_like_pylance(paths, tmp_path, code, reference):
    outcome = run_case(code, *paths, tmp_path)
    assert "table" in outcome, outcome
    assert_tables_equal(outcome["table"], reference(paths))


NATIVE = "pyarrow's own scan engine cannot read the Lance table"

# (case id, code, error type name, text the message must contain)
REFUSED = [
    ("scanner_from_dataset", "result = pads.Scanner.from_dataset(ds).to_table()",
     "InvalidArgumentError", "ds.scanner("),
    ("scanner_from_dataset_with_columns_and_filter",
     "result = pads.Scanner.from_dataset(ds, columns=['id'], filter=pc.field('id') > 3).to_table()",
     "InvalidArgumentError", NATIVE),
    ("acero_scan_node", "result = ac.Declaration('scan', ac.ScanNodeOptions(ds)).to_table()",
     "InvalidArgumentError", "pa.table(ds)"),
    ("acero_scan_node_of_filtered_dataset",
     "result = ac.Declaration('scan', ac.ScanNodeOptions(ds.filter(pc.field('id') > 3))).to_table()",
     "InvalidArgumentError", NATIVE),
    ("union_dataset_constructor", "result = pads.UnionDataset(ds.schema, [ds]).to_table()",
     "InvalidArgumentError", NATIVE),
    ("union_dataset_counts", "result = pa.table({'n': [pads.UnionDataset(ds.schema, [ds]).count_rows()]})",
     "InvalidArgumentError", NATIVE),
    ("dataset_of_list_of_datasets", "result = pads.dataset([ds, ds]).to_table()",
     "UnsupportedFeatureError", "pyarrow.dataset.dataset(ds.to_table())"),
    ("pyarrow_join_with_lance_on_the_right", "result = other.join(simple, 'id').to_table()",
     "InvalidArgumentError", "materialise"),
    ("pyarrow_join_asof_with_lance_on_the_right",
     "result = asof_other.join_asof(simple, on='t', by='v', tolerance=1).to_table()",
     "InvalidArgumentError", NATIVE),
    ("replace_schema", "result = ds.replace_schema(ds.schema).to_table()", "UnsupportedFeatureError",
     "replace_schema"),
    ("scanner_from_fragment", "result = pads.Scanner.from_fragment(frag).to_table()", "TypeError",
     "LanceFragment"),
    ("scanner_from_fragment_with_schema",
     "result = pads.Scanner.from_fragment(frag, schema=ds.schema).to_table()", "TypeError", "LanceFragment"),
    ("parquet_write_table", "pq.write_table(ds, out_dir + '/x.parquet')", "TypeError", "LanceDataset"),
    ("parquet_writer_write", "pq.ParquetWriter(out_dir + '/p.parquet', ds.schema).write(ds)", "TypeError",
     "LanceDataset"),
    ("feather_write_feather", "import pyarrow.feather\npyarrow.feather.write_feather(ds, out_dir + '/f')",
     "TypeError", "LanceDataset"),
    ("acero_table_source", "result = ac.Declaration('table_source', ac.TableSourceNodeOptions(ds)).to_table()",
     "TypeError", "LanceDataset"),
    ("dataset_of_dataset", "result = pads.dataset(ds).to_table()", "TypeError", "LanceDataset"),
    ("in_memory_dataset_of_dataset", "result = pads.InMemoryDataset(ds).to_table()", "TypeError",
     "LanceDataset"),
    ("write_dataset_with_schema",
     "pads.write_dataset(ds, out_dir + '/w', format='parquet', schema=ds.schema)", "ValueError", "schema"),
]


@pytest.mark.parametrize("code,error,text", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_pyarrow_function_refuses_lance_duck_with_clear_error(paths, tmp_path, code, error, text):
    outcome = run_case(code, *paths, tmp_path)
    assert outcome.get("error") == error, outcome
    assert text in outcome["message"], outcome["message"]


def test_native_scan_error_names_the_table(paths, tmp_path):
    outcome = run_case("result = pads.Scanner.from_dataset(ds).to_table()", *paths, tmp_path)
    assert paths[0] in outcome["message"]


def test_filesystem_dataset_attributes_describe_the_lance_table(paths):
    ds = lance_duck.dataset(paths[0])
    assert ds.files == [f for frag in lance.dataset(paths[0]).get_fragments() for f in
                        [os.path.join(paths[0], "data", d.path) for d in frag.data_files()]]
    assert ds.partitioning is None
    for name in ("format", "filesystem"):
        assert not hasattr(ds, name)


# -- DuckDB keeps its pushdown --------------------------------------------------------------------

def test_duckdb_pushes_projection_and_filter_through_scanner_not_c_stream(paths, monkeypatch):
    import duckdb

    calls = []
    real_scanner = LanceDataset.scanner

    def spy(self, columns=None, filter=None, **kwargs):
        calls.append((columns, filter))
        return real_scanner(self, columns=columns, filter=filter, **kwargs)

    def no_stream(self, requested_schema=None):
        raise AssertionError("DuckDB used the C stream export")

    monkeypatch.setattr(LanceDataset, "scanner", spy)
    monkeypatch.setattr(LanceDataset, "__arrow_c_stream__", no_stream)
    ds = lance_duck.dataset(paths[0])  # noqa: F841 (DuckDB finds it by name)
    got = duckdb.sql("SELECT name, id FROM ds WHERE id > 1500 AND u < 200").arrow()
    got = got.read_all() if isinstance(got, pa.RecordBatchReader) else got
    want = lance.dataset(paths[0]).to_table(columns=["name", "id"], filter="id > 1500 AND u < 200")
    assert got.column("id").to_pylist() == want.column("id").to_pylist()
    assert got.column("name").to_pylist() == want.column("name").to_pylist()
    assert len(calls) == 1
    columns, flt = calls[0]
    # DuckDB 2.x projects only the output columns; DuckDB 1.x adds the filter's columns; never all columns
    assert {"id", "name"} <= set(columns) <= {"id", "name", "u"}
    # DuckDB 1.x hands a pyarrow Expression; DuckDB 2's source hands it bound in its meaning, kept as source
    pushed = flt.source if isinstance(flt, CompiledFilter) else flt
    assert isinstance(pushed, pc.Expression) and "u" in str(pushed) and "id" in str(pushed)


def test_duckdb_reads_scanner_and_fragment(paths):
    import duckdb

    ds = lance_duck.dataset(paths[0])
    sc = ds.scanner(columns=["id", "name"], filter="id > 1500")  # noqa: F841 (DuckDB finds it by name)
    frag = ds.get_fragments()[1]  # noqa: F841
    ref = lance.dataset(paths[0])
    want = ref.to_table(columns=["id"], filter="id > 1500").column("id")
    assert duckdb.sql("SELECT count(*), min(id), max(id) FROM sc").fetchall() == \
        [(len(want), pc.min(want).as_py(), pc.max(want).as_py())]
    want = ref.get_fragments()[1].to_table(columns=["id"]).column("id")
    assert duckdb.sql("SELECT count(*), sum(id) FROM frag").fetchall() == [(len(want), pc.sum(want).as_py())]
