"""Fixture tables written by pylance 14.0.2 (test-only): histories that touch every operation.

Pure functions: each takes a target path (str) and writes a table there. Other test folders
import them (``sys.path`` gets this folder from ``tests/table/conftest.py``; elsewhere add it,
or import ``tests.table.lance_histories`` by file path).
"""
from __future__ import annotations

import glob
import os
import shutil
import struct
from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa

ROWS_PER_FILE = 6000


def _lance():
    import lance  # test-only dependency, imported lazily so lance_duck never needs it

    return lance


def history_batch(start: int, n: int) -> pa.Table:
    """Rows ``start .. start+n-1`` of the history tables (deterministic)."""
    ids = np.arange(start, start + n, dtype=np.int64)
    rng = np.random.default_rng(start)
    names = pa.array([f"name-{i % 997}" if i % 13 else None for i in ids], pa.string())
    return pa.table({
        "id": ids,
        "name": names,
        "val": pa.array(rng.normal(size=n)),
        "s": pa.StructArray.from_arrays(
            [pa.array((ids % 1000).astype(np.int32)), pa.array([f"s{i % 7}" for i in ids])], names=["a", "b"]),
        "ts": pa.array(ids * 1_000_000, pa.timestamp("us", tz="+05:30")),
    })


def evolved_batch(start: int, n: int) -> pa.Table:
    """Rows in the schema after the history's column changes (id, label, s, ts, double_id, note)."""
    t = history_batch(start, n).drop_columns(["val"]).rename_columns(["id", "label", "s", "ts"])
    t = t.append_column("double_id", pa.compute.multiply(t["id"], 2))
    return t.append_column("note", pa.array([None if i % 2 else "n" for i in range(n)], pa.string()))


def make_history_table(path: str, data_storage_version: str = "2.2", *, stable_row_ids: bool = False,
                       v2_manifest_paths: bool = True, with_refs: bool = True) -> dict:
    """create → append → sparse delete → dense delete (.bin) → update → merge_insert → add_columns
    (expression) → add_columns (all null) → rename → drop → tag → compact → tag → branches.

    Legacy tables cannot add columns to fragments with many deletions, so there the column
    changes come right after the append (deletes, update and merge_insert follow).
    Returns notes: {"tags": [...], "branches": [...], "bin_deletions": bool}.
    """
    lance = _lance()
    legacy = data_storage_version in ("legacy", "0.1")
    kw = dict(data_storage_version=data_storage_version, enable_v2_manifest_paths=v2_manifest_paths,
              enable_stable_row_ids=stable_row_ids)
    # v1: 3 fragments; v2: append one more
    lance.write_dataset(history_batch(0, 3 * ROWS_PER_FILE), path, max_rows_per_file=ROWS_PER_FILE, **kw)
    lance.write_dataset(history_batch(3 * ROWS_PER_FILE, 1000), path, mode="append",
                        max_rows_per_file=ROWS_PER_FILE)
    evolved = False

    def evolve():
        ds = lance.dataset(path)
        ds.add_columns({"double_id": "id * 2"})                   # add a computed column
        if legacy:  # legacy cannot add metadata-only null columns: write the nulls
            ds.add_columns({"note": "CAST(NULL AS STRING)"})
        else:
            ds.add_columns(pa.field("note", pa.string()))         # add an all-null column
        ds.alter_columns({"path": "name", "name": "label"})       # rename
        ds.drop_columns(["val"])                                  # drop
        return True

    if legacy:
        evolved = evolve()
    ds = lance.dataset(path)
    ds.delete("id % 97 = 0")                                      # sparse (.arrow)
    ds.delete("id >= 6000 and id < 11500")                        # dense: 5500 rows of fragment 1 (.bin)
    ds.update({"double_id": "double_id + 1"} if evolved else {"val": "val * 2"}, where="id < 50")
    new = (evolved_batch if evolved else history_batch)(18900, 300)  # merge_insert: 100 updated, 200 new
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(new)
    if not evolved:
        evolve()
    ds = lance.dataset(path)
    notes = {"tags": [], "branches": []}
    if with_refs:
        ds.tags.create("after_drop", ds.version)
        notes["tags"].append("after_drop")
    ds.optimize.compact_files(target_rows_per_fragment=8000)      # compaction (1-2 versions)
    ds = lance.dataset(path)
    if with_refs:
        ds.tags.create("compacted", ds.version)
        notes["tags"].append("compacted")
        if not legacy:
            ds.create_branch("dev", "after_drop")
            br = lance.dataset(path).checkout_version(("dev", None))
            br = lance.write_dataset(evolved_batch(50_000, 500), br, mode="append")
            br.delete("id % 5 = 0")
            ds = lance.dataset(path)
            ds.tags.create("dev_tip", ("dev", None))
            ds.create_branch("feature/x", ("dev", None))
            notes["tags"].append("dev_tip")
            notes["branches"] += ["dev", "feature/x"]
    notes["bin_deletions"] = bool(glob.glob(os.path.join(path, "_deletions", "*.bin")))
    return notes


def make_clone_table(source: str, target: str, reference="after_drop") -> None:
    """A shallow clone of ``source`` at ``reference``, then an append and a delete in the clone."""
    lance = _lance()
    ds = lance.dataset(source)
    clone = ds.shallow_clone(target, reference)
    extra = evolved_batch(70_000, 200)
    clone = lance.write_dataset(extra, target, mode="append")
    clone.delete("id % 3 = 0")


def make_cleanup_table(path: str, data_storage_version: str = "2.2") -> None:
    """Six versions, a tag on v3, then ``cleanup_old_versions`` so versions have gaps."""
    lance = _lance()
    ds = lance.write_dataset(history_batch(0, 100), path, data_storage_version=data_storage_version)
    for i in range(1, 5):
        ds = lance.write_dataset(history_batch(100 * i, 100), path, mode="append")
        if ds.version == 3:
            ds.tags.create("keep", 3)
    ds.delete("id < 10")
    ds.cleanup_old_versions(older_than=timedelta(0), error_if_tagged_old_versions=False)


def all_types_table(n: int = 6, *, with_map: bool = True, with_dictionary: bool = True) -> pa.Table:
    """One column per logical type pylance stores (field/schema metadata, nested, zones)."""
    ints = pa.array([None if i % 4 == 1 else i for i in range(n)], pa.int64())
    cols: dict[str, pa.Array] = {}
    for t in ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]:
        cols[t] = ints.cast(t)
    cols["f16"] = pa.array(np.arange(n, dtype=np.float16))
    cols["f32"] = pa.array(np.arange(n, dtype=np.float32))
    cols["f64"] = pa.array(np.arange(n, dtype=np.float64))
    cols["bool"] = pa.array([i % 2 == 0 for i in range(n)])
    strs = [f"v{i}" if i % 3 else None for i in range(n)]
    cols["str"] = pa.array(strs, pa.string())
    cols["lstr"] = pa.array(strs, pa.large_string())
    cols["bin"] = pa.array([s.encode() if s else None for s in strs], pa.binary())
    cols["lbin"] = pa.array([s.encode() if s else None for s in strs], pa.large_binary())
    cols["dec128"] = pa.array([None] * n, pa.decimal128(12, 3))
    cols["dec256"] = pa.array([None] * n, pa.decimal256(40, 5))
    cols["date32"] = ints.cast(pa.int32()).cast(pa.date32())
    cols["date64"] = pa.array([i * 86_400_000 for i in range(n)], pa.date64())
    cols["time32s"] = pa.array(list(range(n)), pa.time32("s"))
    cols["time32ms"] = pa.array(list(range(n)), pa.time32("ms"))
    cols["time64us"] = pa.array(list(range(n)), pa.time64("us"))
    cols["time64ns"] = pa.array(list(range(n)), pa.time64("ns"))
    for unit in ["s", "ms", "us", "ns"]:
        cols[f"ts_{unit}"] = pa.array(list(range(n)), pa.timestamp(unit))
        cols[f"dur_{unit}"] = pa.array(list(range(n)), pa.duration(unit))
    cols["ts_utc"] = pa.array(list(range(n)), pa.timestamp("us", tz="UTC"))
    cols["ts_offset"] = pa.array(list(range(n)), pa.timestamp("ms", tz="+05:30"))
    cols["ts_ny"] = pa.array(list(range(n)), pa.timestamp("ns", tz="America/New_York"))
    cols["fsb"] = pa.array([bytes([i]) * 4 for i in range(n)], pa.binary(4))
    cols["fsl"] = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(2 * n, dtype=np.float32)), 2)
    bf_item = pa.field("item", pa.binary(2), metadata={"ARROW:extension:name": "lance.bfloat16",
                                                       "ARROW:extension:metadata": ""})
    cols["bf16"] = pa.FixedSizeListArray.from_arrays(
        pa.array([b"\x80\x3f"] * (2 * n), pa.binary(2)), 2).cast(pa.list_(bf_item, 2))
    cols["list"] = pa.array([[i, i + 1] if i % 3 else None for i in range(n)],
                            pa.list_(pa.field("elem", pa.int32(), nullable=False, metadata={"k": "v"})))
    cols["llist"] = pa.array([[str(i)] for i in range(n)], pa.large_list(pa.string()))
    cols["struct"] = pa.StructArray.from_arrays(
        [ints, pa.array(strs)], fields=[pa.field("x", pa.int64()), pa.field("y", pa.string(), metadata={"m": "1"})])
    cols["list_struct"] = pa.array([[{"p": i}] for i in range(n)], pa.list_(pa.struct([("p", pa.int32())])))
    if with_map:
        cols["map"] = pa.array([[("a", i)] for i in range(n)], pa.map_(pa.string(), pa.int32()))
    if with_dictionary:
        cols["dict"] = pa.array([["x", "y"][i % 2] for i in range(n)]).dictionary_encode()
    cols["json"] = pa.array(['{"a": %d}' % i for i in range(n)], pa.json_())
    fields = [pa.field(k, v.type) for k, v in cols.items()]
    fields.append(pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"}))
    fields.append(pa.field("required", pa.int32(), nullable=False, metadata={"doc": "not null"}))
    arrays = list(cols.values()) + [pa.array([b"x" * i for i in range(n)], pa.large_binary()),
                                    pa.array(range(n), pa.int32())]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata={"owner": "lance_duck", "k": "v"}))


def make_types_table(path: str, data_storage_version: str = "2.2") -> None:
    """All logical types the chosen format can store, in one table."""
    lance = _lance()
    new_format = data_storage_version not in ("legacy", "0.1", "2.0", "2.1")
    t = all_types_table(with_map=new_format,
                        with_dictionary=data_storage_version not in ("legacy", "0.1"))
    if data_storage_version in ("legacy", "0.1"):
        t = t.drop_columns([c for c in ("json", "bf16") if c in t.column_names])
    lance.write_dataset(t, path, data_storage_version=data_storage_version)


def make_blob_v2_table(path: str) -> None:
    """A 2.2 table with a ``lance.blob.v2`` column written through pylance's blob API."""
    lance = _lance()
    import lance.blob as lb

    t = pa.table({"id": [1, 2, 3], "b": lb.blob_array([b"abc", None, b"de"])})
    lance.write_dataset(t, path)


def make_many_versions_table(path: str, n_versions: int = 1000) -> None:
    """One real pylance version, then manifests for versions 2..n made by re-framing it.

    Each copy gets its own version number and a timestamp one second later; pylance opens them.
    """
    from lance_duck._proto import table_pb2
    from lance_duck.table.manifest import decode_manifest, encode_manifest

    lance = _lance()
    lance.write_dataset(history_batch(0, 10), path)
    vdir = os.path.join(path, "_versions")
    first = os.path.join(vdir, f"{(1 << 64) - 2:020d}.manifest")
    raw = open(first, "rb").read()
    m = decode_manifest(raw, first)
    (pos,) = struct.unpack_from("<q", raw, len(raw) - 16)
    prefix = raw[:pos]
    for v in range(2, n_versions + 1):
        m2 = table_pb2.Manifest()
        m2.CopyFrom(m)
        m2.version = v
        m2.timestamp.seconds = m.timestamp.seconds + v - 1
        with open(os.path.join(vdir, f"{(1 << 64) - 1 - v:020d}.manifest"), "wb") as f:
            f.write(encode_manifest(m2, prefix))
    hint = os.path.join(vdir, "latest_version_hint.json")
    if os.path.exists(hint):
        os.remove(hint)


def copy_tree(src: str, dst: str) -> str:
    shutil.copytree(src, dst)
    return dst


def utc_now() -> datetime:
    return datetime.now(timezone.utc)
