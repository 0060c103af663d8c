"""Seeded random SQL filters in pylance's dialect (``sql/pushdown_fuzz.lance_predicate``: every scalar
type at its edges, timestamp literals finer than their column, LIKE / ILIKE, IN with NULL, BETWEEN,
struct fields, list functions, float columns compared with each other, nested AND / OR / NOT) select
the rows pylance selects through the pylance API: ``to_table`` (rows and their order), ``count_rows``
(answered from indices where they cover it) and ``scanner(limit, offset)``; on a table with fragments,
deletions, an update, with and without scalar indices (and unindexed rows after them), at the latest
version and an older one.

Oracle: pylance over the same table, without its scalar indices (with a BITMAP on a boolean column
pylance drops the null rows of ``NOT (b IS TRUE)``, which its scan keeps). A filter pylance refuses is skipped; lance_duck may refuse one
pylance takes only with its own clear error (the ``LanceDuckError`` family), counted and bounded.
Set ``LANCE_DUCK_FUZZ_CASES`` (cases per seed, default 60) and ``LANCE_DUCK_FUZZ_SEEDS`` (default 0,1,2) to search further.
"""
from __future__ import annotations

import os
import random

import lance
import pytest

import lance_duck
from lance_duck.errors import LanceDuckError

from ..sql.pushdown_fuzz import lance_predicate, write_table

CASES = int(os.environ.get("LANCE_DUCK_FUZZ_CASES", "60"))
SEEDS = [int(s) for s in os.environ.get("LANCE_DUCK_FUZZ_SEEDS", "0,1,2").split(",")]


@pytest.fixture(scope="module", params=["plain", "indexed", "older"])
def target(request, tmp_path_factory):
    """(pylance's dataset, lance_duck's) at the version the param names."""
    kind = request.param
    path = str(tmp_path_factory.mktemp(f"lfuzz_{kind}") / "t.lance")
    older = write_table(path, indexed=kind == "indexed")
    version = older if kind == "older" else None
    return lance.dataset(path, version=version), lance_duck.dataset(path, version=version)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_filter_selects_pylances_rows_through_the_pylance_api(target, seed):
    pds, lds = target
    r = random.Random(1000 + seed)
    wrong: list[str] = []
    checked = refused = 0
    for _ in range(CASES):
        flt = lance_predicate(r)
        try:
            want = pds.to_table(columns=["id"], filter=flt, use_scalar_index=False)["id"].to_pylist()
            want_page = pds.scanner(columns=["id"], filter=flt, limit=7, offset=3,
                                    use_scalar_index=False).to_table()["id"].to_pylist()
        except Exception:               # noqa: BLE001 - pylance refuses it: nothing to compare
            continue
        checked += 1
        try:
            got = lds.to_table(columns=["id"], filter=flt)["id"].to_pylist()
            count = lds.count_rows(filter=flt)
            page = lds.scanner(columns=["id"], filter=flt, limit=7, offset=3).to_table()["id"].to_pylist()
        except LanceDuckError:
            refused += 1
            continue
        except Exception as err:        # noqa: BLE001 - an error outside lance_duck's family fails
            wrong.append(f"{flt}: {type(err).__name__}: {str(err)[:160]}")
            continue
        if got != want or count != len(want) or sorted(page) != sorted(want_page):
            wrong.append(f"{flt}: {len(want)} rows wanted, got {len(got)} (count {count}), "
                         f"extra {sorted(set(got) - set(want))[:5]}, missing {sorted(set(want) - set(got))[:5]}")
    assert not wrong, "\n".join(wrong[:10])
    assert checked >= CASES // 2
    assert refused <= checked // 10, f"{refused} of {checked} filters pylance takes were refused"
