"""``array_has_any`` / ``array_has_all`` / ``array_contains`` (pylance's SQL dialect): exact
evaluation compared with pylance, and LABEL_LIST indices answering them.

Oracles: pylance with and without ``use_scalar_index`` and lance_duck with
``use_scalar_index=False`` (same rows, same order).
"""
from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lance_duck
from lance_duck.errors import InvalidArgumentError, UnsupportedFeatureError

EDGE_FILTERS = [
    "array_has_any(tags, ['a', 'c'])",
    "array_has_all(tags, ['a', 'c'])",
    "array_has_all(tags, ['a'])",
    "array_has_any(tags, ['a', 'a'])",
    "array_has_all(tags, ['a', 'a'])",
    "array_has_any(tags, ['zz'])",
    "array_has_any(tags, ['a', NULL])",           # a null needle matches null elements
    "array_has_all(tags, ['a', NULL])",
    "array_has_any(tags, [])",                    # false on every row, null lists too
    "NOT array_has_any(tags, [])",
    "array_has_all(tags, [])",                    # true on every row, null lists too
    "NOT array_has_all(tags, [])",
    "NOT array_has_any(tags, ['a'])",             # null lists stay null
    "NOT array_has_all(tags, ['a', 'c'])",
    "array_contains(tags, 'a')",
    "array_contains(tags, NULL)",
    "array_has_any(n, [1, 6])",
    "array_has_any(n, [1.0])",
    "array_has_all(n, [1, 2])",
    "array_has_any(n, [NULL])",
    "array_has_all(n, [NULL])",
    "array_has_all(n, [])",
    "list_has_any(tags, make_array('a'))",
    "arrays_overlap(tags, ['a'])",
    "list_has_all(tags, ['a'])",
    "array_has_any(tags, ['a']) OR id = 5",
    "array_has_all(tags, ['a']) AND array_has_any(n, [1])",
]


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "label_list"])
def edge_table(tmp_path_factory, request) -> str:
    path = str(tmp_path_factory.mktemp("labels") / "t.lance")
    t = pa.table({
        "id": pa.array(range(8), pa.int64()),
        "tags": pa.array([["a", "b"], ["b"], [], None, ["a", None], ["c"], [None], ["a", "c"]],
                         pa.list_(pa.string())),
        "n": pa.array([[1, 2], [3], None, [], [1, None], [2], [5, 6], [1]], pa.list_(pa.int32())),
    })
    ds = lance.write_dataset(t, path)
    if request.param:
        ds.create_scalar_index("tags", "LABEL_LIST")
        ds.create_scalar_index("n", "LABEL_LIST")
    return path


@pytest.mark.parametrize("flt", EDGE_FILTERS)
def test_list_set_functions_match_pylance_on_edge_cases(edge_table, flt):
    ours = lance_duck.dataset(edge_table)
    ref = lance.dataset(edge_table)
    want = ref.to_table(filter=flt, use_scalar_index=False)
    assert ref.to_table(filter=flt).equals(want)
    got = ours.to_table(filter=flt)
    assert got.equals(want), flt
    assert ours.to_table(filter=flt, use_scalar_index=False).equals(want)
    assert ours.count_rows(filter=flt) == want.num_rows


@pytest.mark.parametrize("flt, error", [
    ("array_has_any(tags, 'a')", UnsupportedFeatureError),     # needles must be a constant list
    ("array_has_any(tags, [id])", UnsupportedFeatureError),
    ("array_has_any(id, [1])", InvalidArgumentError),          # not a list column
    ("array_has_any(tags, [1])", InvalidArgumentError),        # 1 is not a string
])
def test_list_set_functions_refuse_bad_arguments_naming_the_filter(edge_table, flt, error):
    with pytest.raises(error, match="array_has_any"):
        lance_duck.dataset(edge_table).to_table(filter=flt)


def test_label_list_index_answers_the_list_functions(edge_table):
    scanner = lance_duck.dataset(edge_table).scanner(filter="array_has_all(tags, ['a', 'c'])")
    sel = scanner._index_selections()
    if lance.dataset(edge_table).describe_indices():
        assert sel is not None and sel[0].tolist() == [7]
    else:
        assert sel is None
    # a null or empty needle list is evaluated without the index
    assert lance_duck.dataset(edge_table).scanner(filter="array_has_any(tags, ['a', NULL])")._index_selections() is None
    assert lance_duck.dataset(edge_table).scanner(filter="array_has_all(tags, [])")._index_selections() is None


HISTORY_FILTERS = [
    "array_has_any(tags, ['t1'])",
    "array_has_all(tags, ['t1', 'u3'])",
    "array_has_all(tags, ['t1', 'nope'])",
    "array_contains(tags, 'u4') AND id > 6500",    # rows appended after the index
    "array_has_any(tags, ['u2', 'u3']) AND grp = 7",  # with a BTREE conjunct (updated rows)
    "array_has_any(tags, ['t0']) OR array_has_all(tags, ['t2', 'u1'])",
    "NOT array_has_any(tags, ['t0', 't1'])",
]


def _versions(path: str) -> list[int]:
    return [v["version"] for v in lance.dataset(path).versions()][9:]


@pytest.mark.parametrize("flt", HISTORY_FILTERS)
def test_label_list_scan_equals_full_scan_at_every_version(history, flt):
    for v in _versions(history):
        ours = lance_duck.dataset(history, version=v)
        ref = lance.dataset(history, version=v).to_table(filter=flt, use_scalar_index=False)
        assert ours.to_table(filter=flt).equals(ref), f"version {v}: {flt}"
        assert ours.to_table(filter=flt, use_scalar_index=False).equals(ref), f"version {v}: {flt}"
        assert ours.count_rows(filter=flt) == ref.num_rows


def test_label_list_selections_are_exact_on_indexed_fragments(history_plain):
    ds = lance_duck.dataset(history_plain, version=15)   # fragment 6 appended after every segment
    flt = "array_has_all(tags, ['t1', 'u3'])"
    sel = ds.scanner(filter=flt)._index_selections()
    assert sel is not None and set(sel) == {0, 1, 2, 3, 4, 5}
    ref = lance.dataset(history_plain, version=15).to_table(filter=flt, with_row_address=True,
                                                            use_scalar_index=False)
    every = lance.dataset(history_plain, version=15).to_table(columns=[], with_row_address=True)
    hits = set(ref["_rowaddr"].to_pylist())
    live = set(every["_rowaddr"].to_pylist())
    for fid, offs in sel.items():
        addrs = {(fid << 32) | int(o) for o in offs}
        # exact on the live rows (deleted rows may stay in the selection)
        assert addrs & live == {a for a in hits if a >> 32 == fid}


@pytest.mark.parametrize("flt", [f for f in HISTORY_FILTERS[:5] if "id >" not in f])
def test_count_rows_is_answered_from_label_list_and_btree_indices(history_plain, flt):
    from lance_duck.index.search import count_from_indices
    v = 10   # every index covers every fragment
    scanner = lance_duck.dataset(history_plain, version=v).scanner(filter=flt)
    assert scanner._filter.conjuncts_complete
    got = count_from_indices(scanner._snapshot, scanner._filter.conjuncts, scanner._fragments)
    assert got == lance.dataset(history_plain, version=v).count_rows(filter=flt, use_scalar_index=False)


def test_cli_describe_lists_the_indices_like_pylance(history_plain):
    import json

    from ..cli_runner import run_cli
    r = run_cli("describe", history_plain, "--format", "json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)["indices"]
    want = lance.dataset(history_plain).describe_indices()
    assert [(d["name"], d["type"], d["segments"], d["rows_indexed"]) for d in got] == \
        [(d.name, d.index_type, len(d.segments), d.num_rows_indexed) for d in want]
    text = run_cli("describe", history_plain)
    assert text.returncode == 0 and "indices:" in text.stdout and "tags_idx" in text.stdout
