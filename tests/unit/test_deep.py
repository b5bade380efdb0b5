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
