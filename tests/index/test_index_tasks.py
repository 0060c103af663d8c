"""Planning of index-selected fragments: a selection up to RAMP_GROWTH times the current step is
read as one task (a split re-reads the chunks of every column), a larger one keeps the ramp that
lets an engine stopping early (DuckDB's LIMIT) decode little."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from lance_duck.scan.planning import RAMP_GROWTH, plan_tasks


def _frag(fid: int, n: int) -> SimpleNamespace:
    return SimpleNamespace(id=fid, physical_rows=n, num_deletions=lambda: 0, count_rows=lambda: n)


def test_a_selection_within_the_ramp_is_one_task_and_a_large_one_keeps_the_ramp():
    small = np.arange(0, 250_000, 20, dtype=np.int64)            # 12,500 rows: > 8K, <= 4 x 8K
    large = np.arange(0, 250_000, 2, dtype=np.int64)             # 125,000 rows: > 4 x 8K
    one = list(plan_tasks([_frag(0, 250_000)], 128 * 1024, first_rows=8 * 1024, selections={0: small}))
    assert [len(t.selection) for t in one] == [small.size]
    ramp = list(plan_tasks([_frag(0, 250_000)], 128 * 1024, first_rows=8 * 1024, selections={0: large}))
    sizes = [len(t.selection) for t in ramp]
    assert sizes[:2] == [8 * 1024, 8 * 1024 * RAMP_GROWTH]      # the first task stays small
    assert np.array_equal(np.concatenate([t.selection for t in ramp]), large)   # every row, in order


def test_one_task_never_exceeds_the_batch_size():
    sel = np.arange(300_000, dtype=np.int64)
    tasks = list(plan_tasks([_frag(0, 300_000)], 100_000, first_rows=100_000, selections={0: sel}))
    assert [len(t.selection) for t in tasks] == [100_000] * 3
