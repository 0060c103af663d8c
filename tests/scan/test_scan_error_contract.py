"""Every public method of LanceDataset / LanceScanner / LanceFragment and every entry point, called with
bad arguments, raises what docs/safety.md's error table promises: lance_duck's error family (or
FileNotFoundError / PermissionError for I/O), never a bare TypeError / ValueError / KeyError /
IndexError / AttributeError from inside. ``sql`` may also raise ``duckdb.Error`` for SQL DuckDB
refuses (documented in its Raises)."""
from __future__ import annotations

import collections.abc as cabc
import inspect
import itertools
import os

import duckdb
import pytest

import lance_duck
from lance_duck.errors import InvalidArgumentError, LanceDuckError

ALLOWED = (LanceDuckError, FileNotFoundError, PermissionError)
BAD = [object(), -1, "no_such_thing", 10**12, [object()], {"x": object()}, 1.5, b"\xff"]
ENTRY_POINTS = ["dataset", "sql", "register", "changes", "connect", "hybrid_search"]


@pytest.fixture(scope="module")
def ds():
    return lance_duck.dataset(lance_duck.sample_path())


@pytest.fixture(scope="module")
def good(ds):
    """A valid value for each required parameter name, so each bad argument is tried on its own."""
    return {"indices": [0], "num_rows": 1, "start": 0, "end": 1, "version": 1, "sorting": "order_id",
            "right_dataset": ds, "keys": "order_id", "on": "order_id", "by": "status", "tolerance": 1,
            "blob_column": "b", "index_name": "x", "uri": lance_duck.sample_path(),
            "uri_or_dataset": lance_duck.sample_path(), "query": "select 1", "connection": duckdb.connect(),
            "name": "t", "vector": [0.0], "requests": [], "selector": "indices", "expression": "order_id > 1",
            "compared_against": 1, "tag": "x", "fragment_id": 0}


def _calls(fn, good):
    """(label, args, kwargs) for each parameter of ``fn`` given each bad value, the rest good or default."""
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    for p, bad in itertools.product(params, BAD):
        args, kwargs = [], {}
        for q in params:
            v = bad if q is p else q.default if q.default is not q.empty else good.get(q.name, bad)
            if q.kind == q.POSITIONAL_ONLY:
                args.append(v)
            elif q is p or q.default is q.empty:
                kwargs[q.name] = v
        yield f"{p.name}={bad!r:.30}", args, kwargs


def _leaks(label, fn, calls, allowed=ALLOWED):
    found = []
    for what, args, kwargs in calls:
        try:
            got = fn(*args, **kwargs)
            if isinstance(got, cabc.Iterator):
                for _ in itertools.islice(got, 3):
                    pass
        except allowed:
            pass
        except Exception as e:   # noqa: BLE001 -- the point: anything else is a leak
            found.append(f"{label}({what}): {type(e).__module__}.{type(e).__name__}: {str(e)[:80]}")
    return found


def _public_methods(obj):
    for name in sorted(dir(type(obj))):
        attr = getattr(type(obj), name)
        # from_* are pyarrow's constructors of other datasets / scanners, inherited untouched
        if name.startswith(("_", "from_")) or isinstance(attr, property) or not callable(attr):
            continue
        yield name, getattr(obj, name)


@pytest.mark.parametrize("which", ["LanceDataset", "LanceScanner", "LanceFragment"])
def test_every_public_method_raises_only_documented_errors(ds, good, which):
    obj = {"LanceDataset": ds, "LanceScanner": ds.scanner(columns=["order_id"]),
           "LanceFragment": ds.get_fragments()[0]}[which]
    leaks, tried = [], 0
    for name, fn in _public_methods(obj):
        calls = list(_calls(fn, good))
        tried += len(calls)
        leaks += _leaks(f"{which}.{name}", fn, calls)
    assert tried > 20            # the signatures were read (bad values tried per parameter)
    assert leaks == []


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_every_entry_point_raises_only_documented_errors(good, name):
    fn = getattr(lance_duck, name)
    allowed = ALLOWED + ((duckdb.Error,) if name == "sql" else ())
    assert _leaks(f"lance_duck.{name}", fn, list(_calls(fn, good)), allowed) == []


@pytest.mark.parametrize("call, names", [
    (lambda ds: ds.take(["a"]), "indices"),
    (lambda ds: ds.take([object()]), "indices"),
    (lambda ds: ds.head("2"), "num_rows"),
    (lambda ds: ds.slice("0", 2), "start"),
    (lambda ds: ds.sample([1]), "num_rows"),
    (lambda ds: ds.get_transactions("2"), "recent_transactions"),
    (lambda ds: ds.read_transaction([1]), "version"),
    (lambda ds: ds.scanner(fragments=3), "fragments"),
    (lambda ds: ds.scanner().take([object()]), "take"),
    (lambda ds: ds.sort_by(3), "sort_by"),
    (lambda ds: ds.join(3, "order_id"), "join"),
    (lambda ds: lance_duck.dataset(3.5), "URI"),
    (lambda ds: lance_duck.dataset(b"t.lance"), "URI"),
    (lambda ds: lance_duck.dataset(lance_duck.sample_path(), storage_options=5), "storage_options"),
    (lambda ds: lance_duck.connect(3), "URI"),
    (lambda ds: lance_duck.sql("select 1", connection="db"), "connection"),
    (lambda ds: lance_duck.sql("select 1", storage_options="x"), "storage_options"),
    (lambda ds: lance_duck.sql(3), "query"),
    (lambda ds: lance_duck.register(None, "t", ds), "connection"),
    (lambda ds: lance_duck.register(duckdb.connect(), "t", 3), "uri_or_dataset"),
    (lambda ds: lance_duck.register(duckdb.connect(), 3, ds), "name"),
])
def test_bad_arguments_are_invalid_argument_errors_naming_them(ds, call, names):
    with pytest.raises(InvalidArgumentError, match=names):
        call(ds)


def test_missing_table_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        lance_duck.dataset(os.fspath(tmp_path / "nope.lance"))
