"""`agentctl edit` on the article's session store (SQLite and Postgres), from the CLI: a
message's content (role, tool_calls, tool_call_id) changed in place, a session's fields
(title, status, model, metadata) changed; the plan first; one op; undo puts every row of
the five tables back as it was (updated_at included), and messages_fts follows: a search
finds the new text and not the old after the edit, the old after the undo."""

from __future__ import annotations

import json
import shutil

import tests.formats.test_format_article as fa
from tests.formats.test_format_article import SAMPLE, dump, fts_search, pg_typed_tables, valid
from tests.support.article_storage import AgentStorage
from tests.support.sampledb import cli, cli_json

OLD = "Tomorrow in Paris: light rain, between 8 and 14 °C. Take an umbrella."
NEW = "Tomorrow in Paris: sunshine, leave the brolly at home."

article_url = fa.article_url  # the fixture: a copy of sample_db/sessions.db on SQLite and on Postgres


def _hits(url: str, text: str) -> list[str]:
    return [h["checkpoint_id"] for h in cli_json(url, "search", text)]


def _ok(r) -> None:
    assert r.exit_code == 0, (r.stdout, r.stderr)


async def test_edit_a_message_and_its_session_in_place_then_undo_row_for_row(article_url):
    url = article_url
    before = await dump(url)
    sets = ["--set", f"content={json.dumps(NEW)}", "--set", 'session.title="Paris, fixed"']
    plan = cli_json(url, "edit", "msg-13", *sets, "--dry-run")
    assert plan["ref"] == "msg-13" and plan["thread_id"] == "s-weather-paris" and plan["step"] == 6
    assert [(c["path"], c["op"], c["old"], c["new"]) for c in plan["changes"]] == [
        ("/content", "changed", OLD, NEW),
        ("/session/title", "changed", "Weather in Paris", "Paris, fixed"),
    ]
    assert await dump(url) == before  # a plan writes nothing

    r = cli(url, "edit", "msg-13", *sets, "--yes")
    _ok(r)
    assert r.stdout.startswith(
        "edited s-weather-paris: message msg-13 (step 6) in place (content); session title"
    )
    after = await dump(url)
    assert after["users"] == before["users"] and after["tasks"] == before["tasks"]
    assert after["tool_logs"] == before["tool_logs"]
    changed = [(b, a) for b, a in zip(before["messages"], after["messages"], strict=False) if a != b]
    assert len(after["messages"]) == len(before["messages"]) and len(changed) == 1
    ((old_row, new_row),) = changed
    assert new_row[0] == 13 and new_row[3] == NEW  # id, content; the rest of the row as it was
    assert new_row[:3] + new_row[4:] == old_row[:3] + old_row[4:]
    sessions = {s[0]: s for s in after["sessions"]}
    old_sessions = {s[0]: s for s in before["sessions"]}
    assert sessions["s-weather-paris"][2] == "Paris, fixed"
    assert sessions["s-weather-paris"][-1] > old_sessions["s-weather-paris"][-1]  # updated_at: now
    assert {k: v for k, v in sessions.items() if k != "s-weather-paris"} == {
        k: v for k, v in old_sessions.items() if k != "s-weather-paris"
    }
    shown = cli_json(url, "show", "msg-13")
    assert shown["messages"][-1]["content"] == NEW and shown["metadata"]["step"] == 6
    assert shown["state"]["session"]["title"] == "Paris, fixed"
    assert _hits(url, "brolly") == ["msg-13"] and _hits(url, "umbrella") == []
    if "://" not in url:  # the index itself (what the article's own MATCH query reads)
        assert fts_search(url, "brolly") == [13] and fts_search(url, "umbrella") == []
        history = AgentStorage(url).get_conversation_history("s-weather-paris")
        assert history[-1]["content"] == NEW
    await valid(url)
    ops = cli_json(url, "oplog")
    assert (
        ops[0]["kind"] == "edit"
        and ops[0]["summary"] == "edit s-weather-paris at step 6 (msg-13): set content, set session.title"
    )

    _ok(cli(url, "undo"))
    assert await dump(url) == before  # every row, byte for byte (updated_at too)
    assert _hits(url, "umbrella") == ["msg-13"] and _hits(url, "brolly") == []
    if "://" not in url:
        assert fts_search(url, "umbrella") == [13] and fts_search(url, "brolly") == []
    await valid(url)


async def test_a_session_id_names_its_last_message_and_session_fields_and_tool_calls(article_url):
    url = article_url
    before = await dump(url)
    plan = cli_json(
        url,
        "edit",
        "s-wang-report",
        "--set",
        'session.status="paused"',
        "--set",
        'session.metadata.quarter="2026Q4"',
        "--set",
        'session.model="gpt-4o-mini"',
        "--dry-run",
    )
    last = cli_json(url, "log", "s-wang-report")[0]  # newest first
    assert plan["ref"] == last["checkpoint_id"]
    assert sorted(c["path"] for c in plan["changes"]) == [
        "/session/metadata/quarter",
        "/session/model",
        "/session/status",
    ]
    r = cli(
        url,
        "edit",
        "s-wang-report",
        "--set",
        'session.status="paused"',
        "--set",
        'session.metadata.quarter="2026Q4"',
        "--set",
        'session.model="gpt-4o-mini"',
        "--yes",
    )
    _ok(r)
    after = await dump(url)
    assert after["messages"] == before["messages"]  # only the session changed
    row = {s[0]: s for s in after["sessions"]}["s-wang-report"]
    assert row[3:5] == ("paused", "gpt-4o-mini")
    assert row[8] == json.dumps({"department": "销售部", "quarter": "2026Q4"}, ensure_ascii=False)
    _ok(cli(url, "undo"))
    assert await dump(url) == before

    # tool_calls as the article's save_message writes them (JSON text; NULL when empty)
    calls = [{"id": "call_x", "name": "get_weather", "arguments": {"city": "Lyon"}}]
    _ok(
        cli(
            url,
            "edit",
            "msg-9",
            "--set",
            f"tool_calls={json.dumps(calls)}",
            "--set",
            'content="Checking Lyon."',
            "--yes",
        )
    )
    msg = {m[0]: m for m in (await dump(url))["messages"]}[9]
    assert msg[3:5] == ("Checking Lyon.", json.dumps(calls, ensure_ascii=False))
    assert cli_json(url, "show", "msg-9")["messages"][-1]["tool_calls"] == calls
    _ok(cli(url, "edit", "msg-9", "--set", "tool_calls=null", "--yes"))
    assert {m[0]: m for m in (await dump(url))["messages"]}[9][4] is None
    _ok(cli(url, "undo"))
    _ok(cli(url, "undo"))
    assert await dump(url) == before
    if "://" not in url:
        assert fts_search(url, "check") == [9] and fts_search(url, "Lyon") == []
    await valid(url)


def test_bad_edits_exit_2_with_one_line_and_write_nothing(tmp_path):
    db = str(tmp_path / "sessions.db")
    shutil.copyfile(SAMPLE, db)
    raw = (tmp_path / "sessions.db").read_bytes()
    cases = [
        (
            ["--set", "nope=1"],
            "the state has no key 'nope' (its keys: content, role, session, tool_call_id, tool_calls)",
        ),
        (
            ["--set", 'session.user_id="x"'],
            "the session has no field 'user_id' that edit changes "
            "(its fields: metadata, model, status, title)",
        ),
        (["--set", 'role="robot"'], "role: 'robot' is no role of the article's messages"),
        (["--set", 'session.status="done"'], "session.status: 'done' is no session status"),
        (["--set", "content=5"], "content: a message's content is a string"),
        (["--unset", "content"], "--unset content: a message always has a content"),
        (["--set", "content={bad"], "--set content: the value is not JSON"),
    ]
    for args, words in cases:
        for extra in (["--dry-run"], ["--yes"]):
            r = cli(db, "edit", "msg-13", *args, *extra)
            assert r.exit_code == 2, (args, r.stdout, r.stderr)
            assert words in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
    assert (tmp_path / "sessions.db").read_bytes() == raw  # nothing written, no side table made
    r = cli(db, "edit", "msg-13", "--set", f"content={json.dumps(OLD)}", "--yes")  # the same value
    _ok(r)
    assert r.stdout.startswith("nothing to change: msg-13") and cli_json(db, "oplog") == []


def test_undo_refuses_once_the_article_wrote_to_the_session_or_the_message_changed(tmp_path):
    import sqlite3

    db = str(tmp_path / "sessions.db")
    shutil.copyfile(SAMPLE, db)
    _ok(cli(db, "edit", "msg-13", "--set", f"content={json.dumps(NEW)}", "--yes"))
    conn = sqlite3.connect(db)
    conn.execute("UPDATE messages SET content = 'someone else' WHERE id = 13")
    conn.commit()
    r = cli(db, "undo")
    assert r.exit_code != 0 and "message msg-13 changed after it" in r.stderr, r.stderr
    conn.execute("UPDATE messages SET content = ? WHERE id = 13", (NEW,))
    conn.commit()
    conn.close()
    AgentStorage(db).pause_session("s-weather-paris")  # the article's own write to the session
    r = cli(db, "undo")
    assert r.exit_code != 0 and "s-weather-paris changed since operation" in r.stderr, r.stderr


async def test_postgres_jsonb_metadata_and_timestamptz_times_round_trip(pg_dsn):
    """The article's tables as a Postgres user may declare them (JSONB metadata, TIMESTAMPTZ
    times): the edit writes through the columns' types and undo gives the rows back."""
    import asyncpg

    conn = await asyncpg.connect(pg_dsn)
    try:
        await conn.execute(
            pg_typed_tables(updated_at="'2026-01-02 03:04:05.678901+00'", tool_calls="JSONB")
            + "INSERT INTO sessions (id, user_id, status, metadata_json) VALUES ('p1', 'u', 'active', '{\"k\": 1}');"
            "INSERT INTO messages (session_id, role, content) VALUES ('p1', 'user', 'hello');"
        )

        async def rows():
            return [
                [tuple(r) for r in await conn.fetch(f"SELECT * FROM {t} ORDER BY id")]
                for t in ("sessions", "messages")
            ]

        before = await rows()
        calls = [{"id": "c1", "name": "f"}]
        _ok(
            cli(
                pg_dsn,
                "edit",
                "p1",
                "--set",
                "session.metadata.k=2",
                "--set",
                'session.status="paused"',
                "--set",
                f"tool_calls={json.dumps(calls)}",
                "--yes",
            )
        )
        s = await conn.fetchrow("SELECT metadata_json::text AS m, status, updated_at FROM sessions")
        assert json.loads(s["m"]) == {"k": 2} and s["status"] == "paused" and s["updated_at"].year >= 2026
        assert s["updated_at"] != before[0][0][-1]
        m = await conn.fetchval("SELECT tool_calls_json::text FROM messages")
        assert json.loads(m) == calls
        assert cli_json(pg_dsn, "show", "p1")["messages"][-1]["tool_calls"] == calls
        _ok(cli(pg_dsn, "undo"))
        assert await rows() == before  # the microseconds of updated_at too
    finally:
        await conn.close()
