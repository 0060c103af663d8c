"""The change feed of one small commit: ``lance_duck.changes(v, v+1)`` vs pylance's ``delta()`` vs
reading both versions and diffing them in DuckDB.

    python bench/changes.py [--rows 4000000] [--runs 3] [--dir /tmp/ld_bench]

Writes (once, cached in --dir) the benchmark table of ``duckdb_queries.py`` (8 columns, four
fragments, ``id % 1000 = 3`` deleted) with stable row ids, then one ``merge_insert`` commit that
changes 0.1% of the rows: ``rows / 2000`` updated (scattered ids), ``rows / 4000`` deleted
(``when_not_matched_by_source_delete``) and ``rows / 4000`` inserted. Times, interleaved, medians
of --runs after a warm-up:

* ``lance_duck.changes(uri, v, v + 1)`` read whole, and filtered to delta()'s content (inserts and
  post-images, then the deleted ids with ``columns=[]``): the filter on ``_change_type`` is applied
  before values are read;
* lance_duck's ``delta()`` (the three readers);
* pylance ``delta(begin_version=v, end_version=v + 1)``: inserted rows + updated rows + deleted ids;
* full diff: both versions read whole by lance_duck (with ``_rowid``) and diffed in DuckDB
  (rows only in one version, and rows of the same id whose values differ).

The three answers are checked to agree (ids inserted, updated, deleted). Bytes: what lance_duck's
FileIO reads for the change feed, against the bytes of the changed fragments' data files (fragments
whose manifest entry differs between v and v + 1, both versions' files).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

import duckdb
import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import interleaved, write_table  # noqa: E402
from duckdb_queries import make_table  # noqa: E402


LIKE_DELTA = "_change_type IN ('insert', 'update_postimage')"


def prepare(d: str, n: int) -> tuple[str, int]:
    import lance
    path = os.path.join(d, f"changes_{n}.lance")
    if os.path.exists(path):
        ds = lance.dataset(path)
        if ds.version == 3:
            return path, 2
        shutil.rmtree(path)
    t0 = time.perf_counter()
    write_table(path, make_table(n), enable_stable_row_ids=True)      # v1 write, v2 delete
    ds = lance.dataset(path)
    rng = np.random.default_rng(7)
    upd = np.sort(rng.choice(n, n // 2000, replace=False))
    upd = upd[upd % 1000 != 3]
    cur = ds.to_table(filter=f"id IN ({','.join(map(str, upd))})")
    cur = cur.set_column(cur.schema.get_field_index("i"), "i", pa.compute.add(cur.column("i"), 1))
    new = make_table(n // 4000)
    new = new.set_column(0, "id", pa.array(np.arange(n, n + n // 4000, dtype=np.int64)))
    src = pa.concat_tables([cur, new.cast(cur.schema)])
    (ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
       .when_not_matched_by_source_delete("id % 4000 = 7").execute(src))
    print(f"wrote {n} rows + a 0.1% commit in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return path, 2


class ByteCounter:
    """Bytes lance_duck's FileIO reads, by kind of file (data, deletions, manifests, other)."""

    def __init__(self):
        from lance_duck.io import fs as fs_mod
        self.fs = fs_mod
        self.counts: dict[str, int] = {}
        orig_ranges = fs_mod.InputFile.read_ranges
        orig_bytes = fs_mod.FileIO.read_bytes
        counter = self

        def read_ranges(f, ranges):
            counter.add(f.path, sum(n for _, n in ranges))
            return orig_ranges(f, ranges)

        def read_bytes(io, path):
            out = orig_bytes(io, path)
            counter.add(path, len(out))
            return out
        fs_mod.InputFile.read_ranges = read_ranges
        fs_mod.FileIO.read_bytes = read_bytes

    def add(self, path: str, n: int) -> None:
        kind = next((k for k in ("/data/", "/_deletions/", "/_versions/", "/_transactions/") if k in path), "other")
        self.counts[kind] = self.counts.get(kind, 0) + n

    def reset(self) -> None:
        self.counts = {}


def changed_fragment_bytes(path: str, v: int) -> int:
    import lance
    a = {f.fragment_id: f for f in lance.dataset(path, version=v).get_fragments()}
    b = {f.fragment_id: f for f in lance.dataset(path, version=v + 1).get_fragments()}
    files = set()
    for x, y in ((a, b), (b, a)):
        for fid, f in x.items():
            g = y.get(fid)
            if g is None or g.metadata != f.metadata:
                files |= {d.path for d in f.data_files()}
    return sum(os.path.getsize(os.path.join(path, "data", p)) for p in files)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/ld_bench")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    path, v = prepare(args.dir, args.rows)

    import lance
    import lance_duck
    counter = ByteCounter()

    def ours():
        return lance_duck.changes(path, v, v + 1).read_all()

    def ours_like_delta():
        # what delta() returns: inserted rows and updated rows as they are now, deleted ids
        rows = lance_duck.changes(path, v, v + 1, filter=LIKE_DELTA).read_all()
        ids = lance_duck.changes(path, v, v + 1, columns=[], filter="_change_type = 'delete'").read_all()
        return rows, ids

    def our_delta():
        d = lance_duck.dataset(path).delta(begin_version=v, end_version=v + 1)
        return (d.get_inserted_rows().read_all(), d.get_updated_rows().read_all(), d.get_deleted_row_ids().read_all())

    def theirs():
        d = lance.dataset(path).delta(begin_version=v, end_version=v + 1)
        return (d.get_inserted_rows().read_all(), d.get_updated_rows().read_all(), d.get_deleted_row_ids().read_all())

    def full_diff():
        con = duckdb.connect()
        old = lance_duck.dataset(path, version=v).to_table(with_row_id=True)    # noqa: F841 (DuckDB reads it)
        new = lance_duck.dataset(path, version=v + 1).to_table(with_row_id=True)  # noqa: F841
        cols = ", ".join(n for n in new.column_names if n != "_rowid")
        return con.sql(f"""
            select coalesce(n._rowid, o._rowid) as _rowid,
                   case when o._rowid is null then 'insert' when n._rowid is null then 'delete' else 'update' end as kind
            from new n full outer join old o on n._rowid = o._rowid
            where o._rowid is null or n._rowid is null or (n.{cols.replace(', ', ', n.')}) is distinct from
                  (o.{cols.replace(', ', ', o.')})""").fetchall()

    got = ours()
    kinds = got.column("_change_type").to_pylist()
    ids = got.column("_rowid").to_pylist()
    mine = {k: sorted(i for i, t in zip(ids, kinds) if t == k) for k in ("insert", "update_postimage", "delete")}
    ins, upd, dele = theirs()
    assert mine["insert"] == sorted(ins.column("_rowid").to_pylist()), "inserted rows differ from pylance's"
    assert mine["update_postimage"] == sorted(upd.column("_rowid").to_pylist()), "updated rows differ"
    assert mine["delete"] == sorted(dele.column("_rowid").to_pylist()), "deleted ids differ"
    diff = full_diff()
    want = {k: sorted(i for i, t in diff if t == k) for k in ("insert", "update", "delete")}
    assert (want["insert"], want["update"], want["delete"]) == (mine["insert"], mine["update_postimage"],
                                                                mine["delete"]), "the full diff disagrees"
    counter.reset()
    ours()
    read = dict(counter.counts)
    changed = changed_fragment_bytes(path, v)

    def timed(fn):
        def run():
            t0 = time.perf_counter()
            fn()
            return time.perf_counter() - t0, 0.0
        return run

    counter.reset()
    ours_like_delta()
    read_like = dict(counter.counts)
    for a, b in zip(our_delta(), (ins, upd, dele)):
        assert a.equals(b) or sorted(a.column("_rowid").to_pylist()) == sorted(b.column("_rowid").to_pylist())
    res = interleaved({"changes": timed(ours), "like": timed(ours_like_delta), "our_delta": timed(our_delta),
                       "delta": timed(theirs),
                       "diff": timed(full_diff)}, args.runs)
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    data_total = sum(os.path.getsize(os.path.join(path, "data", p)) for p in os.listdir(os.path.join(path, "data")))
    print(f"rows {args.rows}, commit v{v}->v{v + 1}: {len(mine['insert'])} inserted, "
          f"{len(mine['update_postimage'])} updated, {len(mine['delete'])} deleted; load average {' '.join(load)}")
    c, lk, dl, df = res["changes"][0], res["like"][0], res["delta"][0], res["diff"][0]
    print(f"{'changes(v, v+1)':<22} {c * 1e3:10.1f} ms   (pre-images and deleted rows' values included)")
    print(f"{'changes(..., filter)':<22} {lk * 1e3:10.1f} ms   (delta()'s content: {LIKE_DELTA}, + deleted ids); "
          f"/ delta = {lk / dl:.3f}x")
    print(f"{'lance_duck delta()':<22} {res['our_delta'][0] * 1e3:10.1f} ms   / pylance delta = "
          f"{res['our_delta'][0] / dl:.3f}x")
    print(f"{'pylance delta()':<22} {dl * 1e3:10.1f} ms   changes / delta = {c / dl:.3f}x (target <= 1.0)")
    print(f"{'full diff in DuckDB':<22} {df * 1e3:10.1f} ms   changes / diff  = {c / df:.4f}x (target <= 0.05)")
    data = read.get("/data/", 0)
    print(f"bytes read by changes(): data {data:,}, deletions {read.get('/_deletions/', 0):,}, manifests "
          f"{read.get('/_versions/', 0):,}, transactions {read.get('/_transactions/', 0):,}, other {read.get('other', 0):,}")
    print(f"bytes read with the delta()-like filter: data {read_like.get('/data/', 0):,}")
    print(f"changed fragments' data files: {changed:,} bytes (of {data_total:,}); data read / changed = "
          f"{data / max(changed, 1):.3f}x (target <= 2)")


if __name__ == "__main__":
    main()
