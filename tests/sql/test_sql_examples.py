"""Every sql_examples/*.sql runs on the sample table and equals an answer computed with pylance."""
from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path

import pytest

import lance_duck
from lance_duck.integrations.cli import example_queries

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = str(ROOT / "sql_examples" / "data" / "sample.lance")


def _pl(**kw):
    import lance
    return lance.dataset(SAMPLE, **kw)


def _rows(version=None, columns=None):
    kw = {} if version is None else {"version": version}
    return _pl(**kw).to_table(columns=columns).to_pylist()


def exp_01():
    agg = defaultdict(lambda: [0, Decimal(0)])
    for r in _rows():
        agg[r["status"]][0] += 1
        agg[r["status"]][1] += r["amount"]
    return [(s, n, rev) for s, (n, rev) in sorted(agg.items())]


def exp_02():
    return [(v, _pl(version=v).count_rows()) for v in (1, 2, 3, 4, 6)]


def exp_03():
    n = sum(1 for r in _rows("before_deletes") if r["status"] == "cancelled")
    return [("cancelled", n)]


def exp_04():
    asof = dt.datetime.fromisoformat("2026-11-21 19:56:17.758")
    ids = _pl(asof=asof).to_table(columns=["order_id"])["order_id"].to_pylist()
    return [(len(ids), max(ids))]


def exp_05():
    v2 = {(r["order_id"], r["status"]) for r in _rows(2, ["order_id", "status"])}
    v4 = {(r["order_id"], r["status"]) for r in _rows(4, ["order_id", "status"])}
    return sorted(Counter(s for _, s in v2 - v4).items())


def exp_06():
    old = {r["order_id"]: r["status"] for r in _rows(4, ["order_id", "status"])}
    new = {r["order_id"]: r["status"] for r in _rows(5, ["order_id", "status"])}
    c = Counter((old[k], new[k]) for k in old.keys() & new.keys() if old[k] != new[k])
    return [(a, b, n) for (a, b), n in sorted(c.items(), key=lambda kv: -kv[1])]


def exp_07():
    agg = defaultdict(list)
    for r in _rows():
        if r["shipping"] is not None and r["shipping"]["country"] in ("FR", "DE"):
            agg[r["shipping"]["city"]].append(r["quantity"])
    return [(c, len(q), round(sum(q) / len(q), 2)) for c, q in sorted(agg.items())]


def exp_08():
    c = Counter(r["priority"] for r in _rows("with_priority", ["priority"]))
    return sorted(c.items(), key=lambda kv: (kv[0] is None, kv[0]))


def exp_09():
    agg = {}
    for r in _rows():
        if r["amount"] > 100:
            a = agg.setdefault(r["customer"], [0, Decimal(0), r["ordered_at"], r["ordered_at"]])
            a[0] += 1
            a[1] += r["amount"]
            a[2], a[3] = min(a[2], r["ordered_at"]), max(a[3], r["ordered_at"])
    out = sorted(((c, *v) for c, v in agg.items()), key=lambda t: (-t[2], t[0]))
    return [tuple(t) for t in out[:5]]


def exp_10():
    return [(_pl(version=3).count_rows(),)]


EXPECTED = {f"{i:02d}": fn for i, fn in enumerate(
    [exp_01, exp_02, exp_03, exp_04, exp_05, exp_06, exp_07, exp_08, exp_09, exp_10], start=1)}
EXAMPLES = example_queries(SAMPLE)


def test_there_are_at_least_eight_examples_and_each_has_an_oracle():
    assert len(EXAMPLES) >= 8
    assert sorted(name[:2] for name, _ in EXAMPLES) == sorted(EXPECTED)


@pytest.mark.parametrize("name,query", EXAMPLES, ids=[n for n, _ in EXAMPLES])
def test_example_matches_pylance(name, query):
    table = lance_duck.sql(query).arrow()
    table = table.read_all() if hasattr(table, "read_all") else table
    got = [tuple(r.values()) for r in table.to_pylist()]
    assert got == EXPECTED[name[:2]]()
