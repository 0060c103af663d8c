"""Write the sample table: a small orders table with a real history.

It lives in ``lance_duck/_sample/sample.lance`` (shipped with the package, so ``lance-duck demo`` works
after ``pip install``); ``sql_examples/data/sample.lance`` is a symlink to it.

Needs pylance (the reference writer; lance_duck itself never imports it):
    python sql_examples/make_sample_table.py

History (see data/README.md): v1 create (2 fragments) -> v2 append (3rd fragment) ->
v3 sparse delete (cancelled orders) -> v4 dense delete (orders 200-599) -> v5 update
(pending -> shipped) -> v6 add column ``priority``. Tags: initial_load=1, before_deletes=2,
with_priority=6.
"""
from __future__ import annotations

import os
import shutil
import sys
from datetime import datetime, timezone
from decimal import Decimal

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(os.path.dirname(HERE), "lance_duck", "_sample", "sample.lance")

STATUSES = ["pending", "shipped", "delivered", "cancelled", "returned"]
CITIES = [("Paris", "FR", "75001"), ("Berlin", "DE", "10115"), ("Lisbon", "PT", "1100"),
          ("Austin", "US", "73301"), ("Osaka", "JP", "530-0001"), ("Nairobi", "KE", "00100")]
CUSTOMERS = [f"customer-{i:03d}" for i in range(120)]
START = datetime(2025, 1, 1, tzinfo=timezone.utc)


def orders(first_id: int, n: int, seed: int) -> pa.Table:
    """``n`` orders with ids ``first_id..``, deterministic for a seed."""
    rng = np.random.default_rng(seed)
    ids = np.arange(first_id, first_id + n, dtype=np.int64)
    status = rng.choice(len(STATUSES), size=n, p=[0.2, 0.3, 0.35, 0.1, 0.05])
    city = rng.integers(0, len(CITIES), size=n)
    cents = rng.integers(199, 50_000, size=n)
    minutes = np.sort(rng.integers(0, 60 * 24 * 180, size=n)) + first_id
    ordered_at = np.datetime64(START.replace(tzinfo=None), "us") + minutes.astype("timedelta64[m]")
    qty = rng.integers(1, 6, size=n).astype(np.int32)
    notes = [None if r > 0.15 else ("gift wrap" if r > 0.07 else "leave at door") for r in rng.random(n)]
    return pa.table({
        "order_id": ids,
        "customer": pa.array([CUSTOMERS[i] for i in rng.integers(0, len(CUSTOMERS), size=n)]),
        "status": pa.array([STATUSES[s] for s in status]),
        "ordered_at": pa.array(ordered_at, pa.timestamp("us", tz="UTC")),
        "amount": pa.array([Decimal(int(c)) / 100 for c in cents], pa.decimal128(10, 2)),
        "quantity": pa.array(qty),
        "unit_weight_kg": pa.array(np.round(rng.gamma(2.0, 0.6, size=n), 3)),
        "shipping": pa.StructArray.from_arrays(
            [pa.array([CITIES[c][0] for c in city]), pa.array([CITIES[c][1] for c in city]),
             pa.array([CITIES[c][2] for c in city])], names=["city", "country", "zip"]),
        "note": pa.array(notes, pa.string()),
    })


def main(target: str = TARGET) -> None:
    import lance

    if os.path.exists(target):
        shutil.rmtree(target)
    ds = lance.write_dataset(orders(0, 2000, 1), target, max_rows_per_file=1000)   # v1: 2 fragments
    ds.tags.create("initial_load", 1)
    ds = lance.write_dataset(orders(2000, 500, 2), target, mode="append")          # v2: 3rd fragment
    ds.tags.create("before_deletes", 2)
    ds.delete("status = 'cancelled'")                                              # v3: sparse deletes
    ds.delete("order_id >= 200 AND order_id < 600")                                # v4: dense delete
    ds.update({"status": "'shipped'"}, where="status = 'pending' AND order_id < 1000")  # v5: update
    ds = lance.dataset(target)
    ds.add_columns({"priority": "quantity >= 4"})                                  # v6: new column
    ds = lance.dataset(target)
    ds.tags.create("with_priority", ds.version)
    print(f"wrote {target}: version {ds.version}, {ds.count_rows()} rows, "
          f"{len(ds.get_fragments())} fragments, tags {sorted(ds.tags.list())}")
    for v in ds.versions():
        print(v["version"], lance.dataset(target, version=v["version"]).count_rows())


if __name__ == "__main__":
    main(*sys.argv[1:])
