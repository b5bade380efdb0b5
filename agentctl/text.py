"""Make text from a database safe to show: no escape sequence or control character
reaches the terminal. Pure functions; no Rich here (markup is escaped in render)."""

from __future__ import annotations

import re

# C0 controls except \n and \t, DEL, C1 controls, and the Unicode bidi overrides / line
# separators that can reorder or hide what a terminal shows.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_UNSAFE_ONE_LINE = re.compile("[\x00-\x1f\x7f\x80-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    ch = match.group(0)
    code = ord(ch)
    if ch == "\x1b":
        return "\\e"
    if ch == "\r":
        return "\\r"
    if ch == "\n":
        return "\\n"
    if ch == "\t":
        return "\\t"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def inert(text: object, *, one_line: bool = False) -> str:
    """`text` with every control character written out visibly (ESC as `\\e`, CR as `\\r`).

    Newlines and tabs are kept unless `one_line` (then they are escaped too)."""
    s = text if isinstance(text, str) else str(text)
    pattern = _UNSAFE_ONE_LINE if one_line else _UNSAFE
    return pattern.sub(_escape, s)


def inert_all(texts: list[str], *, one_line: bool = False) -> list[str]:
    """[inert(t, one_line=...) for t in texts] for many str. A printable text (str.
    isprintable: no character of Unicode's Other or Separator categories, which hold
    every character inert escapes) is left as it is, without a regex scan."""
    if "".join(texts).isprintable():
        return texts
    if not one_line:
        return [t if t.isprintable() else inert(t) for t in texts]
    out = []
    for t in texts:
        if not t.isprintable():
            t = t.replace("\n", "\\n")  # what inert makes of a newline, the most common
            if not t.isprintable():
                t = inert(t, one_line=True)
        out.append(t)
    return out


# What json.dumps(ensure_ascii=False) leaves raw that a terminal may act on (it escapes
# C0 controls itself): DEL, C1 controls (\x9b is an 8-bit CSI), line separators, bidi.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def json_text(text: str) -> str:
    """JSON text (json.dumps with ensure_ascii=False) with those characters written as
    \\u escapes: the same JSON value, safe to print. They can only occur in strings."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def shorten(text: str, width: int, *, at_word: bool = False) -> str:
    """One line of at most `width` characters, ending with … when cut; `at_word`: cut
    after a whole word (mid-word only when that would leave less than half)."""
    flat = " ".join(inert(text, one_line=True).split())
    if width <= 0 or len(flat) <= width:
        return flat
    cut = flat[: max(0, width - 1)]
    if at_word and flat[len(cut)] != " ":
        space = cut.rfind(" ")
        if space >= width // 2:
            cut = cut[:space]
    return cut.rstrip() + "…"


def shorten_all(texts: list[str], width: int) -> list[str]:
    """[shorten(t, width) for t in texts], escaping them all in one scan."""
    try:
        escaped = inert_all(texts, one_line=True)
    except TypeError:  # a value that is not a str
        return [shorten(t, width) for t in texts]
    out = []
    for flat in map(" ".join, map(str.split, escaped)):
        out.append(flat if width <= 0 or len(flat) <= width else flat[: max(0, width - 1)].rstrip() + "…")
    return out


def centre_on(text: str, needle: str, width: int) -> str:
    """One line of at most `width` characters of `text` that contains the first
    case-insensitive match of `needle`, centred on it, with … where it was cut (the
    start when `needle` is not found, or when the match alone is wider than `width`)."""
    flat = " ".join(text.split())
    if width <= 0 or len(flat) <= width:
        return flat
    pos = flat.lower().find(needle.lower()) if needle else -1
    if pos < 0:
        return flat[: max(0, width - 1)] + "…"
    room = width - 2  # an … at each end, at most
    start = max(0, pos + len(needle) // 2 - room // 2)
    start = min(start, max(0, len(flat) - (width - 1)))
    if len(needle) > room:
        start = pos
    head = "…" if start else ""
    body = flat[start : start + width - len(head)]
    if start + len(body) < len(flat):
        body = body[:-1] + "…"
    return head + body


# The one name of each JSON type in what agentctl says (never Python's dict, list, str):
# "object", "array", "string", "number", "boolean", "null". SQLite's json_type() names
# are mapped onto them too.
_JSON_TYPE_NAMES = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "number",
    float: "number",
    type(None): "null",
}
_SQL_JSON_TYPES = {
    "text": "string",
    "integer": "number",
    "real": "number",
    "true": "boolean",
    "false": "boolean",
}


def json_type_name(value: object) -> str:
    """The JSON name of a decoded value's type ("object" for a dict, "array" for a list)."""
    for kind, name in _JSON_TYPE_NAMES.items():
        if type(value) is kind:
            return name
    if isinstance(value, dict):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def sql_json_type_name(name: str) -> str:
    """A database's name of a JSON type (SQLite's json_type, Postgres's jsonb_typeof) as
    `json_type_name` says it."""
    return _SQL_JSON_TYPES.get(name, name)
