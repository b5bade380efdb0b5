"""The Agno format's reads against the real agno (databases written by agno 3.1 and, for
the v2 layout, agno 2.9, offline: `tests/scripts/agno_model.py`), on SQLite and
Postgres, in every layout: agentctl's threads, steps, conversations and states must be
what agno's own `get_session` / `get_run` / `get_chat_history` give."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("agno")

from agentctl.storage import detect, open_store  # noqa: E402
from tests.support import agno_rig  # noqa: E402
from tests.support.agno_rig import LAYOUTS, agno_open  # noqa: E402
from tests.support.rig import run_sync  # noqa: E402
from tests.support.sampledb import cli, cli_json  # noqa: E402

# the rig's fixtures: agno_db(layout, kind) -> a private copy of that database
agno_db, agno_builds, agno2_python = agno_rig.agno_db, agno_rig.agno_builds, agno_rig.agno2_python

KINDS = ("sqlite", "postgres")
SESSIONS = {"chat": "agent", "team": "team", "flow": "workflow", "janitor": "agent"}


def agno_session(db, sid: str):
    from agno.db.base import SessionType

    kind = {"agent": SessionType.AGENT, "team": SessionType.TEAM, "workflow": SessionType.WORKFLOW}
    return agno_open(db).get_session(sid, kind[SESSIONS[sid]])


def top_runs(session) -> list:
    return [r for r in session.runs or [] if getattr(r, "parent_run_id", None) is None]


def said(messages) -> list[tuple]:
    """(role, content) of messages: agno's Message objects or agentctl's dicts."""
    out = []
    for m in messages:
        if type(m).__name__ == "WorkflowChatInteraction":  # a workflow's: one per run
            out += [("user", m.input), ("assistant", m.output)]
            continue
        get = m.get if isinstance(m, dict) else lambda k, m=m: getattr(m, k)
        out.append((get("role"), get("content") or ""))
    return out


@pytest.fixture(
    params=[(layout, kind) for kind in KINDS for layout in LAYOUTS], ids=lambda p: f"{p[0]}-{p[1]}"
)
def db(request, agno_db):
    return agno_db(*request.param)


def test_reads_match_agno(db):
    """Every session is a thread; its steps are agno's top-level runs in agno's order;
    each step's state is the run's session_state and its messages the conversation
    `get_chat_history` gives up to that run (the head's: the whole of it)."""
    assert run_sync(lambda: detect(db.url)).name == "agno"

    async def go():
        async with open_store(db.url) as store:
            assert (
                store.layout
                == {"v3": "v3", "v2": "v2", "migrated": "migrated", "mixed": "migrated"}[db.layout]
            )
            summaries = {t.thread_id: t for t in await store.thread_summaries(50)}
            assert set(summaries) == set(SESSIONS)
            assert await store.count_threads() == 4
            out = {}
            for sid in SESSIONS:
                metas = await store.read_thread(sid, 1000)
                cps = [await store.get(m.checkpoint_id) for m in metas]
                out[sid] = (summaries[sid], metas, cps, [cp async for cp in store.iter_checkpoints([sid])])
            return out

    got = run_sync(go)
    for sid, (summary, metas, cps, streamed) in got.items():
        session = agno_session(db, sid)
        runs = top_runs(session)
        assert [m.checkpoint_id for m in metas] == [r.run_id for r in runs] == db.runs[sid]
        assert [m.step for m in metas] == list(range(1, len(runs) + 1))
        assert summary.checkpoints == len(runs) and summary.head_checkpoint_id == runs[-1].run_id
        assert summary.session_type == SESSIONS[sid]
        for n, (cp, run) in enumerate(zip(cps, runs, strict=False), 1):
            assert cp.metadata.step == n
            assert cp.state == (getattr(run, "session_state", None) or {})
            assert cp.tools_result["run"]["run_id"] == run.run_id
        assert said(cps[-1].messages) == said(session.get_chat_history())
        for a, b in zip(cps, cps[1:], strict=False):  # each step's conversation goes on from the one before
            assert said(b.messages)[: len(a.messages)] == said(a.messages)
        assert [c.to_dict() for c in streamed] == [c.to_dict() for c in cps]


def test_forks_members_steps_and_paused(db):
    """continue_run's regeneration and fork hang beside their source (log/tree forks); a
    team's member run is inside the team run's step; a workflow's step runs inside its
    run; a PAUSED run is tagged and keeps the tool waiting for its confirmation."""

    async def go():
        async with open_store(db.url) as store:
            chat = await store.read_thread("chat", 100)
            team = await store.get_latest("team")
            flow = await store.get_latest("flow")
            paused = await store.get_latest("janitor")
            children = await store.children(chat[0].checkpoint_id)
            return chat, team, flow, paused, children

    chat, team, flow, paused, children = run_sync(go)
    ids = [m.checkpoint_id for m in chat]
    parents = [m.parent_checkpoint_id for m in chat]
    assert parents[:5] == [None, ids[0], ids[1], ids[1], ids[0]]  # 4 regenerates 3, 5 forks 2
    assert "regenerated" in chat[2].tags and "regenerate" in chat[3].tags and "fork" in chat[4].tags
    assert {c.checkpoint_id for c in children} == {ids[1], ids[4]}
    members = team.tools_result["member_runs"]
    assert [m["agent_id"] for m in members] == ["geo"] and members[0]["content"] == "Paris is the capital."
    assert [s["agent_id"] for s in flow.tools_result["step_runs"]] == ["writer", "editor"]
    assert "paused" in paused.metadata.tags
    assert any(t.get("requires_confirmation") for t in paused.tools_result["tools"].values())


@pytest.mark.parametrize("layout", ["v3", "migrated"])
def test_cli_reads(agno_db, layout):
    """threads list, log, tree, show, search, diff, stats, doctor and export through the
    CLI (SQLite)."""
    db = agno_db(layout, "sqlite")
    rows = cli_json(db.url, "threads", "list")
    assert {r["thread_id"]: r["session_type"] for r in rows} == SESSIONS
    assert [r["checkpoint_id"] for r in cli_json(db.url, "log", "chat")] == list(reversed(db.runs["chat"]))
    tree = cli(db.url, "tree", "chat")
    assert tree.exit_code == 0 and "fork" in tree.stdout
    shown = cli_json(db.url, "show", "chat@1")
    assert shown["state"] == {"count": 1} and shown["metadata"]["checkpoint_id"] == db.runs["chat"][0]
    hits = cli_json(db.url, "search", "ZEPHYRINE")
    assert [(h["thread_id"], h["step"]) for h in hits] == [("chat", 1)]
    assert cli_json(db.url, "search", "ZÜRICH")[0]["checkpoint_id"] == db.runs["chat"][0]
    diff = cli(db.url, "diff", "chat@1", "chat@2")
    assert diff.exit_code == 0 and "count" in diff.stdout
    stats = cli_json(db.url, "stats")
    assert stats["sessions"] == 4 and stats["runs"] == len(db.runs["chat"]) + 3 and stats["member_runs"] == 1
    assert {r["status"]: r["runs"] for r in stats["per_status"]}["PAUSED"] == 1
    doctor = cli(db.url, "doctor", "--json")
    assert doctor.exit_code == 0, doctor.stdout + doctor.stderr
    exported = cli(db.url, "export", "-o", "-")
    assert exported.exit_code == 0
    lines = [json.loads(x) for x in exported.stdout.splitlines()]
    assert len(lines) == sum(len(v) for v in db.runs.values())


def test_doctor_finds_legacy_differences_and_run_index_gaps(agno_db):
    """A run whose legacy copy differs from the table's, and a session whose run_index
    has a duplicate, are reported; an intact migrated file has neither."""
    import sqlite3

    db = agno_db("migrated", "sqlite")
    clean = cli_json(db.url, "doctor")
    assert not clean["warnings"] and not clean["problems"]["run_index"]
    conn = sqlite3.connect(db.url)
    with conn:
        conn.execute(
            "UPDATE agno_runs SET run_data = json_set(run_data, '$.content', 'changed') WHERE run_id = ?",
            (db.runs["chat"][1],),
        )
        conn.execute("UPDATE agno_runs SET run_index = 0 WHERE run_id = ?", (db.runs["chat"][2],))
    conn.close()
    found = cli_json(db.url, "doctor", code=5)
    assert len(found["warnings"]) == 1 and found["warnings"][0].startswith(f"chat/{db.runs['chat'][1]}: ")
    assert "differs from the runs table's in content" in found["warnings"][0]
    assert [p["subject"] for p in found["problems"]["run_index"]] == ["chat"]


def test_table_names_and_choice(tmp_path):
    """Agno's `session_table=` names both tables: detection goes by columns; two sets of
    tables need AGENTCTL_AGNO_TABLE."""
    import subprocess
    import sys

    from agentctl.errors import SchemaError

    path = tmp_path / "named.db"
    code = (
        "import sys; sys.path.insert(0, 'tests/scripts'); from agno_model import Scripted; "
        "from agno.agent import Agent; from agno.db.sqlite import SqliteDb; "
        "db = SqliteDb(db_file=sys.argv[1], session_table=sys.argv[2]); "
        "Agent(model=Scripted(script=['hi']), id='a', db=db).run('hello', session_id='s')"
    )
    subprocess.run([sys.executable, "-c", code, str(path), "my_sessions"], check=True, capture_output=True)
    tables = {r[0] for r in __import__("sqlite3").connect(path).execute("SELECT name FROM sqlite_master")}
    assert {"my_sessions", "my_sessions_runs"} <= tables
    assert [r["thread_id"] for r in cli_json(str(path), "threads", "list")] == ["s"]
    subprocess.run([sys.executable, "-c", code, str(path), "other_sessions"], check=True, capture_output=True)

    async def opened():
        async with open_store(str(path)):
            pass

    with pytest.raises(SchemaError, match="AGENTCTL_AGNO_TABLE"):
        run_sync(opened)
    r = cli(str(path), "threads", "list", "--json", env={"AGENTCTL_AGNO_TABLE": "other_sessions"})
    assert r.exit_code == 0 and [t["thread_id"] for t in json.loads(r.stdout)] == ["s"]
