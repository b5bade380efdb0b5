"""LangGraph's typed payloads, decoded to plain data without running anything they name.

LangGraph (`langgraph.checkpoint.serde.jsonplus.JsonPlusSerializer`) stores a value as a
pair (type, bytes): `null`, `bytes`, `bytearray`, `msgpack` (the default), `json`
(legacy), `pickle` (only with its `pickle_fallback`), and, with `EncryptedSerializer`,
`<type>+<cipher>` such as `msgpack+aes`; the Postgres saver also writes the sentinel
`empty` for a channel that has a version but no value.

`decode_typed(type, data)` turns a payload into JSON-like data (dicts, lists, str, int,
float, bool, None) and never imports a module, looks up a class, calls a method or
unpickles: LangGraph's msgpack extension types, which name a module and a class, become
dicts labelled with that name under `TYPE_KEY`:

- ext 0 (constructor, one argument)  -> {"__type__": "mod.Cls", "value": arg}
- ext 1 (constructor, positional)    -> {"__type__": "mod.Cls", "args": [...]}
- ext 2 (constructor, keywords)      -> {"__type__": "mod.Cls", **kwargs}
- ext 3 (class method, one argument) -> {"__type__": "mod.Cls", "method": m, "value": arg}
- ext 4/5 (Pydantic v1/v2 model)     -> {"__type__": "mod.Cls", **model_dump}
- ext 6 (numpy array)                -> {"__type__": "numpy.ndarray", "dtype", "shape",
                                         "values" (nested lists, small numeric arrays) or
                                         "nbytes"}
- ext 7 (DeltaChannel snapshot)      -> {"__type__": DELTA_SNAPSHOT, "value": ...}

A few standard types read better as their text: `uuid.UUID` (its canonical form) and
`datetime.*` / `decimal.Decimal` keep the label and carry the text in "value".
Pickle, encrypted and unknown payloads become an opaque marker
{"__type__": <type>, "__opaque__": true, "size": n, "note": why}.

LangChain messages (Pydantic models of `langchain_core.messages.*`, or the legacy JSON
`lc` constructor envelopes) come out labelled like any other model; `transcript(value)`
then turns every such message, wherever it is in a value, into a transcript dict
(`message_to_transcript`): role "user" | "assistant" | "tool" | "system" (or a chat
message's own role), content, and, when present, tool_calls (each {"id", "name",
"arguments"}), tool_call_id, name, id and status (only "error").
"""

from __future__ import annotations

import base64
import itertools
import json
import math
import struct
from typing import Any

from agentctl import deep

__all__ = [
    "TYPE_KEY",
    "OPAQUE_KEY",
    "DELTA_SNAPSHOT",
    "decode_typed",
    "decode_msgpack",
    "decode_json",
    "transcript",
    "message_to_transcript",
    "is_message",
    "opaque",
    "DecodeError",
    "Deferred",
    "undefer",
]

TYPE_KEY = "__type__"
OPAQUE_KEY = "__opaque__"
DELTA_SNAPSHOT = "langgraph.checkpoint.serde.types._DeltaSnapshot"

#: bytes payloads up to this size are shown in base64; larger ones by size only
BYTES_INLINE_MAX = 4096
#: numpy arrays up to this many elements are shown as nested lists
ARRAY_INLINE_MAX = 10_000

EXT_CONSTRUCTOR_SINGLE_ARG = 0
EXT_CONSTRUCTOR_POS_ARGS = 1
EXT_CONSTRUCTOR_KW_ARGS = 2
EXT_METHOD_SINGLE_ARG = 3
EXT_PYDANTIC_V1 = 4
EXT_PYDANTIC_V2 = 5
EXT_NUMPY_ARRAY = 6
EXT_DELTA_SNAPSHOT = 7


class DecodeError(ValueError):
    """A payload that is not what its type says (bad msgpack, bad JSON)."""


def opaque(type_: str, size: int, note: str) -> dict[str, Any]:
    return {TYPE_KEY: type_, OPAQUE_KEY: True, "size": size, "note": note}


def _bytes_value(label: str, data: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {TYPE_KEY: label, "size": len(data)}
    if len(data) <= BYTES_INLINE_MAX:
        out["base64"] = base64.b64encode(data).decode("ascii")
    return out


class Deferred:
    """An extension value of a msgpack payload decoded with `deferred` (its code and
    bytes, not unpacked): `undefer` decodes it as the full decode would have."""

    __slots__ = ("code", "data")

    def __init__(self, code: int, data: bytes) -> None:
        self.code, self.data = code, data


def undefer(value: Any, type_: str | None) -> Any:
    """A part of a payload of type `type_` decoded with `deferred`, as the full decode
    gives it: a Deferred extension value decoded; a JSON value's LangChain envelopes
    (`lc`) labelled; its depth capped (deep.cap) as the full decode caps it."""
    if isinstance(value, Deferred):
        return deep.cap(_ext_hook(value.code, value.data))
    if type_ == "json" and isinstance(value, (dict, list)):
        return json.loads(json.dumps(deep.cap(value)), object_hook=_json_hook)
    return deep.cap(value)


def decode_typed(
    type_: str | None, data: bytes | memoryview | None, capped: bool = True, deferred: bool = False
) -> Any:
    """The plain value of one (type, bytes) payload. Raises DecodeError for a payload
    that does not parse as its type says; never imports, calls or unpickles. `capped`
    False: a msgpack value's depth is not capped (deep.cap): the caller caps the parts
    it walks. `deferred` (implies not `capped`, for JSON too): msgpack extension values
    are left as `Deferred` and JSON's LangChain envelopes unlabelled, for `undefer` to
    decode the few parts read (`describe`, which reads two of a checkpoint's values)."""
    if isinstance(data, memoryview):
        data = data.tobytes()
    if type_ is None:
        if data is None:
            return None
        type_ = "msgpack"  # the saver always writes a type; be lenient with old rows
    if type_ in ("null", "empty"):  # empty: the Postgres saver's channel with a version, no value
        return None
    size = len(data) if data is not None else 0
    if "+" in type_:
        inner, cipher = type_.split("+", 1)
        return opaque(type_, size, f"encrypted ({cipher}) {inner} payload: shown as opaque, never decrypted")
    if data is None:
        return None
    if type_ in ("bytes", "bytearray"):
        return _bytes_value(type_, data)
    if type_ == "msgpack":
        return decode_msgpack(data, capped and not deferred, deferred)
    if type_ == "json":
        return decode_json(data, deferred)
    if type_ == "pickle":
        return opaque("pickle", size, "pickled payload: shown as opaque, never unpickled")
    return opaque(type_, size, f"unknown serialization type {type_!r}: shown as opaque")


# ---- msgpack -------------------------------------------------------------------------


def decode_msgpack(data: bytes, capped: bool = True, deferred: bool = False) -> Any:
    import ormsgpack  # when a payload is first decoded (listing threads or a log decodes none)

    try:
        value = _unpack(data, Deferred if deferred else _ext_hook)
        return deep.cap(value) if capped and len(data) > deep.MAX_DEPTH else value
    except ormsgpack.MsgpackDecodeError as exc:
        raise DecodeError(f"not valid msgpack: {exc}") from None
    except (TypeError, ValueError) as exc:  # e.g. a dict used as a map key
        raise DecodeError(f"msgpack payload cannot be read as plain data: {exc}") from None


def _unpack(data: bytes, ext_hook: Any = None) -> Any:
    import ormsgpack

    return ormsgpack.unpackb(data, ext_hook=ext_hook or _ext_hook, option=ormsgpack.OPT_NON_STR_KEYS)


def _labelled(name: str, fields: Any) -> dict[str, Any]:
    if isinstance(fields, dict) and all(isinstance(k, str) for k in fields):
        out = {TYPE_KEY: name}
        for k, v in fields.items():
            out[k if k != TYPE_KEY else "_" + TYPE_KEY] = v
        return out
    return {TYPE_KEY: name, "value": fields}


def _ext_hook(code: int, data: bytes) -> Any:
    """ormsgpack's hook for LangGraph's extension types: plain dicts, nothing imported."""
    try:
        tup = _unpack(data)
    except Exception as exc:  # noqa: BLE001 - one bad extension value, not the payload
        return opaque(f"msgpack-ext-{code}", len(data), f"unreadable extension value: {exc}")
    if code == EXT_DELTA_SNAPSHOT:
        return {TYPE_KEY: DELTA_SNAPSHOT, "value": tup}
    if code == EXT_NUMPY_ARRAY:
        return _numpy(tup, len(data))
    if not isinstance(tup, (list, tuple)) or len(tup) < 3:
        return {TYPE_KEY: f"msgpack-ext-{code}", "value": tup}
    module, cls, arg = tup[0], tup[1], tup[2]
    name = f"{module}.{cls}" if isinstance(module, str) and module else str(cls)
    if code == EXT_CONSTRUCTOR_SINGLE_ARG:
        if name == "uuid.UUID" and isinstance(arg, str) and len(arg) == 32:  # its canonical text
            arg = f"{arg[:8]}-{arg[8:12]}-{arg[12:16]}-{arg[16:20]}-{arg[20:]}"
        if isinstance(arg, (list, tuple)) and name in (
            "builtins.set",
            "builtins.frozenset",
            "collections.deque",
        ):
            return {TYPE_KEY: name, "value": list(arg)}
        return {TYPE_KEY: name, "value": arg}
    if code == EXT_CONSTRUCTOR_POS_ARGS:
        return {TYPE_KEY: name, "args": list(arg) if isinstance(arg, (list, tuple)) else arg}
    if code == EXT_CONSTRUCTOR_KW_ARGS:
        return _labelled(name, arg)
    if code == EXT_METHOD_SINGLE_ARG:
        method = tup[3] if len(tup) > 3 else None
        if name.startswith("datetime.") and method == "fromisoformat":
            return {TYPE_KEY: name, "value": arg}
        return {TYPE_KEY: name, "method": method, "value": arg}
    if code in (EXT_PYDANTIC_V1, EXT_PYDANTIC_V2):
        return _labelled(name, arg)
    return {TYPE_KEY: f"msgpack-ext-{code}", "value": list(tup)}


# numpy dtype kinds/sizes that `struct` reads (no numpy needed)
_STRUCT_CODES = {
    ("i", 1): "b",
    ("i", 2): "h",
    ("i", 4): "i",
    ("i", 8): "q",
    ("u", 1): "B",
    ("u", 2): "H",
    ("u", 4): "I",
    ("u", 8): "Q",
    ("f", 2): "e",
    ("f", 4): "f",
    ("f", 8): "d",
    ("b", 1): "?",
}


def _numpy(tup: Any, size: int) -> dict[str, Any]:
    try:
        dtype, shape, order, buf = tup
        shape = [int(n) for n in shape]
    except (TypeError, ValueError):
        return opaque("numpy.ndarray", size, "unreadable array")
    out: dict[str, Any] = {TYPE_KEY: "numpy.ndarray", "dtype": dtype, "shape": shape}
    count = math.prod(shape)
    if isinstance(buf, (bytes, bytearray)):
        out["nbytes"] = len(buf)
    code = None
    if isinstance(dtype, str) and len(dtype) >= 3 and dtype[1] in "iufb":
        try:
            code = _STRUCT_CODES.get((dtype[1], int(dtype[2:])))
        except ValueError:
            code = None
    if code is None or count > ARRAY_INLINE_MAX or not isinstance(buf, (bytes, bytearray)):
        return out
    endian = ">" if dtype[0] == ">" else "<"
    try:
        flat = list(struct.unpack(f"{endian}{count}{code}", bytes(buf)))
    except struct.error:
        return out
    if order == "F" and len(shape) > 1:  # column-major: index with reversed strides
        flat = _fortran_to_c(flat, shape)
    out["values"] = _reshape(flat, shape)
    out.pop("nbytes", None)
    return out


def _fortran_to_c(flat: list[Any], shape: list[int]) -> list[Any]:
    strides = [math.prod(shape[:d]) for d in range(len(shape))]
    return [
        flat[sum(i * s for i, s in zip(index, strides, strict=False))]
        for index in itertools.product(*map(range, shape))
    ]


def _reshape(flat: list[Any], shape: list[int]) -> Any:
    if not shape:
        return flat[0] if flat else None
    if len(shape) == 1:
        return flat
    step = len(flat) // shape[0] if shape[0] else 0
    return [_reshape(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


# ---- legacy JSON ---------------------------------------------------------------------


def _json_hook(obj: dict[str, Any]) -> Any:
    if obj.get("lc") in (1, 2) and isinstance(obj.get("id"), list) and "type" in obj:
        name = ".".join(str(p) for p in obj["id"])
        kind = obj.get("type")
        if kind == "constructor":
            out = _labelled(name, obj.get("kwargs") or {})
            if obj.get("args"):
                out["args"] = obj["args"]
            return out
        if kind == "secret":
            return {TYPE_KEY: name, "note": "secret (not stored)"}
        return {TYPE_KEY: name, "note": f"not serialisable ({kind})", "repr": obj.get("repr")}
    return obj


def decode_json(data: bytes | str, deferred: bool = False) -> Any:
    try:
        return deep.loads(data, capped=False) if deferred else deep.loads(data, object_hook=_json_hook)
    except ValueError as exc:
        raise DecodeError(f"not valid JSON: {exc}") from None


# ---- LangChain messages --------------------------------------------------------------

_MESSAGE_MODULES = (
    "langchain_core.messages.",
    "langchain.schema.messages.",
    "langchain.schema.",
    "langchain_core.messages",
)
_ROLES = {
    "human": "user",
    "ai": "assistant",
    "tool": "tool",
    "system": "system",
    "function": "tool",
    "developer": "system",
}
_CLASS_ROLES = {
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "ToolMessage": "tool",
    "SystemMessage": "system",
    "FunctionMessage": "tool",
    "RemoveMessage": "remove",
}


def is_message(value: Any) -> bool:
    """Whether a decoded value is a labelled LangChain message."""
    if not isinstance(value, dict):
        return False
    name = value.get(TYPE_KEY)
    if not isinstance(name, str) or not name.startswith(_MESSAGE_MODULES):
        return False
    cls = name.rsplit(".", 1)[-1]
    return cls.endswith(("Message", "MessageChunk"))


def message_to_transcript(msg: dict[str, Any]) -> dict[str, Any]:
    """A labelled LangChain message as a transcript dict."""
    cls = str(msg.get(TYPE_KEY, "")).rsplit(".", 1)[-1]
    base = cls.removesuffix("Chunk")
    kind = got if isinstance(got := msg.get("type"), str) else ""
    if base == "ChatMessage" or kind == "chat":
        role = msg.get("role") or "user"
    else:
        role = (
            _CLASS_ROLES.get(base)
            or _ROLES.get(kind.lower().removesuffix("messagechunk"))
            or kind
            or base
            or "?"
        )
    out: dict[str, Any] = {"role": role, "content": msg.get("content", "")}
    calls = msg.get("tool_calls")
    if calls is None and isinstance(msg.get("additional_kwargs"), dict):
        calls = _openai_calls(msg["additional_kwargs"].get("tool_calls"))
    if calls:
        out["tool_calls"] = [_tool_call(c) for c in calls]
    out.update({k: msg[k] for k in ("tool_call_id", "name", "id") if msg.get(k) is not None})
    if msg.get("status") == "error":
        out["status"] = "error"
    return out


def _openai_calls(calls: Any) -> list[Any] | None:
    if not isinstance(calls, list):
        return None
    out = []
    for c in calls:
        fn = c.get("function") if isinstance(c, dict) else None
        if isinstance(fn, dict):
            args = fn.get("arguments")
            try:
                args = json.loads(args) if isinstance(args, str) else args
            except ValueError:
                pass
            out.append({"id": c.get("id"), "name": fn.get("name"), "args": args})
    return out


def _tool_call(call: Any) -> Any:
    if not isinstance(call, dict):
        return call
    return {
        "id": call.get("id"),
        "name": call.get("name"),
        "arguments": call.get("args", call.get("arguments", {})),
    }


def transcript(value: Any) -> Any:
    """`value` with every labelled LangChain message in it as a transcript dict."""
    if isinstance(value, dict):
        if is_message(value):
            return message_to_transcript(value)
        return {k: transcript(v) for k, v in value.items()}
    if isinstance(value, list):
        return [transcript(v) for v in value]
    return value
