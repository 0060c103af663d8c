"""The change feed of one small commit: ``lance_duck.changes(v, v+1)`` and lance_duck's ``delta()``
vs pylance's ``delta()``, and vs reading both versions and diffing them in DuckDB.

    python bench/changes.py [--rows 4000000] [--runs 5] [--diff-runs 3] [--dir /tmp/ld_bench]

Writes (once, cached in --dir) the benchmark table of ``duckdb_queries.py`` (8 columns, four
fragments, ``id % 1000 = 3`` deleted) with stable row ids, then one ``merge_insert`` commit that
changes 0.1% of the rows: ``rows / 2000`` updated (scattered ids), ``rows / 4000`` deleted
(``when_not_matched_by_source_delete``) and ``rows / 4000`` inserted. Times (wall and process CPU,
medians of --runs interleaved rounds after a warm-up), like for like:

* each of ``delta()``'s readers (``get_inserted_rows``, ``get_updated_rows``,
  ``get_deleted_row_ids``, a dataset opened per call), lance_duck vs pylance, and the three together;
* ``changes()`` filtered to delta()'s content (inserts and post-images, then the deleted ids with
  ``columns=[]``) vs pylance's three readers;
* the full feed (pre-images and deleted rows' values included) vs what it takes pylance to return
  the same content: ``delta()`` plus ``_take_rows`` of the updated and deleted ids at ``v``;
* lance_duck's calls again as a first read of the table (what lance_duck keeps of it emptied: a
  fresh pylance dataset keeps nothing either), and after ``lance_duck.clear_caches()``;
* the full diff: both versions read whole by lance_duck (with ``_rowid``) and diffed in DuckDB.

Every pair is checked to return the same rows. Bytes: what lance_duck's FileIO reads for the
change feed, against the bytes of the changed fragments' data files (fragments whose manifest
entry differs between v and v + 1, both versions' files).
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


DELTA_METHODS = ("get_inserted_rows", "get_updated_rows", "get_deleted_row_ids")
PRE = "_change_type IN ('update_preimage', 'delete')"


def by_rowid(t: pa.Table) -> pa.Table:
    return t.sort_by("_rowid")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--diff-runs", type=int, default=3, help="rounds of the (slow) full diff, timed apart")
    ap.add_argument("--dir", default="/tmp/ld_bench")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    path, v = prepare(args.dir, args.rows)

    import lance
    import lance_duck
    counter = ByteCounter()

    # -- the calls compared -------------------------------------------------------------------
    def delta_call(mod, method):
        return lambda: getattr(mod.dataset(path).delta(begin_version=v, end_version=v + 1), method)().read_all()

    def both_delta(mod):
        def run():
            d = mod.dataset(path).delta(begin_version=v, end_version=v + 1)
            return tuple(getattr(d, m)().read_all() for m in DELTA_METHODS)
        return run

    def ours_full():
        return lance_duck.changes(path, v, v + 1).read_all()

    def ours_like_delta():
        # delta()'s content from the feed: inserted rows and updated rows as they are now, deleted ids
        rows = lance_duck.changes(path, v, v + 1, filter=LIKE_DELTA).read_all()
        ids = lance_duck.changes(path, v, v + 1, columns=[], filter="_change_type = 'delete'").read_all()
        return rows, ids

    def theirs_full_content():
        # the full feed's content with pylance: delta() plus the values at v of the rows updated or
        # deleted (pre-images, deleted rows' last values), taken by stable row id
        d = lance.dataset(path).delta(begin_version=v, end_version=v + 1)
        ins, upd, dele = (getattr(d, m)().read_all() for m in DELTA_METHODS)
        ids = np.concatenate([upd.column("_rowid").to_numpy(), dele.column("_rowid").to_numpy()])
        pre = lance.dataset(path, version=v)._take_rows(np.sort(ids).tolist())
        return ins, upd, dele, pre

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

    # -- same answers -------------------------------------------------------------------------
    got = ours_full()
    kinds = got.column("_change_type").to_pylist()
    ids = got.column("_rowid").to_pylist()
    mine = {k: sorted(i for i, t in zip(ids, kinds) if t == k) for k in ("insert", "update_postimage", "delete")}
    ins, upd, dele = both_delta(lance)()
    assert mine["insert"] == sorted(ins.column("_rowid").to_pylist()), "inserted rows differ from pylance's"
    assert mine["update_postimage"] == sorted(upd.column("_rowid").to_pylist()), "updated rows differ"
    assert mine["delete"] == sorted(dele.column("_rowid").to_pylist()), "deleted ids differ"
    for name, a, b in zip(DELTA_METHODS, both_delta(lance_duck)(), (ins, upd, dele)):
        assert a.schema == b.schema and by_rowid(a).equals(by_rowid(b)), f"lance_duck {name} differs from pylance's"
    data_cols = [c for c in ins.column_names if not c.startswith("_")]
    rows, del_ids = ours_like_delta()
    assert by_rowid(rows.select([*data_cols, "_rowid"])).equals(
        by_rowid(pa.concat_tables([ins, upd]).select([*data_cols, "_rowid"]))), "filtered feed differs from delta()"
    assert sorted(del_ids.column("_rowid").to_pylist()) == mine["delete"]
    pre = got.filter(pa.compute.is_in(got.column("_change_type"), pa.array(["update_preimage", "delete"])))
    assert by_rowid(pre.select([*data_cols, "_rowid"])).select(data_cols).equals(
        theirs_full_content()[3].select(data_cols)), "pre-images differ from pylance's take at v"
    diff = full_diff()
    want = {k: sorted(i for i, t in diff if t == k) for k in ("insert", "update", "delete")}
    assert (want["insert"], want["update"], want["delete"]) == (mine["insert"], mine["update_postimage"],
                                                                mine["delete"]), "the full diff disagrees"

    # -- bytes ----------------------------------------------------------------------------------
    lance_duck.clear_caches()
    counter.reset()
    ours_full()
    read = dict(counter.counts)
    counter.reset()
    ours_full()
    read_warm = dict(counter.counts)
    counter.reset()
    lance_duck.changes(path, v, v + 1, filter=PRE).read_all()
    read_pre = dict(counter.counts)
    counter.reset()
    ours_like_delta()
    read_like = dict(counter.counts)
    changed = changed_fragment_bytes(path, v)

    # -- time -----------------------------------------------------------------------------------
    def timed(fn, before=None):
        # warm (default): the same call once, untimed, right before (interleaving would otherwise
        # leave a call after another's clear_caches() half cold); cold: clear_caches() instead
        before = before or fn

        def run():
            before()
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            return time.perf_counter() - t0, time.process_time() - c0
        return run

    from lance_duck import _state

    def first_read():
        # what lance_duck keeps of this table (versions, manifests, file metadata, deletions): as
        # a fresh pylance dataset, which keeps nothing of an earlier one; the process's decoder
        # tables (bit-unpacking plans, FSST tables, bound filters) stay, like pylance's compiled code
        for name in ("snapshots", "small_files", "footers", "file_metadata", "decoded_deletions"):
            if name in _state.CACHES:       # (an older lance_duck has no kept versions)
                _state.cache(name).clear()

    cold = lance_duck.clear_caches
    runners = {}
    for m in DELTA_METHODS:
        runners[f"ours {m}"] = timed(delta_call(lance_duck, m))
        runners[f"theirs {m}"] = timed(delta_call(lance, m))
    runners.update({
        "ours delta": timed(both_delta(lance_duck)), "theirs delta": timed(both_delta(lance)),
        "ours delta first": timed(both_delta(lance_duck), first_read),
        "ours delta cold": timed(both_delta(lance_duck), cold),
        "like": timed(ours_like_delta), "like first": timed(ours_like_delta, first_read),
        "like cold": timed(ours_like_delta, cold),
        "full": timed(ours_full), "full first": timed(ours_full, first_read),
        "theirs full content": timed(theirs_full_content)})
    res = interleaved(runners, args.runs)
    dres = interleaved({"diff": timed(full_diff)}, args.diff_runs)
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    data_total = sum(os.path.getsize(os.path.join(path, "data", p)) for p in os.listdir(os.path.join(path, "data")))
    print(f"rows {args.rows}, commit v{v}->v{v + 1}: {len(mine['insert'])} inserted, "
          f"{len(mine['update_postimage'])} updated, {len(mine['delete'])} deleted; load average {' '.join(load)}")
    print(f"medians of {args.runs} interleaved rounds (full diff: {args.diff_runs}); wall ms (CPU ms of all "
          "threads); each call timed right after the same call (warm), after the caches of this table "
          "were emptied ('first read'), or after lance_duck.clear_caches()")

    def row(label, ours_key, theirs_key, note=""):
        (wo, co), (wt, ct) = res[ours_key], res[theirs_key]
        print(f"{label:<44} {wo * 1e3:8.1f} ({co * 1e3:6.1f})  vs {wt * 1e3:8.1f} ({ct * 1e3:6.1f})  "
              f"= {wo / wt:5.2f}x wall {co / max(ct, 1e-9):5.2f}x CPU {note}")

    print("like for like, lance_duck vs pylance (same rows, columns, types):")
    for m in DELTA_METHODS:
        row(f"  delta().{m}()", f"ours {m}", f"theirs {m}")
    row("  delta(): the three readers", "ours delta", "theirs delta", "(target <= 1.0)")
    row("  the same, first read of the table", "ours delta first", "theirs delta")
    row("  the same, every process cache cleared", "ours delta cold", "theirs delta")
    row("  changes() filtered to delta()'s content", "like", "theirs delta", "(target <= 1.0)")
    row("  the same, first read of the table", "like first", "theirs delta")
    row("  the same, every process cache cleared", "like cold", "theirs delta")
    row("  full feed vs delta() + take of pre-images", "full", "theirs full content")
    row("  the same, first read of the table", "full first", "theirs full content")
    print("apples to oranges (the full feed carries pre-images and deleted rows' values; delta() does not):")
    row("  full feed vs delta()", "full", "theirs delta", "(issue's target <= 1.0)")
    dw, dc = dres["diff"]
    fw = res["full"][0]
    print(f"  full diff in DuckDB {dw * 1e3:.0f} ms ({dc * 1e3:.0f}); full feed / diff = {fw / dw:.4f}x "
          "(target <= 0.05)")
    data = read.get("/data/", 0)
    print(f"bytes read by changes() after clear_caches(): data {data:,}, deletions {read.get('/_deletions/', 0):,}, "
          f"manifests {read.get('/_versions/', 0):,}, transactions {read.get('/_transactions/', 0):,}, "
          f"other {read.get('other', 0):,}; a second call: {sum(read_warm.values()):,} in all")
    print(f"data bytes of the pre-images and deleted rows alone (filter {PRE}): {read_pre.get('/data/', 0):,}; "
          f"with delta()'s content: {read_like.get('/data/', 0):,}")
    print(f"changed fragments' data files: {changed:,} bytes (of {data_total:,}); data read / changed = "
          f"{data / max(changed, 1):.3f}x (target <= 2)")


if __name__ == "__main__":
    main()
