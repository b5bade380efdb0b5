"""The LangGraph payload decoder: plain data out, nothing imported, called or unpickled.

The payloads are built by hand with ormsgpack (the same extension codes and tuples as
`langgraph.checkpoint.serde.jsonplus`); only the `show` probe test writes its checkpoint
with LangGraph's serializer. The format's
tests (test_format_langgraph.py) decode what the real LangGraph writes.
"""

from __future__ import annotations

import json
import pickle
import struct
import subprocess
import sys

import ormsgpack
import pytest

from agentctl.storage.langgraph.serde import (
    DELTA_SNAPSHOT,
    OPAQUE_KEY,
    TYPE_KEY,
    DecodeError,
    decode_typed,
    message_to_transcript,
    transcript,
)
from tests.support.rig import REPO


def ext(code: int, value) -> ormsgpack.Ext:
    return ormsgpack.Ext(code, ormsgpack.packb(value))


def pack(value) -> bytes:
    return ormsgpack.packb(value)


def test_simple_types():
    assert decode_typed("null", b"") is None
    assert decode_typed("bytes", b"\x00\x01") == {TYPE_KEY: "bytes", "size": 2, "base64": "AAE="}
    assert decode_typed("bytearray", b"ab")[TYPE_KEY] == "bytearray"
    assert decode_typed("msgpack", pack({"a": [1, 2.5, "x", None, True]})) == {"a": [1, 2.5, "x", None, True]}
    assert decode_typed("json", json.dumps({"k": 1}).encode()) == {"k": 1}
    assert decode_typed("empty", None) is None


def test_extension_types():
    payload = pack(
        {
            "uuid": ext(0, ("uuid", "UUID", "12345678123456781234567812345678")),
            "set": ext(0, ("builtins", "set", [1, 2])),
            "send": ext(1, ("langgraph.types", "Send", ("node", {"x": 1}))),
            "dc": ext(2, ("my.mod", "Point", {"x": 1, "y": 2})),
            "when": ext(3, ("datetime", "datetime", "2024-01-02T03:04:05+00:00", "fromisoformat")),
            "weird": ext(3, ("my.mod", "Thing", "arg", "from_text")),
            "p1": ext(4, ("my.models", "Old", {"a": 1})),
            "p2": ext(5, ("my.models", "New", {"b": [1]}, "model_validate_json")),
            "delta": ext(7, [1, 2, 3]),
        }
    )
    out = decode_typed("msgpack", payload)
    assert out["uuid"] == {TYPE_KEY: "uuid.UUID", "value": "12345678-1234-5678-1234-567812345678"}
    assert out["set"] == {TYPE_KEY: "builtins.set", "value": [1, 2]}
    assert out["send"] == {TYPE_KEY: "langgraph.types.Send", "args": ["node", {"x": 1}]}
    assert out["dc"] == {TYPE_KEY: "my.mod.Point", "x": 1, "y": 2}
    assert out["when"] == {TYPE_KEY: "datetime.datetime", "value": "2024-01-02T03:04:05+00:00"}
    assert out["weird"] == {TYPE_KEY: "my.mod.Thing", "method": "from_text", "value": "arg"}
    assert out["p1"] == {TYPE_KEY: "my.models.Old", "a": 1}
    assert out["p2"] == {TYPE_KEY: "my.models.New", "b": [1]}
    assert out["delta"] == {TYPE_KEY: DELTA_SNAPSHOT, "value": [1, 2, 3]}


def test_numpy_arrays_without_numpy():
    buf = struct.pack("<6d", *range(6))
    out = decode_typed("msgpack", pack(ext(6, ("<f8", (2, 3), "C", buf))))
    assert out == {
        TYPE_KEY: "numpy.ndarray",
        "dtype": "<f8",
        "shape": [2, 3],
        "values": [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]],
    }
    fortran = struct.pack("<6q", 0, 3, 1, 4, 2, 5)  # the same matrix, column-major
    out = decode_typed("msgpack", pack(ext(6, ("<i8", (2, 3), "F", fortran))))
    assert out["values"] == [[0, 1, 2], [3, 4, 5]]
    strings = decode_typed("msgpack", pack(ext(6, ("<U3", (2,), "C", b"\0" * 24))))
    assert strings == {TYPE_KEY: "numpy.ndarray", "dtype": "<U3", "shape": [2], "nbytes": 24}


def test_messages_become_a_transcript():
    ai = ext(
        5,
        (
            "langchain_core.messages.ai",
            "AIMessage",
            {
                "content": "",
                "type": "ai",
                "id": "m2",
                "name": None,
                "tool_calls": [{"name": "add", "args": {"a": 1}, "id": "c1", "type": "tool_call"}],
                "additional_kwargs": {},
                "response_metadata": {},
            },
            "model_validate_json",
        ),
    )
    tool = ext(
        5,
        (
            "langchain_core.messages.tool",
            "ToolMessage",
            {
                "content": "3",
                "type": "tool",
                "tool_call_id": "c1",
                "name": "add",
                "id": "m3",
                "status": "success",
            },
            "model_validate_json",
        ),
    )
    human = ext(
        5,
        (
            "langchain_core.messages.human",
            "HumanMessage",
            {"content": "hi", "type": "human", "id": "m1"},
            "model_validate_json",
        ),
    )
    chat = ext(
        5,
        (
            "langchain_core.messages.chat",
            "ChatMessage",
            {"content": "x", "type": "chat", "role": "critic"},
            "model_validate_json",
        ),
    )
    value = decode_typed("msgpack", pack({"messages": [human, ai, tool, chat]}))
    assert value["messages"][0][TYPE_KEY] == "langchain_core.messages.human.HumanMessage"
    assert transcript(value) == {
        "messages": [
            {"role": "user", "content": "hi", "id": "m1"},
            {
                "role": "assistant",
                "content": "",
                "id": "m2",
                "tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 1}}],
            },
            {"role": "tool", "content": "3", "tool_call_id": "c1", "name": "add", "id": "m3"},
            {"role": "critic", "content": "x"},
        ]
    }
    # legacy JSON payloads: lc constructor envelopes
    legacy = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "SystemMessage"],
        "kwargs": {"content": "be brief", "type": "system"},
    }
    msg = decode_typed("json", json.dumps(legacy).encode())
    assert message_to_transcript(msg) == {"role": "system", "content": "be brief"}


def test_opaque_payloads():
    class Boom:
        def __reduce__(self):
            return (print, ("unpickled!",))

    data = pickle.dumps(Boom())
    out = decode_typed("pickle", data)
    assert out[OPAQUE_KEY] is True and out[TYPE_KEY] == "pickle" and "never unpickled" in out["note"]
    enc = decode_typed("msgpack+aes", b"\x01" * 40)
    assert enc[OPAQUE_KEY] is True and enc["size"] == 40 and "never decrypted" in enc["note"]
    assert decode_typed("cbor", b"x")[OPAQUE_KEY] is True
    with pytest.raises(DecodeError):
        decode_typed("msgpack", b"\xc1")
    with pytest.raises(DecodeError):
        decode_typed("json", b"{")


def test_nothing_named_in_the_data_is_imported_or_called(tmp_path):
    """A payload naming a module that does not exist, os.system and a pickle: decoded in
    a fresh interpreter, no new module appears in sys.modules but the decoder's own, and
    no command runs (the marker file stays absent)."""
    marker = tmp_path / "ran"
    code = f"""
import sys, pickle, ormsgpack, os
from agentctl.storage.langgraph import serde
def ext(code, value):
    return ormsgpack.Ext(code, ormsgpack.packb(value))
payload = ormsgpack.packb({{
    "ghost": ext(2, ("no_such_module_xyz.sub", "Ghost", {{"a": 1}})),
    "pyd": ext(5, ("another_missing_pkg", "Model", {{"b": 2}}, "model_validate_json")),
    "sys": ext(0, ("os", "system", "touch {marker}")),
    "meth": ext(3, ("os", "system", "touch {marker}", "__call__")),
    "pos": ext(1, ("subprocess", "call", [["touch", "{marker}"]])),
    "np": ext(6, ("<f8", (1,), "C", b"\\0" * 8)),
}})
class Boom:
    def __reduce__(self):
        return (os.system, ("touch {marker}",))
pickled = pickle.dumps(Boom())
before = set(sys.modules)
out = serde.transcript(serde.decode_typed("msgpack", payload))
op = serde.decode_typed("pickle", pickled)
legacy = serde.decode_typed("json", b'{{"lc": 2, "type": "constructor", "id": ["evil_mod", "X"], "kwargs": {{}}}}')
new = sorted(set(sys.modules) - before)
print(new)
print(out["ghost"], out["sys"], out["pos"], op["__opaque__"], legacy)
"""
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert res.returncode == 0, res.stderr
    new_modules, shown = res.stdout.splitlines()[:2]
    assert new_modules == "[]"
    assert "no_such_module_xyz.sub.Ghost" in shown and "os.system" in shown
    assert not marker.exists()


# For each constructor-like extension code (0-5): the tuple LangGraph's serde writes,
# naming `module`; a decoder that imported the named module (or called what it names)
# would import the probe module below.
PROBE_EXTS = {
    0: lambda mod: (mod, "Thing", "arg"),
    1: lambda mod: (mod, "Thing", ["a", 1]),
    2: lambda mod: (mod, "Thing", {"a": 1}),
    3: lambda mod: (mod, "Thing", "arg", "from_text"),
    4: lambda mod: (mod, "Thing", {"a": 1}),
    5: lambda mod: (mod, "Thing", {"a": 1}, "model_validate_json"),
}


def _probe_modules(tmp_path, monkeypatch, tag: str) -> dict[int, str]:
    """One not-yet-loaded module per code in tmp_path (on sys.path), whose import writes
    a marker file; returns {code: module name}."""
    names = {}
    for code in PROBE_EXTS:
        name = f"agentctl_probe_{tag}_{code}"
        (tmp_path / f"{name}.py").write_text(
            f"open({str(tmp_path / ('imported-' + name))!r}, 'w').close()\n"
            "class Thing:\n    def __init__(self, *a, **k):\n        pass\n"
        )
        assert name not in sys.modules
        names[code] = name
    monkeypatch.syspath_prepend(str(tmp_path))
    return names


def _no_probe_ran(tmp_path, names) -> None:
    assert not [n for n in names.values() if n in sys.modules]
    assert sorted(p.name for p in tmp_path.glob("imported-*")) == []


def test_no_extension_code_imports_the_module_it_names(tmp_path, monkeypatch):
    """Codes 0-5 each name a probe module that is importable: decoding imports nothing
    (no new module in sys.modules) and the probe's marker is never written."""
    names = _probe_modules(tmp_path, monkeypatch, "serde")
    decode_typed("msgpack", pack({"warm": ext(2, ("x.y", "Z", {"a": 1}))}))  # the decoder's own imports
    for code, make in PROBE_EXTS.items():
        payload = pack({"v": ext(code, make(names[code]))})
        before = set(sys.modules)
        out = decode_typed("msgpack", payload)
        assert set(sys.modules) - before == set(), code
        assert out["v"][TYPE_KEY] == f"{names[code]}.Thing", (code, out)
    _no_probe_ran(tmp_path, names)


def test_show_imports_no_module_named_in_a_checkpoint(tmp_path, monkeypatch):
    """The same through `show` on a LangGraph database whose head checkpoint carries the
    six extension values in a channel."""
    import shutil
    import sqlite3

    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from tests.support.sampledb import cli

    names = _probe_modules(tmp_path, monkeypatch, "show")
    db = tmp_path / "lg.db"
    shutil.copy(REPO / "agentctl" / "sample" / "langgraph.db", db)
    serde = JsonPlusSerializer()
    conn = sqlite3.connect(db)
    cid, type_, blob = conn.execute(
        "SELECT checkpoint_id, type, checkpoint FROM checkpoints WHERE thread_id = 'deploy-approval'"
        " AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1"
    ).fetchone()
    checkpoint = serde.loads_typed((type_, blob))
    checkpoint["channel_values"]["probe"] = {
        str(code): ormsgpack.Ext(code, ormsgpack.packb(make(names[code])))
        for code, make in PROBE_EXTS.items()
    }
    checkpoint["channel_versions"]["probe"] = checkpoint["channel_versions"].get("probe", 1)
    new_type, new_blob = serde.dumps_typed(checkpoint)
    conn.execute(
        "UPDATE checkpoints SET type = ?, checkpoint = ? WHERE checkpoint_id = ?", (new_type, new_blob, cid)
    )
    conn.commit()
    conn.close()
    r = cli(str(db), "show", "deploy-approval", "--json")
    assert r.exit_code == 0, r.stdout
    for name in names.values():
        assert f"{name}.Thing" in r.stdout
    _no_probe_ran(tmp_path, names)


@pytest.mark.parametrize("sample", ["langgraph.db", "langgraphjs.db"])
def test_a_deferred_decode_gives_each_part_read_as_the_full_decode(sample):
    """describe's decode (`deferred`: extension values left packed, JSON envelopes left
    unlabelled) gives, through `undefer`, each message and versions_seen as the full decode
    does, for every checkpoint of the LangGraph and LangGraph.js samples."""
    import sqlite3

    from agentctl.storage.langgraph.serde import Deferred, undefer

    conn = sqlite3.connect(REPO / "sample_db" / sample)
    rows = conn.execute("SELECT type, checkpoint FROM checkpoints").fetchall()
    conn.close()
    assert rows and any((r[0] or "msgpack") == ("json" if "js" in sample else "msgpack") for r in rows)
    deferred_seen = 0
    for type_, data in rows:
        full, part = decode_typed(type_, data), decode_typed(type_, data, deferred=True)
        assert part["versions_seen"] == full["versions_seen"]
        msgs = part["channel_values"].get("messages")
        msgs = undefer(msgs, type_) if isinstance(msgs, (Deferred, dict)) else msgs
        want = full["channel_values"].get("messages")
        assert [undefer(m, type_) for m in msgs or []] == (want or [])
        deferred_seen += sum(isinstance(m, Deferred) for m in msgs or [])
    assert deferred_seen or "js" in sample  # msgpack messages are left packed until read
