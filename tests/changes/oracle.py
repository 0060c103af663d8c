"""The change feed computed independently from pylance's full reads of consecutive versions."""
from __future__ import annotations

import lance
import pyarrow as pa

NO_ROWS = {"Rewrite", "CreateIndex", "BaseOperation"}      # BaseOperation: pylance's ReserveFragments
ORDER = {"delete": 0, "update_preimage": 1, "update_postimage": 2, "insert": 3}


def _ids(uri: str, version: int) -> dict[str, int]:
    """Top-level column name -> field id at a version (pylance's lance_schema)."""
    return {f.name(): f.id() for f in lance.dataset(uri, version=version).lance_schema.fields()}


def _read(uri: str, version: int, stable: bool, end: int) -> dict:
    """{key: row dict} of a version (key: _rowid with stable row ids, else _rowaddr), its columns
    named as at version ``end`` (matched by field id; a column ``end`` lacks is left out)."""
    if version == 0:
        return {}
    ds = lance.dataset(uri, version=version)
    extra = ["_rowid", "_rowaddr"] + (["_row_last_updated_at_version"] if stable else [])
    t = ds.to_table(columns=ds.schema.names + extra)
    end_names = {i: n for n, i in _ids(uri, end).items()}
    rename = {n: end_names.get(i) for n, i in _ids(uri, version).items()}
    key = "_rowid" if stable else "_rowaddr"
    out = {}
    for r in t.to_pylist():
        out[r[key]] = {rename.get(k, k): val for k, val in r.items() if rename.get(k, k) is not None}
    return out


def expected_commit(uri: str, v: int, names: list[str], end: int | None = None) -> list[dict]:
    """The rows of commit ``v`` (``names``: the data columns of the range's end, version ``end``)."""
    end = v if end is None else end
    stable = lance.dataset(uri, version=v).has_stable_row_ids
    op = type(lance.dataset(uri).read_transaction(v).operation).__name__
    if op in NO_ROWS:
        return []
    before, after = _read(uri, v - 1, stable, end), _read(uri, v, stable, end)
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
    return [r for v in range(start + 1, end + 1) for r in expected_commit(uri, v, names, end)]


def rows_of(table: pa.Table) -> list[dict]:
    """Our rows without ``_commit_timestamp`` (checked on its own)."""
    return table.drop_columns(["_commit_timestamp"]).to_pylist()
