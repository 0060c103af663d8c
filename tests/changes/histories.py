"""pylance-written histories for the change readers: one commit of each kind, with and without
stable row ids. Version numbers (both tables):

1 overwrite (40 rows, 3 fragments)   2 append (10)        3 delete    4 update (rewrite_rows)
5 merge_insert (2 updated, 2 new)    6 add_columns (y)    7 reserve fragments + 8 compaction
9 create_scalar_index (BTREE)        10 delete            11 restore of version 6
12 update                            13 append (an empty-string and a null row)
Tags: ``release-2`` -> 2, ``after-merge`` -> 5.
"""
from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa

LAST_VERSION = 13


def _rows(ids, x0: float = 0.0) -> pa.Table:
    ids = np.asarray(ids, dtype=np.int64)
    return pa.table({"id": pa.array(ids, pa.int64()), "s": [f"s{i}" for i in ids],
                     "x": pa.array(ids * 1.5 + x0)})


def make_history(path: str, stable: bool) -> str:
    """Write the history above at ``path`` (``stable``: ``enable_stable_row_ids``)."""
    ds = lance.write_dataset(_rows(range(40)), path, enable_stable_row_ids=stable, max_rows_per_file=16)
    ds = lance.write_dataset(_rows(range(40, 50), 0.25), path, mode="append")
    ds.delete("id % 7 = 3")
    ds.update({"s": "'upd'"}, "id < 5")
    src = pa.table({"id": pa.array([1, 2, 100, 101], pa.int64()), "s": ["m1", "m2", "m100", "m101"],
                    "x": pa.array([0.1, 0.2, 0.3, 0.4])})
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
    ds.add_columns({"y": "id * 2"})
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    ds.create_scalar_index("id", "BTREE")
    ds.delete("id = 20")
    lance.dataset(path, version=6).restore()
    ds = lance.dataset(path)
    ds.update({"x": "x + 1"}, "id >= 45")
    extra = pa.table({"id": pa.array([200, 201], pa.int64()), "s": ["", None], "x": pa.array([None, 2.5]),
                      "y": pa.array([400, None], pa.int64())})
    ds = lance.write_dataset(extra, path, mode="append")
    ds.tags.create("release-2", 2)
    ds.tags.create("after-merge", 5)
    assert ds.version == LAST_VERSION, ds.version
    return path
