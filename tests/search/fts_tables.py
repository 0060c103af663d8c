"""Tables with INVERTED indices written by pylance 14.0.2 for the full-text tests, and the
comparison of a lance_duck result with pylance's (same rows, same order up to equal scores)."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa

SENTENCES = [
    "The quick brown fox jumps over the lazy dog",
    "Running runners were running quickly through the running streets",
    "A lazy afternoon with the dogs and the cats sleeping in the sun",
    "She sells sea shells by the sea shore and the shells are beautiful",
    "Generously donated books were distributed to the happiest children",
    "The connection between connected connectors is connecting everything",
    "Caf\u00e9 owners in M\u00fcnchen serve na\u00efve r\u00e9sum\u00e9s with Stra\u00dfe maps",
    "Those who have been having the most fun are themselves the happiest",
    "Databases index documents so that searching documents becomes fast",
    "It was the best of times, it was the worst of times, it was the age of wisdom",
    "Jumping foxes and jumped dogs: what a jumpy day for everybody involved",
    "ORGANIZATIONS organize organized organizational meetings about organization",
]


def synthetic_texts(n: int, seed: int, vocab: int = 60) -> list[str]:
    """Seeded short documents: a Zipf-like synthetic vocabulary mixed with real English sentences."""
    rnd = random.Random(seed)
    words = [f"w{i}" for i in range(vocab)]
    weights = [1.0 / (i + 1) for i in range(vocab)]
    out = []
    for i in range(n):
        if i % 7 == 3:
            out.append(rnd.choice(SENTENCES))
        elif i % 11 == 5:
            out.append(rnd.choice(SENTENCES) + " " + " ".join(rnd.choices(words, weights, k=rnd.randint(2, 6))))
        elif i % 97 == 13:
            out.append(None)
        else:
            out.append(" ".join(rnd.choices(words, weights, k=rnd.randint(3, 25))))
    return out


def table(n: int, seed: int, start: int = 0) -> pa.Table:
    texts = synthetic_texts(n, seed)
    rnd = random.Random(seed + 1)
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "text": pa.array(texts, pa.string()),
                     "title": pa.array([f"title w{rnd.randint(0, 9)} {t.split()[0] if t else ''}" for t in texts]),
                     "score": pa.array([rnd.random() for _ in range(n)], pa.float64())})


def assert_same_ranking(ours: pa.Table, theirs: pa.Table, key: str = "id", limited: bool = False) -> None:
    """Equal schema (names, types) and rows; ``_score`` equal within float32 tolerance position by
    position, rows in the same order except among equal scores (pylance's order among ties varies
    between runs); with ``limited``, rows tied at the cut may differ."""
    assert ours.schema.names == theirs.schema.names
    assert [f.type for f in ours.schema] == [f.type for f in theirs.schema]
    assert ours.num_rows == theirs.num_rows
    if ours.num_rows == 0:
        return
    so = np.asarray(ours["_score"].to_numpy(), dtype=np.float64)
    st = np.asarray(theirs["_score"].to_numpy(), dtype=np.float64)
    np.testing.assert_allclose(so, st, rtol=2e-6, atol=2e-6)
    assert np.all(np.diff(so) <= 1e-12), "ours not ordered by score"
    cut = so[-1]
    rows_o = {r[key]: r for r in ours.to_pylist()}
    rows_t = {r[key]: r for r in theirs.to_pylist()}
    if limited:
        above_o = {k for k, s in zip(ours[key].to_pylist(), so) if s > cut + 1e-5}
        above_t = {k for k, s in zip(theirs[key].to_pylist(), st) if s > cut + 1e-5}
        assert above_o == above_t
        common = above_o
    else:
        assert set(rows_o) == set(rows_t)
        common = set(rows_o)
    for k in common:
        a, b = dict(rows_o[k]), dict(rows_t[k])
        sa, sb = a.pop("_score"), b.pop("_score")
        assert abs(sa - sb) <= 2e-6 * max(1.0, abs(sb)), (k, sa, sb)
        assert a == b
