"""A new user's first hour: install, README snippets, demo from an installed wheel, DuckDB types,
storage options on local paths, the test script's requirement checks, docstrings."""
from __future__ import annotations

import datetime as dt
import decimal
import doctest
import importlib
import os
import re
import shutil
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import InvalidArgumentError
from lance_duck.io.storage_options import fsspec_options

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sql_examples" / "data" / "sample.lance"


def _lance():
    import lance
    return lance


def _env_without_checkout(**extra) -> dict:
    """The environment minus this checkout on PYTHONPATH (other entries, e.g. extra site dirs, stay)."""
    keep = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if p and Path(p).resolve() != ROOT]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*extra.pop("prepend", []), *keep])
    env.update(extra)
    return env


# -- 1. DuckDB fetches every type we return --------------------------------------------------------
@pytest.fixture(scope="module")
def every_type_table(tmp_path_factory):
    utc = dt.timezone.utc
    t = pa.table({
        "ts_utc": pa.array([dt.datetime(2025, 1, 1, 1, 2, 3, tzinfo=utc), None], pa.timestamp("us", "UTC")),
        "ts_ny": pa.array([dt.datetime(2025, 7, 1, 12, tzinfo=utc), None], pa.timestamp("ms", "America/New_York")),
        "ts": pa.array([dt.datetime(2025, 1, 1), None], pa.timestamp("ns")),
        "d": pa.array([dt.date(2025, 1, 2), None]),
        "tm": pa.array([dt.time(1, 2, 3), None], pa.time64("us")),
        "dec": pa.array([decimal.Decimal("1.25"), None], pa.decimal128(10, 2)),
        "dur": pa.array([dt.timedelta(seconds=5, microseconds=7), None], pa.duration("us")),
        "fsb16": pa.array([uuid.UUID(int=7).bytes, None], pa.binary(16)),
        "m": pa.array([[("a", 1), ("b", 2)], None], pa.map_(pa.string(), pa.int32())),
        "l": pa.array([[1, None, 2], None], pa.list_(pa.int64())),
        "fsl": pa.array([[1.0, 2.0], None], pa.list_(pa.float32(), 2)),
        "s": pa.array([{"x": 1, "y": "z"}, None], pa.struct([("x", pa.int8()), ("y", pa.string())])),
        "b": pa.array([b"\x00x", None]),
        "ls": pa.array(["x", None], pa.large_string()),
        "u64": pa.array([2**63, None], pa.uint64()),
        "bool": pa.array([True, None]),
    })
    if hasattr(pa, "uuid"):
        t = t.append_column("uuid", pa.array([uuid.UUID(int=9), None], pa.uuid()))
    uri = str(tmp_path_factory.mktemp("types") / "types.lance")
    _lance().write_dataset(t, uri)
    return uri


def test_duckdb_fetchall_and_df_work_for_every_type_like_over_pylance(every_type_table):
    ref = _lance().dataset(every_type_table).to_table()  # noqa: F841 - DuckDB reads it by name
    theirs = duckdb.connect()
    ours = lance_duck.sql(f"select * from lance_scan('{every_type_table}')")
    assert ours.fetchall() == theirs.sql("select * from ref").fetchall()
    import pandas as pd
    pd.testing.assert_frame_equal(lance_duck.sql(f"select * from '{every_type_table}'").df(),
                                  theirs.sql("select * from ref").df())
    ds = lance_duck.dataset(every_type_table)
    assert duckdb.sql("select * from ds").fetchall() == theirs.sql("select * from ref").fetchall()


def test_sample_rows_with_a_zoned_timestamp_fetch_into_python():
    row = lance_duck.sql(f"select * from lance_scan('{SAMPLE}') limit 1").fetchall()
    ref = _lance().dataset(str(SAMPLE)).to_table().slice(0, 1)  # noqa: F841
    assert row == duckdb.connect().sql("select * from ref").fetchall()
    assert row[0][3].utcoffset() == dt.timedelta(0)   # ordered_at: TIMESTAMP WITH TIME ZONE


# -- 7. storage_options: object-store keys on local paths, as pylance --------------------------------
OBJECT_STORE_OPTIONS = {"aws_region": "eu-west-1", "aws_access_key_id": "k", "aws_secret_access_key": "s",
                        "aws_endpoint": "http://127.0.0.1:1", "aws_made_up_option": "x",
                        "google_service_account": "/nope.json", "azure_storage_account_name": "acct",
                        "region": "eu-west-1"}


@pytest.mark.parametrize("as_url", [False, True])
def test_object_store_keys_are_ignored_on_local_paths_like_pylance(as_url):
    uri = ("file://" if as_url else "") + str(SAMPLE)
    ours = lance_duck.dataset(uri, version=3, storage_options=OBJECT_STORE_OPTIONS)
    theirs = _lance().dataset(uri, version=3, storage_options=OBJECT_STORE_OPTIONS)
    assert ours.to_table().equals(theirs.to_table())


def test_object_store_keys_apply_only_to_their_own_store():
    assert fsspec_options("memory://t.lance", OBJECT_STORE_OPTIONS) == {}
    assert fsspec_options("/t.lance", {**OBJECT_STORE_OPTIONS, "auto_mkdir": True}) == {"auto_mkdir": True}
    assert fsspec_options("s3://b/t.lance", {"aws_region": "r", "google_service_account": "/k.json",
                                             "azure_storage_account_name": "a"}) \
        == {"client_kwargs": {"region_name": "r"}}
    assert fsspec_options("gs://b/t.lance", {"aws_region": "r", "google_service_account": "/k.json"}) \
        == {"token": "/k.json"}
    with pytest.raises(InvalidArgumentError, match="aws_made_up_option"):
        fsspec_options("s3://b/t.lance", {"aws_made_up_option": "1"})
    with pytest.raises(InvalidArgumentError, match="google_made_up"):
        fsspec_options("gs://b/t.lance", {"google_made_up": "1", "aws_made_up_option": "1"})


# -- README: every Python block runs as written ---------------------------------------------------------
def _readme_python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


@pytest.fixture()
def events_table(tmp_path):
    """The README's ``events.lance``: v1, v2 (tag release-1), v3; columns id, s.a, name, ts, kind."""
    lance = _lance()

    def rows(start, n):
        ids = list(range(start, start + n))
        return pa.table({
            "id": pa.array(ids, pa.int64()),
            "s": pa.array([{"a": i % 11} for i in ids], pa.struct([("a", pa.int64())])),
            "name": pa.array([["xa", "yb", "xc", None][i % 4] for i in ids]),
            "ts": pa.array([dt.datetime(2025, 12, 1, tzinfo=dt.timezone.utc) + dt.timedelta(days=i % 90)
                            for i in ids], pa.timestamp("us", "UTC")),
            "kind": pa.array([["click", "view", "buy"][i % 3] for i in ids]),
        })
    uri = str(tmp_path / "events.lance")
    lance.write_dataset(rows(0, 300), uri, max_rows_per_file=120)
    lance.write_dataset(rows(300, 200), uri, mode="append")
    ds = lance.dataset(uri)
    ds.tags.create("release-1", 2)
    ds.delete("id % 7 = 0")
    return uri


def test_readme_python_blocks_run_as_written_and_equal_pylance(events_table, monkeypatch):
    blocks = [b for b in _readme_python_blocks() if "spark" not in b.lower()]   # Spark: tests/spark
    assert blocks, "README.md has no Python block outside the Spark section"
    monkeypatch.chdir(Path(events_table).parent)
    lance = _lance()
    ns: dict = {}   # one namespace: a later block uses what an earlier one opened, as a reader would
    for block in blocks:
        code = block.replace("s3://bucket/events.lance", "events.lance")   # a local copy stands in
        exec(compile(code, "README.md", "exec"), ns)
    ref = lance.dataset("events.lance", version="release-1").to_table()  # noqa: F841
    assert sorted(ns["by_kind"]) == sorted(duckdb.connect().sql(
        "select kind, count(*) from ref where ts >= TIMESTAMP '2026-01-01' group by kind").fetchall())
    assert ns["table"].equals(lance.dataset("events.lance", version="release-1").to_table(
        columns=["id", "s.a"], filter="s.a > 5 and name like 'x%'"))
    assert ns["counts"] == [(lance.dataset("events.lance", version=3).count_rows(),),
                            (lance.dataset("events.lance", version="release-1").count_rows(),)]
    assert ns["table"].num_rows > 0 and ns["counts"][0] != ns["counts"][1]
    ref_ds = lance.dataset("events.lance", version="release-1")
    assert ns["first"].equals(ref_ds.take([0, 5, 1], columns=["id"]))
    assert ns["n"] == ref_ds.count_rows("s.a > 5")


# -- 2 and 11. scripts/test.sh: Java and the oldest / newest Python, checked before installing ------------
def _fake_bin(tmp_path: Path, java_version_line: str | None) -> Path:
    """A PATH directory with the tools the scripts use, and a fake ``java`` (or none)."""
    b = tmp_path / "bin"
    b.mkdir()
    for tool in ("bash", "dirname", "head", "sed", "grep", "cat", "env"):
        found = shutil.which(tool)
        assert found, tool
        (b / tool).symlink_to(found)
    if java_version_line is not None:
        (b / "java").write_text(f"#!{shutil.which('bash')}\necho '{java_version_line}' >&2\n")
        (b / "java").chmod(0o755)
    return b


def test_test_sh_without_java_fails_before_installing_and_says_how_to_fix(tmp_path):
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    b = _fake_bin(tmp_path, None)
    r = subprocess.run([str(b / "bash"), str(tmp_path / "scripts" / "test.sh")], capture_output=True, text=True,
                       env={"PATH": str(b), "HOME": str(tmp_path)}, timeout=60)
    assert r.returncode != 0
    assert "'java' is not on PATH" in r.stderr and "Java 17" in r.stderr and "openjdk-17" in r.stderr
    assert not (tmp_path / ".venv").exists()


@pytest.mark.parametrize("line,ok", [('openjdk version "17.0.15" 2025-04-15', True),
                                     ('openjdk version "21" 2023-09-19', True),
                                     ('openjdk version "11.0.2" 2019-01-15', False),
                                     ('java version "1.8.0_292"', False)])
def test_check_java_wants_java_17_or_newer(tmp_path, line, ok):
    b = _fake_bin(tmp_path, line)
    r = subprocess.run([str(b / "bash"), "-c", "source scripts/_lib.sh && check_java"], cwd=ROOT,
                       capture_output=True, text=True, env={"PATH": str(b)}, timeout=60)
    assert (r.returncode == 0) is ok, r.stderr
    if not ok:
        assert line in r.stderr and "Java 17 or newer" in r.stderr


def _script_var(name: str) -> str:
    m = re.search(rf"^{name}=(\S+)$", (ROOT / "scripts" / "test.sh").read_text(), flags=re.M)
    assert m, name
    return m.group(1)


def test_test_sh_runs_on_the_oldest_and_newest_python_pyproject_declares():
    import tomllib
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    oldest, newest = _script_var("OLDEST_PYTHON"), _script_var("NEWEST_PYTHON")
    assert meta["requires-python"] == f">={oldest}"
    declared = [c.rsplit(" :: ", 1)[1] for c in meta["classifiers"] if re.search(r":: 3\.\d+$", c)]
    assert max(declared, key=lambda v: tuple(map(int, v.split(".")))) == newest
    for ver in (oldest, newest):
        r = subprocess.run(["bash", "-c", f"source scripts/_lib.sh && find_python {ver}"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr   # test.sh needs it: a machine without it fails here too
        got = subprocess.run([r.stdout.strip(), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=60).stdout.strip()
        assert got == ver


def test_find_python_fails_naming_the_missing_version_and_the_fix():
    r = subprocess.run(["bash", "-c", "source scripts/_lib.sh && find_python 3.99"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and r.stdout == ""
    assert "Python 3.99 is needed" in r.stderr and "LANCE_DUCK_PYTHON_3_99" in r.stderr
    # the way round on the main Python alone, and installs that work where apt has no such Python
    assert "bash scripts/test.sh tests" in r.stderr and "uv python install 3.99" in r.stderr
    assert "pyenv install 3.99" in r.stderr and "Debian 12" in r.stderr


def test_venv_install_is_skipped_until_pyproject_changes(tmp_path):
    """demo.sh / test.sh reinstall only when pyproject.toml (or the extras) changed."""
    proj = tmp_path / "proj"
    (proj / "venv" / "bin").mkdir(parents=True)
    (proj / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    log = tmp_path / "pip.log"
    # A stand-in venv interpreter: logs pip runs, hands everything else to the real Python.
    (proj / "venv" / "bin" / "python").write_text(
        f"#!{shutil.which('bash')}\n"
        f"if [ \"$1\" = -m ] && [ \"$2\" = pip ]; then echo \"$*\" >> {log}; exit 0; fi\n"
        f"exec {sys.executable} \"$@\"\n")
    (proj / "venv" / "bin" / "python").chmod(0o755)

    def ensure(target):
        subprocess.run(["bash", "-c", f"source {ROOT}/scripts/_lib.sh && ensure_venv venv {sys.executable} '{target}'"],
                       cwd=proj, check=True, timeout=60)
        return log.read_text().count("install -q -e") if log.exists() else 0

    assert ensure(".") == 1
    assert ensure(".") == 1                      # nothing changed: no pip run
    assert ensure(".[test]") == 2                # other extras: install
    assert ensure(".") == 2
    (proj / "pyproject.toml").write_text("[project]\nname = 'x'\nversion = '2'\n")
    assert ensure(".") == 3                      # pyproject.toml changed: install again


# -- 9 and 10. packaging: the wheel holds the sample; demo from an installed wheel, anywhere -------------
@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-index",
                        "--no-build-isolation", "-w", str(out), str(ROOT)],
                       capture_output=True, text=True, timeout=300, env=_env_without_checkout())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (whl,) = out.glob("*.whl")
    return whl, r.stdout + r.stderr


def test_wheel_ships_the_sample_table_queries_and_metadata(wheel):
    whl, build_log = wheel
    names = set(zipfile.ZipFile(whl).namelist())
    sample_dir = ROOT / "lance_duck" / "_sample"
    files = [p for p in sample_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert len(files) > 20
    for p in files:
        assert "lance_duck/_sample/" + p.relative_to(sample_dir).as_posix() in names
    assert "lance_duck/py.typed" in names             # PEP 561: the type hints are shipped
    assert "lance_duck/_proto/table_pb2.pyi" in names  # with the protobuf modules' stubs
    meta = zipfile.ZipFile(whl).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert f"\nVersion: {lance_duck.__version__}\n" in meta
    assert "\nLicense-Expression: Apache-2.0\n" in meta
    assert re.search(r"^Requires-Dist: pytz", meta, flags=re.M)
    assert "project.license" not in build_log        # no TOML-table license deprecation


def test_demo_from_an_installed_wheel_runs_in_any_directory_like_the_checkout(wheel, tmp_path):
    whl, _ = wheel
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                    str(site), str(whl)], check=True, timeout=300, env=_env_without_checkout())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = _env_without_checkout(prepend=[str(site)])
    where = subprocess.run([sys.executable, "-c", "import lance_duck; print(lance_duck.__file__)"], cwd=elsewhere,
                           env=env, capture_output=True, text=True, timeout=60)
    assert Path(where.stdout.strip()).is_relative_to(site), where.stdout + where.stderr
    installed = subprocess.run([str(site / "bin" / "lance-duck"), "demo"], cwd=elsewhere, env=env,
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr
    checkout = subprocess.run([sys.executable, "-m", "lance_duck", "demo"], cwd=ROOT, capture_output=True,
                              text=True, timeout=300,
                              env=dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")))
    assert checkout.returncode == 0, checkout.stderr
    installed_table = str(site / "lance_duck" / "_sample" / "sample.lance")
    checkout_table = str(ROOT / "lance_duck" / "_sample" / "sample.lance")
    assert installed_table in installed.stdout
    assert installed.stdout.replace(installed_table, checkout_table) == checkout.stdout
    sections = [l[4:] for l in installed.stdout.splitlines() if l.startswith("=== ")]
    assert sections[2:] == sorted(p.name for p in (ROOT / "sql_examples").glob("*.sql"))


def test_sql_examples_link_to_the_packaged_sample():
    assert SAMPLE.is_symlink() and SAMPLE.resolve() == (ROOT / "lance_duck" / "_sample" / "sample.lance")
    for q in (ROOT / "sql_examples").glob("*.sql"):
        assert q.resolve().parent == ROOT / "lance_duck" / "_sample"
    assert "/work/" not in (ROOT / "sql_examples" / "data" / "README.md").read_text()


# -- 9. docstrings: complete, and their examples run -------------------------------------------------------
@pytest.mark.parametrize("module", ["lance_duck", "lance_duck.scan.dataset", "lance_duck.scan.scanner",
                                    "lance_duck.scan.fragment", "lance_duck.integrations.duckdb.api",
                                    "lance_duck.integrations.duckdb.entry",
                                    "lance_duck._state", "lance_duck.scan.compat", "lance_duck.scan.delta",
                                    "lance_duck.scan.ranges", "lance_duck.scan.blobs", "lance_duck.changefeed",
                                    "lance_duck.scan.namespace", "lance_duck.scan.hybrid", "lance_duck.query",
                                    "lance_duck.search.topk", "lance_duck.search.query",
                                    "lance_duck.search.distance", "lance_duck.search.nearest"])
def test_docstring_examples_run(module, monkeypatch, tmp_path):
    # from a directory with no sql_examples/ in it: the examples read the packaged sample_path(),
    # so they run after `pip install` wherever the user is
    monkeypatch.chdir(tmp_path)
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_help_of_dataset_documents_parameters_storage_options_and_an_example():
    import pydoc
    text = pydoc.render_doc(lance_duck.dataset, renderer=pydoc.plaintext)
    for needed in ("version:", "asof:", "branch:", "storage_options:", "aws_region", "google_service_account",
                   "azure_storage_account_name", "Returns:", "Raises:", "Examples:"):
        assert needed in text, needed
    for obj in (lance_duck.LanceDataset, lance_duck.LanceDataset.scanner,
                importlib.import_module("lance_duck.scan.scanner").LanceScanner,
                importlib.import_module("lance_duck.scan.fragment").LanceFragment):
        assert obj.__doc__ and len(obj.__doc__.strip().splitlines()) >= 5, obj
