"""agentctl.deep: JSON and decoded values nested too deep become a placeholder, without
recursion (issue 22 item 7)."""

from __future__ import annotations

import json

import pytest

from agentctl import deep


def test_loads_cuts_a_deep_value_and_keeps_the_rest():
    text = '{"ok": 1, "deep": ' + "[" * 100_000 + '"x"' + "]" * 100_000 + ', "s": "[[[{"}'
    value = deep.loads(text)
    assert value["ok"] == 1 and value["s"] == "[[[{"
    node, levels = value["deep"], 1
    while isinstance(node, list):
        node, levels = node[0], levels + 1
    assert levels == deep.MAX_DEPTH and node == deep.placeholder(100_001)
    json.dumps(value)  # every recursive walk works on it


def test_loads_is_json_loads_for_ordinary_text():
    text = json.dumps({"a": [[1, {"b": "]]]"}]] * 200})
    assert deep.loads(text) == json.loads(text)
    with pytest.raises(ValueError):
        deep.loads("{not json")
    with pytest.raises(ValueError):
        deep.loads("[" * 5000)


def test_cap_a_decoded_value():
    value: list = ["leaf"]
    for _ in range(5_000):
        value = [value, {"k": 1}]
    out = deep.cap(value)
    json.dumps(out)
    assert deep.placeholder(5_001) in json.dumps(out, ensure_ascii=False)
    assert deep.cap({"a": (1, [2])}) == {"a": [1, [2]]}


def test_numbers_json_has_no_words_for():
    """strict_loads refuses NaN, Infinity and 1e999 (Python's json reads them); dumps
    writes them as placeholders, never as NaN or Infinity; other values untouched."""
    for text in ("NaN", "[1, Infinity]", '{"a": {"b": -Infinity}}', "[1e999]", "-1e400"):
        with pytest.raises(deep.NotJsonNumber):
            deep.strict_loads(text)
        assert deep.non_json_number(text) is not None
    assert deep.strict_loads('{"a": [1.5, 1e308, "NaN"]}') == {"a": [1.5, 1e308, "NaN"]}
    assert deep.non_json_number("{not json") is None and deep.non_json_number("[1]") is None
    value = {"a": [float("nan"), (1, float("inf"))], "b": -float("inf"), "c": "NaN", "d": 0.5}
    text = deep.dumps(value)
    assert json.loads(text, parse_constant=lambda w: pytest.fail(w)) == {
        "a": ["… NaN (not a JSON number)", [1, "… Infinity (not a JSON number)"]],
        "b": "… -Infinity (not a JSON number)",
        "c": "NaN",
        "d": 0.5,
    }
    plain = {"a": [1, "x"]}
    assert deep.dumps(plain) == json.dumps(plain)
