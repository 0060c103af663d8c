"""The change feed computed independently from pylance's full reads of consecutive versions."""
from __future__ import annotations

import lance
import pyarrow as pa

NO_ROWS = {"Rewrite", "CreateIndex", "BaseOperation"}      # BaseOperation: pylance's ReserveFragments
ORDER = {"delete": 0, "update_preimage": 1, "update_postimage": 2, "insert": 3}


def _read(uri: str, version: int, stable: bool) -> dict:
    """{key: row dict} of a version (key: _rowid with stable row ids, else _rowaddr)."""
    if version == 0:
        return {}
    ds = lance.dataset(uri, version=version)
    extra = ["_rowid", "_rowaddr"] + (["_row_last_updated_at_version"] if stable else [])
    t = ds.to_table(columns=ds.schema.names + extra)
    key = "_rowid" if stable else "_rowaddr"
    return {r[key]: r for r in t.to_pylist()}


def expected_commit(uri: str, v: int, names: list[str]) -> list[dict]:
    """The rows of commit ``v`` (``names``: the data columns of the range's end)."""
    stable = lance.dataset(uri, version=v).has_stable_row_ids
    op = type(lance.dataset(uri).read_transaction(v).operation).__name__
    if op in NO_ROWS:
        return []
    before, after = _read(uri, v - 1, stable), _read(uri, v, stable)
    if op == "Overwrite":
        before_keys, after_keys, both = set(before), set(after), set()
        before_only, after_only = before_keys, after_keys
    else:
        both = set(before) & set(after)
        before_only, after_only = set(before) - both, set(after) - both

    def row(r: dict, kind: str, key: int) -> dict:
        return {**{n: r.get(n) for n in names}, "_change_type": kind, "_commit_version": v, "_rowid": key}

    out = [row(before[k], "delete", k) for k in before_only] + [row(after[k], "insert", k) for k in after_only]
    for k in both:
        b, a = before[k], after[k]
        if stable:
            if b["_row_last_updated_at_version"] != a["_row_last_updated_at_version"]:
                out += [row(b, "update_preimage", k), row(a, "update_postimage", k)]
        elif any(b.get(n) != a.get(n) for n in names):
            out += [row(b, "delete", k), row(a, "insert", k)]
    out.sort(key=lambda r: (r["_rowid"], ORDER[r["_change_type"]]))
    return out


def expected(uri: str, start: int, end: int) -> list[dict]:
    names = lance.dataset(uri, version=end).schema.names
    return [r for v in range(start + 1, end + 1) for r in expected_commit(uri, v, names)]


def rows_of(table: pa.Table) -> list[dict]:
    """Our rows without ``_commit_timestamp`` (checked on its own)."""
    return table.drop_columns(["_commit_timestamp"]).to_pylist()
