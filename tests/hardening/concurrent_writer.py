"""A pylance writer process for tests/hardening/test_table_concurrent_writers.py (run as a script).

``python concurrent_writer.py <table> <role> <seconds> <log>``: for ``seconds``, ``append`` adds
batches of rows, ``delete`` removes every third row of a fragment that has no deletion file yet,
``cleanup`` removes every version but the latest and tagged ones (``cleanup_old_versions(older_than=0)``). After
each commit the writer appends ``version count sum(i)`` of the version it made to ``log`` (the
truth a reader's answer for that version is checked against).

Deletes only ever touch fragments without deletions, so cleanup removes old manifests (and
transaction files) but never a data or deletion file a version still being read needs: a reader's
failure is then lance_duck's, not the race every reader of a removed version loses. The writers
take turns (a lock file), so each logs the version it made before the next commit or cleanup.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from datetime import timedelta

import numpy as np
import pyarrow as pa

BATCH = 200


def main(path: str, role: str, seconds: float, log: str) -> None:
    import lance
    open(log, "a").close()                  # ready: the test starts reading once every log exists
    end = time.monotonic() + seconds
    rng = np.random.default_rng(abs(hash(role)) % 1000)
    k = 0
    with open(log, "a") as out:
        def record(ds) -> None:
            t = ds.to_table(columns=["i"])
            out.write(f"{ds.version} {t.num_rows} {pa.compute.sum(t['i']).as_py() or 0}\n")
            out.flush()
        while time.monotonic() < end:
            k += 1
            try:
                with _turn(log):
                    _step(lance, path, role, k, rng, record)
            except Exception as exc:  # noqa: BLE001 - a writer's failure is shown, the next round goes on
                print(f"{role}: {type(exc).__name__}: {exc}", file=sys.stderr)


@contextlib.contextmanager
def _turn(log: str):
    """One writer at a time (a lock file beside the logs): each commit is logged with the version it
    made before anyone else commits or cleans up, so the logs are the truth (with writers racing
    each other pylance's dataset objects once logged two contents for one version). The reader,
    lance_duck, takes no lock."""
    with open(os.path.join(os.path.dirname(log), "writers.lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _step(lance, path: str, role: str, k: int, rng, record) -> None:
    """One round of ``role``: a commit logged by ``record``, or a cleanup."""
    if role == "append":
        start = 1_000_000 * (k + 1) + int(rng.integers(1000))
        ds = lance.write_dataset(pa.table({"i": np.arange(start, start + BATCH, dtype=np.int64),
                                           "s": [f"s{j % 7}" for j in range(BATCH)]}),
                                 path, mode="append")
        record(ds)
    elif role == "delete":
        ds = lance.dataset(path)
        fresh = [f for f in ds.get_fragments() if f.metadata.deletion_file is None]
        if not fresh:
            return
        ids = fresh[-1].to_table(columns=["i"])["i"]
        lo, hi = pa.compute.min(ids).as_py(), pa.compute.max(ids).as_py()
        ds.delete(f"i >= {lo} AND i <= {hi} AND i % 3 = 0")
        record(ds)
    elif role == "cleanup":
        lance.dataset(path).cleanup_old_versions(older_than=timedelta(0), error_if_tagged_old_versions=False)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4])
