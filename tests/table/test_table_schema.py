"""Arrow schema from the manifest == pylance's ds.schema (check_metadata=True) for every logical type."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import lance
import pyarrow as pa
import pytest

from lance_duck.schema import parse_logical_type
from lance_duck.table.snapshot import open_snapshot

HERE = os.path.dirname(__file__)
REPO = os.path.dirname(os.path.dirname(HERE))


@pytest.mark.parametrize("kind", ["2.0", "2.1", "2.2", "2.3", "legacy", "blob_v2"])
def test_schema_of_every_logical_type_equals_pylance(types_tables, kind):
    path = types_tables[kind]
    ours, theirs = open_snapshot(path).arrow_schema, lance.dataset(path).schema
    assert ours.equals(theirs, check_metadata=True), f"\n{ours}\n!=\n{theirs}"
    for a, b in zip(ours, theirs):  # field by field, so a failure names the column
        assert a.equals(b, check_metadata=True), (a, b)


def test_types_table_covers_every_kind_of_type(types_tables):
    snap = open_snapshot(types_tables["2.2"])
    lts = {f.logical_type.split(":")[0] for f in snap.schema.walk()}
    for want in ("int8", "uint64", "halffloat", "float", "double", "bool", "string", "large_string", "binary",
                 "large_binary", "decimal", "date32", "date64", "time32", "time64", "timestamp", "duration",
                 "fixed_size_binary", "fixed_size_list", "list", "large_list", "struct", "map", "dict", "json",
                 "list.struct"):
        assert want in lts, want
    names = {f.name for f in snap.schema.fields}
    assert {"ts_offset", "ts_ny", "bf16", "blob", "json"} <= names
    assert snap.schema.field("ts_offset").logical_type == "timestamp:ms:+05:30"


def test_field_ids_are_kept_after_drop_and_rename(histories):
    path = histories["hist_2_2"]
    snap = open_snapshot(path, "after_drop")
    by_name = {f.name: f.id for f in snap.schema.fields}
    first = {f.name: f.id for f in open_snapshot(path, 1).schema.fields}
    assert by_name["label"] == first["name"]  # renamed, same id
    assert "val" not in by_name and first["val"] not in by_name.values()
    assert snap.schema.field("s.a").id == open_snapshot(path, 1).schema.field("s.a").id
    assert snap.schema.by_id[by_name["label"]].name == "label"


def test_data_storage_version_strings_match_pylance(types_tables):
    for kind in ("2.0", "2.1", "2.2", "2.3", "legacy", "blob_v2"):
        assert open_snapshot(types_tables[kind]).data_storage_version == \
            lance.dataset(types_tables[kind]).data_storage_version


def test_logical_type_strings_parse_including_zones_with_colons():
    assert parse_logical_type("timestamp:us:+05:30") == pa.timestamp("us", "+05:30")
    assert parse_logical_type("timestamp:ns:-") == pa.timestamp("ns")
    assert parse_logical_type("dict:timestamp:ms:UTC:int16:false") == pa.dictionary(pa.int16(), pa.timestamp("ms", "UTC"))
    assert parse_logical_type("fixed_size_list:fixed_size_list:float:2:3") == \
        pa.list_(pa.field("item", pa.list_(pa.field("item", pa.float32()), 2)), 3)
    assert parse_logical_type("decimal:256:40:5") == pa.decimal256(40, 5)


def test_unknown_or_malformed_logical_types_are_named():
    from lance_duck.errors import CorruptFileError, UnsupportedFeatureError
    with pytest.raises(UnsupportedFeatureError, match="complex128"):
        parse_logical_type("complex128", "c")
    with pytest.raises(CorruptFileError, match="decimal:x"):
        parse_logical_type("decimal:x", "d")


_SUBPROCESS = """
import sys, json
sys.path.insert(0, {repo!r})
import pyarrow as pa
from lance_duck.table.snapshot import open_snapshot
before = open_snapshot({path!r}).arrow_schema
import lance                      # registers lance.blob.v2; must not conflict with lance_duck
{extra}
ds = lance.dataset({path!r})
after = open_snapshot({path!r}).arrow_schema
print(json.dumps({{"after_equal": after.equals(ds.schema, check_metadata=True),
                   "before_types": [str(f.type) for f in before]}}))
"""


@pytest.mark.parametrize("extra", ["", "import lance._arrow.bf16"])
def test_extension_types_agree_with_pylance_whatever_is_registered(types_tables, extra):
    """lance_duck registers nothing: importing pylance later works, and the schema then matches pylance."""
    path = types_tables["2.2"]
    code = _SUBPROCESS.format(repo=REPO, path=path, extra=extra)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    import json
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["after_equal"]
    assert any("fixed_size_binary[2]" in t for t in res["before_types"])  # bf16 unregistered: storage type


def test_legacy_dictionary_values_come_from_the_manifest(tmp_path):
    """Legacy tables: the snapshot fills dictionary_values of dictionary fields from the manifest file."""
    path = str(tmp_path / "legacy_dict.lance")
    t = pa.table({"id": pa.array(range(6), pa.int32()),
                  "d": pa.array(["x", "y", "x", None, "zz", "y"]).dictionary_encode(),
                  "di": pa.array([5, 7, 5, 9, 7, 5], pa.int64()).dictionary_encode()})
    lance.write_dataset(t, path, data_storage_version="legacy")
    snap = open_snapshot(path)
    pds = lance.dataset(path)
    assert snap.arrow_schema.equals(pds.schema, check_metadata=True)
    got = pds.to_table()
    for name in ("d", "di"):
        field = snap.schema.field(name)
        assert field.dictionary_values is not None, name
        want = got[name].chunk(0).dictionary
        assert field.dictionary_values.equals(want), (name, field.dictionary_values, want)
    assert snap.schema.field("id").dictionary_values is None
