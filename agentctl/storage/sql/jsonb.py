"""SQLite's binary JSON (JSONB, https://sqlite.org/jsonb.html), read and written in Python.

CrewAI's checkpoints and Mastra's snapshots are written with `jsonb()` (SQLite 3.45+);
a Python linked with an older SQLite (Debian 12's has 3.40) cannot read them with
`json()`. This codec needs no SQLite at all:

- `decode(blob)`: the JSON value, as `json.loads(json(blob))` gives it on a current
  SQLite (INT5 hex, FLOAT5 and TEXT5/TEXTJ escapes decoded as `json()` does; integers
  of any size kept; FLOAT text read as Python reads the same text). No recursion: any
  depth decodes (a caller shows it through `agentctl.deep.cap`).
- `encode(value)`: the bytes SQLite's `jsonb(json_text)` writes for
  `json_text = json.dumps(value, ensure_ascii=False)`: the smallest header for each
  element (as SQLite writes them), TEXT for a string that needs no escape, else TEXTJ
  with json.dumps' escapes; INT / FLOAT holding the number's JSON text; infinities as
  SQLite stores them (FLOAT `9e999`), NaN as null.
- `is_jsonb(blob)`: the cheap check SQLite makes before it takes a BLOB for JSONB.

A malformed blob raises `JsonbError` (a ValueError) naming the byte offset; nothing else
escapes, whatever the bytes.

An element is a header and a payload. The header's first byte holds the type in its low
nibble and the payload size in its high one: 0-11 is the size itself, 12, 13, 14, 15 say
that it follows in 1, 2, 4 or 8 bytes (big-endian).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

__all__ = ["JsonbError", "decode", "encode", "is_jsonb"]

NULL, TRUE, FALSE, INT, INT5, FLOAT, FLOAT5, TEXT, TEXTJ, TEXT5, TEXTRAW, ARRAY, OBJECT = range(13)
_NAMES = (
    "NULL",
    "TRUE",
    "FALSE",
    "INT",
    "INT5",
    "FLOAT",
    "FLOAT5",
    "TEXT",
    "TEXTJ",
    "TEXT5",
    "TEXTRAW",
    "ARRAY",
    "OBJECT",
)
_EXTRA = {12: 1, 13: 2, 14: 4, 15: 8}  # size nibble -> bytes of size after the first
# SQLite's own limit on nesting when it parses JSON text (JSON_MAX_DEPTH)
MAX_ENCODE_DEPTH = 1000


class JsonbError(ValueError):
    """A malformed JSONB blob; `offset` is the byte where the fault was found."""

    def __init__(self, reason: str, offset: int):
        super().__init__(f"malformed JSONB at byte {offset}: {reason}")
        self.offset = offset
        self.reason = reason


# -- decode -------------------------------------------------------------------------

_INT = re.compile(rb"-?[0-9]+")
_INT5 = re.compile(rb"([-+]?)0[xX]([0-9a-fA-F]+)")
_FLOAT = re.compile(rb"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_FLOAT5 = re.compile(rb"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
# the escapes of JSON5 strings that JSON has not, and a bare '"' (single-quoted strings)
_TEXT5 = re.compile(r"""\\(x[0-9a-fA-F]{2}|\r\n|[\s\S])|\"""")
_LINE_CONT = frozenset("\r\n\u2028\u2029")
_JSON5_ESC = {"'": "'", "v": "\\u000b", "0": "\\u0000"}
_END = object()


def _text5(m: re.Match) -> str:
    esc = m.group(1)
    if esc is None:
        return '\\"'
    if esc[0] == "x" and len(esc) == 3:
        return "\\u00" + esc[1:]
    if esc == "\r\n" or esc in _LINE_CONT:
        return ""  # a line continuation
    return _JSON5_ESC.get(esc, "\\" + esc)


def _text(data: bytes, t: int, p: int, q: int) -> str:
    try:
        s = data[p:q].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonbError(f"text that is not UTF-8 ({exc.reason})", p + exc.start) from None
    if t == TEXT or t == TEXTRAW or "\\" not in s and '"' not in s:
        return s
    if t == TEXT5:
        s = _TEXT5.sub(_text5, s)
    try:
        return json.loads('"' + s + '"', strict=False)
    except ValueError as exc:
        raise JsonbError(f"a bad escape in {_NAMES[t]} ({exc})", p) from None


def _number(data: bytes, t: int, p: int, q: int) -> Any:
    raw = data[p:q]
    try:
        if t == INT and _INT.fullmatch(raw):
            return int(raw)
        if t == FLOAT and _FLOAT.fullmatch(raw) and raw.strip(b"-0123456789"):
            return float(raw)
        if t == FLOAT5 and _FLOAT5.fullmatch(raw) and raw.strip(b"+-0123456789"):
            return float(raw)
    except ValueError:  # an integer of more digits than Python converts
        raise JsonbError(f"{_NAMES[t]} too long to convert ({q - p} bytes)", p) from None
    if t == INT5:
        m = _INT5.fullmatch(raw)
        if m:
            u = int(m.group(2), 16)
            if u >= 1 << 64:  # json() prints 9.0e999 for a hex integer past 64 bits
                return -math.inf if m.group(1) == b"-" else math.inf
            return -u if m.group(1) == b"-" else u
    raise JsonbError(f"{_NAMES[t]} holding {raw[:40]!r}", p)


def _element(data: bytes, i: int, end: int) -> tuple[int, int, int]:
    """(type, payload start, payload end) of the element at i, which must end by `end`."""
    b = data[i]
    t = b & 0x0F
    s = b >> 4
    if s <= 11:
        p = i + 1
        size = s
    else:
        p = i + 1 + _EXTRA[s]
        if p > end:
            raise JsonbError("a header cut short", i)
        size = int.from_bytes(data[i + 1 : p], "big")
    q = p + size
    if q > end:
        raise JsonbError(
            f"a {_NAMES[t] if t <= OBJECT else 'element'} of {size} bytes "
            f"past the end of its container ({end - p} left)",
            i,
        )
    if t > OBJECT:
        raise JsonbError(f"element type {t} (reserved)", i)
    if t <= FALSE and size:
        raise JsonbError(f"{_NAMES[t]} with a payload of {size} bytes", i)
    return t, p, q


def _scalar_value(data: bytes, t: int, p: int, q: int) -> Any:
    if t >= TEXT:
        return _text(data, t, p, q)
    if t >= INT:
        return _number(data, t, p, q)
    return None if t == NULL else t == TRUE


def decode(blob: bytes | bytearray | memoryview) -> Any:
    """The JSON value of a JSONB blob; JsonbError (ValueError) if it is malformed."""
    data = bytes(blob)
    n = len(data)
    if not n:
        raise JsonbError("empty", 0)
    t, p, q = _element(data, 0, n)
    if q != n:
        raise JsonbError(f"{n - q} bytes after the value", q)
    if t < ARRAY:
        return _scalar_value(data, t, p, q)
    root: Any = [] if t == ARRAY else {}
    # the open containers above `cur` (no recursion: any depth decodes)
    stack: list[tuple[Any, int, bool]] = []
    cur, end, is_obj, i = root, q, t == OBJECT, p
    while True:
        while i < end:  # the children of `cur`, from byte i to `end`
            if is_obj:
                kt, kp, kq = _element(data, i, end)
                if not TEXT <= kt <= TEXTRAW:
                    raise JsonbError(f"an object key of type {_NAMES[kt]}", i)
                key = _text(data, kt, kp, kq)
                if kq == end:
                    raise JsonbError("an object key without a value", kq)
                i = kq
            # the header, read here for speed; _element says what is wrong with a bad one
            b = data[i]
            t = b & 0x0F
            if b < 0xC0:
                p = i + 1
                q = p + (b >> 4)
            else:
                p = i + 1 + _EXTRA[b >> 4]
                q = p + int.from_bytes(data[i + 1 : p], "big")
            if q > end or t > OBJECT or (t <= FALSE and q != p):  # (p > end makes q > end)
                _element(data, i, end)
            if t == TEXT:
                try:
                    value: Any = data[p:q].decode("utf-8")
                except UnicodeDecodeError:
                    value = _text(data, t, p, q)
            elif t < ARRAY:
                value = _scalar_value(data, t, p, q)
            else:
                value = [] if t == ARRAY else {}
            if is_obj:
                cur[key] = value
            else:
                cur.append(value)
            if t >= ARRAY:
                stack.append((cur, end, is_obj))
                cur, end, is_obj = value, q, t == OBJECT
                i = p
            else:
                i = q
        if not stack:
            return root
        cur, end, is_obj = stack.pop()


# -- is_jsonb -----------------------------------------------------------------------


def is_jsonb(blob: bytes | bytearray | memoryview) -> bool:
    """Whether SQLite would take this BLOB for JSONB: a known type whose header and
    payload fill the blob exactly (and null/true/false without a payload). A short one
    that could also be JSON text ('[', '{' or a digit first) must decode in full."""
    data = bytes(blob)
    if not data or data[0] & 0x0F > OBJECT:
        return False
    s = data[0] >> 4
    extra = _EXTRA.get(s, 0)
    if len(data) < 1 + extra:
        return False
    size = int.from_bytes(data[1 : 1 + extra], "big") if extra else s
    if 1 + extra + size != len(data) or (data[0] & 0x0F <= FALSE and size):
        return False
    if size > 7 or not (data[0] in b"[{" or 0x30 <= data[0] <= 0x39):
        return True
    try:
        decode(data)
    except JsonbError:
        return False
    return True


# -- encode -------------------------------------------------------------------------

_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _header(t: int, size: int) -> bytes:
    if size <= 11:
        return bytes((size << 4 | t,))
    if size <= 0xFF:
        return bytes((0xC0 | t, size))
    if size <= 0xFFFF:
        return bytes((0xD0 | t,)) + size.to_bytes(2, "big")
    if size <= 0xFFFFFFFF:
        return bytes((0xE0 | t,)) + size.to_bytes(4, "big")
    return bytes((0xF0 | t,)) + size.to_bytes(8, "big")


def _str(s: str) -> bytes:
    t = TEXT
    if _NEEDS_ESCAPE.search(s):
        t = TEXTJ
        s = json.dumps(s, ensure_ascii=False)[1:-1]
    try:
        payload = s.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: written as JSON writes it, \udXXX
        t = TEXTJ
        payload = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", s).encode("utf-8")
    return _header(t, len(payload)) + payload


def _scalar(v: Any) -> bytes | None:
    """A scalar's element, None for a list or dict; TypeError for what JSON cannot hold."""
    if isinstance(v, str):
        return _str(v)
    if v is None:
        return b"\x00"
    if v is True:
        return b"\x01"
    if v is False:
        return b"\x02"
    if isinstance(v, int):
        text = int.__repr__(v).encode()
        return _header(INT, len(text)) + text
    if isinstance(v, float):
        if v != v:
            return b"\x00"  # NaN: SQLite's jsonb('NaN') is null
        if math.isinf(v):
            text = b"9e999" if v > 0 else b"-9e999"
        else:
            text = float.__repr__(v).encode()
        return _header(FLOAT, len(text)) + text
    if isinstance(v, (list, tuple, dict)):
        return None
    raise TypeError(f"Object of type {type(v).__name__} is not JSON serializable")


def _key(k: Any) -> str:
    """An object key as json.dumps writes it."""
    if isinstance(k, str):
        return k
    if k is None or isinstance(k, (bool, int, float)):
        return json.dumps(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")


def _items(d: dict) -> Iterator[Any]:
    for k, v in d.items():
        yield _key(k)
        yield v


def encode(value: Any) -> bytes:
    """The JSONB SQLite's `jsonb(json.dumps(value, ensure_ascii=False))` writes.
    TypeError for a value JSON cannot hold, ValueError for a circular or too deep one."""
    out: list[bytes] = []
    length = 0
    # frames of the open containers: [children, header's index in out, length at start, type, id]
    stack: list[list[Any]] = []
    open_ids: set[int] = set()
    item = value
    while True:
        chunk = _scalar(item)
        if chunk is None:
            if id(item) in open_ids:
                raise ValueError("Circular reference detected")
            if len(stack) >= MAX_ENCODE_DEPTH:
                raise ValueError(f"nested deeper than {MAX_ENCODE_DEPTH} (SQLite's limit)")
            is_obj = isinstance(item, dict)
            out.append(b"")
            stack.append(
                [
                    _items(item) if is_obj else iter(item),
                    len(out) - 1,
                    length,
                    OBJECT if is_obj else ARRAY,
                    id(item),
                ]
            )
            open_ids.add(id(item))
        else:
            out.append(chunk)
            length += len(chunk)
        while stack:
            frame = stack[-1]
            item = next(frame[0], _END)
            if item is not _END:
                break
            stack.pop()
            open_ids.discard(frame[4])
            head = _header(frame[3], length - frame[2])
            out[frame[1]] = head
            length += len(head)
        else:
            return b"".join(out)
