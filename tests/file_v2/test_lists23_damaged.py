"""Damaged positions / lengths of 2.3 sparse list pages (one list layer, a list of lists) are refused with ``CorruptFileError``
naming the page, on the direct offsets path and on the rep/def path alike: a length past the
items, lengths that do not add up, positions out of order or past the rows, a null list with
items, a list under a null struct with items, an item null past the items, too few values.

The integers are damaged after they are decoded from the file (``SparsePage._ints``), as if the
stored bytes had decoded to them.
"""
from __future__ import annotations

import numpy as np
import pytest

from lance_duck.errors import CorruptFileError
from lance_duck.file.v2_1.layouts import sparse23
from lance_duck.file.v2_1.planar23 import SparseList, SparseValidity

from .test_lists23_direct import _reader, _write, lists_table


@pytest.fixture(scope="module")
def one_page(tmp_path_factory):
    t = lists_table(n=20_000, seed=3)
    return _write(tmp_path_factory.mktemp("damaged") / "t", t.select(["id", "l", "st_l", "l_l"]), "2.3")


def _roles(page) -> dict:
    """The page's integer sequences by role."""
    layers = page.lay.layers
    j = next(i for i, x in enumerate(layers) if isinstance(x, SparseList))
    lst = layers[j]
    out = {"nonempty": lst.nonempty, "lengths": lst.lengths}
    if lst.validity is not None:
        out["list_nulls"] = lst.validity.positions
    if isinstance(layers[-1], SparseValidity) and j + 1 < len(layers):
        out["item_nulls"] = layers[-1].positions
    if j and isinstance(layers[0], SparseValidity):
        out["struct_nulls"] = layers[0].positions
    inner = [x for x in layers[j + 1:] if isinstance(x, SparseList)]
    if inner:   # a list of lists: the inner list's
        out.update(inner_nonempty=inner[0].nonempty, inner_lengths=inner[0].lengths)
        if inner[0].validity is not None:
            out["inner_nulls"] = inner[0].validity.positions
    return out


def _damage(monkeypatch, role: str, fn) -> None:
    """Apply ``fn(values, seen)`` to the decoded integers of ``role`` (``seen``: roles decoded before)."""
    ints = sparse23.SparsePage._ints

    def damaged(self, c, raw, what):
        out = ints(self, c, raw, what)
        seen = self.__dict__.setdefault("_seen", {})
        for name, codec in _roles(self).items():
            if c is codec:
                seen[name] = out
                if name == role:
                    out = fn(out.copy(), seen)
        return out
    monkeypatch.setattr(sparse23.SparsePage, "_ints", damaged)


def _longer(v, seen):
    v[len(v) // 2] += 1
    return v


def _zero(v, seen):
    v[3] = 0
    return v


def _drop_last(v, seen):
    return v[:-1]


def _swap(v, seen):
    v[10], v[11] = v[11], v[10]
    return v


def _duplicate(v, seen):
    v[10] = v[11]
    return v


def _past_end(v, seen):
    v[-1] = 10 ** 9
    return v


def _onto(other: str):
    """One position moved onto a slot of ``other`` (decoded before) between its neighbours."""
    def move(v, seen):
        slots = seen[other]
        for i in range(1, len(v) - 1):
            cand = slots[(slots > v[i - 1]) & (slots < v[i + 1])]
            if cand.size:
                v[i] = cand[0]
                return v
        raise AssertionError(f"no slot of {other} to move a position onto")
    return move


def _fewer_values(page_values):
    return page_values.slice(1)


CASES = {
    "a length past the items": ("l", "lengths", _longer, "do not add up"),
    "a zero length": ("l", "lengths", _zero, "do not add up"),
    "a length missing": ("l", "lengths", _drop_last, "do not add up"),
    "positions out of order": ("l", "nonempty", _swap, "not increasing"),
    "a repeated position": ("l", "nonempty", _duplicate, "not increasing"),
    "a position past the rows": ("l", "nonempty", _past_end, "not increasing"),
    "a null list with items": ("l", "list_nulls", _onto("nonempty"), "a null list has items"),
    "an item null past the items": ("l", "item_nulls", _past_end, "not increasing"),
    "a list under a null struct with items": ("st_l", "nonempty", _onto("struct_nulls"),
                                              "under a null parent has items|a null list has items"),
    "an inner list length past its items": ("l_l", "inner_lengths", _longer, "do not add up"),
    "inner positions out of order": ("l_l", "inner_nonempty", _swap, "not increasing"),
    "an inner position past the outer lists' items": ("l_l", "inner_nonempty", _past_end, "not increasing"),
    "a null inner list with items": ("l_l", "inner_nulls", _onto("inner_nonempty"), "a null list has items"),
}


@pytest.mark.parametrize("path", ["direct", "levels"])
@pytest.mark.parametrize("case", list(CASES))
def test_damaged_list_positions_and_lengths_are_refused(one_page, monkeypatch, case, path):
    column, role, fn, message = CASES[case]
    _damage(monkeypatch, role, fn)
    if path == "levels":
        monkeypatch.setattr(sparse23, "_direct_rule", lambda layers: False)
    snap, reader = _reader(one_page)
    with pytest.raises(CorruptFileError, match=message) as err:
        reader.read_field(snap.schema.field(column))
    assert " page " in str(err.value)
    with pytest.raises(CorruptFileError, match=message):   # a selection decodes the same page
        reader.read_field(snap.schema.field(column), np.array([1, 5, 900], np.int64))


@pytest.mark.parametrize("path", ["direct", "levels"])
def test_fewer_values_than_list_items_are_refused(one_page, monkeypatch, path):
    values = sparse23.SparsePage._values
    monkeypatch.setattr(sparse23.SparsePage, "_values", lambda self, data: values(self, data).slice(1))
    if path == "levels":
        monkeypatch.setattr(sparse23, "_direct_rule", lambda layers: False)
    snap, reader = _reader(one_page)
    with pytest.raises(CorruptFileError, match="values for"):
        reader.read_field(snap.schema.field("l"))


def test_undamaged_page_reads_on_both_paths(one_page, monkeypatch):
    """The damage helpers change nothing when they damage nothing (the refusals above are theirs)."""
    import lance
    _damage(monkeypatch, "none", lambda v, seen: v)
    snap, reader = _reader(one_page)
    exp = lance.dataset(one_page).to_table(columns=["l", "st_l"])
    for c in ("l", "st_l"):
        assert reader.read_field(snap.schema.field(c)).equals(exp.column(c).combine_chunks())
