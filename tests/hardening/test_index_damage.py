"""Damaged and lying scalar-index files never change a query's rows.

A pylance-written table (three fragments) carries one index of each scalar type: BTREE (``id``,
``j``, ``grp``), BITMAP (``cat``), LABEL_LIST (``tags``), ZONEMAP (``amount``), BLOOMFILTER (``k``),
NGRAM (``txt``). Each case copies it, damages one index file deterministically -- a bit flip, a
random overwrite, a zeroed run, a truncation at seeded positions -- and runs that index's queries
through ``to_table`` and ``count_rows``. Allowed outcomes: exactly the rows pylance reads from the
undamaged table without an index, or ``CorruptFileError`` naming the damaged file. Fewer or more
rows, or any other exception, fail.

Lying metadata (the manifest edited, the files intact): a fragment bitmap naming a fragment
appended after the index was built, a twin's files swapped in (another column's, another type's),
recorded file sizes that disagree with the files. Same allowed outcomes.
"""
from __future__ import annotations

import os
import random
import shutil
import struct
import warnings

import numpy as np
import pyarrow as pa
import pytest

import lance_duck
from lance_duck._proto import index_pb2
from lance_duck.errors import CorruptFileError
from lance_duck.table.manifest import encode_manifest
from lance_duck.trace import decode_trace

from .table_fixtures import latest_manifest_path, split_manifest

ROWS, PER_FILE = 3000, 1000
SEEDS = 6                       # positions per (file, kind)
KINDS = ("flip", "overwrite", "zero", "truncate")

QUERIES = {
    "BTree": ["id = 1234", "id IN (5, 1500, 2999)", "id >= 100 AND id < 150", "j = 77", "grp = 3"],
    "Bitmap": ["cat = 'c1'", "cat IN ('c1', 'c8')", "cat IS NULL"],
    "LabelList": ["array_has_any(tags, ['t1'])", "array_has_all(tags, ['t3', 'u3'])"],
    "ZoneMap": ["amount < 50", "amount = 600.25"],
    "BloomFilter": ["k = 77", "k IN (5, 9000)"],
    "NGram": ["contains(txt, 'word13')", "contains(txt, 'row 12')"],
}


def _batch(start: int, n: int) -> pa.Table:
    i = np.arange(start, start + n)
    return pa.table({
        "id": pa.array(i, pa.int64()),
        "j": pa.array(i * 3 % 4001, pa.int64()),
        "grp": pa.array([None if x % 9 == 0 else int(x % 40) for x in i], pa.int32()),
        "cat": pa.array([None if x % 11 == 0 else f"c{x % 13}" for x in i], pa.string()),
        "amount": pa.array(i * 0.25, pa.float64()),
        "k": pa.array(i * 7919 % 10007, pa.int64()),
        "tags": pa.array([[f"t{x % 17}", f"u{x % 5}"] for x in i], pa.list_(pa.string())),
        "txt": pa.array([f"row {x} word{x % 17}" for x in i], pa.string()),
    })


@pytest.fixture(scope="session")
def lance_mod():
    import lance
    return lance


@pytest.fixture(scope="session")
def indexed(tmp_path_factory, lance_mod):
    """(path, {index type: [(name, uuid)]}, {query: pylance's rows without an index})."""
    warnings.simplefilter("ignore", DeprecationWarning)
    path = str(tmp_path_factory.mktemp("idx_damage") / "t.lance")
    ds = lance_mod.write_dataset(_batch(0, ROWS), path, max_rows_per_file=PER_FILE)
    for col in ("id", "j", "grp"):
        ds.create_scalar_index(col, "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    ds.create_scalar_index("tags", "LABEL_LIST")
    ds.create_scalar_index("amount", "ZONEMAP")
    ds.create_scalar_index("k", "BLOOMFILTER")
    ds.create_scalar_index("txt", "NGRAM")
    ds = lance_mod.dataset(path)
    segs: dict[str, list] = {}
    for d in ds.describe_indices():
        for s in d.segments:
            segs.setdefault(d.index_type, []).append((d.name, s.uuid))
    truth = {q: ds.to_table(filter=q, use_scalar_index=False) for qs in QUERIES.values() for q in qs}
    return path, segs, truth


def _damage(raw: bytes, kind: str, rng: random.Random) -> bytes:
    b = bytearray(raw)
    pos = rng.randrange(len(b))
    if kind == "flip":
        b[pos] ^= 1 << rng.randrange(8)
    elif kind == "overwrite":
        n = len(b[pos:pos + rng.randrange(1, 64)])
        b[pos:pos + n] = bytes(rng.randrange(256) for _ in range(n))
    elif kind == "zero":
        n = len(b[pos:pos + rng.randrange(1, 64)])
        b[pos:pos + n] = bytes(n)
    else:
        del b[pos:]
    return bytes(b)


def _outcome(path: str, flt: str, want: pa.Table, damaged_file: str, how: str) -> str | None:
    """None when the read is allowed, else what went wrong."""
    try:
        got = lance_duck.dataset(path).to_table(filter=flt) if how == "to_table" \
            else lance_duck.dataset(path).count_rows(filter=flt)
    except CorruptFileError as exc:
        return None if os.path.basename(damaged_file) in str(exc) else f"CorruptFileError not naming it: {exc}"
    except Exception as exc:      # noqa: BLE001 - any other exception is the failure reported
        return f"{type(exc).__name__}: {exc}"
    if how == "count_rows":
        return None if got == want.num_rows else f"count {got}, want {want.num_rows}"
    return None if got.equals(want) else f"{got.num_rows} rows, want {want.num_rows} (or other rows)"


@pytest.mark.parametrize("index_type", list(QUERIES))
def test_damaged_index_files_give_the_true_rows_or_corrupt_file_error(indexed, tmp_path, index_type):
    path, segs, truth = indexed
    failures, cases = [], 0
    for name, uuid in segs[index_type]:
        idir = os.path.join(path, "_indices", uuid)
        for fname in sorted(os.listdir(idir)):
            raw = open(os.path.join(idir, fname), "rb").read()
            rng = random.Random(f"{name}/{fname}")
            for kind in KINDS:
                for seed in range(SEEDS):
                    cases += 1
                    case = str(tmp_path / f"{name}-{fname}-{kind}-{seed}.lance")
                    shutil.copytree(path, case, copy_function=os.link)    # hard links: cheap
                    bad = os.path.join(case, "_indices", uuid, fname)
                    os.unlink(bad)                                         # (never write through a link)
                    with open(bad, "wb") as f:
                        f.write(_damage(raw, kind, rng))
                    for flt in QUERIES[index_type]:
                        for how in ("to_table", "count_rows"):
                            err = _outcome(case, flt, truth[flt], bad, how)
                            if err:
                                failures.append((fname, kind, seed, flt, how, err))
                    shutil.rmtree(case)
    assert cases >= len(KINDS) * SEEDS
    assert not failures, f"{len(failures)} bad outcomes in {cases} cases: {failures[:10]}"


def test_a_damaged_index_is_not_used_and_the_trace_names_its_file(indexed, tmp_path):
    path, segs, truth = indexed
    case = str(tmp_path / "t.lance")
    shutil.copytree(path, case)
    (_, uuid), = segs["Bitmap"]
    bad = os.path.join(case, "_indices", uuid, "bitmap_page_lookup.lance")
    raw = bytearray(open(bad, "rb").read())
    cookie = raw.index(struct.pack("<I", 12346))      # the first roaring bitmap's cookie
    raw[cookie] ^= 0xFF
    open(bad, "wb").write(bytes(raw))
    with decode_trace() as trace:
        got = lance_duck.dataset(case).to_table(filter="cat IS NULL")     # the null key's map: the first
    want = lance_duck.dataset(path).to_table(filter="cat IS NULL", use_scalar_index=False)
    assert got.equals(want)
    unused = trace.values("index:unused")
    assert unused and "bitmap_page_lookup.lance" in unused[0] and "roaring" in unused[0]


# -- lying metadata ---------------------------------------------------------------------------------
def _edit_index_section(table: str, edit) -> None:
    """Apply ``edit(IndexSection)`` to the latest manifest of ``table`` (rewritten in place)."""
    mp = latest_manifest_path(table)
    raw = open(mp, "rb").read()
    _, m = split_manifest(raw)
    (n,) = struct.unpack_from("<I", raw, m.index_section)
    section = index_pb2.IndexSection()
    section.ParseFromString(raw[m.index_section + 4: m.index_section + 4 + n])
    edit(section)
    blob = section.SerializeToString()
    m.index_section = 0
    with open(mp, "wb") as f:
        f.write(encode_manifest(m, struct.pack("<I", len(blob)) + blob))


def _by_name(section, name: str):
    (meta,) = [x for x in section.indices if x.name == name]
    return meta


def _assert_true_rows(table: str, queries: list[str], truth: dict[str, pa.Table], files: list[str]) -> None:
    for flt in queries:
        for how in ("to_table", "count_rows"):
            err = _outcome(table, flt, truth[flt], files[0], how)
            if err and files[1:]:
                err = _outcome(table, flt, truth[flt], files[1], how)
            assert err is None, (flt, how, err)


def _swap(table: str, a: str, b: str, files: list[str]) -> None:
    """Swap the files of segments ``a`` and ``b`` and record each file's size as the manifest
    records the other's (the twin's files now sit where the manifest expects its own)."""
    for f in files:
        pa_, pb = os.path.join(table, "_indices", a, f), os.path.join(table, "_indices", b, f)
        os.rename(pa_, pa_ + ".tmp")
        os.rename(pb, pa_)
        os.rename(pa_ + ".tmp", pb)

    def edit(section):
        for meta in section.indices:
            u = meta.uuid.uuid.hex()
            d = os.path.join(table, "_indices", str(__import__("uuid").UUID(hex=u)))
            for fl in meta.files:
                fl.size_bytes = os.path.getsize(os.path.join(d, fl.path))
    _edit_index_section(table, edit)


@pytest.mark.parametrize("a,b,files,queries", [
    ("id_idx", "j_idx", ["page_lookup.lance", "page_data.lance"], ["id = 1234", "j = 77"]),
    ("id_idx", "grp_idx", ["page_lookup.lance", "page_data.lance"], ["id = 1234", "grp = 3"]),
    ("cat_idx", "tags_idx", ["bitmap_page_lookup.lance"], ["cat = 'c1'", "array_has_any(tags, ['t1'])"]),
], ids=["btree-twin-same-type", "btree-twin-other-type", "bitmap-label-list"])
def test_a_twins_files_swapped_in_never_change_rows(indexed, tmp_path, a, b, files, queries):
    """Same-type twins of equal files sizes are indistinguishable from the files alone; the
    manifest's recorded sizes (swapped here along with the files) or the file's value type and
    metadata tell the others apart."""
    path, segs, truth = indexed
    table = str(tmp_path / "t.lance")
    shutil.copytree(path, table)
    uuid_of = {n: u for v in segs.values() for n, u in v}
    ua, ub = uuid_of[a], uuid_of[b]
    if a == "id_idx" and b == "j_idx":         # files swapped, the manifest's sizes left alone
        for f in files:
            pa_, pb = os.path.join(table, "_indices", ua, f), os.path.join(table, "_indices", ub, f)
            os.rename(pa_, pa_ + ".tmp")
            os.rename(pb, pa_)
            os.rename(pa_ + ".tmp", pb)
        assert any(os.path.getsize(os.path.join(table, "_indices", ua, f))
                   != os.path.getsize(os.path.join(table, "_indices", ub, f)) for f in files)
    else:
        _swap(table, ua, ub, files)
    bad = [os.path.join(table, "_indices", u, files[0]) for u in (ua, ub)]
    _assert_true_rows(table, queries, truth, bad)


def test_recorded_file_sizes_that_disagree_never_change_rows(indexed, tmp_path):
    path, segs, truth = indexed
    table = str(tmp_path / "t.lance")
    shutil.copytree(path, table)

    def edit(section):
        for meta in section.indices:
            for fl in meta.files:
                fl.size_bytes += 8
    _edit_index_section(table, edit)
    for typ, qs in QUERIES.items():
        for flt in qs:
            for how in ("to_table", "count_rows"):
                try:
                    got = lance_duck.dataset(table).to_table(filter=flt) if how == "to_table" \
                        else lance_duck.dataset(table).count_rows(filter=flt)
                except CorruptFileError as exc:
                    assert "_indices" in str(exc), exc
                    continue
                want = truth[flt]
                assert (got.equals(want) if how == "to_table" else got == want.num_rows), (typ, flt, how)
    with decode_trace() as trace:
        lance_duck.dataset(table).to_table(filter="cat = 'c1'")
    assert any("the manifest records" in str(v) for v in trace.values("index:unused"))


@pytest.fixture(scope="session")
def appended(tmp_path_factory, lance_mod) -> str:
    """Two fragments indexed (BTREE id, BITMAP cat, ZONEMAP amount...), then a third appended."""
    path = str(tmp_path_factory.mktemp("idx_lie") / "t.lance")
    ds = lance_mod.write_dataset(_batch(0, 2000), path, max_rows_per_file=PER_FILE)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("cat", "BITMAP")
    ds.create_scalar_index("tags", "LABEL_LIST")
    ds.create_scalar_index("amount", "ZONEMAP")
    ds.create_scalar_index("k", "BLOOMFILTER")
    ds.create_scalar_index("txt", "NGRAM")
    ds.insert(_batch(2000, 1000))
    return path


def test_a_fragment_bitmap_naming_a_later_fragment_never_drops_its_rows(appended, tmp_path, lance_mod):
    """The index built over fragments 0 and 1 claims fragment 2, appended after it: its rows are
    in no index file, so trusting the bitmap drops them (pylance does)."""
    table = str(tmp_path / "t.lance")
    shutil.copytree(appended, table)
    from lance_duck.index.roaring import decode_roaring

    def edit(section):
        for meta in section.indices:
            frags, _ = decode_roaring(meta.fragment_bitmap)
            assert sorted(frags.tolist()) == [0, 1]
            # a portable roaring bitmap of {0, 1, 2}: cookie, one container (key 0, 3 values)
            meta.fragment_bitmap = struct.pack("<IIHHI3H", 12346, 1, 0, 2, 16, 0, 1, 2)
    _edit_index_section(table, edit)
    ref = lance_mod.dataset(appended)
    for flt in ["id = 2500", "id >= 1990 AND id < 2010", "cat = 'c1'", "array_has_any(tags, ['t1'])",
                "amount = 600.25", "amount > 740", "k = 77", "contains(txt, 'row 25')"]:
        want = ref.to_table(filter=flt, use_scalar_index=False)
        assert lance_duck.dataset(table).to_table(filter=flt).equals(want), flt
        assert lance_duck.dataset(table).count_rows(filter=flt) == want.num_rows, flt


# -- strict roaring decoding ------------------------------------------------------------------------
def _bitmaps():
    from pyroaring import BitMap
    sparse = BitMap([3, 70000, 70001, 1 << 20])                  # array containers, 3 keys (no offsets)
    dense = BitMap(range(0, 60000, 2))                            # a bitmap container
    runs = BitMap(range(100, 5000))
    runs.run_optimize()                                           # a run container (cookie 12347)
    many = BitMap([k << 16 | 5 for k in range(6)] + list(range(10, 20)))   # >= 4 containers: offsets
    many.run_optimize()
    return {"sparse": sparse, "dense": dense, "runs": runs, "many": many}


@pytest.mark.parametrize("name", ["sparse", "dense", "runs", "many"])
def test_roaring_decodes_what_pyroaring_writes_and_refuses_its_damage(name):
    from lance_duck.index.roaring import decode_roaring
    bm = _bitmaps()[name]
    raw = bm.serialize()
    vals, used = decode_roaring(raw)
    assert used == len(raw) and vals.tolist() == list(bm)
    # every single-bit flip either raises or decodes to a consistent bitmap: never silently
    # past the bytes given, never values out of order
    for pos in range(0, min(len(raw), 64)):
        for bit in (0, 3, 7):
            b = bytearray(raw)
            b[pos] ^= 1 << bit
            try:
                got, n = decode_roaring(bytes(b))
            except CorruptFileError:
                continue
            assert n <= len(b) and bool((got[1:] > got[:-1]).all())


@pytest.mark.parametrize("damage,match", [
    (lambda b: b[:12] + b"\x00" + b[13:], "cookie"),
    (lambda b: b + b"\x00", "trailing"),
    (lambda b: b[:-1], "truncated"),
])
def test_a_row_tree_map_that_is_damaged_raises_naming_it(damage, match):
    from lance_duck.index.roaring import decode_row_tree_map
    bm = _bitmaps()["sparse"].serialize()
    tree = struct.pack("<III", 1, 7, len(bm)) + bm
    assert list(decode_row_tree_map(tree, "f.lance")) == [7]
    with pytest.raises(CorruptFileError, match=f"f.lance.*{match}"):
        decode_row_tree_map(damage(tree), "f.lance")


def test_roaring_refuses_unsorted_arrays_wrong_counts_and_bad_offsets():
    from lance_duck.index.roaring import decode_roaring
    ok = struct.pack("<IIHH", 12346, 1, 0, 2) + struct.pack("<I", 16) + struct.pack("<3H", 1, 5, 9)
    assert decode_roaring(ok)[0].tolist() == [1, 5, 9]
    unsorted = ok[:-6] + struct.pack("<3H", 1, 9, 5)
    bad_offset = ok[:12] + struct.pack("<I", 17) + ok[16:]
    keys_down = struct.pack("<IIHHHH", 12346, 2, 3, 0, 1, 0) + struct.pack("<II", 24, 26) + struct.pack("<HH", 1, 1)
    runs_over = struct.pack("<IBHH", 12347 | 0 << 16, 1, 0, 9) + struct.pack("<HHH", 1, 0xFFFA, 9)
    for raw, why in [(unsorted, "ascending"), (bad_offset, "offsets"), (keys_down, "keys"),
                     (runs_over, "run container")]:
        with pytest.raises(CorruptFileError, match=why):
            decode_roaring(raw)


# -- no false alarms ----------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def sound(tmp_path_factory, lance_mod) -> str:
    """9,000 rows in three fragments: BTREEs of three pages on nullable int8 / float (NaN) / string,
    date and uint16 columns, BITMAPs on a nullable string, a float with -0.0 / 0.0 / NaN keys and a
    nullable boolean, ZONEMAPs on the float and the date, a BLOOMFILTER on the uint16."""
    path = str(tmp_path_factory.mktemp("idx_sound") / "t.lance")
    i = np.arange(9000)
    t = pa.table({
        "small": pa.array([None if x % 9 == 0 else int(x % 200) - 100 for x in i], pa.int8()),
        "f": pa.array(np.where(i % 50 == 0, np.nan, (i % 3000) * 0.5), mask=i % 77 == 0),
        "s": pa.array([None if x % 13 == 0 else f"s{x % 5000:05d}" for x in i]),
        "cat": pa.array([None if x % 11 == 0 else f"c{x % 7}" for x in i]),
        "fb": pa.array(np.where(i % 50 == 0, np.nan, np.where(i % 7 == 0, -0.0, (i % 30) * 0.5)),
                       mask=i % 77 == 0),
        "b": pa.array([None if x % 10 == 0 else bool(x % 3) for x in i]),
        "d": pa.array(i % 400, pa.int32()).cast(pa.date32()),
        "u": pa.array((i * 7) % 1000, pa.uint16()),
    })
    ds = lance_mod.write_dataset(t, path, max_rows_per_file=4000)
    for col in ("small", "f", "s"):
        ds.create_scalar_index(col, "BTREE")
    for col in ("cat", "fb", "b"):
        ds.create_scalar_index(col, "BITMAP")
    ds.create_scalar_index("d", "BTREE")
    ds.create_scalar_index("u", "BTREE")
    ds.create_scalar_index("f", "ZONEMAP", name="f_zones")
    ds.create_scalar_index("d", "ZONEMAP", name="d_zones")
    ds.create_scalar_index("u", "BLOOMFILTER", name="u_bloom")
    return path


@pytest.mark.parametrize("flt", ["small = -7", "small IS NULL", "small IN (-100, 0, 99)", "small < -95",
                                 "f = 1000.5", "f < 3", "f IS NULL", "s = 's04321'", "s IN ('s00001', 's04999')",
                                 "s IS NULL", "cat = 'c3'", "cat IN ('c1', 'c6')", "cat IS NULL",
                                 "fb = 0.0", "fb = 3.5", "fb IS NULL", "b = true", "b IS NULL",
                                 "d = date '1970-01-05'", "d < date '1970-01-09'", "u = 7", "u IN (14, 21)"])
def test_sound_multi_page_indices_are_used_and_exact(sound, lance_mod, flt):
    want = lance_mod.dataset(sound).to_table(filter=flt, use_scalar_index=False)
    with decode_trace() as trace:
        got = lance_duck.dataset(sound).to_table(filter=flt)
        n = lance_duck.dataset(sound).count_rows(filter=flt)
    assert got.drop_columns(["f", "fb"]).equals(want.drop_columns(["f", "fb"])) and n == want.num_rows
    for col in ("f", "fb"):                    # (NaN equal to NaN)
        np.testing.assert_array_equal(got[col].to_numpy(), want[col].to_numpy())
    assert not trace.values("index:unused"), trace.values("index:unused")
