"""Tables written with pylance 14.0.2's operations that change what is on disk (issue 14, part B).

Each ``make_*`` writes one table through a sequence of operations; every version it leaves is
compared with pylance by tests/table/test_table_pylance14.py.
"""
from __future__ import annotations

import os

import pyarrow as pa


def _lance():
    import lance
    return lance


def rows(start: int, n: int, struct_nulls: bool = True) -> pa.Table:
    """Flat, nested and large-binary columns (deterministic; 2.0 files hold no null structs)."""
    r = range(start, start + n)
    return pa.table({
        "id": pa.array(list(r), pa.int64()),
        "name": pa.array([None if i % 9 == 0 else f"n{i % 17}" for i in r]),
        "big": pa.array([None if i % 11 == 0 else bytes([i % 251]) * (i % 7) for i in r], pa.large_binary()),
        "s": pa.array([None if struct_nulls and i % 13 == 0 else {"a": i % 5, "b": [f"x{i}"] * (i % 3)} for i in r],
                      pa.struct([("a", pa.int32()), ("b", pa.list_(pa.string()))])),
        "tags": pa.array([[i % 4, None][: i % 3] for i in r], pa.large_list(pa.int16())),
    })


def make_operations_table(path: str, data_storage_version: str = "2.2", *, stable_row_ids: bool = False) -> None:
    """create → append → index → delete → update → merge_insert variants → compaction options →
    optimize_indices → add / alter (cast) / drop columns → compaction into another file version."""
    lance = _lance()
    nulls = data_storage_version != "2.0"

    def rows(start: int, n: int) -> pa.Table:
        return globals()["rows"](start, n, nulls)
    ds = lance.write_dataset(rows(0, 300), path, max_rows_per_file=100, data_storage_version=data_storage_version,
                             enable_stable_row_ids=stable_row_ids)
    ds = lance.write_dataset(rows(300, 120), path, mode="append", max_rows_per_file=60)
    ds.create_scalar_index("id", "BTREE")
    ds.delete("id % 10 = 3")
    # deferred index remapping (a fragment-reuse index); pylance refuses it with stable row ids
    ds.optimize.compact_files(target_rows_per_fragment=150, defer_index_remap=not stable_row_ids)
    ds = lance.dataset(path)
    ds.update({"name": "'upd'"}, where="id < 40")
    # merge_insert variants: upsert, insert-only, conditional update, delete-by-source
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(rows(400, 60))
    ds = lance.dataset(path)
    ds.merge_insert("id").when_not_matched_insert_all().execute(rows(450, 30))
    ds = lance.dataset(path)
    ds.merge_insert("id").when_matched_update_all("target.id % 2 = 0").execute(rows(100, 20))
    ds = lance.dataset(path)
    keep = ds.to_table(filter="id >= 200").slice(0, 200)
    ds.merge_insert("id").when_matched_update_all().when_not_matched_by_source_delete("id < 100").execute(keep)
    ds = lance.dataset(path)
    ds.optimize.compact_files(target_rows_per_fragment=150, materialize_deletions=False)
    ds = lance.dataset(path)
    ds.optimize.optimize_indices()
    ds = lance.dataset(path)
    ds.add_columns({"twice": "id * 2"})
    ds.add_columns(pa.field("empty", pa.float64()))
    ds.alter_columns({"path": "twice", "data_type": pa.int32()})
    ds.alter_columns({"path": "name", "name": "label"})
    ds.drop_columns(["empty"])
    ds = lance.dataset(path)
    ds.delete("id % 7 = 0")
    ds.optimize.compact_files(target_rows_per_fragment=10_000, compaction_mode="try_binary_copy")
    # compaction into another file version (reader flag 256, mixed data-file versions)
    for start in (600, 700):
        t = rows(start, 30).rename_columns(["id", "label", "big", "s", "tags"])
        t = t.append_column("twice", pa.array(range(2 * start, 2 * start + 60, 2), pa.int32()))
        ds = lance.write_dataset(t.select(ds.schema.names).cast(ds.schema), path, mode="append")
    other = {"2.0": "2.1", "2.2": "2.1"}.get(data_storage_version, "2.2")
    ds.optimize.compact_files(target_rows_per_fragment=10_000, data_storage_version=other)


def make_auto_cleanup_table(path: str) -> None:
    """Writes with ``auto_cleanup_options``: old versions disappear as new ones are committed."""
    lance = _lance()
    opts = {"interval": 2, "older_than_seconds": 0}
    ds = lance.write_dataset(rows(0, 50), path, auto_cleanup_options=opts)
    for i in range(1, 6):
        ds = lance.write_dataset(rows(50 * i, 50), path, mode="append")
    ds.delete("id < 20")


def make_blob_tables(root: str) -> dict[str, str]:
    """Blob columns of both blob versions: v1 (``lance-encoding:blob``) in 2.0 / 2.1 / 2.2 and v2
    (pylance's blob API) with inline, packed, dedicated and external values, then an append,
    a delete and a compaction."""
    lance = _lance()
    import lance.blob as lb
    out: dict[str, str] = {}
    blob_md = {"lance-encoding:blob": "true"}
    nested = pa.struct([pa.field("x", pa.int32()), pa.field("nb", pa.large_binary(), metadata=blob_md)])
    v1 = pa.schema([pa.field("id", pa.int64()),
                    pa.field("b", pa.large_binary(), metadata={**blob_md, "note": "x"}),
                    pa.field("s", nested)],                     # a blob column inside a struct
                   metadata={"owner": "tests"})
    for dsv in ("2.0", "2.1", "2.2"):
        p = out[f"v1_{dsv}"] = os.path.join(root, f"blob_v1_{dsv}.lance")
        vals = [None if i % 5 == 0 else bytes([i]) * (i * 977 % 70_000) for i in range(40)]
        inner = pa.array([None if i % 3 == 0 else bytes([i]) * (i * 31 % 900) for i in range(40)], pa.large_binary())
        s = pa.StructArray.from_arrays([pa.array(range(40), pa.int32()), inner], fields=list(nested))
        t = pa.table([pa.array(range(40), pa.int64()), pa.array(vals, pa.large_binary()), s], schema=v1)
        ds = lance.write_dataset(t, p, data_storage_version=dsv, max_rows_per_file=25)
        ds.delete("id % 7 = 1")
    ext = os.path.join(root, "external.bin")
    with open(ext, "wb") as f:
        f.write(bytes(range(256)) * 40)
    uri = "file://" + os.path.abspath(ext)
    p = out["v2"] = os.path.join(root, "blob_v2.lance")
    schema = pa.schema([pa.field("id", pa.int64()), lb.blob_field("b")])

    def batch(start: int) -> pa.Table:
        vals = [b"inline", None, b"p" * 100_000, b"d" * 5_000_000, lb.Blob(uri=uri),
                lb.Blob(uri=uri, position=7, size=300), b""]
        return pa.table({"id": pa.array(range(start, start + len(vals)), pa.int64()),
                         "b": lb.blob_array(vals)}, schema=schema)
    lance.write_dataset(batch(0), p, allow_external_blob_outside_bases=True)
    ds = lance.write_dataset(batch(10), p, mode="append", allow_external_blob_outside_bases=True)
    ds.delete("id = 2")
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    return out


def make_managed_blob_table(path: str) -> None:
    """Managed blobs (reader/writer flag 16384): blob objects the table manages, referenced by path."""
    lance = _lance()
    from lance.blob import BlobDescriptorArrayBuilder
    os.makedirs(os.path.join(path, "objects"), exist_ok=True)
    with open(os.path.join(path, "objects", "obj.bin"), "wb") as f:
        f.write(b"hello managed blob world")
    b = BlobDescriptorArrayBuilder("b")
    b.append_managed("objects/obj.bin", 0, 5)
    b.append_null()
    b.append_inline(b"inl")
    b.append_managed("objects/obj.bin", 6, 7)
    schema = pa.schema([pa.field("id", pa.int64()), b.field], metadata={"lance.blob.managed": "true"})
    lance.write_dataset(pa.Table.from_arrays([pa.array([1, 2, 3, 4], pa.int64()), b.finish()], schema=schema), path)


def make_branch_and_clone(path: str, clone: str) -> None:
    """A branch with its own writes and a shallow clone of a tag, written after each other."""
    lance = _lance()
    ds = lance.write_dataset(rows(0, 80), path, max_rows_per_file=40)
    ds.tags.create("start", ds.version)
    ds = lance.write_dataset(rows(80, 40), path, mode="append")
    ds.create_branch("exp", "start")
    br = lance.dataset(path).checkout_version(("exp", None))
    br = lance.write_dataset(rows(500, 30), br, mode="append")
    br.delete("id % 4 = 0")
    br.add_columns({"z": "id + 1"})
    lance.dataset(path).shallow_clone(clone, "start")
    c = lance.write_dataset(rows(900, 10), clone, mode="append")
    c.update({"name": "'cloned'"}, where="id < 5")

