"""The Agno format's writes, each proven by agno going on (agno 3's own get_session /
get_runs / get_chat_history, and `Agent.run` appending the next run with the history and
state the write left), and undone and redone row for row; on SQLite and Postgres, in the
v3, v2, migrated and mixed layouts. (The contract suite runs every write on the v3 layout
too: tests/formats/contract/.)"""

from __future__ import annotations

import pytest

pytest.importorskip("agno")

from agentctl.storage import open_store  # noqa: E402
from tests.scripts.agno_model import Scripted  # noqa: E402
from tests.support import agno_rig  # noqa: E402
from tests.support.agno_rig import agno_open  # noqa: E402
from tests.support.contract_formats import dump  # noqa: E402
from tests.support.rig import run_sync  # noqa: E402
from tests.support.sampledb import cli, cli_json  # noqa: E402

agno_db, agno_builds, agno2_python = agno_rig.agno_db, agno_rig.agno_builds, agno_rig.agno2_python

CASES = [
    ("v3", "sqlite"),
    ("v3", "postgres"),
    ("migrated", "sqlite"),
    ("migrated", "postgres"),
    ("v2", "sqlite"),
    ("mixed", "sqlite"),
    ("v2", "postgres"),
    ("mixed", "postgres"),
]


def tops(session) -> list[str]:
    return [r.run_id for r in session.runs or [] if getattr(r, "parent_run_id", None) is None]


def chat_agent(db, replies):
    from agno.agent import Agent

    from tests.scripts.agno_write import count

    return Agent(
        model=Scripted(script=list(replies)),
        id="chat",
        name="Chat",
        db=agno_open(db),
        tools=[count],
        add_history_to_context=True,
        session_state={"count": 0},
    )


def said(messages) -> list[tuple]:
    return [
        (m.role, m.content or "") if not isinstance(m, dict) else (m["role"], m.get("content") or "")
        for m in messages
    ]


def own_rows(url):
    """Every table's rows but agentctl's own (the journal)."""
    return {t: rows for t, rows in run_sync(lambda: dump(url)).items() if not t.startswith("agentctl_")}


def goes_on(db, session: str, expect_runs: list[str], state: dict) -> str:
    """Agno reads the session as agentctl left it and its next run takes that history
    and state: the new run's id."""
    from agno.db.base import SessionType

    agno = agno_open(db)
    s = agno.get_session(session, SessionType.AGENT)
    assert tops(s) == expect_runs
    assert s.session_data["session_state"] == state
    shown = run_sync(lambda: _show(db.url, session))
    assert said(shown.messages) == said(s.get_chat_history())
    agent = chat_agent(db, ["went on"])
    run = agent.run("fourth", session_id=session, user_id="ada")
    given = [(r, c) for r, c in agent.model.seen[0] if r == "user"]
    expected_users = [(r, c) for r, c in said(s.get_chat_history()) if r == "user"]
    assert given == (expected_users[-3:] if len(expected_users) > 3 else expected_users) + [
        ("user", "fourth")
    ]
    assert run.session_state == state
    after = agno.get_session(session, SessionType.AGENT)
    assert tops(after) == expect_runs + [run.run_id]
    if db.layout != "v2":  # agno 3 gives a new run the index of its place among the loaded runs
        rows, _ = agno.get_runs(session_id=session, deserialize=False)
        assert [r["run_id"] for r in rows][-1] == run.run_id
        assert rows[-1]["run_index"] == len(expect_runs)  # right after what the write kept
        if db.layout != "mixed":  # (there the table holds agno 3's runs alone)
            assert [r["run_index"] for r in rows] == list(range(len(rows)))
    metas = run_sync(lambda: _read(db.url, session))
    assert [m.checkpoint_id for m in metas] == expect_runs + [run.run_id]
    return run.run_id


async def _show(url, session):
    async with open_store(url) as store:
        return await store.get_latest(session)


async def _read(url, session):
    async with open_store(url) as store:
        return await store.read_thread(session, 100)


@pytest.mark.parametrize("hard", [False, True], ids=["soft", "hard"])
@pytest.mark.parametrize("case", CASES, ids=[f"{a}-{b}" for a, b in CASES])
def test_rewind_then_agno_goes_on(agno_db, case, hard):
    """rewind chat@2: agno reads runs 1-2 (none of the later ones comes back from the
    legacy array), the session_state of run 2, and its next run comes after run 2 with
    that history and state; the later runs are in the archive session (soft) as agno
    reads it. Undo gives every row back, redo the rewind's."""
    db = agno_db(*case)
    before = own_rows(db.url)
    args = ["rewind", "chat@2", "--yes"] + (["--hard", "--no-backup"] if hard else [])
    plan = cli_json(db.url, *args[:2], *args[3:], "--dry-run")["plan"]
    r = cli(db.url, *args)
    assert r.exit_code == 0, r.stderr
    moved = db.runs["chat"][2:]
    assert [m["checkpoint_id"] for m in plan["moved"]] == moved
    after = own_rows(db.url)
    if not hard:
        from agno.db.base import SessionType

        archive = plan["archive_thread"]
        assert tops(agno_open(db).get_session(archive, SessionType.AGENT)) == moved
        assert [m.checkpoint_id for m in run_sync(lambda: _read(db.url, archive))] == moved
    assert cli(db.url, "undo").exit_code == 0
    assert own_rows(db.url) == before
    assert cli(db.url, "redo").exit_code == 0
    assert own_rows(db.url) == after
    goes_on(db, "chat", db.runs["chat"][:2], {"count": 2})


@pytest.mark.parametrize("case", CASES, ids=[f"{a}-{b}" for a, b in CASES])
def test_branch_then_agno_goes_on(agno_db, case):
    """branch chat@2 NAME: a session agno reads with copies of runs 1-2 (new ids, the
    forked-from fields fork_session writes) and run 2's state, which goes on as a
    session of its own; the source is unchanged. Undo removes every row it made."""
    from agno.db.base import SessionType

    db = agno_db(*case)
    before = own_rows(db.url)
    r = cli(db.url, "branch", "chat@2", "alt")
    assert r.exit_code == 0, r.stderr
    branch = r.stdout.strip().splitlines()[0]
    s = agno_open(db).get_session(branch, SessionType.AGENT)
    copies = tops(s)
    assert len(copies) == 2 and not set(copies) & set(db.runs["chat"])
    assert s.session_data["forked_from_session_id"] == "chat"
    assert all(run.forked_from_session_id == "chat" for run in s.runs)
    assert tops(agno_open(db).get_session("chat", SessionType.AGENT)) == db.runs["chat"]
    tree = cli_json(db.url, "threads", "list")
    assert {t["thread_id"]: t["branch_of"] for t in tree}[branch] == "chat"
    assert cli(db.url, "undo").exit_code == 0
    assert own_rows(db.url) == before
    assert cli(db.url, "redo").exit_code == 0
    goes_on(db, branch, copies, {"count": 2})


@pytest.mark.parametrize("case", CASES, ids=[f"{a}-{b}" for a, b in CASES])
def test_threads_delete_and_undo(agno_db, case):
    from agno.db.base import SessionType

    db = agno_db(*case)
    before = own_rows(db.url)
    r = cli(db.url, "threads", "delete", "team", "--yes", "--no-backup")
    assert r.exit_code == 0, r.stderr
    assert agno_open(db).get_session("team", SessionType.TEAM) is None
    assert "team" not in [t["thread_id"] for t in cli_json(db.url, "threads", "list")]
    assert cli(db.url, "undo").exit_code == 0
    assert own_rows(db.url) == before
    assert tops(agno_open(db).get_session("team", SessionType.TEAM)) == db.runs["team"]


def test_merge_names_agno(agno_db):
    db = agno_db("v3", "sqlite")
    r = cli(db.url, "branch", "chat@2", "alt")
    branch = r.stdout.strip().splitlines()[0]
    r = cli(db.url, "merge", branch, "--into", "chat")
    assert r.exit_code == 2 and "agno" in r.stderr, r.stderr


@pytest.mark.parametrize("case", CASES, ids=[f"{a}-{b}" for a, b in CASES])
def test_prune_keeps_the_last_runs_then_agno_goes_on(agno_db, case):
    """prune chat --keep-last 2: the older runs deleted (from the legacy array too: none
    comes back), the dry run naming what the write deletes; agno reads the last two runs,
    their history and the session's state, and its next run comes right after them
    (run_index renumbered). Undo gives every row back, redo the prune's."""
    from agno.db.base import SessionType

    db = agno_db(*case)
    before = own_rows(db.url)
    state = agno_open(db).get_session("chat", SessionType.AGENT).session_data["session_state"]
    plan = cli_json(db.url, "prune", "chat", "--keep-last", "2", "--dry-run")
    assert own_rows(db.url) == before
    assert [m["checkpoint_id"] for p in plan["plans"] for m in p["delete"]] == db.runs["chat"][:-2]
    done = cli_json(db.url, "prune", "chat", "--keep-last", "2", "--yes", "--no-backup")
    assert [i for r in done["results"] for i in r["deleted"]] == db.runs["chat"][:-2]
    after = own_rows(db.url)
    assert cli(db.url, "undo").exit_code == 0
    assert own_rows(db.url) == before
    assert cli(db.url, "redo").exit_code == 0
    assert own_rows(db.url) == after
    goes_on(db, "chat", db.runs["chat"][-2:], state)


@pytest.mark.parametrize(
    "case",
    [("v3", "sqlite"), ("v2", "sqlite"), ("migrated", "postgres")],
    ids=["v3-sqlite", "v2-sqlite", "migrated-postgres"],
)
def test_prune_older_than_deletes_whole_sessions(agno_db, case):
    """prune --all --older-than 30d: the sessions not updated for 30 days go whole (their
    runs with them); the others keep every run. Undo gives every row back."""
    from agno.db.base import SessionType

    from tests.support.rig import pg_execute

    db = agno_db(*case)
    old = "UPDATE agno_sessions SET updated_at = 1000 WHERE session_id IN ('team', 'flow')"
    if db.kind == "sqlite":
        import sqlite3

        conn = sqlite3.connect(db.url)
        with conn:
            conn.execute(old)
        conn.close()
    else:
        pg_execute(db.url, old)
    before = own_rows(db.url)
    plan = cli_json(db.url, "prune", "--all", "--older-than", "30d", "--dry-run")
    assert [(p["thread_id"], p["keep_count"]) for p in plan["plans"]] == [("flow", 0), ("team", 0)]
    assert "the whole session" in plan["plans"][0]["reason"]
    assert cli(db.url, "prune", "--all", "--older-than", "30d", "--yes", "--no-backup").exit_code == 0
    agno = agno_open(db)
    assert (
        agno.get_session("team", SessionType.TEAM) is None
        and agno.get_session("flow", SessionType.WORKFLOW) is None
    )
    assert tops(agno.get_session("chat", SessionType.AGENT)) == db.runs["chat"]
    assert cli(db.url, "undo").exit_code == 0
    assert own_rows(db.url) == before
    assert tops(agno_open(db).get_session("team", SessionType.TEAM)) == db.runs["team"]
    for args, words in (
        (["chat", "--keep-last", "0"], "--keep-last"),
        (["chat", "--milestones", "2"], "does not support"),
        (["nosuch", "--keep-last", "1"], "nosuch"),
    ):
        r = cli(db.url, "prune", *args, "--yes", "--no-backup")
        assert r.exit_code in (2, 3) and words in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
    assert own_rows(db.url) == before


@pytest.mark.parametrize(
    "case",
    [
        ("v3", "sqlite"),
        ("migrated", "sqlite"),
        ("v2", "sqlite"),
        ("v3", "postgres"),
        ("v2", "postgres"),
        ("mixed", "postgres"),
    ],
    ids=["v3-sqlite", "migrated-sqlite", "v2-sqlite", "v3-postgres", "v2-postgres", "mixed-postgres"],
)
def test_edit_then_agno_goes_on(agno_db, case):
    """edit chat --set count=7: the session's state as update_session_state writes it,
    which agno's next run starts from; edit chat@2 --set messages.I.content: the run's
    message in place, as get_chat_history then gives it. Undo puts every row back."""
    from agno.db.base import SessionType

    db = agno_db(*case)
    before = own_rows(db.url)
    r = cli(db.url, "edit", "chat@2", "--set", 'messages.3.content="deux"', "--yes")
    assert r.exit_code == 0, r.stderr
    history = said(agno_open(db).get_session("chat", SessionType.AGENT).get_chat_history())
    assert ("assistant", "deux") in history and ("assistant", "two") not in history
    refused = cli(db.url, "edit", "chat@2", "--set", "count=7", "--yes")
    assert refused.exit_code == 2 and "head" in refused.stderr
    assert cli(db.url, "edit", "chat", "--set", "count=7", "--yes").exit_code == 0
    assert agno_open(db).get_session("chat", SessionType.AGENT).session_data["session_state"] == {"count": 7}
    assert cli(db.url, "undo").exit_code == 0 and cli(db.url, "undo").exit_code == 0
    assert own_rows(db.url) == before
    assert cli(db.url, "redo").exit_code == 0 and cli(db.url, "redo").exit_code == 0
    agent = chat_agent(db, ["went on"])
    run = agent.run("fourth", session_id="chat", user_id="ada")
    assert run.session_state == {"count": 7}
    assert ("assistant", "deux") in said(
        agno_open(db).get_session("chat", SessionType.AGENT).get_chat_history()
    )


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_agno_2_goes_on_after_rewind_prune_and_edit(agno_db, agno2_python, kind):
    """On an agno 2 file (the runs in the sessions row's array), agno 2.9 itself goes on
    after agentctl's writes: after rewind chat@2, prune --keep-last 1 and an edit of the
    state, its next run comes after run 2 with the edited state and run 2's history."""
    db = agno_db("v2", kind)
    for args in (
        ["rewind", "chat@2", "--yes"],
        ["prune", "chat", "--keep-last", "1", "--yes", "--no-backup"],
        ["edit", "chat", "--set", "count=5", "--yes"],
    ):
        r = cli(db.url, *args)
        assert r.exit_code == 0, (args, r.stderr)
    new = agno_rig.write(agno2_python, "append", *db.agno_args)["chat"]
    log = cli_json(db.url, "log", "chat")
    assert [m["checkpoint_id"] for m in reversed(log)] == [db.runs["chat"][1]] + new
    head = cli_json(db.url, "show", "chat")
    assert head["state"] == {"count": 6}  # the edited count, and one more by the run's tool
    assert [m["content"] for m in head["messages"] if m["role"] == "user"] == ["second", "fourth"]
