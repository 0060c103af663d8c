"""Seeded, time-bounded fuzzing of damaged ``.lance`` DATA files of every format version.

Tables (legacy 0.1 golden, legacy 0.2, 2.0 golden, 2.0, 2.1, 2.2; ints, bitpacked ints, strings
with nulls, FSST text, dictionary strings, lists, structs, zstd / lz4 / byte-stream-split columns,
several 2.0 pages and legacy row groups, two fragments) are written by pylance once. A worker process (this file run as a script) then damages
one data file per case -- bit flips, byte overwrites, "interesting" integers at aligned
positions, zeroed runs, truncations -- in the data pages, the column metadata (and global
buffers / page table) or the footer, and reads the damaged table with lance_duck:
``dataset(path).to_table()``, a ``take`` and a filtered ``to_table``.

Allowed outcomes per read:

* a ``LanceDuckError`` or ``FileNotFoundError`` (detected damage);
* a result with the undamaged read's schema and row count that passes Arrow's full validation
  (so no stated count/size was silently ignored and no array was built over bad offsets).
  Values may differ (Lance has no checksums; see ``_check``); the summary counts how often.

Anything else -- another exception type, a hang (per-case ``faulthandler`` timeout), a crash
(the worker is a subprocess, its death fails the test) -- fails the test and prints the seed and
the case, which ``LD_FILE_FUZZ_SEED`` / ``LD_FILE_FUZZ_CASES`` reproduce.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data"
SEED = int(os.environ.get("LD_FILE_FUZZ_SEED", "20261124"))
CASES = int(os.environ.get("LD_FILE_FUZZ_CASES", "300"))
BUDGET_S = float(os.environ.get("LD_FILE_FUZZ_BUDGET", "40"))
CASE_TIMEOUT_S = 20.0
N = 3000


# -- tables (written in the test process by pylance) ---------------------------------------------

def _table(n: int = N, seed: int = 5, struct_nulls: bool = True) -> pa.Table:
    r = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(12)]
    text = [" ".join(words[j] for j in r.integers(0, 12, 1 + i % 7)) + "-" + str(i % 97) for i in range(n)]
    null = r.random(n) < 0.1
    lists = [None if r.random() < 0.08 else [int(x) for x in r.integers(0, 1000, int(r.integers(0, 5)))]
             for _ in range(n)]
    hexs = [f"{x:010x}" for x in r.integers(0, 1 << 40, n)]
    zstd = {"lance-encoding:compression": "zstd"}
    lz4 = {"lance-encoding:compression": "lz4"}
    cols = {
        "i": pa.array(np.arange(n), pa.int64()),
        "small": pa.array(r.integers(0, 50, n).astype(np.int32), pa.int32(), mask=r.random(n) < 0.05),
        "s": pa.array(text, pa.string(), mask=null),
        "d": pa.array([words[j] for j in r.integers(0, 12, n)], pa.string()),
        "f": pa.array(r.standard_normal(n), pa.float64(), mask=r.random(n) < 0.1),
        "l": pa.array(lists, pa.list_(pa.int32())),
        "st": pa.StructArray.from_arrays(
            [pa.array(r.integers(0, 1 << 20, n).astype(np.int32)),
             pa.array([f"k{j}" for j in r.integers(0, 40, n)])],
            names=["a", "b"], mask=pa.array(r.random(n) < 0.05) if struct_nulls else None),
        "zs": pa.array(hexs, pa.string(), mask=r.random(n) < 0.05),
        "zi": pa.array(r.integers(0, 1 << 40, n), pa.int64()),
    }
    meta = {"zs": zstd, "zi": lz4}
    schema = pa.schema([pa.field(k, v.type, metadata=meta.get(k)) for k, v in cols.items()])
    return pa.table(cols, schema=schema)


@pytest.fixture(scope="module")
def fuzz_tables(tmp_path_factory, lance_mod) -> list[dict]:
    root = tmp_path_factory.mktemp("file_fuzz")
    out = []
    for version in ("legacy", "2.0", "2.1", "2.2", "2.3"):
        t = _table(struct_nulls=version in ("2.1", "2.2", "2.3"))  # 2.0 / legacy store no struct validity
        path = str(root / f"t_{version.replace('.', '_')}.lance")
        kw = {"max_rows_per_file": 2000}
        if version == "legacy":
            kw["max_rows_per_group"] = 400
        else:
            kw["max_page_bytes"] = 4096
        lance_mod.write_dataset(t, path, data_storage_version=version, **kw)
        out.append({"name": version, "path": path,
                    "filter": "i % 7 = 3 OR d = 'w3' OR st.a < 1000"})
    for name in ("legacy_pylance_0_10_18", "v2_0_pylance_0_20_0"):
        out.append({"name": name, "path": str(GOLDEN / f"{name}.lance"),
                    "filter": "id % 5 = 2 OR cat = 'red' OR point.x < 3"})
    return out


@pytest.fixture(scope="module")
def lance_mod():
    import lance
    return lance


def test_fuzz_tables_read_like_pylance_before_damage(fuzz_tables, lance_mod):
    """The baseline the fuzz compares with is itself right (pylance, the oracle, agrees)."""
    import lance_duck
    for t in fuzz_tables:
        ours = lance_duck.dataset(t["path"]).to_table()
        theirs = lance_mod.dataset(t["path"]).to_table()
        assert ours.schema == theirs.schema, t["name"]
        assert ours.num_rows == theirs.num_rows and ours.num_rows > 0, t["name"]
        assert ours.to_pylist() == theirs.to_pylist() or _nan_equal(ours, theirs), t["name"]


def _nan_equal(a: pa.Table, b: pa.Table) -> bool:
    return json.dumps(a.to_pylist(), default=str) == json.dumps(b.to_pylist(), default=str)


def _run_worker(spec: dict, tmp_path: Path) -> tuple[subprocess.CompletedProcess, list[str], str]:
    """Run the fuzz worker on ``spec``: (process, stdout lines, the failure report or "")."""
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    timeout = spec["budget_s"] + 4 * spec["case_timeout_s"] + 60
    proc = subprocess.run([sys.executable, __file__, str(spec_path)], check=False, capture_output=True,
                          text=True, env=env, timeout=timeout, cwd=str(ROOT))
    lines = proc.stdout.splitlines()
    last_case = next((ln for ln in reversed(lines) if ln.startswith("CASE ")), "<none>")
    fails = [ln for ln in lines if ln.startswith("FAIL ")]
    where = f"seed {spec['seed']}; reproduce with LD_FILE_FUZZ_SEED={spec['seed']}"
    if proc.returncode != 0:
        return proc, lines, (f"fuzz worker died (rc {proc.returncode}, {where}) during {last_case}\n"
                             f"{proc.stderr[-4000:]}")
    if fails:
        return proc, lines, f"{len(fails)} damaged reads broke the rules ({where}):\n" + "\n".join(fails[:10])
    return proc, lines, ""


def test_damaged_data_files_raise_our_errors_or_read_back_with_the_same_shape(fuzz_tables, tmp_path):
    spec = {"tables": fuzz_tables, "seed": SEED, "cases": CASES, "budget_s": BUDGET_S,
            "case_timeout_s": CASE_TIMEOUT_S, "work": str(tmp_path)}
    _, lines, failure = _run_worker(spec, tmp_path)
    assert not failure, failure
    summary = json.loads(next(ln for ln in lines if ln.startswith("SUMMARY "))[len("SUMMARY "):])
    print("file fuzz:", json.dumps(summary))
    # the fuzz is not vacuous: every table was damaged in every region, and damage was detected
    for t in fuzz_tables:
        for region in REGIONS:
            assert summary["cases"].get(f"{t['name']}/{region}", 0) > 0, (t["name"], region, summary)
    assert summary["outcomes"].get("error", 0) > 0 and summary["outcomes"].get("same", 0) > 0, summary
    assert summary["done"] >= min(CASES, 6 * len(REGIONS) * len(fuzz_tables)), summary


@pytest.mark.parametrize("trouble", ["crash", "hang"])
def test_fuzz_reports_a_crash_or_a_hang_with_its_case(fuzz_tables, tmp_path, trouble):
    """The harness itself can fail: a case that kills the worker (as a segfault would) or never
    returns is reported with the seed and the case, not lost or waited for."""
    spec = {"tables": fuzz_tables[:1], "seed": SEED, "cases": 5, "budget_s": 30, "case_timeout_s": 2.0,
            "work": str(tmp_path), "inject": {"case": 3, "trouble": trouble}}
    proc, _, failure = _run_worker(spec, tmp_path)
    assert proc.returncode != 0
    assert "fuzz worker died" in failure and f"seed {SEED}" in failure and "during CASE 3 " in failure, failure
    if trouble == "hang":
        assert "Timeout" in failure  # faulthandler's dump of where it hung


# -- the worker (run as a script) --------------------------------------------------------------

INTERESTING = [0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
               1 << 32, (1 << 63) - 1, (1 << 64) - 1]


def _regions(path: str) -> dict[str, list[tuple[int, int]]]:
    """Byte ranges of one data file: data pages, metadata (column metadata, global buffers, page
    table, offset tables) and footer."""
    import struct
    data = Path(path).read_bytes()
    size = len(data)
    major, minor = struct.unpack("<HH", data[-8:-4])
    if (major, minor) in ((0, 1), (0, 2)):
        from lance_duck._proto import file_pb2
        (meta_pos,) = struct.unpack("<q", data[-16:-8])
        (mlen,) = struct.unpack("<I", data[meta_pos: meta_pos + 4])
        meta = file_pb2.Metadata()
        meta.ParseFromString(data[meta_pos + 4: meta_pos + 4 + mlen])
        first_meta = min(meta_pos, int(meta.page_table_position))
        return {"data": [(0, first_meta)], "meta": [(first_meta, size - 16)], "footer": [(size - 16, size)]}
    a, cmo, gbo, n_gb, _n_col = struct.unpack("<QQQII", data[-40:-8])
    gbs = np.frombuffer(data, "<u8", 2 * n_gb, gbo).reshape(-1, 2)
    first_gb = int(gbs[:, 0].min()) if n_gb else a
    return {"data": [(0, min(first_gb, a))],
            "meta": [(min(first_gb, a), cmo)],
            "footer": [(cmo, size)]}


REGIONS = ("data", "meta", "footer")


def _damage(data: bytes, regions, region: str, rng) -> tuple[bytes, str, str]:
    """One random mutation inside ``region``: (damaged bytes, region, description)."""
    spans = [(lo, hi) for lo, hi in regions[region] if hi > lo]
    lo, hi = spans[int(rng.integers(0, len(spans)))]
    buf = bytearray(data)
    kind = int(rng.integers(0, 6))
    pos = int(rng.integers(lo, hi))
    if kind == 0:                                      # a few bit flips
        flips = rng.integers(lo, hi, int(rng.integers(1, 6)))
        for p in flips.tolist():
            buf[p] ^= 1 << int(rng.integers(0, 8))
        return bytes(buf), region, f"flip bits at {sorted(flips.tolist())}"
    if kind == 1:                                      # random bytes overwritten
        n = int(rng.integers(1, 17))
        buf[pos: pos + n] = rng.integers(0, 256, n, dtype=np.uint8).tobytes()[: max(0, min(n, hi - pos))]
        return bytes(buf[: len(data)]), region, f"overwrite {n} bytes at {pos}"
    if kind == 2:                                      # an interesting integer, aligned
        width = [1, 2, 4, 8][int(rng.integers(0, 4))]
        pos = lo + (pos - lo) // width * width
        value = INTERESTING[int(rng.integers(0, len(INTERESTING)))] & ((1 << (8 * width)) - 1)
        raw = value.to_bytes(width, "little")[: hi - pos]
        buf[pos: pos + len(raw)] = raw
        return bytes(buf), region, f"u{8 * width}={value:#x} at {pos}"
    if kind == 3:                                      # a zeroed or 0xff run
        n = int(min(int(rng.integers(1, 65)), hi - pos))
        fill = 0 if rng.random() < 0.5 else 0xFF
        buf[pos: pos + n] = bytes([fill]) * n
        return bytes(buf), region, f"{fill:#x} x {n} at {pos}"
    if kind == 4:                                      # truncated inside the region
        return bytes(buf[:pos]), region, f"truncate to {pos} of {len(data)}"
    n = int(min(int(rng.integers(1, 33)), hi - pos))   # bytes shifted: a run deleted, file re-padded
    out = bytes(buf[:pos] + buf[pos + n:] + b"\0" * n)
    return out, region, f"delete {n} bytes at {pos} (shifted)"


def _reads(path: str, n: int, flt: str) -> dict[str, pa.Table]:
    import lance_duck
    ds = lance_duck.dataset(path)
    idx = [0, 3, n // 2, n // 2 + 1, n - 1]
    return {"scan": ds.to_table(),
            "take": ds.take(idx),
            "filter": ds.to_table(filter=flt)}


def _check(name: str, got: pa.Table, base: pa.Table) -> str | None:
    """Why a damaged read that did not raise breaks the rules (None: it does not).

    Values are not compared: Lance stores no checksums, and besides the page bytes themselves
    the metadata holds *pointers* to them (buffer offsets, page-table positions, the offset
    tables of the footer) that damage can move to other in-bounds bytes -- to a reader that is
    indistinguishable from damaged values. What no damage may change unnoticed is the shape:
    the schema, the row count of a scan or a take (a stated count the data does not have), and
    Arrow's full validation of every array (offsets, validity, child lengths).
    """
    if got.schema != base.schema:
        return f"{name}: schema {got.schema} != {base.schema}"
    if got.num_rows != base.num_rows and name != "filter":
        # (a filter over damaged values may legitimately keep other rows)
        return f"{name}: {got.num_rows} rows, undamaged {base.num_rows}"
    try:
        got.validate(full=True)
    except pa.ArrowInvalid as exc:
        if "Invalid UTF8" not in str(exc):  # damaged string bytes are damaged values
            return f"{name}: invalid Arrow data: {exc!r}"
    return None


# A raw exception raised OUTSIDE the file layer by a damaged file that decodes validly (the
# same happens with undamaged files): counted as "known", listed in the summary, not a failure.
KNOWN_OUTSIDE_FILE_LAYER: dict[str, str] = {}


def _known_outside_file_layer(exc: BaseException) -> bool:
    import traceback
    frames = traceback.extract_tb(exc.__traceback__)
    for text, module in KNOWN_OUTSIDE_FILE_LAYER.items():
        if text in str(exc) and any(f.filename.endswith(module) for f in frames):
            return True
    return False


def _report_raw(case: str, exc: BaseException) -> None:
    import traceback
    tb = traceback.format_exception(exc)
    tb = [ln.strip() for chunk in tb for ln in chunk.strip().splitlines() if not ln.strip().startswith("^")]
    print(f"FAIL {case}: raw {type(exc).__module__}.{type(exc).__name__}: {exc} "
          f"| {' / '.join(tb[-9:-1])}", flush=True)


def _worker(spec_path: str) -> int:
    import faulthandler
    import shutil

    from lance_duck.errors import LanceDuckError

    spec = json.loads(Path(spec_path).read_text())
    tables = []
    for t in spec["tables"]:
        base_reads = _reads(t["path"], _rows(t["path"]), t["filter"])
        files = sorted(str(p) for p in Path(t["path"], "data").glob("*.lance"))
        tables.append((t, base_reads, files, {f: _regions(f) for f in files}))
    start = time.monotonic()
    outcomes: dict[str, int] = {}
    cases: dict[str, int] = {}
    kinds: dict[str, int] = {}
    done = 0
    for k in spec.get("only") or range(spec["cases"]):
        if time.monotonic() - start > spec["budget_s"]:
            break
        rng = np.random.default_rng([spec["seed"], k])   # one stream per case: any case replays alone
        t, base, files, regions = tables[k % len(tables)]
        f = files[int(rng.integers(0, len(files)))]
        original = Path(f).read_bytes()
        region = REGIONS[(k // len(tables)) % len(REGIONS)]   # every table x region early on
        damaged, region, what = _damage(original, regions[f], region, rng)
        case = f"{k} table={t['name']} file={Path(f).name} region={region} {what}"
        print(f"CASE {case}", flush=True)
        work = Path(spec["work"], f"case{k}")
        shutil.copytree(t["path"], work)
        Path(work, "data", Path(f).name).write_bytes(damaged)
        faulthandler.dump_traceback_later(spec["case_timeout_s"], exit=True)
        try:
            if spec.get("inject", {}).get("case") == k:   # the harness's own test
                _inject(spec["inject"]["trouble"])
            got = _reads(str(work), base["scan"].num_rows, t["filter"])
        except (LanceDuckError, FileNotFoundError) as exc:
            outcome = "error"
            kinds[type(exc).__name__] = kinds.get(type(exc).__name__, 0) + 1
            if spec.get("verbose"):
                print(f"ERROR {case}: {type(exc).__name__}: {exc}", flush=True)
        except pa.ArrowInvalid as exc:
            if _known_outside_file_layer(exc):
                outcome = "known"
            else:
                outcome = "raw"
                _report_raw(case, exc)
        except BaseException as exc:  # noqa: BLE001 -- every other exception is the finding
            outcome = "raw"
            _report_raw(case, exc)
        else:
            problems = [p for p in (_check(n, got[n], base[n]) for n in base) if p]
            outcome = "same" if all(got[n].equals(base[n]) for n in base) else "changed"
            if problems:
                outcome = "wrong"
                print(f"FAIL {case}: {'; '.join(problems)}", flush=True)
        finally:
            faulthandler.cancel_dump_traceback_later()
        if not spec.get("keep"):
            shutil.rmtree(work, ignore_errors=True)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        key = f"{t['name']}/{region}"
        cases[key] = cases.get(key, 0) + 1
        done += 1
    print("SUMMARY " + json.dumps({"done": done, "outcomes": outcomes, "errors": kinds, "cases": cases,
                                   "seconds": round(time.monotonic() - start, 1)}), flush=True)
    return 0


def _inject(trouble: str) -> None:
    """What a crashing or hanging reader would do (only for ``test_fuzz_reports_...``)."""
    if trouble == "crash":
        os.abort()
    time.sleep(3600)


def _rows(path: str) -> int:
    import lance_duck
    return lance_duck.dataset(path).count_rows()


if __name__ == "__main__":
    sys.exit(_worker(sys.argv[1]))
