"""Values nested too deep to show: a placeholder in their place, decoded without recursion.

A database row may hold JSON nested 100,000 deep or msgpack nested ~1,000 deep. Python's
`json.loads` raises RecursionError on the first, and every recursive walk (rendering,
diff, `json.dumps`, search) on the second. Everything agentctl decodes from a database
goes through `loads` (JSON text) or `cap` (a decoded value): a list or dict deeper than
`MAX_DEPTH` levels becomes the string `placeholder(n)`, "… nested N deep", N being how
deep the value went; the rest of the value is kept. Neither recurses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "MAX_TEXT",
    "placeholder",
    "loads",
    "cap",
    "clip",
    "is_placeholder",
    "strict_loads",
    "non_json_number",
    "NotJsonNumber",
    "finite",
    "dumps",
]

#: lists and dicts below this many levels are kept, deeper ones become a placeholder
MAX_DEPTH = 64

_PREFIX = "… nested "
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)


def placeholder(depth: int) -> str:
    return f"{_PREFIX}{depth} deep"


def is_placeholder(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(_PREFIX) and value.endswith(" deep")


def loads(text: str | bytes, capped: bool = True, **kwargs: Any) -> Any:
    """`json.loads(text, **kwargs)` whose lists and dicts deeper than MAX_DEPTH are a
    placeholder. Raises ValueError for text that is not JSON, as json.loads does.
    `capped` False: only text too deep for json.loads is cut; the value json.loads gives
    is not walked (the caller caps the parts it walks)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "replace")
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return json.loads(text, **kwargs)  # cannot be too deep
    try:
        value = json.loads(text, **kwargs)
    except RecursionError:
        return json.loads(_cut(text), **kwargs)
    return cap(value) if capped else value


def _cut(text: str) -> str:
    """The JSON text with each value opened at depth MAX_DEPTH replaced by a placeholder
    string (one pass over its brackets and strings)."""
    out: list[str] = []
    depth = 0
    start = -1  # where the value being cut starts
    deepest = 0
    last = 0
    for m in _TOKENS.finditer(text):
        tok = m.group()
        if tok in "[{":
            depth += 1
            if start < 0 and depth > MAX_DEPTH:
                start, deepest = m.start(), depth
            deepest = max(deepest, depth)
        elif tok in "]}":
            if start >= 0 and depth == MAX_DEPTH + 1:
                out.append(text[last:start])
                out.append(json.dumps(placeholder(deepest)))
                last = m.end()
                start = -1
            depth -= 1
    if start >= 0:  # unclosed: let json.loads say what is wrong with the rest
        out.append(text[last:start])
        out.append(json.dumps(placeholder(deepest)))
        return "".join(out)
    out.append(text[last:])
    return "".join(out)


def _depth(value: Any) -> int:
    """How many levels of lists/dicts `value` has (iteratively)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (list, tuple, dict)):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def cap(value: Any, limit: int = MAX_DEPTH) -> Any:
    """`value` with every list or dict at depth `limit` + 1 replaced by a placeholder
    (lists and dicts changed in place; tuples become lists). Iterative."""
    if not isinstance(value, (list, tuple, dict)):
        return value
    if isinstance(value, tuple):
        value = list(value)
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, d = stack.pop()
        keys = node.keys() if isinstance(node, dict) else range(len(node))
        for k in list(keys):
            child = node[k]
            if not isinstance(child, (list, tuple, dict)):
                continue
            if d + 1 > limit:
                node[k] = placeholder(d + _depth(child))
                continue
            if isinstance(child, tuple):
                child = node[k] = list(child)
            stack.append((child, d + 1))
    return value


#: strings longer than this are cut by `clip` (what `show` prints without --full)
MAX_TEXT = 20_000


def _cut_text(text: str, limit: int, hint: str) -> str:
    return f"{text[:limit]}… [{len(text):,} characters in all, {len(text) - limit:,} not shown{hint}]"


def clip(value: Any, limit: int = MAX_TEXT, hint: str = "") -> Any:
    """`value` with every string longer than `limit` cut to its first `limit` characters
    and a note of its size (lists and dicts changed in place). Iterative."""
    return _map_leaves(
        value, lambda v: _cut_text(v, limit, hint) if isinstance(v, str) and len(v) > limit else v
    )


def _map_leaves(value: Any, change: Callable[[Any], Any], *, tuples: bool = False) -> Any:
    """`value` with each value in it that is not a list or dict (a leaf) replaced by
    `change(leaf)` (lists and dicts changed in place; with `tuples`, tuples too are made
    lists and walked). Iterative."""
    kinds = (list, dict, tuple) if tuples else (list, dict)
    if tuples and isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, (list, dict)):
        return change(value)
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        keys = node.keys() if isinstance(node, dict) else range(len(node))
        for k in list(keys):
            child = node[k]
            if isinstance(child, kinds):
                if isinstance(child, tuple):
                    child = node[k] = list(child)
                stack.append(child)
            else:
                new = change(child)
                if new is not child:
                    node[k] = new
    return value


# ---- numbers JSON has no words for ---------------------------------------------------
#
# RFC 8259 has no NaN or Infinity, but Python's json (and so many agents' writers) writes
# and reads them as the words NaN, Infinity, -Infinity, and reads 1e999 as Infinity. What
# a user gives agentctl must be JSON (`strict_loads`); what agentctl prints as JSON shows
# such a number from a database as a placeholder string (`finite`, `dumps`).


class NotJsonNumber(ValueError):
    """NaN, Infinity or a number too large for a float where JSON is expected."""


def _no_constant(word: str) -> Any:
    raise NotJsonNumber(f"{word}: RFC 8259 JSON has no NaN or Infinity")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise NotJsonNumber(f"{text}: too large for a JSON number, it would be Infinity")
    return value


def strict_loads(text: str | bytes) -> Any:
    """`json.loads` of RFC 8259 JSON only: NotJsonNumber (a ValueError) for NaN,
    Infinity, -Infinity and numbers too large for a float (1e999); nested too deep, a
    placeholder (`loads`)."""
    return loads(text, parse_constant=_no_constant, parse_float=_finite_float)


def non_json_number(text: str | bytes) -> str | None:
    """Why JSON text from a database holds a number JSON has no words for (NaN,
    Infinity), or None (also for text that is not JSON for another reason)."""
    try:
        strict_loads(text)
    except NotJsonNumber as exc:
        return str(exc)
    except ValueError:
        return None
    return None


def number_placeholder(value: float) -> str:
    word = "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    return f"… {word} (not a JSON number)"


def _bad(v: Any) -> bool:
    return isinstance(v, float) and (v != v or v in (float("inf"), float("-inf")))


def finite(value: Any) -> Any:
    """`value` with every NaN, Infinity and -Infinity float replaced by a placeholder
    string (lists and dicts changed in place, tuples made lists). Iterative."""
    return _map_leaves(value, lambda v: number_placeholder(v) if _bad(v) else v, tuples=True)


def dumps(value: Any, **kwargs: Any) -> str:
    """`json.dumps(value, **kwargs)` that never writes NaN or Infinity: such numbers are
    placeholders (`finite`; `value` is changed in place only when it holds one)."""
    try:
        return json.dumps(value, allow_nan=False, **kwargs)
    except ValueError:
        return json.dumps(finite(value), allow_nan=False, **kwargs)
