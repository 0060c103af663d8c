"""Deterministic Arrow tables that make pylance 14 use every 2.1/2.2 layout and compression.

Each builder returns a ``pa.Table``; ``TABLES`` maps a name to (builder, versions).
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyarrow as pa

N = 4000


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _mask(rng, n: int, p: float):
    if p <= 0:
        return None
    if p >= 1:
        return np.ones(n, bool)
    return rng.random(n) < p


def _arr(values, typ, rng, p):
    m = _mask(rng, len(values), p)
    return pa.array(values, typ, mask=m) if m is not None else pa.array(values, typ)


def primitives(p: float, n: int = N, seed: int = 1) -> pa.Table:
    """Every scalar type, low- and high-cardinality, with a fraction ``p`` of nulls."""
    r = _rng(seed)
    hexs = [f"{x:012x}" for x in r.integers(0, 2**48, n)]
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
    text = [" ".join(words[j] for j in r.integers(0, 10, 1 + i % 6)) + "é✓" * (i % 3) for i in range(n)]
    cols = {
        "i8": _arr(r.integers(-128, 128, n), pa.int8(), r, p),
        "u8_small": _arr(r.integers(0, 4, n), pa.uint8(), r, p),
        "i16": _arr(r.integers(-2**15, 2**15, n), pa.int16(), r, p),
        "u16": _arr(r.integers(0, 1000, n), pa.uint16(), r, p),
        "i32": _arr(r.integers(0, 100000, n), pa.int32(), r, p),
        "i32_wide": _arr(r.integers(-2**31, 2**31, n), pa.int32(), r, p),
        "u32": _arr(r.integers(0, 2**20, n), pa.uint32(), r, p),
        "i64": _arr(r.integers(-2**40, 2**40, n), pa.int64(), r, p),
        "i64_seq": _arr(np.arange(n) * 3, pa.int64(), r, p),
        "i64_card": _arr(r.integers(0, 500, n) * 1_000_003, pa.int64(), r, p),
        "u64": _arr(r.integers(0, 2**50, n, dtype=np.uint64), pa.uint64(), r, p),
        "f16": _arr(r.random(n).astype(np.float16), pa.float16(), r, p),
        "f32_normal": _arr(r.standard_normal(n).astype(np.float32), pa.float32(), r, p),
        "f32": _arr(r.random(n).astype(np.float32), pa.float32(), r, p),
        "f64": _arr(r.random(n), pa.float64(), r, p),
        "f64_nan": _arr(np.where(r.random(n) < 0.1, np.nan, r.standard_normal(n)), pa.float64(), r, p),
        "bool": _arr(r.random(n) < 0.3, pa.bool_(), r, p),
        "date32": _arr(r.integers(0, 20000, n).astype("int32"), pa.date32(), r, p),
        "date64": _arr(r.integers(0, 2**40, n) // 86400000 * 86400000, pa.date64(), r, p),
        "time32": _arr(r.integers(0, 86400, n).astype("int32"), pa.time32("s"), r, p),
        "time64": _arr(r.integers(0, 86400 * 10**6, n), pa.time64("us"), r, p),
        "ts": _arr(r.integers(0, 2**50, n), pa.timestamp("us"), r, p),
        "ts_tz": _arr(r.integers(0, 2**60, n), pa.timestamp("ns", "UTC"), r, p),
        "dur": _arr(r.integers(0, 2**30, n), pa.duration("ms"), r, p),
        "dec128": _dec(r, n, p, pa.decimal128(12, 2)),
        "dec256": _dec(r, n, p, pa.decimal256(40, 0)),
        "fsb16": _arr([r.bytes(16) for _ in range(n)], pa.binary(16), r, p),
        "fsb40": _arr([r.bytes(40) for _ in range(n)], pa.binary(40), r, p),
        "str_hex": _arr(hexs, pa.string(), r, p),
        "str_text": _arr(text, pa.string(), r, p),
        "str_dict": _arr([words[j] for j in r.integers(0, 10, n)], pa.string(), r, p),
        "str_sorted": _arr(sorted(f"key{j:04d}" for j in r.integers(0, 300, n)), pa.string(), r, p),
        "lstr": _arr(hexs, pa.large_string(), r, p),
        "bin": _arr([r.bytes(int(k)) for k in r.integers(0, 30, n)], pa.binary(), r, p),
        "bin_ff": _arr([b"\xff" * int(k) + b"x" for k in r.integers(0, 9, n)], pa.binary(), r, p),
        "lbin": _arr([r.bytes(int(k)) for k in r.integers(0, 30, n)], pa.large_binary(), r, p),
        "empty_str": _arr([""] * n, pa.string(), r, p),
        "runs_i32": _arr(np.repeat(np.arange(n // 200 + 1), 200)[:n].astype(np.int32), pa.int32(), r, p),
        "runs_u8": _arr(np.repeat(r.integers(0, 255, n // 300 + 1), 300)[:n], pa.uint8(), r, p),
        "runs_f64": _arr(np.repeat(r.random(n // 100 + 1), 100)[:n], pa.float64(), r, p),
        "const_i32": _arr(np.full(n, 7), pa.int32(), r, p),
        "const_f64": _arr(np.full(n, 2.5), pa.float64(), r, p),
        "const_bool": _arr(np.ones(n, bool), pa.bool_(), r, p),
        "const_false": _arr(np.zeros(n, bool), pa.bool_(), r, p),
        "const_dec": pa.array([None if m else __import__("decimal").Decimal("12.34") for m in
                               (_mask(r, n, p) if p else np.zeros(n, bool))], pa.decimal128(10, 2)),
        "const_str": _arr(["same"] * n, pa.string(), r, p),
        "const_lstr": _arr(["same-large"] * n, pa.large_string(), r, p),
        "const_fsb40": _arr([b"z" * 40] * n, pa.binary(40), r, p),
        "fsl_i32x4": _fsl(r.integers(0, 100, n * 4).astype(np.int32), 4, r, p, 0.0),
        "fsl_f32x8_nullitems": _fsl(r.random(n * 8).astype(np.float32), 8, r, p, 0.05),
        "fsl_fsl": pa.FixedSizeListArray.from_arrays(
            _fsl(r.random(n * 6).astype(np.float32), 3, r, 0, 0.05), 2,
            mask=pa.array(_mask(r, n, p)) if p else None),
        "dict_i32": pa.DictionaryArray.from_arrays(
            _arr(r.integers(0, 5, n).astype(np.int32), pa.int32(), r, p), pa.array(["a", "b", "c", "d", "e"])),
        "dict_i8": pa.DictionaryArray.from_arrays(
            _arr(r.integers(0, 3, n).astype(np.int8), pa.int8(), r, p), pa.array(["x", "yy", "zzz"])),
        "null_col": pa.nulls(n),
    }
    return pa.table(cols)


def _dec(r, n, p, t):
    import decimal
    scale = t.scale
    arr = pa.array([decimal.Decimal(int(v)).scaleb(-scale) for v in r.integers(-10**7, 10**7, n)], t)
    m = _mask(r, n, p)
    return pa.array(arr.to_pylist(), t, mask=m) if m is not None else arr


def _fsl(flat, dim, r, p, item_p):
    n = len(flat) // dim
    items = _arr(flat, pa.from_numpy_dtype(flat.dtype), r, item_p)
    m = _mask(r, n, p)
    return pa.FixedSizeListArray.from_arrays(items, dim, mask=pa.array(m) if m is not None else None)


def wide(p: float, n: int = 600, seed: int = 2) -> pa.Table:
    """Full-zip material: long strings, big binaries, wide vectors."""
    r = _rng(seed)
    cols = {
        "long_str": _arr(["".join(chr(97 + int(c)) for c in r.integers(0, 26, 20)) * int(k)
                          for k in r.integers(15, 30, n)], pa.string(), r, p),
        "long_lstr": _arr(["ab%05d" % i * 60 for i in range(n)], pa.large_string(), r, p),
        "bin40k": _arr([r.bytes(10) * 4000 for _ in range(n // 20)] * 20, pa.binary(), r, p),
        "emb128": _fsl(r.random(n * 128).astype(np.float32), 128, r, p, 0.0),
        "emb96_nullitems": _fsl(r.random(n * 96).astype(np.float32), 96, r, p, 0.02),
    }
    return pa.table(cols)


def big_binary(p: float, n: int = 12, seed: int = 3) -> pa.Table:
    r = _rng(seed)
    return pa.table({"big": _arr([r.bytes(1000) * 1500 for _ in range(n)], pa.large_binary(), r, p)})


def _lists(r, n, p, make_item, item_p=0.0, empty_p=0.1, max_len=5):
    out = []
    for i in range(n):
        x = r.random()
        if x < p:
            out.append(None)
        elif x < p + empty_p:
            out.append([])
        else:
            out.append([None if r.random() < item_p else make_item() for _ in range(int(r.integers(1, max_len)))])
    return out


def nested(p: float, n: int = 3000, seed: int = 4, v22: bool = True) -> pa.Table:
    r = _rng(seed)
    words = [f"w{i}" for i in range(20)]
    sm = _mask(r, n, p)
    s1 = pa.StructArray.from_arrays(
        [_arr(r.integers(0, 100, n).astype(np.int32), pa.int32(), r, p),
         _arr([f"s{j}" for j in r.integers(0, 10**6, n)], pa.string(), r, p)],
        names=["a", "b"], mask=pa.array(sm) if sm is not None else None)
    inner = pa.StructArray.from_arrays([_arr(r.random(n), pa.float64(), r, p)], names=["z"],
                                       mask=pa.array(_mask(r, n, p)) if p else None)
    s2 = pa.StructArray.from_arrays([inner, _arr(r.integers(-5, 5, n), pa.int8(), r, p)], names=["inner", "w"],
                                    mask=pa.array(_mask(r, n, p)) if p else None)
    cols = {
        "struct": s1,
        "struct_struct": s2,
        "list_i32": pa.array(_lists(r, n, p, lambda: int(r.integers(0, 1000)), item_p=p / 2), pa.list_(pa.int32())),
        "list_i32_nonull": pa.array(_lists(r, n, 0, lambda: int(r.integers(0, 1000)), empty_p=0), pa.list_(pa.int32())),
        "list_str": pa.array(_lists(r, n, p, lambda: words[int(r.integers(0, 20))], item_p=p / 3), pa.list_(pa.string())),
        "llist_str": pa.array(_lists(r, n, p, lambda: f"{int(r.integers(0, 10**9)):x}"), pa.large_list(pa.string())),
        "list_struct": pa.array(_lists(r, n, p, lambda: {"x": int(r.integers(0, 50)), "y": float(r.random())}),
                                pa.list_(pa.struct([("x", pa.int32()), ("y", pa.float32())]))),
        "list_list": pa.array(_lists(r, n, p, lambda: [int(r.integers(0, 9)) if r.random() > p / 2 else None
                                                       for _ in range(int(r.integers(0, 4)))], item_p=p / 2),
                              pa.list_(pa.list_(pa.int64()))),
        "list_fsl": pa.array(_lists(r, n, p, lambda: [int(r.integers(0, 9)), int(r.integers(0, 9))]),
                             pa.list_(pa.list_(pa.int16(), 2))),
        "struct_list": pa.array([None if (sm is not None and sm[i]) else
                                 {"l": None if r.random() < p else [words[int(k)] for k in r.integers(0, 20, i % 4)],
                                  "k": int(i)} for i in range(n)],
                                pa.struct([("l", pa.list_(pa.string())), ("k", pa.int32())])),
        "list_struct_list": pa.array(_lists(r, n, p, lambda: {"tags": [words[int(k)] for k in r.integers(0, 20, int(r.integers(0, 3)))],
                                                              "score": float(r.random())}),
                                     pa.list_(pa.struct([("tags", pa.list_(pa.string())), ("score", pa.float64())]))),
        "list_long_str": pa.array(_lists(r, n, p, lambda: r.bytes(int(r.integers(150, 200))).hex(), max_len=3),
                                  pa.list_(pa.string())),
        "list_emb": pa.array(_lists(r, n // 10, p, lambda: r.random(128).astype(np.float32).tolist(), max_len=3) * 10,
                             pa.list_(pa.list_(pa.float32(), 128))),
        "all_null_list": pa.nulls(n, pa.list_(pa.int32())),
        "all_null_struct": pa.nulls(n, pa.struct([("p", pa.int32()), ("q", pa.string())])),
        "list_of_nulls": pa.array([[None] * (i % 3) for i in range(n)], pa.list_(pa.int32())),
    }
    if v22:
        cols["map"] = pa.array([None if r.random() < p else [(words[int(k)], int(k)) for k in r.integers(0, 20, i % 4)]
                                for i in range(n)], pa.map_(pa.string(), pa.int32()))
    return pa.table(cols)


def compressed(n: int = 5000, seed: int = 5) -> pa.Table:
    r = _rng(seed)
    md = lambda **kw: {f"lance-encoding:{k}": v for k, v in kw.items()}  # noqa: E731
    fields = [
        pa.field("f64_zstd", pa.float64(), metadata=md(compression="zstd")),
        pa.field("f64_bss", pa.float64(), metadata=md(compression="zstd", bss="on")),
        pa.field("f32_bss", pa.float32(), metadata=md(compression="zstd", bss="on")),
        pa.field("i64_lz4", pa.int64(), metadata=md(compression="lz4")),
        pa.field("str_zstd", pa.string(), metadata=md(compression="zstd")),
    ]
    data = [r.standard_normal(n), r.standard_normal(n), r.standard_normal(n).astype(np.float32),
            r.integers(-2**40, 2**40, n), [f"{x:x}" for x in r.integers(0, 2**40, n)]]
    return pa.table([pa.array(d, f.type) for d, f in zip(data, fields)], schema=pa.schema(fields))


def packed(n: int = 2000, seed: int = 6, v22: bool = True) -> pa.Table:
    r = _rng(seed)
    fields = [pa.field("pk", pa.struct([("a", pa.int32()), ("b", pa.float64())]),
                       metadata={"lance-encoding:packed": "true"})]
    data = [pa.StructArray.from_arrays([pa.array(r.integers(0, 99, n).astype(np.int32)), pa.array(r.random(n))],
                                       names=["a", "b"])]
    if v22:
        fields.append(pa.field("pk_var", pa.struct([("a", pa.int32()), ("s", pa.string()), ("c", pa.float64())]),
                               metadata={"lance-encoding:packed": "true"}))
        data.append(pa.StructArray.from_arrays(
            [pa.array(r.integers(0, 99, n).astype(np.int32)), pa.array([f"v{i}" for i in range(n)]),
             pa.array(r.random(n))], names=["a", "s", "c"]))
    return pa.table(data, schema=pa.schema(fields))


def big(n: int = 1_500_000, seed: int = 7) -> list[pa.RecordBatch]:
    """Many pages per column: written as 64k-row batches."""
    r = _rng(seed)
    out = []
    for lo in range(0, n, 65536):
        k = min(65536, n - lo)
        out.append(pa.record_batch({
            "seq": pa.array(np.arange(lo, lo + k), pa.int64()),
            "f64": pa.array(r.random(k)),
            "i64_full": pa.array(r.integers(-2**62, 2**62, k)),
            "s": pa.array([f"{x:016x}" * 3 for x in r.integers(0, 2**62, k)]),
            "half_null": pa.array(r.integers(0, 1000, k), mask=(r.random(k) < 0.5) if lo // 65536 % 3 else np.ones(k, bool)),
        }))
    return out


def big_lists(n: int = 300_000, seed: int = 8) -> list[pa.RecordBatch]:
    r = _rng(seed)
    out = []
    for lo in range(0, n, 50000):
        k = min(50000, n - lo)
        lens = r.integers(0, 6, k)
        offs = np.concatenate(([0], np.cumsum(lens))).astype(np.int32)
        vals = pa.array(r.integers(0, 10**6, int(offs[-1])).astype(np.int32),
                        mask=r.random(int(offs[-1])) < 0.05)
        out.append(pa.record_batch({"l": pa.ListArray.from_arrays(pa.array(offs), vals,
                                                                   mask=pa.array(r.random(k) < 0.05))}))
    return out


def fsl_struct(p: float, n: int = 2000, seed: int = 9) -> pa.Table:
    """2.2 only: fixed-size list of structs (pages count elements, not rows)."""
    r = _rng(seed)
    child = pa.StructArray.from_arrays(
        [_arr(r.integers(0, 9, n * 2).astype(np.int32), pa.int32(), r, p),
         _arr(r.random(n * 2), pa.float64(), r, p)], names=["a", "b"],
        mask=pa.array(_mask(r, n * 2, p)) if p else None)
    return pa.table({"fsl_struct": pa.FixedSizeListArray.from_arrays(
        child, 2, mask=pa.array(_mask(r, n, p)) if p else None)})


def blobs(n: int = 60, seed: int = 10) -> pa.Table:
    """``lance-encoding:blob`` columns (v1 descriptors in 2.1, v2 packed descriptors in 2.2)."""
    r = _rng(seed)
    vals = [None if i % 7 == 0 else (b"" if i % 5 == 0 else r.bytes(200 * (i % 13 + 1))) for i in range(n)]
    sch = pa.schema([pa.field("id", pa.int64()),
                     pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    return pa.table([pa.array(range(n)), pa.array(vals, pa.large_binary())], schema=sch)


def sparse_zipped_lists(n: int = 4000, seed: int = 12) -> pa.Table:
    """Lists of wide values (full-zip): long strings with 70 % null items (pylance 14 stores the
    list layer sparse over zipped values) and 128-float vectors with nulls (zipped with rep/def);
    null and empty lists in both."""
    r = _rng(seed)
    m = n * 4
    words = np.array([f"w{i:03d}" for i in range(1000)])
    lens = r.integers(40, 110, m)
    flat = words[r.integers(0, 1000, int(lens.sum()))]
    ends = np.cumsum(lens)
    longs = pa.array([" ".join(w) for w in np.split(flat, ends[:-1])], mask=r.random(m) < 0.7)
    emb = pa.FixedSizeListArray.from_arrays(pa.array(r.standard_normal(m * 128).astype(np.float32)), 128,
                                            mask=pa.array(r.random(m) < 0.7))

    def lists(items: pa.Array) -> pa.Array:
        off = np.concatenate([[0], np.cumsum(r.integers(0, 4, n))]).astype(np.int32)
        return pa.ListArray.from_arrays(pa.array(off), items.slice(0, int(off[-1])),
                                        mask=pa.array(r.random(n) < 0.3))
    return pa.table({"l_long_str": lists(longs), "l_emb128": lists(emb)})


def sparse_lists(n: int = 50_000, seed: int = 9) -> pa.Table:
    """Lists large enough for pylance 14's 2.3 writer to store sparse list layers: null lists, empty
    lists and null items by position (one, two list levels; ints, strings, a list of structs)."""
    r = _rng(seed)

    def lists(items: pa.Array, null_p: float, max_len: int = 9, rows: int = n) -> pa.Array:
        lens = r.integers(0, max_len, rows)
        off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
        return pa.ListArray.from_arrays(pa.array(off), items.slice(0, int(off[-1])),
                                        mask=pa.array(r.random(rows) < null_p))

    m = n * 9
    ints = pa.array(r.integers(0, 1 << 16, m).astype(np.int32), mask=r.random(m) < 0.05)
    words = np.array([f"w{i:03d}" for i in range(500)])
    strs = pa.array(words[r.integers(0, 500, m)], mask=r.random(m) < 0.05)
    inner = lists(pa.array(r.integers(0, 100, m * 3).astype(np.int64), mask=r.random(m * 3) < 0.05),
                  0.05, 4, m)
    structs = pa.StructArray.from_arrays([pa.array(r.integers(0, 9, m).astype(np.int32)), pa.array(r.random(m))],
                                         names=["k", "v"])
    return pa.table({
        "li": lists(ints, 0.05),
        "ls": lists(strs, 0.05),
        "lli": lists(inner, 0.05, 4),
        "lst": lists(structs, 0.05, 4),
        "li_nonull": lists(pa.array(r.integers(0, 1 << 16, m).astype(np.int32)), 0.05),
    })


def _nested_tools(r, p: float):
    """Array makers with nulls at every level (a fraction ``p`` of slots, half that for leaves)."""
    def mask(n: int, q: float = p):
        return pa.array(r.random(n) < q) if q else None

    def ints(n: int, t=pa.int32()):
        return pa.array(r.integers(0, 1000, n), t, mask=(r.random(n) < p / 2) if p else None)

    def strs(n: int):
        return pa.array([f"v{x}" for x in r.integers(0, 10**6, n)], mask=(r.random(n) < p / 2) if p else None)

    def lst(items, n: int, q: float = p, empty: float = 0.1, max_len: int = 4, large: bool = False):
        lens = r.integers(1, max_len, n)
        lens[r.random(n) < empty] = 0
        null = r.random(n) < q
        lens[null] = 0
        off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64 if large else np.int32)
        cls = pa.LargeListArray if large else pa.ListArray
        return cls.from_arrays(pa.array(off), items(int(off[-1])), mask=pa.array(null) if q else None)

    def st(n: int, q: float = p, **kids):
        return pa.StructArray.from_arrays([make(n) for make in kids.values()], names=list(kids), mask=mask(n, q))

    def fsl(items, dim: int, n: int, q: float):
        return pa.FixedSizeListArray.from_arrays(items(n * dim), dim, mask=mask(n, q))

    def mapping(n: int):
        lens = r.integers(0, 4, n)
        off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
        m = int(off[-1])
        return pa.MapArray.from_arrays(pa.array(off), pa.array([f"k{i % 7}" for i in range(m)]), ints(m),
                                       mask=mask(n))
    return SimpleNamespace(mask=mask, ints=ints, strs=strs, lst=lst, st=st, fsl=fsl, mapping=mapping)


def nested_more(p: float, n: int = 3000, seed: int = 13) -> pa.Table:
    """More nested shapes (pylance reads them at 2.2 and 2.3): lists of structs of lists, structs
    of lists, large lists, lists of maps, of dictionary strings, of fixed-size binaries and
    vectors, empty / null list and null item mixes, nulls at every level."""
    r = _rng(seed)
    k = _nested_tools(r, p)
    long_strs = lambda m: pa.array(["x" * int(v) for v in r.integers(100, 300, m)],  # noqa: E731
                                   mask=(r.random(m) < p / 2) if p else None)
    return pa.table({
        "l_st_l": k.lst(lambda m: k.st(m, l=lambda j: k.lst(k.ints, j), x=k.ints), n),
        "l_st_lstr": k.lst(lambda m: k.st(m, l=lambda j: k.lst(k.strs, j)), n),
        "st_ll": k.st(n, a=lambda j: k.lst(k.ints, j), b=lambda j: k.lst(k.strs, j), c=k.ints),
        "st_st_l": k.st(n, s=lambda j: k.st(j, l=lambda i: k.lst(k.ints, i))),
        "ll_st": k.lst(lambda m: k.lst(lambda j: k.st(j, a=k.ints), m), n),
        "large_ll": k.lst(lambda m: k.lst(lambda j: k.ints(j, pa.int64()), m, large=True), n, large=True),
        "large_lstr": k.lst(k.strs, n, large=True),
        "l_map": k.lst(k.mapping, n),
        "l_dict": k.lst(lambda m: pa.DictionaryArray.from_arrays(
            pa.array(r.integers(0, 5, m).astype(np.int32), mask=(r.random(m) < p / 2) if p else None),
            pa.array(["a", "bb", "ccc", "dd", "e"])), n),
        "l_fsb": k.lst(lambda m: pa.array([r.bytes(12) for _ in range(m)], pa.binary(12),
                                          mask=(r.random(m) < p / 2) if p else None), n),
        "l_fsl": k.lst(lambda m: k.fsl(k.ints, 3, m, p), n),
        "l_mix": k.lst(lambda m: pa.array(r.integers(0, 9, m).astype(np.int32), mask=r.random(m) < 0.5),
                       n, q=0.3, empty=0.3),
        "l_null_items": k.lst(lambda m: pa.nulls(m, pa.int32()), n),
        "l_long_str": k.lst(long_strs, n),
        "id": pa.array(np.arange(n)),
    })


def fsl_structs_nested(p: float, n: int = 2000, seed: int = 14) -> pa.Table:
    """Fixed-size lists of structs inside lists (2.3: a sparse fixed-size-list layer), around
    lists and beside other types; the fixed-size lists under lists have no nulls when their
    struct has two children (pylance 14.0.2 cannot read those back: see the tests)."""
    r = _rng(seed)
    k = _nested_tools(r, p)
    two = lambda m: k.st(m, a=k.ints, s=k.strs)  # noqa: E731
    return pa.table({
        "l_fsl_st": k.lst(lambda m: k.fsl(two, 2, m, 0), n),
        "ll_fsl_st": k.lst(lambda m: k.lst(lambda j: k.fsl(two, 2, j, 0), m), n),
        "large_l_fsl_st": k.lst(lambda m: k.fsl(two, 3, m, 0), n, large=True),
        "l_fsl_st1_null": k.lst(lambda m: k.fsl(lambda j: k.st(j, a=k.ints), 2, m, p), n),
        "l_fsl_st_l": k.lst(lambda m: k.fsl(lambda j: k.st(j, l=lambda i: k.lst(k.ints, i)), 3, m, 0), n),
        "l_st_fsl_st": k.lst(lambda m: k.st(m, f=lambda j: k.fsl(lambda i: k.st(i, a=k.ints), 2, j, 0)), n),
        "l_fsl_st_map": k.lst(lambda m: k.fsl(lambda j: k.st(j, m=k.mapping), 2, m, 0), n),
        "l_fsl_st_vec": k.lst(lambda m: k.fsl(lambda j: k.st(j, v=lambda i: k.fsl(
            lambda h: k.ints(h, pa.float32()), 4, i, p)), 2, m, 0), n),
        "l_fsl_st_long": k.lst(lambda m: k.fsl(lambda j: k.st(j, b=lambda i: pa.array(
            ["y" * int(v) for v in r.integers(100, 300, i)])), 2, m, 0), n),
        "id": pa.array(np.arange(n)),
    })


def fsl_struct_lists_top(p: float, n: int = 2000, seed: int = 15) -> pa.Table:
    """A fixed-size list of structs of lists at the top (pylance 14.0.2 reads it at 2.3 only,
    and not beside other columns)."""
    k = _nested_tools(_rng(seed), p)
    return pa.table({"fsl_st_l": k.fsl(lambda j: k.st(j, l=lambda i: k.lst(k.ints, i), x=k.ints), 2, n, p)})
