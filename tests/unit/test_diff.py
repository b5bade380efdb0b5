"""Tests for agentctl.diff: examples for every operation, then properties."""

from __future__ import annotations

import copy
import pickle
import sys
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentctl.diff as diff_module
from agentctl.diff import (
    CHECKPOINT_SECTIONS,
    MISSING,
    Change,
    PatchError,
    apply_patch,
    checkpoint_sections,
    diff_checkpoints,
    diff_values,
    escape_token,
    format_path,
    join_pointer,
    json_equal,
    parse_pointer,
    patch_by_section,
    quick_equal,
    resolve_pointer,
    summarize,
    to_json_patch,
    unescape_token,
)
from tests.support.helpers import same
from tests.support.strategies import JSON, KEYS  # keys likely to collide, values of up to 25 leaves

# --------------------------------------------------------------------------- helpers


def roundtrip(a, b):
    """Apply the patch of diff(a, b) to a; assert it gives b and leaves a alone."""
    before = copy.deepcopy(a)
    result = apply_patch(a, to_json_patch(diff_values(a, b)))
    assert same(result, b)
    assert same(a, before)
    return result


def nested(depth: int, leaf, *, lists: bool = False):
    """A chain of ``depth`` containers around ``leaf``: {"k": {"k": ...}} or,
    with ``lists``, alternating dicts and one-element lists."""
    value = leaf
    for level in range(depth):
        value = [value] if lists and level % 2 else {"k": value}
    return value


@st.composite
def variants(draw, value):
    """A value derived from ``value``: subtrees kept (shared or copied), replaced,
    deleted, added, and scalars swapped for look-alikes (True/1/1.0, 0/-0.0)."""
    roll = draw(st.integers(0, 9))
    if roll == 0:
        return draw(JSON)
    if roll == 1:
        return value  # the very same object: exercises the identity fast path
    if isinstance(value, dict):
        out = {}
        for key, child in value.items():
            fate = draw(st.integers(0, 5))
            if fate == 0:
                continue  # deleted
            out[key] = draw(variants(child)) if fate < 3 else copy.deepcopy(child)
        out.update(draw(st.dictionaries(KEYS, JSON, max_size=2)))
        return out
    if isinstance(value, list):
        out = [draw(variants(child)) for child in value]
        keep = draw(st.integers(0, len(out)))
        return out[:keep] + draw(st.lists(JSON, max_size=2))
    if isinstance(value, bool):
        return draw(st.sampled_from([value, not value, int(value), float(value)]))
    if isinstance(value, int) and abs(value) < 2**53:
        choices = [value, float(value), value + 1]
        if value in (0, 1):
            choices.append(bool(value))
        return draw(st.sampled_from(choices))
    if isinstance(value, float) and value == 0.0:
        return draw(st.sampled_from([0.0, -0.0, 0, False]))
    return value


@st.composite
def json_pairs(draw):
    a = draw(JSON)
    if draw(st.booleans()):
        return a, draw(JSON)
    return a, draw(variants(a))


# --------------------------------------------------------------------------- MISSING and Change


def test_missing_is_a_falsy_singleton_that_survives_copying():
    assert repr(MISSING) == "<missing>"
    assert not MISSING
    assert type(MISSING)() is MISSING
    assert copy.deepcopy(MISSING) is MISSING
    assert pickle.loads(pickle.dumps(MISSING)) is MISSING


def test_change_to_dict_renders_missing_as_none_and_keeps_every_key():
    added = Change("state", "/x", "added", MISSING, {"y": 1})
    assert added.to_dict() == {"section": "state", "path": "/x", "op": "added", "old": None, "new": {"y": 1}}
    removed = Change("state", "/x", "removed", [1], MISSING)
    assert removed.to_dict() == {"section": "state", "path": "/x", "op": "removed", "old": [1], "new": None}


def test_change_rejects_unknown_op():
    with pytest.raises(ValueError, match="unknown change op"):
        Change("state", "", "modified", 1, 2)


# --------------------------------------------------------------------------- json_equal


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (False, 0, False),
        (0, -0.0, True),
        (None, False, False),
        ("1", 1, False),
        ([True], [1], False),
        ([1, 2], [1.0, 2.0], True),
        ({"a": 1}, {"a": 1.0}, True),
        ({"a": {"b": [False]}}, {"a": {"b": [0]}}, False),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
        ({"a": 1}, [("a", 1)], False),
        ({}, [], False),
        (MISSING, MISSING, True),
        (MISSING, None, False),
        (2**80, 2**80, True),
        ([2**80, True], [2**80, 1], False),
    ],
)
def test_json_equal(a, b, expected):
    assert json_equal(a, b) is expected
    assert json_equal(b, a) is expected
    assert quick_equal(a, b) in (expected, None)


def test_json_equal_without_orjson(monkeypatch):
    monkeypatch.setattr(diff_module, "_orjson", None)
    assert json_equal({"a": 1, "b": [True]}, {"b": [True], "a": 1.0})
    assert not json_equal({"a": 1, "b": [True]}, {"b": [1], "a": 1})
    assert diff_values({"a": [1, {"b": True}]}, {"a": [1, {"b": 1}]}) == [
        Change("", "/a/1/b", "changed", True, 1)
    ]


# --------------------------------------------------------------------------- diff_values


def test_equal_values_have_no_changes():
    value = {"a": [1, {"b": None}], "c": "x"}
    assert diff_values(value, copy.deepcopy(value)) == []
    assert diff_values(value, value) == []


def test_scalar_change_is_reported_at_the_root():
    assert diff_values(1, 2, "state") == [Change("state", "", "changed", 1, 2)]


def test_dict_ops_in_order_keys_of_a_then_new_keys_of_b():
    a = {"keep": 1, "gone": 2, "edit": 3}
    b = {"new1": 0, "edit": 4, "keep": 1, "new2": 5}
    assert diff_values(a, b) == [
        Change("", "/gone", "removed", 2, MISSING),
        Change("", "/edit", "changed", 3, 4),
        Change("", "/new1", "added", MISSING, 0),
        Change("", "/new2", "added", MISSING, 5),
    ]


def test_nested_dicts_and_lists():
    a = {"messages": [{"role": "user", "content": "hi"}, {"role": "ai", "content": "yo"}], "n": 1}
    b = {"messages": [{"role": "user", "content": "hi!"}, {"role": "ai", "content": "yo", "x": [1]}], "n": 1}
    assert diff_values(a, b) == [
        Change("", "/messages/0/content", "changed", "hi", "hi!"),
        Change("", "/messages/1/x", "added", MISSING, [1]),
    ]


def test_list_trailing_elements_are_added_and_removed_one_by_one():
    assert diff_values([1, 2, 3, 4], [1, 9]) == [
        Change("", "/1", "changed", 2, 9),
        Change("", "/2", "removed", 3, MISSING),
        Change("", "/3", "removed", 4, MISSING),
    ]
    assert diff_values([1], [1, 2, [3]]) == [
        Change("", "/1", "added", MISSING, 2),
        Change("", "/2", "added", MISSING, [3]),
    ]


def test_type_changes_are_one_change():
    assert diff_values({"a": {"x": 1}}, {"a": ["x", 1]}) == [Change("", "/a", "changed", {"x": 1}, ["x", 1])]
    assert diff_values({"a": "1"}, {"a": 1}) == [Change("", "/a", "changed", "1", 1)]
    assert diff_values({"a": None}, {"a": {}}) == [Change("", "/a", "changed", None, {})]


def test_bool_is_not_int_but_int_is_float():
    changes = diff_values({"flag": True, "n": 0}, {"flag": 1, "n": False})
    assert [(c.path, c.op) for c in changes] == [("/flag", "changed"), ("/n", "changed")]
    assert type(changes[0].old) is bool and type(changes[0].new) is int
    assert diff_values({"x": [1, 2.5]}, {"x": [1.0, 2.5]}) == []


def test_bool_int_confusion_hidden_deep_in_an_otherwise_equal_subtree():
    a = {"big": [{"i": i, "ok": True} for i in range(50)], "other": "same"}
    b = copy.deepcopy(a)
    b["big"][37]["ok"] = 1
    assert a == b  # Python cannot tell them apart...
    changes = diff_values(a, b)
    assert [(c.path, c.op) for c in changes] == [("/big/37/ok", "changed")]  # ...the diff can


def test_key_order_alone_is_not_a_change():
    assert diff_values({"a": 1, "b": [True]}, {"b": [True], "a": 1}) == []


@pytest.mark.parametrize(
    ("key", "pointer"),
    [
        ("a/b", "/a~1b"),
        ("m~n", "/m~0n"),
        ("~1", "/~01"),
        ("/~", "/~1~0"),
        ("b c", "/b c"),
        ("中文", "/中文"),
        ("", "/"),
    ],
)
def test_pointer_escaping_of_keys(key, pointer):
    changes = diff_values({key: 1}, {key: 2})
    assert [c.path for c in changes] == [pointer]
    assert parse_pointer(pointer) == [key]
    assert resolve_pointer({key: 7}, pointer) == 7
    assert apply_patch({key: 1}, to_json_patch(changes)) == {key: 2}


def test_missing_at_the_root():
    assert diff_values(MISSING, {"a": 1}, "s") == [Change("s", "", "added", MISSING, {"a": 1})]
    assert diff_values([1], MISSING, "s") == [Change("s", "", "removed", [1], MISSING)]
    assert diff_values(MISSING, MISSING) == []


def test_diff_results_share_but_do_not_mutate_inputs():
    a = {"l": [1, 2, 3], "d": {"x": 1}}
    b = {"l": [1], "d": {"x": 2, "y": [0]}}
    a_before, b_before = copy.deepcopy(a), copy.deepcopy(b)
    changes = diff_values(a, b)
    apply_patch(a, to_json_patch(changes))
    assert a == a_before and b == b_before
    assert next(c for c in changes if c.path == "/d/y").new is b["d"]["y"]


def test_values_beyond_64_bit_ints_and_unicode():
    a = {"n": [2**70, "日本語"], "m": {"é": 1}}
    b = {"n": [2**70 + 1, "日本語"], "m": {"é": 1}}
    assert diff_values(a, b) == [Change("", "/n/0", "changed", 2**70, 2**70 + 1)]


# --------------------------------------------------------------------------- pointers and format_path


def test_pointer_helpers():
    assert escape_token("a/~b") == "a~1~0b"
    assert escape_token(3) == "3"
    assert unescape_token("a~1~0b") == "a/~b"
    assert join_pointer(["a", 0, "x/y"]) == "/a/0/x~1y"
    assert parse_pointer("") == []
    assert parse_pointer("/") == [""]
    assert parse_pointer("/a//b") == ["a", "", "b"]


@pytest.mark.parametrize("bad", ["a/b", "/a~2", "/a~", 5])
def test_malformed_pointers_raise_patch_error(bad):
    with pytest.raises(PatchError):
        parse_pointer(bad)


def test_resolve_pointer():
    doc = {"a": [{"b": None}], "": {"": 1}}
    assert resolve_pointer(doc, "") is doc
    assert resolve_pointer(doc, "/a/0/b") is None
    assert resolve_pointer(doc, "//") == 1
    assert resolve_pointer(doc, "/a/1", MISSING) is MISSING
    assert resolve_pointer(doc, "/a/0/b/c", "dflt") == "dflt"
    with pytest.raises(PatchError, match="not found"):
        resolve_pointer(doc, "/nope")
    with pytest.raises(PatchError, match="out of range"):
        resolve_pointer(doc, "/a/3")
    with pytest.raises(PatchError, match="not a valid array index"):
        resolve_pointer(doc, "/a/01")


@pytest.mark.parametrize(
    ("pointer", "human"),
    [
        ("", "(root)"),
        ("/a", "a"),
        ("/a/0/b c", 'a[0]["b c"]'),
        ("/a/b/c", "a.b.c"),
        ("/0/a", "[0].a"),
        ("/a~1b/x", '["a/b"].x'),
        ("/m~0n", '["m~n"]'),
        ("/", '[""]'),
        ("/state/名字", "state.名字"),
        ("/a/007", 'a["007"]'),
        ("/a/-1", 'a["-1"]'),
        ('/say "hi"', '["say \\"hi\\""]'),
    ],
)
def test_format_path(pointer, human):
    assert format_path(pointer) == human


# --------------------------------------------------------------------------- patches


def test_to_json_patch_ops_and_values():
    changes = diff_values({"a": 1, "b": 2}, {"a": 3, "c": 4})
    assert to_json_patch(changes) == [
        {"op": "replace", "path": "/a", "value": 3},
        {"op": "remove", "path": "/b"},
        {"op": "add", "path": "/c", "value": 4},
    ]


def test_to_json_patch_removes_list_elements_from_the_highest_index_down():
    a = {"l": [0, 1, 2, 3, 4], "m": [[1, 2, 3], 9]}
    b = {"l": [0, 1], "m": [[1], 9]}
    patch = to_json_patch(diff_values(a, b))
    assert [op["path"] for op in patch] == ["/l/4", "/l/3", "/l/2", "/m/0/2", "/m/0/1"]
    assert apply_patch(a, patch) == b


def test_to_json_patch_regroups_scattered_list_removals():
    changes = [
        Change("s", "/l/3", "removed", 3, MISSING),
        Change("s", "/l/0", "changed", 0, 9),
        Change("s", "/l/4", "removed", 4, MISSING),
    ]
    patch = to_json_patch(changes)
    assert [op["path"] for op in patch] == ["/l/4", "/l/3", "/l/0"]
    assert apply_patch({"l": [0, 1, 2, 3, 4]}, patch) == {"l": [9, 1, 2]}


def test_to_json_patch_rejects_several_sections():
    with pytest.raises(ValueError, match="one section"):
        to_json_patch([Change("state", "/a", "changed", 1, 2), Change("messages", "/0", "changed", 1, 2)])


def test_patch_by_section_groups_in_first_seen_order():
    changes = [
        Change("state", "/a", "changed", 1, 2),
        Change("messages", "/0", "added", MISSING, "m"),
        Change("state", "/b", "removed", 1, MISSING),
    ]
    assert patch_by_section(changes) == {
        "state": [{"op": "replace", "path": "/a", "value": 2}, {"op": "remove", "path": "/b"}],
        "messages": [{"op": "add", "path": "/0", "value": "m"}],
    }
    assert patch_by_section([]) == {}


def test_apply_patch_every_op():
    doc = {"a": {"b": [1, 2]}, "c": "x"}
    patch = [
        {"op": "test", "path": "/a/b", "value": [1.0, 2]},
        {"op": "add", "path": "/a/b/1", "value": "ins"},
        {"op": "add", "path": "/a/b/-", "value": "end"},
        {"op": "replace", "path": "/c", "value": {"deep": True}},
        {"op": "copy", "from": "/c", "path": "/c2"},
        {"op": "add", "path": "/c2/deep", "value": False},
        {"op": "move", "from": "/a/b/0", "path": "/first"},
        {"op": "remove", "path": "/a/b/0"},
        {"op": "move", "from": "/c", "path": "/c"},
    ]
    before = copy.deepcopy(doc)
    result = apply_patch(doc, patch)
    assert result == {"a": {"b": [2, "end"]}, "c": {"deep": True}, "c2": {"deep": False}, "first": 1}
    assert doc == before


def test_apply_patch_root_operations():
    assert apply_patch({"a": 1}, [{"op": "replace", "path": "", "value": [1]}]) == [1]
    assert apply_patch(None, [{"op": "add", "path": "", "value": {"x": 1}}]) == {"x": 1}
    with pytest.raises(PatchError, match="root"):
        apply_patch({"a": 1}, [{"op": "remove", "path": ""}])


def test_apply_patch_does_not_mutate_shared_subtrees_or_patch_values():
    shared = {"x": [1, 2]}
    doc = {"p": shared, "q": shared}
    value = {"v": [0]}
    patch = [
        {"op": "add", "path": "/p/x/-", "value": 3},
        {"op": "add", "path": "/new", "value": value},
        {"op": "add", "path": "/new/v/-", "value": 1},
    ]
    result = apply_patch(doc, patch)
    assert result == {"p": {"x": [1, 2, 3]}, "q": {"x": [1, 2]}, "new": {"v": [0, 1]}}
    assert shared == {"x": [1, 2]}
    assert value == {"v": [0]}


@pytest.mark.parametrize(
    ("doc", "operation", "message"),
    [
        ({"a": 1}, {"op": "remove", "path": "/b"}, "key 'b' not found"),
        ({"a": 1}, {"op": "replace", "path": "/b", "value": 1}, "not found"),
        ({"a": [1]}, {"op": "remove", "path": "/a/1"}, "out of range"),
        ({"a": [1]}, {"op": "add", "path": "/a/2", "value": 1}, "out of range"),
        ({"a": [1]}, {"op": "add", "path": "/a/x", "value": 1}, "not a valid array index"),
        ({"a": 1}, {"op": "add", "path": "/a/b", "value": 1}, "not an object or array"),
        ({"a": 1}, {"op": "add", "path": "/x/y/z", "value": 1}, "not found"),
        ({"a": 1}, {"op": "add", "path": "a", "value": 1}, "must be empty or start with '/'"),
        ({"a": 1}, {"op": "add", "path": "/a~2", "value": 1}, "invalid escape"),
        ({"a": 1}, {"op": "add", "path": "/b"}, "missing 'value'"),
        ({"a": 1}, {"op": "frobnicate", "path": "/a"}, "unknown op"),
        ({"a": 1}, {"op": "remove"}, "path"),
        ({"a": 1}, {"op": "move", "path": "/b"}, "'from'"),
        ({"a": {"b": 1}}, {"op": "move", "from": "/a", "path": "/a/b/c"}, "own child"),
        ({"a": True}, {"op": "test", "path": "/a", "value": 1}, "test failed"),
        (5, {"op": "add", "path": "/a", "value": 1}, "not an object or array"),
    ],
)
def test_apply_patch_errors_are_clear(doc, operation, message):
    with pytest.raises(PatchError, match=message) as info:
        apply_patch(doc, [operation])
    assert "patch operation 0" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_apply_patch_rejects_non_object_operations():
    with pytest.raises(PatchError, match="not an object"):
        apply_patch({}, ["add"])


# --------------------------------------------------------------------------- checkpoints


def make_checkpoint(**overrides):
    meta = dict(
        thread_id="t1",
        checkpoint_id="ckpt-t1-1-aaaaaa",
        parent_checkpoint_id=None,
        step=1,
        created_at="2024-05-01T10:00:00+00:00",
        tags=["auto", "iter_1"],
        summary="",
    )
    meta.update({k: overrides.pop(k) for k in list(overrides) if k in meta})
    fields = dict(
        messages=[{"role": "user", "content": "hi"}],
        state={"plan": ["a"], "done": False},
        tools_result={"search": {"hits": 3}},
        next_node="agent",
    )
    fields.update(overrides)
    return SimpleNamespace(metadata=SimpleNamespace(**meta), **fields)


def as_dict(cp):
    """What agentctl.model.Checkpoint.to_dict() returns."""
    return {
        "metadata": dict(vars(cp.metadata)),
        "messages": cp.messages,
        "state": cp.state,
        "tools_result": cp.tools_result,
        "next_node": cp.next_node,
    }


def test_diff_checkpoints_sections_in_order_with_metadata():
    a = make_checkpoint()
    b = make_checkpoint(
        checkpoint_id="ckpt-t1-2-bbbbbb",
        parent_checkpoint_id="ckpt-t1-1-aaaaaa",
        step=2,
        tags=["auto", "iter_2"],
        next_node="tools",
        messages=[{"role": "user", "content": "hi"}, {"role": "ai", "content": "hello"}],
        state={"plan": ["a", "b"], "done": True},
        tools_result={},
    )
    changes = diff_checkpoints(a, b)
    assert [(c.section, c.path, c.op) for c in changes] == [
        ("metadata", "/checkpoint_id", "changed"),
        ("metadata", "/parent_checkpoint_id", "changed"),
        ("metadata", "/step", "changed"),
        ("metadata", "/tags/1", "changed"),
        ("metadata", "/next_node", "changed"),
        ("messages", "/1", "added"),
        ("state", "/plan/1", "added"),
        ("state", "/done", "changed"),
        ("tools_result", "/search", "removed"),
    ]
    assert diff_checkpoints(as_dict(a), as_dict(b)) == changes
    assert diff_checkpoints(a, make_checkpoint()) == []


def test_checkpoint_sections_and_patch_by_section_round_trip():
    a = make_checkpoint()
    b = make_checkpoint(summary="done", state={"plan": [], "new": {"k": [1, 2]}}, messages=[])
    sections_a, sections_b = checkpoint_sections(a), checkpoint_sections(b)
    assert list(sections_a) == list(CHECKPOINT_SECTIONS)
    assert sections_a["metadata"]["next_node"] == "agent"
    patches = patch_by_section(diff_checkpoints(a, b))
    assert set(patches) == {"metadata", "messages", "state"}
    for section, patch in patches.items():
        assert same(apply_patch(sections_a[section], patch), sections_b[section])


def test_summarize_counts_per_section_and_op():
    changes = diff_checkpoints(make_checkpoint(), make_checkpoint(step=5, state={"plan": ["a"], "x": 1}))
    assert summarize(changes) == {
        "metadata": {"added": 0, "removed": 0, "changed": 1, "total": 1},
        "state": {"added": 1, "removed": 1, "changed": 0, "total": 2},
    }
    assert list(summarize(changes, sections=CHECKPOINT_SECTIONS)) == list(CHECKPOINT_SECTIONS)
    assert summarize([], sections=["state"]) == {
        "state": {"added": 0, "removed": 0, "changed": 0, "total": 0}
    }


# --------------------------------------------------------------------------- deep nesting


@pytest.mark.parametrize("lists", [False, True])
def test_depth_2000_does_not_hit_the_recursion_limit(lists):
    assert sys.getrecursionlimit() < 2000 * 2
    a = nested(2000, "old", lists=lists)
    b = nested(2000, "new", lists=lists)
    changes = diff_values(a, b)
    assert len(changes) == 1
    (change,) = changes
    assert change.op == "changed" and change.old == "old" and change.new == "new"
    assert len(parse_pointer(change.path)) == 2000
    assert len(format_path(change.path)) > 2000
    assert resolve_pointer(a, change.path) == "old"
    result = apply_patch(a, to_json_patch(changes))
    assert same(result, b)
    assert resolve_pointer(a, change.path) == "old"  # input untouched
    assert json_equal(result, b) and not json_equal(a, b)
    assert diff_values(a, nested(2000, "old", lists=lists)) == []
    copied = apply_patch(a, [{"op": "copy", "from": "", "path": "/k"}]) if not lists else None
    if copied is not None:
        assert same(copied["k"], a)


# --------------------------------------------------------------------------- import hygiene


# --------------------------------------------------------------------------- properties

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(JSON)
def test_property_diff_of_a_value_with_itself_or_a_copy_is_empty(a):
    assert diff_values(a, a) == []
    assert diff_values(a, copy.deepcopy(a)) == []
    assert json_equal(a, copy.deepcopy(a))


@PROPERTY
@given(json_pairs())
def test_property_patch_of_diff_turns_a_into_b(pair):
    a, b = pair
    roundtrip(a, b)


@PROPERTY
@given(json_pairs())
def test_property_json_equal_matches_an_independent_definition(pair):
    a, b = pair
    assert json_equal(a, b) is same(a, b)
    assert (diff_values(a, b) == []) is same(a, b)


@PROPERTY
@given(json_pairs())
def test_property_changes_point_at_the_old_and_new_values(pair):
    a, b = pair
    changes = diff_values(a, b, "state")
    for change in changes:
        assert change.section == "state"
        format_path(change.path)  # never raises on our own pointers
        assert same(resolve_pointer(a, change.path, MISSING), change.old)
        assert same(resolve_pointer(b, change.path, MISSING), change.new)
        assert (change.op == "added") is (change.old is MISSING)
        assert (change.op == "removed") is (change.new is MISSING)
    paths = [change.path for change in changes]
    assert len(paths) == len(set(paths))
    assert sum(entry["total"] for entry in summarize(changes).values()) == len(changes)


@PROPERTY
@given(st.lists(KEYS, max_size=6))
def test_property_pointer_tokens_round_trip(tokens):
    assert parse_pointer(join_pointer(tokens)) == tokens


def test_property_tests_can_fail():
    """The round-trip check really compares types: a patch that leaves True where
    b has 1 must be caught (guards against a vacuous `same`)."""
    with pytest.raises(AssertionError):
        assert same(apply_patch({"a": True}, []), {"a": 1})
    assert not same([1], [True]) and not same({"a": None}, {}) and same([1], [1.0])
