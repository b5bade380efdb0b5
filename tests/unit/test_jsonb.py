"""agentctl/storage/sql/jsonb.py against a current SQLite's own jsonb() and json().

The reference is the SQLite that `apsw` bundles (3.45+, whatever SQLite Python links):
`encode(v)` must be the bytes of `jsonb(json.dumps(v, ensure_ascii=False))`, and
`decode(b)` must be `json.loads(json(b))`, on every element type, nested, at each header
size's boundary, and fuzzed; malformed blobs raise JsonbError (a ValueError) naming the
offset, whatever the bytes.
"""

from __future__ import annotations

import json
import math
import string

import apsw
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agentctl.storage.sql import jsonb
from agentctl.storage.sql.jsonb import JsonbError, decode, encode, is_jsonb
from tests.support.strategies import COLLIDING_KEYS, json_values, keys

_DB = apsw.Connection(":memory:")


def sqlite_jsonb(text: str) -> bytes:
    return _DB.execute("SELECT jsonb(?)", (text,)).fetchone()[0]


def sqlite_json(blob: bytes) -> str:
    return _DB.execute("SELECT json(?)", (blob,)).fetchone()[0]


def sqlite_valid(blob: bytes) -> bool:
    """SQLite's strict check: the blob is well-formed JSONB (json_valid's flag 8)."""
    return bool(_DB.execute("SELECT json_valid(?, 8)", (blob,)).fetchone()[0])


def same(a, b) -> bool:
    """Equal JSON values, floats included by their type and sign (-0.0 is not 0)."""
    if isinstance(a, float) or isinstance(b, float):
        return type(a) is type(b) and (
            a == b and math.copysign(1, a) == math.copysign(1, b) or a != a and b != b
        )
    if isinstance(a, list):
        return type(b) is list and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, dict):
        return type(b) is dict and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def check_decode(blob: bytes) -> None:
    assert same(decode(blob), json.loads(sqlite_json(blob)))


def check_encode(value) -> bytes:
    blob = sqlite_jsonb(json.dumps(value, ensure_ascii=False))
    assert encode(value).hex() == blob.hex()
    assert same(decode(blob), value)
    return blob


def test_the_reference_sqlite_has_jsonb():
    assert tuple(int(x) for x in apsw.sqlite_lib_version().split(".")[:2]) >= (3, 45)


# -- every element type ---------------------------------------------------------------

# JSON (and JSON5) texts and the element type SQLite's jsonb() stores them as
ELEMENTS = [
    ("null", jsonb.NULL),
    ("true", jsonb.TRUE),
    ("false", jsonb.FALSE),
    ("0", jsonb.INT),
    ("-17", jsonb.INT),
    ("+5", jsonb.INT),
    ("-0", jsonb.INT),
    ("123456789012345678901234567890", jsonb.INT),
    ("-98765432109876543210987", jsonb.INT),
    ("0x1F", jsonb.INT5),
    ("-0xff", jsonb.INT5),
    ("0XaBc", jsonb.INT5),
    ("0xFFFFFFFFFFFFFFFF", jsonb.INT5),
    ("0x10000000000000000", jsonb.INT5),
    ("-0x10000000000000000", jsonb.INT5),
    ("0x00000000000000000001", jsonb.INT5),
    ("1.5", jsonb.FLOAT),
    ("-0.0", jsonb.FLOAT),
    ("1e5", jsonb.FLOAT),
    ("1E-7", jsonb.FLOAT),
    ("2.5e+300", jsonb.FLOAT),
    ("1e400", jsonb.FLOAT),
    ("-1e400", jsonb.FLOAT),
    ("1e-400", jsonb.FLOAT),
    ("0.1000000000000000055511151231257827", jsonb.FLOAT),
    ("Infinity", jsonb.FLOAT),
    ("-Infinity", jsonb.FLOAT),
    ("NaN", jsonb.NULL),
    (".5", jsonb.FLOAT5),
    ("5.", jsonb.FLOAT5),
    ("-.25e2", jsonb.FLOAT5),
    ("+1.e3", jsonb.FLOAT5),
    ('"plain text é 中文 😀"', jsonb.TEXT),
    ('""', jsonb.TEXT),
    ("'single'", jsonb.TEXT),
    (r'"a\"b\\c\/d\b\f\n\r\t"', jsonb.TEXTJ),
    (r'"\u00e9\ud83d\ude00\ud800 lone"', jsonb.TEXTJ),
    (
        r"'\x41\'\v\0 \
next'",
        jsonb.TEXT5,
    ),
    ("'say \"hi\"'", jsonb.TEXT5),
    ('"raw\ttab"', jsonb.TEXT5),
    ("'cr\\\r\nlf \\\u2028 ls'", jsonb.TEXT5),
    ("[]", jsonb.ARRAY),
    ("[1, [2, [3, []]], {}]", jsonb.ARRAY),
    ("{}", jsonb.OBJECT),
    ('{"a": {"b": [null, true]}, "": 1, "a": "dup"}', jsonb.OBJECT),
    ("{unquoted: 1, 'q': 2, \"\\u0041\": 3, 'x\\x42': 4}", jsonb.OBJECT),
]


@pytest.mark.parametrize("text,element_type", ELEMENTS, ids=[t for t, _ in ELEMENTS])
def test_every_element_type_decodes_as_sqlite_json_does(text, element_type):
    blob = sqlite_jsonb(text)
    assert blob[0] & 0x0F == element_type  # the case covers the type it says
    check_decode(blob)
    assert is_jsonb(blob)


@pytest.mark.parametrize("payload", [b"abc", b'a"b\\c\n', "é\x01\u2028".encode(), b""])
def test_textraw_decodes_as_sqlite_json_does(payload):
    """TEXTRAW (text that needs escapes, stored unescaped): SQLite's jsonb() of JSON
    text never writes it, other writers do; SQLite's json() escapes it."""
    blob = jsonb._header(jsonb.TEXTRAW, len(payload)) + payload
    check_decode(blob)
    check_decode(jsonb._header(jsonb.ARRAY, len(blob) * 2) + blob + blob)
    check_decode(jsonb._header(jsonb.OBJECT, len(blob) * 2) + blob + blob)


SCALARS = [
    None,
    True,
    False,
    0,
    -1,
    7,
    2**63 - 1,
    -(2**63),
    2**64,
    -(10**40),
    1.5,
    -0.0,
    0.1,
    1e16,
    1e-7,
    5e-324,
    1.7976931348623157e308,
    "",
    "abc",
    "é 中文 😀",
    'q"uote',
    "back\\slash",
    "ctl\x00\x01\x1f\x7f",
    "nl\n\r\t\b\f",
    "/",
    "\u2028",
    "\ud800 lone",
]


@pytest.mark.parametrize("value", SCALARS, ids=[repr(v) for v in SCALARS])
def test_encode_matches_sqlite_jsonb_on_every_scalar(value):
    text = json.dumps(value, ensure_ascii="\ud800" in str(value))  # a lone surrogate is not UTF-8
    blob = sqlite_jsonb(text)
    assert encode(value).hex() == blob.hex()
    assert same(decode(blob), value)


def test_encode_infinities_and_nan_as_sqlite_stores_them():
    for value, text in ((math.inf, "Infinity"), (-math.inf, "-Infinity"), (math.nan, "NaN")):
        assert encode(value) == sqlite_jsonb(text) == sqlite_jsonb(json.dumps(value))
    assert decode(encode(math.inf)) == math.inf and decode(encode(math.nan)) is None


def test_encode_containers_tuples_and_json_dumps_keys():
    check_encode([1, [2, [3, [], {}]], {"a": {"b": [None, True, "x"]}}])
    assert encode((1, "a")) == encode([1, "a"])
    assert encode({1: "a", 2.5: "b", False: "c", None: "d"}) == sqlite_jsonb(
        json.dumps({1: "a", 2.5: "b", False: "c", None: "d"})
    )


def test_encode_refuses_what_json_cannot_hold():
    with pytest.raises(TypeError):
        encode({"a": object()})
    with pytest.raises(TypeError):
        encode({(1, 2): "tuple key"})
    loop: list = []
    loop.append([loop])
    with pytest.raises(ValueError, match="Circular"):
        encode(loop)
    deep: list = []
    for _ in range(jsonb.MAX_ENCODE_DEPTH):
        deep = [deep]
    with pytest.raises(ValueError, match="deeper than"):
        encode(deep)
    with pytest.raises(apsw.Error):  # SQLite's own limit: 1000 deep
        sqlite_jsonb("[" * 1001 + "]" * 1001)
    assert encode(deep[0]) == sqlite_jsonb("[" * 1000 + "]" * 1000)


# -- sizes around each header boundary ----------------------------------------------------

BOUNDARIES = [0, 1, 11, 12, 13, 255, 256, 257, 65535, 65536, 65537, 100_000]


def _nibble(size: int) -> int:
    return size if size <= 11 else 12 if size <= 0xFF else 13 if size <= 0xFFFF else 14


@pytest.mark.parametrize("size", BOUNDARIES)
def test_text_at_header_boundaries(size):
    for value in ("x" * size, ("\n" * size)[: size // 2]):
        blob = check_encode(value)
        payload = len(value.encode()) if "\n" not in value else 2 * len(value)
        assert blob[0] >> 4 == _nibble(payload)


def _array_of_payload(size: int) -> list:
    """A list whose JSONB payload is exactly `size` bytes: a text, then nulls (1 byte each)."""
    n = max(size - 5, 0)  # a header takes at most 5 bytes
    while len(encode("y" * (n + 1))) <= size:
        n += 1
    if not size:
        return []
    return ["y" * n] + [None] * (size - len(encode("y" * n)))


def _object_of_payload(size: int) -> dict:
    """A dict whose JSONB payload is exactly `size` bytes: a key, then a list."""
    for key in ("", "a", "ab"):
        for head in (1, 2, 3, 5):
            rest = size - len(encode(key)) - head
            if rest >= 0 and len(encode(_array_of_payload(rest))) == size - len(encode(key)):
                return {key: _array_of_payload(rest)}
    raise AssertionError(size)


@pytest.mark.parametrize("size", BOUNDARIES)
def test_containers_at_header_boundaries(size):
    """An array and an object whose payloads are exactly `size` bytes."""
    values = [_array_of_payload(size)] + (
        [_object_of_payload(size)] if size >= 2 else [{}] if not size else []
    )
    for value in values:
        blob = check_encode(value)
        assert blob[0] >> 4 == _nibble(size)
        assert len(blob) - size == {12: 2, 13: 3, 14: 5}.get(_nibble(size), 1)


@pytest.mark.parametrize("digits", [1, 11, 12, 255, 256, 4300])
def test_integers_at_header_boundaries(digits):
    value = int("9" * digits)
    blob = check_encode(value)
    assert blob[0] & 0x0F == jsonb.INT and blob[0] >> 4 == _nibble(digits)
    assert same(decode(sqlite_jsonb(str(-value))), -value)


def test_larger_headers_than_needed_decode_as_sqlite_reads_them():
    """SQLite writes the smallest header; it reads any (also the 8-byte size it never
    writes), and so does decode."""
    for head in (b"\xc7\x03", b"\xd7\x00\x03", b"\xe7\x00\x00\x00\x03", b"\xf7" + (3).to_bytes(8, "big")):
        blob = head + b"abc"
        assert sqlite_valid(blob) and is_jsonb(blob)
        check_decode(blob)
        check_decode(b"\xcb" + bytes([len(blob) + 2]) + blob + b"\x13\x31")


# -- malformed input ------------------------------------------------------------------

MALFORMED = [  # (blob, offset named, what)
    (b"", 0, "empty"),
    (b"\x17", 0, "past the end"),  # TEXT of 1 byte, none there
    (b"\xc7", 0, "header cut short"),
    (b"\xd7\x00", 0, "header cut short"),
    (b"\x0d", 0, "reserved"),
    (b"\x0e", 0, "reserved"),
    (b"\x0f", 0, "reserved"),
    (b"\x2c\x13\x31", 1, "object key of type INT"),
    (b"\x2c\x17\x61", 3, "key without a value"),
    (b"\x00\x00", 1, "after the value"),
    (b"\x0b\x00", 1, "after the value"),
    (b"\x1b\x0d", 1, "reserved"),
    (b"\x3c\x17\x61\x0f", 3, "reserved"),
    (b"\x2b\x10\x00", 1, "NULL with a payload"),
    (b"\x2b\xc7\x05", 1, "past the end"),
    (b"\x2b\xd7\x00", 1, "header cut short"),
    (b"\x10\x00", 0, "NULL with a payload"),
    (b"\x13\x41", 1, "INT holding"),
    (b"\x13\x2d", 1, "INT holding"),
    (b"\x25\x31\x32", 1, "FLOAT holding"),  # FLOAT '12': an integer
    (b"\x34\x30\x78\x47", 1, "INT5 holding"),  # '0xG'
    (b"\x26\x31\x78", 1, "FLOAT5 holding"),
    (b"\x27\xff\xfe", 1, "not UTF-8"),
    (b"\x38\x5c\x71\x61", 1, "bad escape in TEXTJ"),
    (b"\x29\x5c\x78", 1, "bad escape in TEXT5"),
    (b"\x3b\x13\x31\x13", 3, "past the end"),  # array of 3 bytes: INT '1' then an INT cut
    (b"\x2b\x27\x61", 1, "past the end"),  # the TEXT runs past its array's payload
    (b"\xf7" + b"\xff" * 8 + b"a", 0, "past the end"),
]


@pytest.mark.parametrize(
    "blob,offset,what", MALFORMED, ids=lambda v: v.hex() if isinstance(v, bytes) else str(v)
)
def test_malformed_raises_one_error_naming_the_offset(blob, offset, what):
    with pytest.raises(JsonbError) as exc:
        decode(blob)
    assert isinstance(exc.value, ValueError)
    assert exc.value.offset == offset
    assert f"at byte {offset}:" in str(exc.value) and what in str(exc.value)
    if what != "not UTF-8":  # SQLite does not check UTF-8; everything else it refuses too
        assert not sqlite_valid(blob)


def test_deep_nesting_decodes_without_recursion():
    depth = 100_000
    blob = b"\x0b"
    for _ in range(depth):
        blob = jsonb._header(jsonb.ARRAY, len(blob)) + blob
    value = decode(blob)
    for _ in range(depth):
        assert type(value) is list and len(value) == 1
        value = value[0]
    assert value == []


def test_is_jsonb():
    assert is_jsonb(b"\x0b") and is_jsonb(b"\x00") and is_jsonb(sqlite_jsonb('{"a": [1, 2.5, "x"]}'))
    assert is_jsonb(bytearray(b"\x2b\x13\x41"))  # short, but not text-like: the header is enough
    assert not is_jsonb(b"") and not is_jsonb(b"\x0d") and not is_jsonb(b"\x1b")
    assert not is_jsonb(b"\xcb\x09\x13")  # the size runs past the end
    assert not is_jsonb(b"\x10\x00")  # null with a payload
    for text in ("[1]", "{}", "1", "[]", '{"a":1}', "12345678"):
        assert not is_jsonb(text.encode()), text  # JSON text stored as a BLOB
    assert is_jsonb(b"\x5b\x13\x31\x13\x32\x00")  # '[' first, and well-formed
    assert not is_jsonb(b"\x5b\x13\x31\x13\x31\x13")  # '[' first, cut in an element


# -- fuzzed ---------------------------------------------------------------------------

_TEXTS = st.text(alphabet=st.characters(codec="utf-8"), max_size=20) | st.sampled_from(
    ["", '"', "\\", "\x00", "\n\t", "\u2028", "é", "😀", "x" * 12, "y" * 300]
)
_VALUES = json_values(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.integers(min_value=-(10**40), max_value=10**40),
        st.floats(allow_nan=False, allow_infinity=False),
        _TEXTS,
    ),
    keys(COLLIDING_KEYS, text_size=6),
    width=8,
    max_leaves=40,
)

_FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_FUZZ
@given(_VALUES)
def test_fuzz_encode_is_sqlite_jsonb_and_decode_its_inverse(value):
    blob = check_encode(value)
    check_decode(blob)


_JSON5_PIECES = st.sampled_from(
    [
        "a",
        "é",
        "😀",
        "\t",
        "\x01",
        '"',
        "\\'",
        "\\x41",
        "\\x7f",
        "\\v",
        "\\0",
        "\\\n",
        "\\\r\n",
        "\\\r",
        "\\\u2028",
        "\\\u2029",
        "\\n",
        "\\\\",
        "\\/",
        "\\u00e9",
        "\\ud83d\\ude00",
        "\\ud800",
    ]
)


@_FUZZ
@given(st.lists(_JSON5_PIECES, max_size=12), st.sampled_from(["'", '"']))
def test_fuzz_json5_strings_decode_as_sqlite_json_does(pieces, quote):
    body = "".join(p if p != quote else "\\" + p for p in pieces)
    try:
        blob = sqlite_jsonb(quote + body + quote)
    except apsw.Error:
        assume(False)
    check_decode(blob)
    check_decode(sqlite_jsonb("{" + quote + body + quote + ": [" + quote + body + quote + "]}"))


_NUMBERS = st.builds(
    lambda sign, whole, frac, exp: sign + whole + frac + exp,
    st.sampled_from(["", "-", "+"]),
    st.sampled_from(["0", "1", "9"])
    | st.text(alphabet=string.digits, min_size=1, max_size=30).filter(lambda s: s[0] != "0")
    | st.just(""),
    st.sampled_from(["", ".", ".5"])
    | st.text(alphabet=string.digits, min_size=1, max_size=25).map(lambda s: "." + s),
    st.sampled_from(["", "e5", "E-3", "e+400", "e-400", "e308", "e-324"]),
) | st.builds(
    lambda sign, digits: sign + "0x" + digits,
    st.sampled_from(["", "-", "+"]),
    st.text(alphabet=string.hexdigits, min_size=1, max_size=24),
)


@_FUZZ
@given(_NUMBERS)
def test_fuzz_numbers_decode_as_sqlite_json_does(text):
    try:
        blob = sqlite_jsonb(text)
    except apsw.Error:
        assume(False)
    check_decode(blob)


def _valid_blobs() -> st.SearchStrategy[bytes]:
    return _VALUES.map(lambda v: sqlite_jsonb(json.dumps(v, ensure_ascii=False)))


@st.composite
def _mutated(draw) -> bytes:
    blob = bytearray(draw(_valid_blobs()))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "cut", "insert", "nibble"]))
        if not blob:
            break
        at = draw(st.integers(0, len(blob) - 1))
        if kind == "flip":
            blob[at] = draw(st.integers(0, 255))
        elif kind == "cut":
            del blob[at : at + draw(st.integers(1, 3))]
        elif kind == "insert":
            blob[at:at] = draw(st.binary(min_size=1, max_size=3))
        else:
            blob[at] = (blob[at] & 0x0F) | (draw(st.integers(0, 15)) << 4)
    return bytes(blob)


def _check_any(blob: bytes) -> None:
    """decode gives a value or raises JsonbError, nothing else; on what SQLite holds
    well-formed, where json(blob) is JSON text in UTF-8, the value is json.loads of it."""
    try:
        value = decode(blob)
    except JsonbError as exc:
        assert 0 <= exc.offset <= len(blob)
        value = exc
    assert isinstance(is_jsonb(blob), bool)
    if sqlite_valid(blob):
        try:
            expect = json.loads(sqlite_json(blob))
        except UnicodeDecodeError:
            return  # not UTF-8: SQLite does not check, decode refuses
        except ValueError:
            return  # json() printed text that is not JSON (a backslash before a NUL)
        assert not isinstance(value, JsonbError), (blob.hex(), value)
        assert same(value, expect)
        assert is_jsonb(blob)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutated())
def test_fuzz_mutated_blobs(blob):
    _check_any(blob)


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=40))
def test_fuzz_random_bytes(blob):
    _check_any(blob)
