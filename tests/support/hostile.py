"""Hostile-rows databases, one per format, built at test time (small: well under 1 MB).

A format is in the hostile-rows suite (tests/reliability/test_reliability_hostile.py)
by its `FormatCase.hostile` (tests/support/contract_formats.py's `CASES`): a
`HostileRows`, below, with the function writing its rows and the threads they are in.

Each is the contract database of its format (tests/support/contract_formats.py, written
by the framework's own program) plus rows a buggy writer could leave, each in a thread of
its own so the good threads can be checked to still work:

- deep nesting: JSON nested 100,000 deep; LangGraph channel values nested 800 deep and
  5,000 nested msgpack ext values; LangGraph metadata of 100,000 nested JSON arrays
- non-UTF-8 bytes (LangGraph metadata `\\xff{not json ...`)
- text that is not JSON where JSON is expected (the article's tool_calls_json)
- terminal escapes in text
- NaN and Infinity, which Python's json writes (and the frameworks with it) but JSON has not

`huge_value(fmt, path, size)` adds one value of `size` bytes (the 50 MB test).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DEEP = 100_000
ESC = "\x1b[31mRED\x1b]8;;http://x.example\x07link\x1b]8;;\x07 \x07bell"
NOT_UTF8 = b"\xff{not json \xfe\xfd"


@dataclass(frozen=True)
class HostileRows:
    """A format's hostile rows: `add(path)` writes them into its contract database (the
    SQLite file its builder wrote); the hostile threads (the good ones are the contract
    database's), those holding a value nested too deep to show, the one holding NaN and
    Infinity, and what `doctor` says of that one: (PROBLEM, WHERE) lines, WHERE None for
    a checkpoint id."""

    add: Callable[[str], None]
    threads: tuple[str, ...]
    deep: tuple[str, ...]
    nan: str
    nan_found: frozenset[tuple[str, str | None]]


def deep_json(depth: int = DEEP, leaf: str = '"x"') -> str:
    return "[" * depth + leaf + "]" * depth


def _deep_list_msgpack(depth: int) -> bytes:
    import ormsgpack

    return b"\x91" * depth + ormsgpack.packb("leaf")  # fixarray of one, `depth` times


def _deep_ext_msgpack(depth: int) -> bytes:
    import ormsgpack

    inner = ormsgpack.packb(["builtins", "set", ["leaf"]])
    for _ in range(depth):
        inner = ormsgpack.packb(["m", "C", ormsgpack.Ext(0, inner)])
    return ormsgpack.packb(ormsgpack.Ext(0, inner))


def _splice(path: str, thread: str, marker: str, raw: bytes) -> None:
    """Put msgpack bytes the saver refuses to write in place of the string `marker` in the
    thread's checkpoint (msgpack is self-delimiting: the bytes swap cleanly)."""
    import ormsgpack

    con = sqlite3.connect(path)
    with con:
        (blob,) = con.execute("SELECT checkpoint FROM checkpoints WHERE thread_id = ?", (thread,)).fetchone()
        packed = ormsgpack.packb(marker)
        assert blob.count(packed) == 1
        con.execute(
            "UPDATE checkpoints SET checkpoint = ? WHERE thread_id = ?", (blob.replace(packed, raw), thread)
        )
    con.close()


NAN = {"nan": float("nan"), "inf": [float("inf"), float("-inf")], "ok": "fine"}


def _lg_put(path: str, thread: str, channel_values: dict, metadata: dict | None = None) -> None:
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        cp = empty_checkpoint()
        cp["channel_values"] = channel_values
        cp["channel_versions"] = {k: 1 for k in channel_values}
        saver.put(
            {"configurable": {"thread_id": thread, "checkpoint_ns": ""}},
            cp,
            {"source": "input", "step": 0, **(metadata or {})},
            cp["channel_versions"],
        )
    finally:
        conn.close()


def _hostile_langgraph(path: str) -> None:
    _lg_put(path, "lg-deep", {"deep": "MARK-DEEP-LIST", "ok": "fine"})
    _splice(path, "lg-deep", "MARK-DEEP-LIST", _deep_list_msgpack(800))
    _lg_put(path, "lg-deep-ext", {"deep": "MARK-DEEP-EXT", "ok": "fine"})
    _splice(path, "lg-deep-ext", "MARK-DEEP-EXT", _deep_ext_msgpack(5_000))
    _lg_put(path, "lg-deep-meta", {"ok": "fine"})
    _lg_put(path, "lg-bad-utf8", {"ok": "fine"})
    _lg_put(path, "lg-esc", {"note": ESC})
    _lg_put(path, "lg-nan", NAN, {"score": float("nan")})
    con = sqlite3.connect(path)
    with con:
        con.execute(
            "UPDATE checkpoints SET metadata = ? WHERE thread_id = 'lg-deep-meta'", (deep_json().encode(),)
        )
        con.execute("UPDATE checkpoints SET metadata = ? WHERE thread_id = 'lg-bad-utf8'", (NOT_UTF8,))
    con.close()


def _hostile_article(path: str) -> None:
    con = sqlite3.connect(path)
    user = con.execute("SELECT id FROM users LIMIT 1").fetchone()[0]
    with con:
        for sid in ARTICLE.threads:
            con.execute("INSERT INTO sessions (id, user_id, title) VALUES (?, ?, ?)", (sid, user, sid))
            con.execute("INSERT INTO messages (session_id, role, content) VALUES (?, 'user', 'hi')", (sid,))
        con.execute(
            "INSERT INTO messages (session_id, role, content, tool_calls_json) "
            "VALUES ('s-deep', 'assistant', 'deep', ?)",
            (deep_json(),),
        )
        con.execute(
            "INSERT INTO messages (session_id, role, content, tool_calls_json) "
            "VALUES ('s-notjson', 'assistant', 'broken', ?)",
            ("{not json at all",),
        )
        con.execute(
            "INSERT INTO messages (session_id, role, content, tool_calls_json) "
            "VALUES ('s-esc', 'assistant', ?, ?)",
            (ESC, json.dumps([{"id": ESC}])),
        )
        con.execute("UPDATE sessions SET metadata_json = ? WHERE id = 's-nan'", (json.dumps(NAN),))
    con.close()


def _hostile_openai(path: str) -> None:
    con = sqlite3.connect(path)
    with con:
        for sid in OPENAI_AGENTS.threads:
            con.execute("INSERT INTO agent_sessions (session_id) VALUES (?)", (sid,))
            con.execute(
                "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
                (sid, json.dumps({"role": "user", "content": "hi"})),
            )
        con.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('oa-deep', ?)",
            ('{"role": "assistant", "content": ' + deep_json() + "}",),
        )
        con.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('oa-notjson', ?)", ("{not json",)
        )
        con.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('oa-esc', ?)",
            (json.dumps({"role": "assistant", "content": ESC}),),
        )
        con.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('oa-nan', ?)",
            (json.dumps({"role": "assistant", "content": "n", **NAN}),),
        )
    con.close()


def _hostile_adk(path: str) -> None:
    con = sqlite3.connect(path)
    con.row_factory = sqlite3.Row
    sess = dict(con.execute("SELECT * FROM sessions WHERE id = 'main'").fetchone())
    event = dict(con.execute("SELECT * FROM events WHERE session_id = 'main' LIMIT 1").fetchone())
    with con:
        for thread in ADK.threads:
            _, user, sid = thread.split("/")
            con.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?)",
                (
                    sess["app_name"],
                    user,
                    sid,
                    json.dumps(NAN) if sid == "nan" else "{}",
                    sess["create_time"],
                    sess["update_time"],
                ),
            )
            data = json.loads(event["event_data"])
            if sid == "deep":
                text = json.dumps(data).replace(
                    '"state_delta": {', '"state_delta": {"deep": ' + deep_json() + ", ", 1
                )
                assert text.count(deep_json()) == 1
            elif sid == "notjson":
                text = "{not json"
            elif sid == "nan":
                data["actions"] = {**data.get("actions", {}), "state_delta": NAN}
                text = json.dumps(data)
            else:
                data["content"] = {"role": "user", "parts": [{"text": ESC}]}
                text = json.dumps(data)
            con.execute(
                "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    str(uuid.uuid4()),
                    sess["app_name"],
                    user,
                    sid,
                    event["invocation_id"],
                    event["timestamp"],
                    text,
                ),
            )
    con.close()


def _hostile_agno(path: str) -> None:
    """Copies of the main session's first run (agno's own row), each in a session of its
    own: a message nested too deep, a run that is not JSON, terminal escapes in a message,
    NaN and Infinity in the run's session state."""
    con = sqlite3.connect(path)
    con.row_factory = sqlite3.Row
    sess = dict(con.execute("SELECT * FROM agno_sessions WHERE session_id = 'main'").fetchone())
    run = dict(
        con.execute("SELECT * FROM agno_runs WHERE session_id = 'main' ORDER BY run_index LIMIT 1").fetchone()
    )
    with con:
        for sid in AGNO.threads:
            data = json.loads(run["run_data"])
            data.update(run_id=str(uuid.uuid4()), session_id=sid)
            if sid == "ag-nan":
                data["session_state"] = NAN
                text = json.dumps(data)
            elif sid == "ag-deep":
                data["messages"][0]["content"] = "MARK-DEEP"
                text = json.dumps(data).replace('"MARK-DEEP"', deep_json(), 1)
            elif sid == "ag-notjson":
                text = "{not json"
            else:
                data["content"] = ESC
                data["messages"][0]["content"] = ESC
                text = json.dumps(data)
            con.execute(
                "INSERT INTO agno_sessions (session_id, session_type, agent_id, user_id, session_data, "
                "agent_data, metadata, summary, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    sid,
                    sess["session_type"],
                    sess["agent_id"],
                    sess["user_id"],
                    sess["session_data"],
                    sess["agent_data"],
                    sess["metadata"],
                    sess["summary"],
                    sess["created_at"],
                    sess["updated_at"],
                ),
            )
            con.execute(
                "INSERT INTO agno_runs (run_id, session_id, run_type, agent_id, user_id, status, run_index, "
                "run_data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?)",
                (
                    data["run_id"],
                    sid,
                    run["run_type"],
                    run["agent_id"],
                    run["user_id"],
                    run["status"],
                    text,
                    run["created_at"],
                    run["updated_at"],
                ),
            )
    con.close()


# LangGraph's metadata is a warning (its msgpack channel values may hold any float)
LANGGRAPH = HostileRows(
    _hostile_langgraph,
    ("lg-deep", "lg-deep-ext", "lg-deep-meta", "lg-bad-utf8", "lg-esc", "lg-nan"),
    deep=("lg-deep", "lg-deep-ext"),
    nan="lg-nan",
    nan_found=frozenset({("bad-metadata", "lg-nan")}),
)
ARTICLE = HostileRows(
    _hostile_article,
    ("s-deep", "s-notjson", "s-esc", "s-nan"),
    deep=("s-deep",),
    nan="s-nan",
    nan_found=frozenset({("invalid_json", "s-nan")}),
)
OPENAI_AGENTS = HostileRows(
    _hostile_openai,
    ("oa-deep", "oa-notjson", "oa-esc", "oa-nan"),
    deep=("oa-deep",),
    nan="oa-nan",
    nan_found=frozenset({("invalid_json", None)}),
)
ADK = HostileRows(
    _hostile_adk,
    ("app/u9/deep", "app/u9/notjson", "app/u9/esc", "app/u9/nan"),
    deep=("app/u9/deep",),
    nan="app/u9/nan",
    nan_found=frozenset({("invalid_json", "app/u9/nan"), ("invalid_json", None)}),
)

AGNO = HostileRows(
    _hostile_agno,
    ("ag-deep", "ag-notjson", "ag-esc", "ag-nan"),
    deep=("ag-deep",),
    nan="ag-nan",
    nan_found=frozenset({("invalid_json", None)}),
)


def build(fmt: str, path: Path) -> str:
    """A hostile-rows SQLite database of `fmt` (a name in contract_formats.CASES) at `path`."""
    from tests.support.contract_formats import CASES

    url = str(path)
    case = CASES[fmt]
    assert case.hostile is not None, fmt
    asyncio.run(case.build("sqlite", url))
    case.hostile.add(url)
    return url


def add_huge(fmt: str, url: str, thread: str, size: int) -> None:
    """One value of `size` characters in a new thread `thread` (a LangGraph channel value,
    an OpenAI item's content), written by the framework's own code."""
    text = "x" * (size - 12) + "-END-OF-HUGE"
    if fmt == "langgraph":
        _lg_put(url, thread, {"big": text, "ok": "fine"})
        return
    if fmt == "openai-agents":
        from agents import SQLiteSession

        async def add() -> None:
            s = SQLiteSession(thread, url)
            try:
                await s.add_items([{"role": "user", "content": "hi"}, {"role": "assistant", "content": text}])
            finally:
                s.close()

        asyncio.run(add())
        return
    raise ValueError(fmt)
