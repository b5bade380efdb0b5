"""Tests for agentctl.merge: examples for every rule, then properties."""

from __future__ import annotations

import copy
import sys

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agentctl.diff import MISSING, diff_values, parse_pointer, resolve_pointer
from agentctl.merge import (
    STRATEGIES,
    Conflict,
    MergeResult,
    common_prefix_length,
    merge_messages,
    three_way_merge,
)
from tests.support.helpers import same
from tests.support.strategies import json_values, keys, scalars

# --------------------------------------------------------------------------- helpers


KEYS = keys(["a", "b", "c", "~", "a/b", "b c", "中文", ""], text_size=3)
SCALARS = scalars(text_size=5)
JSON = json_values(SCALARS, KEYS, width=4, max_leaves=20)
DICTS = st.dictionaries(KEYS, JSON, max_size=5)


@st.composite
def edited(draw, value):
    """A variant of ``value``: parts kept, replaced, deleted or added, at any depth."""
    roll = draw(st.integers(0, 7))
    if roll == 0:
        return draw(JSON)
    if roll == 1 or not isinstance(value, dict):
        return value if roll < 5 else draw(JSON)
    out = {}
    for key, child in value.items():
        fate = draw(st.integers(0, 4))
        if fate == 0:
            continue
        out[key] = draw(edited(child)) if fate == 1 else child
    out.update(draw(st.dictionaries(KEYS, JSON, max_size=2)))
    return out


@st.composite
def triples(draw):
    """(base, ours, theirs) with ours and theirs both edited from base."""
    base = draw(st.one_of(DICTS, JSON))
    return base, draw(edited(base)), draw(edited(base))


# --------------------------------------------------------------------------- examples


def test_trivial_cases():
    assert three_way_merge(1, 2, 2) == MergeResult(2, [])
    assert three_way_merge(1, 1, 3).value == 3
    assert three_way_merge(1, 2, 1).value == 2
    assert three_way_merge({"a": 1}, {"a": 1}, {"a": 1}).value == {"a": 1}


def test_scalar_conflict_keeps_ours_and_reports_it():
    result = three_way_merge({"x": 1}, {"x": 2}, {"x": 3})
    assert result.value == {"x": 2}
    assert result.conflicts == [Conflict("/x", 1, 2, 3)]
    assert result.resolved == []
    assert not result.clean


def test_disjoint_nested_edits_merge_cleanly():
    base = {"cfg": {"model": "a", "temp": 0.1}, "plan": ["x"], "n": 1}
    ours = {"cfg": {"model": "b", "temp": 0.1}, "plan": ["x"], "n": 1, "mine": True}
    theirs = {"cfg": {"model": "a", "temp": 0.7}, "plan": ["x", "y"]}
    result = three_way_merge(base, ours, theirs)
    assert result.clean and result.resolved == []
    assert result.value == {"cfg": {"model": "b", "temp": 0.7}, "plan": ["x", "y"], "mine": True}


def test_deletions():
    base = {"a": 1, "b": 2, "c": 3}
    # deleted on one side, unchanged on the other: deleted
    assert three_way_merge(base, {"a": 1, "c": 3}, base).value == {"a": 1, "c": 3}
    assert three_way_merge(base, base, {"a": 1, "b": 2}).value == {"a": 1, "b": 2}
    # deleted on both sides: deleted
    assert three_way_merge(base, {"a": 1}, {"a": 1, "c": 3}).value == {"a": 1}


def test_delete_versus_change_is_a_conflict():
    base = {"a": {"x": 1}, "b": 2}
    ours = {"b": 2}
    theirs = {"a": {"x": 2}, "b": 2}
    result = three_way_merge(base, ours, theirs)
    assert result.value == {"b": 2}  # ours: deleted
    assert result.conflicts == [Conflict("/a", {"x": 1}, MISSING, {"x": 2})]
    assert three_way_merge(base, ours, theirs, "theirs").value == theirs
    assert three_way_merge(base, theirs, ours, "three-way").value == theirs


def test_lists_are_atomic():
    base = {"plan": [1, 2]}
    result = three_way_merge(base, {"plan": [1, 2, 3]}, {"plan": [0, 1, 2]})
    assert result.value == {"plan": [1, 2, 3]}
    assert [c.path for c in result.conflicts] == ["/plan"]


def test_type_change_conflicts_atomically():
    result = three_way_merge({"a": {"x": 1}}, {"a": [1]}, {"a": {"x": 2}})
    assert result.conflicts == [Conflict("/a", {"x": 1}, [1], {"x": 2})]


def test_bool_is_not_int_in_merges():
    # theirs turns True into 1: a real change, not "unchanged"
    assert same(three_way_merge({"f": True}, {"f": True}, {"f": 1}).value, {"f": 1})
    # both sides set the same number, spelled 1 and 1.0: no conflict
    assert three_way_merge({"n": 0}, {"n": 1}, {"n": 1.0}).clean
    result = three_way_merge({"n": 0}, {"n": 1}, {"n": True})
    assert [c.path for c in result.conflicts] == ["/n"]


def test_both_sides_add_the_same_key():
    assert three_way_merge({}, {"k": [1]}, {"k": [1]}).value == {"k": [1]}
    result = three_way_merge({}, {"k": {"a": 1}}, {"k": {"b": 2}})
    assert result.conflicts == [Conflict("/k", MISSING, {"a": 1}, {"b": 2})]


def test_conflict_paths_use_diff_pointer_escaping():
    base = {"a/b": {"~x": 0, "b c": 0, "名": 0}}
    ours = {"a/b": {"~x": 1, "b c": 1, "名": 1}}
    theirs = {"a/b": {"~x": 2, "b c": 2, "名": 2}}
    paths = [c.path for c in three_way_merge(base, ours, theirs).conflicts]
    assert paths == ["/a~1b/~0x", "/a~1b/b c", "/a~1b/名"]
    assert paths == [c.path for c in diff_values(base, ours)]
    assert [parse_pointer(p) for p in paths] == [["a/b", "~x"], ["a/b", "b c"], ["a/b", "名"]]


def test_key_order_is_ours_then_new_keys_of_theirs():
    base = {"a": 0, "b": 0, "c": 0}
    ours = {"c": 0, "z": 1, "a": 0, "b": 0}
    theirs = {"y": 2, "b": 0, "a": 5, "c": 0, "x": 3}
    value = three_way_merge(base, ours, theirs).value
    assert list(value) == ["c", "z", "a", "b", "y", "x"]
    assert value["a"] == 5


@pytest.mark.parametrize("strategy", ["ours", "theirs"])
def test_strategies_resolve_every_conflict(strategy):
    base = {"a": 1, "b": {"c": 1, "d": 1}, "gone": 1}
    ours = {"a": 2, "b": {"c": 2, "d": 1}}
    theirs = {"a": 3, "b": {"c": 3, "d": 4}, "gone": 2}
    result = three_way_merge(base, ours, theirs, strategy)
    assert result.conflicts == [] and result.clean
    assert [c.path for c in result.resolved] == ["/a", "/b/c", "/gone"]
    if strategy == "ours":
        assert result.value == {"a": 2, "b": {"c": 2, "d": 4}}
    else:
        assert result.value == {"a": 3, "b": {"c": 3, "d": 4}, "gone": 2}


def test_unknown_strategy_raises():
    with pytest.raises(ValueError, match="unknown merge strategy 'union'"):
        three_way_merge({}, {}, {}, "union")
    assert STRATEGIES == ("three-way", "ours", "theirs")


def test_missing_roots():
    assert three_way_merge(MISSING, {"a": 1}, MISSING).value == {"a": 1}
    assert three_way_merge({"a": 1}, MISSING, {"a": 1}).value is MISSING
    result = three_way_merge(MISSING, {"a": 1}, {"a": 2})
    assert result.value == {"a": 1}
    assert result.conflicts == [Conflict("", MISSING, {"a": 1}, {"a": 2})]


def test_inputs_are_not_mutated():
    base = {"a": {"b": [1]}, "c": 1}
    ours = {"a": {"b": [1], "x": 1}, "c": 2}
    theirs = {"a": {"b": [2]}, "c": 3}
    snapshot = copy.deepcopy((base, ours, theirs))
    result = three_way_merge(base, ours, theirs)
    result.value["a"]["new"] = 1  # merged dicts are fresh objects
    assert (base, ours, theirs) == snapshot


def test_conflict_and_result_to_dict():
    conflict = Conflict("/a", MISSING, None, {"x": 1})
    assert conflict.to_dict() == {
        "path": "/a",
        "base": None,
        "ours": None,
        "theirs": {"x": 1},
        "base_missing": True,
        "ours_missing": False,
        "theirs_missing": False,
    }
    result = three_way_merge({"a": 1}, {"a": 2}, {"a": 3}, "theirs")
    assert result.to_dict() == {
        "value": {"a": 3},
        "conflicts": [],
        "resolved": [Conflict("/a", 1, 2, 3).to_dict()],
    }


def test_depth_2000_merge_does_not_hit_the_recursion_limit():
    assert sys.getrecursionlimit() < 2000 * 2

    def chain(leaf):
        value = leaf
        for _ in range(2000):
            value = {"k": value, "side": 0}
        return value

    base, ours, theirs = chain({"x": 0, "y": 0}), chain({"x": 1, "y": 0}), chain({"x": 0, "y": 2})
    result = three_way_merge(base, ours, theirs)
    assert result.clean
    assert same(result.value, chain({"x": 1, "y": 2}))

    conflicting = three_way_merge(base, ours, chain({"x": 2, "y": 0}))
    assert len(conflicting.conflicts) == 1
    (conflict,) = conflicting.conflicts
    assert parse_pointer(conflict.path) == ["k"] * 2000 + ["x"]
    assert (conflict.base, conflict.ours, conflict.theirs) == (0, 1, 2)
    assert same(conflicting.value, ours)


# --------------------------------------------------------------------------- import hygiene


# --------------------------------------------------------------------------- merge_messages


def test_merge_messages_appends_what_the_branch_added_since_base():
    base = [{"role": "user", "content": "hi"}, {"role": "ai", "content": "hello"}]
    ours = [*base, {"role": "user", "content": "main"}]
    theirs = [*base, {"role": "user", "content": "b1"}, {"role": "ai", "content": "b2"}]
    assert merge_messages(base, ours, theirs) == [*ours, *theirs[2:]]


def test_merge_messages_when_the_branch_rewrote_history():
    base = [{"c": 1}, {"c": 2}, {"c": 3}]
    theirs = [{"c": 1}, {"c": "edited"}, {"c": 4}]
    assert merge_messages(base, base, theirs) == [*base, {"c": "edited"}, {"c": 4}]
    assert merge_messages(base, base, base[:1]) == base  # the branch only dropped messages
    assert merge_messages(None, [{"c": 0}], theirs) == [{"c": 0}, *theirs]


def test_merge_messages_does_not_mutate_inputs():
    base, ours, theirs = [1], [1, 2], [1, 3]
    merged = merge_messages(base, ours, theirs)
    merged.append(4)
    assert (base, ours, theirs) == ([1], [1, 2], [1, 3])


def test_common_prefix_length_is_type_strict():
    assert common_prefix_length([1, True, 3], [1.0, 1, 3]) == 1
    assert common_prefix_length([], [1]) == 0
    assert common_prefix_length([1, 2], [1, 2]) == 2


# --------------------------------------------------------------------------- properties

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(triples(), st.sampled_from(["ours", "theirs"]))
def test_property_side_strategies_are_total_and_take_that_side(triple, strategy):
    base, ours, theirs = triple
    result = three_way_merge(base, ours, theirs, strategy)
    assert result.conflicts == []
    for conflict in result.resolved:
        chosen = conflict.ours if strategy == "ours" else conflict.theirs
        assert same(resolve_pointer(result.value, conflict.path, MISSING), chosen)
        assert same(resolve_pointer(ours, conflict.path, MISSING), conflict.ours)
        assert same(resolve_pointer(theirs, conflict.path, MISSING), conflict.theirs)
        assert not same(conflict.ours, conflict.theirs)


@PROPERTY
@given(triples())
def test_property_three_way_keeps_ours_at_conflicts_and_is_symmetric(triple):
    base, ours, theirs = triple
    merged = three_way_merge(base, ours, theirs)
    by_ours = three_way_merge(base, ours, theirs, "ours")
    assert same(merged.value, by_ours.value)
    assert merged.conflicts == by_ours.resolved
    swapped = three_way_merge(base, theirs, ours, "theirs")
    assert same(swapped.value, by_ours.value)
    assert {c.path for c in swapped.resolved} == {c.path for c in merged.conflicts}


@PROPERTY
@given(triples())
def test_property_one_sided_changes_win(triple):
    base, x, _ = triple
    for result in (
        three_way_merge(base, x, base),
        three_way_merge(base, base, x),
        three_way_merge(base, x, x),
    ):
        assert result.conflicts == [] and result.resolved == []
        assert same(result.value, x)


@PROPERTY
@given(DICTS, st.data())
def test_property_changes_to_disjoint_top_level_keys_never_conflict(base, data):
    keys = list(base) + data.draw(st.lists(KEYS, max_size=3))
    ours, theirs, expected = dict(base), dict(base), dict(base)
    for key in dict.fromkeys(keys):
        side = data.draw(st.sampled_from(["ours", "theirs", "none"]))
        if side == "none":
            continue
        target = ours if side == "ours" else theirs
        if key in base and data.draw(st.booleans()):
            del target[key]
            del expected[key]
        else:
            new = data.draw(edited(base.get(key, MISSING)) if key in base else JSON)
            target[key] = expected[key] = new
    assume(ours != base or theirs != base)
    result = three_way_merge(base, ours, theirs)
    assert result.conflicts == []
    assert same(result.value, expected)


@PROPERTY
@given(st.lists(JSON, max_size=5), st.lists(JSON, max_size=3), st.lists(JSON, max_size=3), st.integers(0, 5))
def test_property_merge_messages(base, ours_tail, theirs_tail, cut):
    ours = base + ours_tail
    theirs = base[:cut] + theirs_tail
    merged = merge_messages(base, ours, theirs)
    start = common_prefix_length(base, theirs)
    assert start >= min(cut, len(base))
    assert merged[: len(ours)] == ours
    assert same(merged[len(ours) :], theirs[start:])
