"""Issue 33 ("What a new user still hits, round 4"): `threads list`'s paging line and
its unchecked filters, `formats`' CAN column, one line for a bad option value."""

from __future__ import annotations

import shutil

import pytest

from tests.support.rig import REPO, SAMPLE_DB
from tests.support.sampledb import cli, cli_json

SESSIONS_DB = REPO / "sample_db" / "sessions.db"


@pytest.fixture
def sessions(tmp_path) -> str:
    dest = tmp_path / "sessions.db"
    shutil.copyfile(SESSIONS_DB, dest)
    return str(dest)


# ---- 33.12: threads list says when it stops at the limit ------------------------------------


def test_threads_list_says_how_many_it_left_out():
    total = len(cli_json(str(SAMPLE_DB), "threads", "list", "--limit", "1000"))
    r = cli(str(SAMPLE_DB), "threads", "list", "--limit", "2")
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == 3  # piped: the header, two rows
    assert r.stderr == f"(showing 2 of {total}; use --limit N or --offset)\n"
    r = cli(str(SAMPLE_DB), "threads", "list", "--limit", "2", "--json")
    assert r.exit_code == 0 and r.stdout.lstrip().startswith("[") and "showing" not in r.stdout
    assert "(showing 2 of" in r.stderr
    # the last page, or all of them: nothing to say
    for args in (("--offset", str(total - 2)), ("--limit", str(total))):
        r = cli(str(SAMPLE_DB), "threads", "list", "--limit", "2", *args)
        assert r.exit_code == 0 and r.stderr == "", args


def test_threads_list_counts_with_its_filters(sessions):
    r = cli(sessions, "threads", "list", "--status", "active", "--limit", "1")
    n = len(cli_json(sessions, "threads", "list", "--status", "active"))
    assert n > 1 and r.exit_code == 0 and f"(showing 1 of {n};" in r.stderr


# ---- 33.15: a filter value the database never has -------------------------------------------


@pytest.mark.parametrize(
    "args, named",
    [
        (("--status", "bogus"), "--status 'bogus'"),
        (("--status", "active,bogus"), "--status 'bogus'"),
        (("--user", "nobody"), "--user 'nobody'"),
    ],
)
def test_threads_list_refuses_a_filter_value_never_there(sessions, args, named):
    r = cli(sessions, "threads", "list", *args)
    assert r.exit_code == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"agentctl: {named}: no session has it")
    if args[0] == "--status":
        assert "active, cancelled, completed, paused" in r.stderr
    else:
        assert "Alice" in r.stderr and "u-alice" in r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("--status", "active"),
        ("--user", "Alice"),
        ("--user", "u-alice"),
        ("--user", "u-alice", "--status", "completed"),
    ],
)
def test_threads_list_takes_values_the_database_has(sessions, args):
    r = cli(sessions, "threads", "list", *args)
    assert r.exit_code == 0, r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("threads", "list", "-n", "0"),
        ("log", "loop-research-7", "-n", "x"),
        ("threads", "list", "--offset", "-1"),
    ],
)
def test_a_bad_option_value_is_one_agentctl_line(args):
    r = cli(str(SAMPLE_DB), *args)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith("agentctl: invalid value for '-") and r.stderr.count("\n") == 1, r.stderr


# ---- 33.13: formats lists edit, run, redo and compare -----------------------------------------


def test_formats_lists_edit_run_redo_compare():
    rows = {
        line.split("\t")[0]: line.split("\t")[2].split(", ")
        for line in cli(None, "formats").stdout.splitlines()[1:]
    }
    for name, can in rows.items():
        if name == "crewai-replay":  # read only (its writes exit 2 naming it)
            assert "edit" not in can and "redo" not in can and "compare" in can
            continue
        assert {"edit", "redo", "compare"} <= set(can), name
        assert ("run" in can) == (
            name in ("langgraph", "openai-agents", "adk", "agno", "crewai", "crewai-flows")
        ), name
    data = cli_json(None, "formats")
    assert all("compare" in f["capabilities"] for f in data["formats"])


# ---- 33.6: threads list on a terminal drops no characters ------------------------------------


@pytest.mark.parametrize("width", [72, 80, 100, 120, 160])
@pytest.mark.parametrize("db", ["checkpoints.db", "sessions.db", "openai_agents.db", "adk.db"])
async def test_threads_table_drops_no_characters(db, width):
    """issue 33.6: at 80 columns a summary read `[assistant] St` (its column was drawn
    wider than the terminal and every line's end cut) and the ids lost characters. Every
    character of every cell is on the screen (the ids folded at most), no line is wider
    than the terminal, and a summary is cut after a whole word, with …"""
    import io
    from collections import Counter

    from rich.console import Console

    from agentctl import render
    from agentctl.storage import open_store

    async with open_store(str(REPO / "sample_db" / db)) as store:
        rows = await store.thread_summaries(50)
    table = render.threads_table(rows, width=width)
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None, legacy_windows=False).print(table)
    out = buf.getvalue()
    assert max(len(line.rstrip()) for line in out.splitlines()) <= width
    cells = [col.header for col in table.columns] + [c.plain for col in table.columns for c in col._cells]
    assert Counter("".join(out.split())) == Counter("".join("".join(cells).split()))
    id_column = "".join(line[: table.columns[0].width].rstrip() for line in out.splitlines()[1:])
    assert id_column == "".join(r.thread_id for r in rows)  # each id whole (folded at most)
    for r in rows:
        shown = render.threads_table([r], width=width).columns[-1]._cells[0].plain
        if shown.endswith("…"):
            assert r.head_summary.startswith(shown[:-1]) and r.head_summary[len(shown) - 1] == " ", shown


# ---- 33.16: purge says an undone operation's rows are kept for redo --------------------------


@pytest.mark.parametrize(
    "sample, thread",
    [("checkpoints.db", "support-1042"), ("sessions.db", "s-bob-trip"), ("langgraph.db", "flaky-tool")],
)
def test_purge_says_kept_for_redo_for_undone_operations(tmp_path, sample, thread):
    db = str(tmp_path / sample)
    shutil.copyfile(REPO / "sample_db" / sample, db)
    assert cli(db, "threads", "delete", thread, "--yes", "--no-backup").exit_code == 0
    r = cli(db, "purge", "--dry-run")
    assert "kept for undo by 1 operation(s) (1); they can no longer be undone" in r.stdout, r.stdout
    assert cli(db, "undo").exit_code == 0  # op 1 undone: its rows are what redo brings back
    r = cli(db, "purge", "--dry-run")
    assert "kept for redo by 1 operation(s) (1); they can no longer be redone" in r.stdout, r.stdout
    assert "undo" not in r.stdout.replace("be undone", "")
    assert cli_json(db, "purge", "--dry-run")["undone"] == [1]
    assert cli(db, "redo").exit_code == 0 and cli(db, "threads", "delete", thread, "--yes").exit_code != 0
    r = cli(db, "purge", "--dry-run")  # op 1 (deleted) redone by op 3; op 2 (the undo) holds nothing
    assert "kept for undo" in r.stdout, r.stdout


# ---- 33.16: prune --status alone is no keep_last_n 0 -----------------------------------------


def test_prune_by_status_says_no_policy_in_json(sessions):
    plans = cli_json(sessions, "prune", "--status", "cancelled", "--dry-run")["plans"]
    assert plans and all(p["policy"] is None and p["param"] is None for p in plans), plans
    assert all(p["reason"] == "the whole session: status cancelled" for p in plans)
    plans = cli_json(sessions, "prune", "--status", "cancelled", "--keep-last", "1", "--dry-run")["plans"]
    assert all(p["policy"] == "keep_last_n" and p["param"] == 1 for p in plans)
    r = cli(sessions, "prune", "--status", "cancelled", "--yes", "--no-backup")
    assert r.exit_code == 0 and cli(sessions, "undo").exit_code == 0


# ---- 33.16: sqlite:///tmp/x.db is relative, as in SQLAlchemy; the error says so ---------------


def test_sqlite_url_with_three_slashes_is_relative_and_the_error_says_four(tmp_path, monkeypatch):
    db = tmp_path / "x.db"
    shutil.copyfile(SESSIONS_DB, db)
    monkeypatch.chdir(tmp_path)
    assert cli(f"sqlite:////{str(db).lstrip('/')}", "threads", "list").exit_code == 0  # absolute: four
    assert cli("sqlite:///x.db", "threads", "list").exit_code == 0  # relative: three
    r = cli(f"sqlite:///{str(db).lstrip('/')}", "threads", "list")
    assert r.exit_code == 3 and r.stderr.count("\n") == 1, r.stderr
    assert f"is {str(db).lstrip('/')} in the current directory, as in SQLAlchemy" in r.stderr
    assert f"sqlite:////{str(db).lstrip('/')}, with four slashes" in r.stderr
    assert "four slashes" not in cli("sqlite:///nothere.db", "threads", "list").stderr


# ---- 33.16: the docs name exactly the writes that ask -------------------------------------

M = "coder-fix-flaky-test"
WRITES = {
    "rewind": ("rewind", f"{M}@6"),
    "prune": ("prune", "loop-research-7", "--keep-last", "20"),
    "threads delete": ("threads", "delete", "support-1042"),
    "purge": ("purge",),
    "edit": ("edit", f"{M}@6", "--set", 'task="x"'),
    "branch": ("branch", f"{M}@6", "nb"),
    "merge": ("merge", f"{M}-branch-retry-backoff-70e7"),
    "undo": ("undo",),
    "redo": ("redo",),
}


def test_the_docs_name_the_writes_that_ask_off_a_terminal(tmp_path):
    import re

    db = str(tmp_path / "c.db")
    shutil.copyfile(SAMPLE_DB, db)
    assert cli(db, "threads", "delete", "support-1043", "--yes", "--no-backup").exit_code == 0  # for purge
    asking = set()
    for name, args in WRITES.items():
        if name == "redo":
            assert cli(db, "undo").exit_code == 0
        r = cli(db, *args, "--no-backup" if name in ("prune", "threads delete", "purge") else "--json")
        assert "Traceback" not in r.stderr
        if r.exit_code == 2 and "without --yes" in r.stderr:
            asking.add(name)
        else:
            assert r.exit_code == 0, (name, r.stderr)
    text = " ".join(
        (REPO / "docs" / "commands" / "index.md").read_text().split()
    )  # the README's commands page
    listed = re.search(r"\(((?:`[^`]+`(?:, )?)+)\) print what they will do", text)
    assert listed is not None
    assert set(re.findall(r"`([^`]+)`", listed.group(1))) == asking


# ---- 32.10 / 33.16: search's PATH on the session formats; snippets at words, of the leaf -------


@pytest.mark.parametrize(
    "db, query", [("sessions.db", "Paris"), ("openai_agents.db", "Lyon"), ("adk.db", "card")]
)
def test_session_formats_search_fills_path_with_the_steps_own_message(db, query):
    import json as _json

    url = str(REPO / "sample_db" / db)
    hits = [h for h in cli_json(url, "search", query) if h["where"] == "messages"]
    assert hits
    for h in hits:
        assert h["path"] == f"messages[{h['step'] - 1}].content", h
        shown = cli_json(url, "show", h["checkpoint_id"])
        assert len(shown["messages"]) == h["step"]
        assert query.lower() in _json.dumps(shown["messages"][h["step"] - 1], ensure_ascii=False).lower()
    piped = cli(url, "search", query).stdout.splitlines()
    assert all(line.split("\t")[6] for line in piped[1:] if line.split("\t")[3] == "messages")


def test_snippets_start_and_end_at_words():
    from agentctl.storage.agentos.rows import snippet_around

    words = " ".join(f"w{i:03d}x" for i in range(200))
    for needle in ("w050x", "w100x", "w002x", "w197x", "0x w1"):
        s = snippet_around(words, needle)
        inner = s.strip("…")
        assert needle in s and inner in words
        i = words.index(inner)
        assert i == 0 or words[i - 1] == " ", s
        assert i + len(inner) == len(words) or words[i + len(inner)] == " ", s
        assert s.startswith("…") == (i > 0) and s.endswith("…") == (i + len(inner) < len(words))


def test_state_snippet_is_the_matching_leaf():
    hits = cli_json(str(SAMPLE_DB), "search", "whitfield", "--in", "state")
    assert hits and all(h["snippet"] == "Dana Whitfield" and h["path"] == "state.customer" for h in hits), (
        hits[:2]
    )
    adk = cli_json(str(REPO / "sample_db" / "adk.db"), "search", "card")
    assert all(not h["snippet"].startswith('e"') for h in adk)


# ---- 33.16: log marks where a run failed -------------------------------------------------------


def test_log_marks_the_checkpoint_a_failed_run_stopped_at(tmp_path):
    """show had the failed run's `__error__`; log gave no sign of it."""
    import sqlite3

    pytest.importorskip("langgraph.checkpoint.sqlite")
    from langgraph.checkpoint.sqlite import SqliteSaver

    db = tmp_path / "story.db"
    conn = sqlite3.connect(db)
    SqliteSaver(conn).setup()
    conn.close()
    config = str(REPO / "sample_db" / "story" / "langgraph.json")
    r = cli(str(db), "run", "trip", "--config", config, "--input", '{"request": "somewhere new"}')
    assert r.exit_code == 1 and "no flights to Atlantis" in r.stdout + r.stderr
    lines = cli(str(db), "log", "trip").stdout.splitlines()
    assert "run failed" in lines[0] and not any("run failed" in line for line in lines[1:]), lines
    head = lines[0].split()[0]
    assert "__error__" in cli(str(db), "show", head).stdout
    r = cli(str(db), "run", "trip", "--config", config, "--from", "trip@0", "--input", '{"request": "Paris"}')
    assert r.exit_code == 0, r.stderr
    assert "run failed" not in cli(str(db), "log", "trip").stdout.splitlines()[0]


# ---- 33.16: show of one corrupt row: its metadata and a placeholder, not exit 6 ----------------


def test_show_of_a_corrupt_row_gives_a_placeholder(tmp_path):
    import sqlite3

    db = str(tmp_path / "c.db")
    shutil.copyfile(SAMPLE_DB, db)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE checkpoints SET state_blob = '{bad' WHERE thread_id = 'support-1042' AND step = 5")
    conn.commit()
    conn.close()
    r = cli(db, "show", "support-1042")
    assert r.exit_code == 0, r.stderr
    assert "support-1042" in r.stdout and "state_blob is not usable: invalid JSON" in r.stdout
    data = cli_json(db, "show", "support-1042")
    assert data["metadata"]["step"] == 5 and data["state"] is None
    assert data["unusable"]["column"] == "state_blob"
    assert cli(db, "show", "support-1042~1").exit_code == 0  # the others as before


@pytest.mark.parametrize("db, query", [("openai_agents.db", "sunny"), ("adk.db", "price")])
def test_session_formats_search_fills_path_for_tool_outputs(db, query):
    """Issue 32.10: a hit in a tool's output names its place too (it was empty): the
    output is its step's own message, as `show` gives it."""
    import json as _json

    url = str(REPO / "sample_db" / db)
    hits = cli_json(url, "search", query, "--in", "tools")
    assert hits and all(h["where"] == "tools_result" for h in hits)
    for h in hits:
        assert h["path"] == f"messages[{h['step'] - 1}].content", h
        shown = cli_json(url, "show", h["checkpoint_id"])
        assert shown["messages"][h["step"] - 1]["role"] == "tool"
        assert (
            query.lower()
            in _json.dumps(shown["messages"][h["step"] - 1]["content"], ensure_ascii=False).lower()
        )
