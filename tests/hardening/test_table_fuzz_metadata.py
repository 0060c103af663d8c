"""Seeded, time-bounded fuzz of table metadata: damaged manifests and deletion files.

For tables of every storage version (legacy 0.1 golden + 0.2, 2.0, 2.1 with stable row ids, 2.2;
ints, strings, lists, structs, nulls; ``.arrow`` and ``.bin`` deletion files) one file is damaged
per case (raw byte flips, truncations, single protobuf field edits, rewritten deletion files) and
the table is read with lance_duck. Allowed outcomes:

* the original result (same schema, values, row order) with ``count_rows`` equal to it;
* a LanceDuckError or FileNotFoundError;
* a changed result only where the damaged metadata is self-consistent and says so: ``count_rows``
  equals the rows returned and pylance reads the same table from the same bytes.

Anything else (another exception type, a hang — the watchdog aborts the run — a crash, or a changed
result that disagrees with a stated count or with pylance) fails, naming the case.
"""
from __future__ import annotations

import faulthandler
import os
import random
import shutil
import struct
import time

import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import LanceDuckError

from . import table_fixtures as T

SEED = int(os.environ.get("LD_TABLE_FUZZ_SEED", "20261124"))
CASES = int(os.environ.get("LD_TABLE_FUZZ_CASES", "60"))     # per table; 5 tables -> 300 cases
BUDGET_S = float(os.environ.get("LD_TABLE_FUZZ_SECONDS", "11"))  # per table
MIN_CASES = 20          # a run that did fewer cases than this (too slow) fails instead of passing
HANG_S = 60             # one case taking this long is a hang: the watchdog dumps stacks and exits

BASES = {
    "legacy_0_1": None,                          # the pylance 0.10.18 golden table (0.1 files), copied
    "legacy_0_2": ("legacy", {}),
    "v2_0": ("2.0", {}),
    "v2_1_stable_row_ids": ("2.1", {"stable_row_ids": True}),
    "v2_2": ("2.2", {}),
    "v2_3": ("2.3", {}),
}
GOLDEN = os.path.join(os.path.dirname(__file__), "..", "data", "legacy_pylance_0_10_18.lance")


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    root = tmp_path_factory.mktemp("table_fuzz")
    out = {}
    for name, spec in BASES.items():
        path = str(root / f"{name}.lance")
        if spec is None:
            shutil.copytree(GOLDEN, path)
            T.lance().dataset(path).delete("id % 9 = 4")
        else:
            T.make_table(path, spec[0], **spec[1])
        out[name] = path
    return out


def _read(path: str, row_ids: bool):
    """(table, count_rows) from lance_duck."""
    ds = lance_duck.dataset(path)
    return ds.to_table(with_row_id=row_ids), ds.count_rows()


def _read_pylance(path: str, row_ids: bool) -> pa.Table:
    return T.lance().dataset(path).to_table(with_row_id=row_ids)


# -- damage -----------------------------------------------------------------------------------
def _flip(raw: bytes, rng: random.Random) -> tuple[bytes, str]:
    buf = bytearray(raw)
    k = rng.choice((1, 1, 2, 4, 8))
    where = [rng.randrange(len(buf)) for _ in range(k)]
    for p in where:
        buf[p] ^= rng.randrange(1, 256)
    return bytes(buf), f"flip bytes at {where}"


def _truncate(raw: bytes, rng: random.Random) -> tuple[bytes, str]:
    n = rng.choice((0, 1, 8, 16, rng.randrange(len(raw)), len(raw) - 1, len(raw) - 17))
    n = max(0, min(n, len(raw) - 1))
    return raw[:n], f"truncate to {n} of {len(raw)} bytes"


def _big(rng: random.Random) -> int:
    return rng.choice((0, 1, 2, 3, 7, 299, 300, 301, 5199, 5200, 5201, 2**31 - 1, 2**32, 2**40, 2**63 - 1))


def _field_edit(m, rng: random.Random) -> str:
    """One protobuf field edit of a manifest (in place); returns its description."""
    frag = rng.choice(list(m.fragments))
    df = rng.choice(list(frag.files))
    fld = rng.choice(list(m.fields))
    kind = rng.choice((
        "physical_rows", "num_deleted_rows", "deletion_type", "deletion_id", "drop_deletion",
        "field_id_in_file", "column_index", "swap_columns", "drop_file_field", "file_version",
        "file_size", "file_path", "file_base_id", "schema_parent", "schema_id", "schema_type",
        "manifest_version", "timestamp", "reader_flags", "drop_fragment", "fragment_id", "no_files",
        "data_format", "row_ids",
    ))
    if kind == "physical_rows":
        frag.physical_rows = _big(rng)
        return f"fragment {frag.id}: physical_rows = {frag.physical_rows}"
    if kind in ("num_deleted_rows", "deletion_type", "deletion_id", "drop_deletion"):
        withdel = [f for f in m.fragments if f.HasField("deletion_file")]
        if not withdel:
            return _field_edit(m, rng)
        frag = rng.choice(withdel)
        d = frag.deletion_file
        if kind == "num_deleted_rows":
            d.num_deleted_rows = rng.choice((0, 1, d.num_deleted_rows - 1, d.num_deleted_rows + 1,
                                             frag.physical_rows, _big(rng)))
            return f"fragment {frag.id}: num_deleted_rows = {d.num_deleted_rows}"
        if kind == "deletion_type":
            d.file_type = rng.choice((1 - d.file_type, 5))
            return f"fragment {frag.id}: deletion file_type = {d.file_type}"
        if kind == "deletion_id":
            d.id = _big(rng)
            return f"fragment {frag.id}: deletion id = {d.id}"
        frag.ClearField("deletion_file")
        return f"fragment {frag.id}: deletion file dropped"
    if kind == "field_id_in_file" and len(df.fields):
        j = rng.randrange(len(df.fields))
        df.fields[j] = rng.choice((-2, -1, 0, 1, 3, 5, 9, 40, 2**31 - 1))
        return f"fragment {frag.id}: file field[{j}] = {df.fields[j]}"
    if kind == "column_index" and len(df.column_indices):
        j = rng.randrange(len(df.column_indices))
        df.column_indices[j] = rng.choice((-1, 0, 1, 2, 5, 9, 1000))
        return f"fragment {frag.id}: column_indices[{j}] = {df.column_indices[j]}"
    if kind == "swap_columns" and len(df.column_indices) > 1:
        a, b = rng.sample(range(len(df.column_indices)), 2)
        df.column_indices[a], df.column_indices[b] = df.column_indices[b], df.column_indices[a]
        return f"fragment {frag.id}: column_indices[{a}] <-> [{b}]"
    if kind == "drop_file_field" and len(df.fields):
        j = rng.randrange(len(df.fields))
        del df.fields[j]
        return f"fragment {frag.id}: file field[{j}] removed"
    if kind == "file_version":
        df.file_major_version, df.file_minor_version = rng.choice(((0, 1), (0, 2), (0, 3), (2, 0), (2, 1),
                                                                   (2, 2), (2, 3), (3, 0)))
        return f"fragment {frag.id}: file version {df.file_major_version}.{df.file_minor_version}"
    if kind == "file_size":
        df.file_size_bytes = _big(rng)
        return f"fragment {frag.id}: file_size_bytes = {df.file_size_bytes}"
    if kind == "file_path":
        p = df.path
        df.path = rng.choice(("", "/" + p, "../" + p, "a/../" + p, p + "\0", "x" * 300 + ".lance",
                              p[:-1], "../../" + os.path.basename(p), "./" + p, "file:///" + p))
        return f"fragment {frag.id}: path = {df.path[:60]!r}"
    if kind == "file_base_id":
        df.base_id = rng.choice((0, 1, 7))
        return f"fragment {frag.id}: base_id = {df.base_id}"
    if kind == "schema_parent":
        fld.parent_id = rng.choice([-1, -7, 10**6] + [f.id for f in m.fields])
        return f"field {fld.name}: parent_id = {fld.parent_id}"
    if kind == "schema_id":
        fld.id = rng.choice([-1, 2**31 - 1] + [f.id for f in m.fields])
        return f"field {fld.name}: id = {fld.id}"
    if kind == "schema_type":
        fld.logical_type = rng.choice(("int64", "int32", "string", "struct", "list", "double", "bool",
                                       "fixed_size_list:int32:2", "decimal:x", "timestamp:zz", ""))
        return f"field {fld.name}: logical_type = {fld.logical_type!r}"
    if kind == "manifest_version":
        m.version = _big(rng)
        return f"version = {m.version}"
    if kind == "timestamp":
        m.timestamp.seconds = rng.choice((-(2**63), -1, 2**40, 2**63 - 1))
        return f"timestamp seconds = {m.timestamp.seconds}"
    if kind == "reader_flags":
        m.reader_feature_flags ^= 1 << rng.randrange(12)
        return f"reader_feature_flags = {m.reader_feature_flags}"
    if kind == "drop_fragment":
        del m.fragments[rng.randrange(len(m.fragments))]
        return "a fragment removed"
    if kind == "fragment_id":
        frag.id = rng.choice([f.id for f in m.fragments] + [2**32, 2**64 - 1])
        return f"fragment id = {frag.id}"
    if kind == "no_files":
        frag.ClearField("files")
        return f"fragment {frag.id}: no data files"
    if kind == "data_format":
        m.data_format.version = rng.choice(("0.1", "2.0", "2.1", "2.2", "9.9", ""))
        return f"data_format.version = {m.data_format.version!r}"
    if kind == "row_ids" and frag.HasField("inline_row_ids"):
        raw, what = _flip(frag.inline_row_ids, rng)
        frag.inline_row_ids = raw
        return f"fragment {frag.id}: inline row ids {what}"
    return _field_edit(m, rng)


def _deletion_rewrite(path: str, raw: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A well-formed or subtly wrong replacement for a deletion file."""
    kind = rng.choice(("empty", "no_batches", "other_rows", "beyond", "nulls", "strings", "two_columns",
                       "negative"))
    if path.endswith(".bin"):
        from pyroaring import BitMap

        if kind == "empty":
            return b"", "empty bitmap file"
        rows = {"other_rows": list(range(0, 40, 3)), "beyond": list(range(5190, 5210)), "negative": []}.get(kind)
        if rows is None:
            return _flip(raw, rng)
        return BitMap(rows).serialize(), f"bitmap of rows {rows}"
    schema = pa.schema([("row_id", pa.uint32())])
    sink = pa.BufferOutputStream()
    if kind == "empty":
        return b"", "empty arrow file"
    arrays = {
        "other_rows": [pa.array([0, 1, 2], pa.uint32())],
        "beyond": [pa.array([5, 301, 4000], pa.uint32())],
        "nulls": [pa.array([1, None], pa.uint32())],
        "strings": [pa.array(["1", "2"])],
        "negative": [pa.array([-1, 2], pa.int32())],
        "two_columns": [pa.array([1, 2], pa.uint32()), pa.array([3, 4], pa.uint32())],
        "no_batches": None,
    }[kind]
    if arrays is None:
        with pa.ipc.new_file(sink, schema) as w:
            pass
        return sink.getvalue().to_pybytes(), "arrow file without batches"
    batch = pa.RecordBatch.from_arrays(arrays, names=[f"c{i}" for i in range(len(arrays))])
    with pa.ipc.new_file(sink, batch.schema) as w:
        w.write_batch(batch)
    return sink.getvalue().to_pybytes(), f"arrow deletion file rewritten: {kind}"


def _cases(path: str, rng: random.Random):
    """Endless (file, new bytes, description) damage of the table at ``path``."""
    manifest = T.latest_manifest_path(path)
    deletions = T.deletion_files(path)
    while True:
        r = rng.random()
        if r < 0.45 or not deletions:
            raw = open(manifest, "rb").read()
            pick = rng.random()
            if pick < 0.35:
                new, what = _flip(raw, rng)
            elif pick < 0.45:
                new, what = _truncate(raw, rng)
            else:
                prefix, m = T.split_manifest(raw)
                what = _field_edit(m, rng)
                from lance_duck.table.manifest import encode_manifest
                new = encode_manifest(m, prefix)
            yield manifest, new, f"manifest: {what}"
        else:
            target = rng.choice(deletions)
            raw = open(target, "rb").read()
            pick = rng.random()
            if pick < 0.4:
                new, what = _flip(raw, rng)
            elif pick < 0.6:
                new, what = _truncate(raw, rng)
            else:
                new, what = _deletion_rewrite(target, raw, rng)
            yield target, new, f"{os.path.basename(target)}: {what}"


@pytest.mark.parametrize("base", sorted(BASES))
def test_damaged_manifests_and_deletion_files_give_the_original_result_or_our_error(bases, base, tmp_path):
    path = shutil.copytree(bases[base], str(tmp_path / "t.lance"))
    row_ids = "stable" in base
    original, original_count = _read(path, row_ids)
    assert original.equals(_read_pylance(path, row_ids), check_metadata=True)
    assert original_count == original.num_rows > 0
    rng = random.Random(f"{SEED}-{base}")
    outcomes = {"same": 0, "error": 0, "changed_as_pylance": 0, "renamed": 0}
    start = time.monotonic()
    done = 0
    for target, new, what in _cases(path, rng):
        if done >= CASES or time.monotonic() - start > BUDGET_S:
            break
        saved = open(target, "rb").read()
        with open(target, "wb") as f:
            f.write(new)
        faulthandler.dump_traceback_later(HANG_S, exit=True)
        try:
            outcomes[_judge(path, row_ids, original, original_count, f"[{base}] {what}")] += 1
        finally:
            faulthandler.cancel_dump_traceback_later()
            with open(target, "wb") as f:
                f.write(saved)
        done += 1
    print(f"{base}: {done} cases in {time.monotonic() - start:.1f}s: {outcomes}")  # shown with -s
    assert done >= MIN_CASES, f"only {done} cases in {BUDGET_S}s: {outcomes}"
    assert outcomes["error"] > 0 and outcomes["same"] > 0, outcomes   # the damage reached the reader


def _judge(path, row_ids, original, original_count, what) -> str:
    try:
        table, count = _read(path, row_ids)
    except (LanceDuckError, FileNotFoundError):
        return "error"
    except Exception as exc:  # noqa: BLE001 - the point of the test
        pytest.fail(f"{what}: {type(exc).__name__}: {exc}")
    if count != table.num_rows:
        pytest.fail(f"{what}: count_rows says {count}, the scan returned {table.num_rows} rows")
    if table.equals(original, check_metadata=True):
        assert count == original_count
        return "same"
    try:
        expected = _read_pylance(path, row_ids)
    except Exception as exc:  # noqa: BLE001 - pylance refuses: so must we, unless only names changed
        if _values(table) == _values(original):
            return "renamed"  # a damaged name is not a count or size we could check
        pytest.fail(f"{what}: lance_duck returned a changed result ({table.num_rows} rows) where pylance "
                    f"refuses ({type(exc).__name__}: {str(exc)[:200]})")
    if not table.equals(expected, check_metadata=True):
        pytest.fail(f"{what}: lance_duck returned a changed result that differs from pylance's")
    return "changed_as_pylance"


def _values(table: pa.Table) -> list:
    """Row values with struct keys dropped (tables equal up to field names compare equal)."""
    def strip(v):
        if isinstance(v, dict):
            return tuple(strip(x) for x in v.values())
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v
    return [[strip(v) for v in c.to_pylist()] for c in table.columns] + [
        [str(f.type).split("<")[0] for f in table.schema]]


def test_fuzz_helpers_damage_what_they_say(bases):
    """The case generator reaches both deletion kinds and the manifest of every base."""
    for name, path in bases.items():
        kinds = T.deletion_kinds(path)
        assert kinds == ({".arrow"} if name == "legacy_0_1" else {".arrow", ".bin"}), (name, kinds)
        rng = random.Random(1)
        targets = {os.path.basename(t).rsplit(".", 1)[-1] for t, _, _ in
                   (c for _, c in zip(range(80), _cases(path, rng)))}
        assert {"manifest", "arrow"} <= targets
