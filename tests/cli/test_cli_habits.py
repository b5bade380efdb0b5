"""Habits users bring from git, gh, kubectl and sqlite-utils (issue 14)."""

from __future__ import annotations

import json

import pytest

from tests.support.rig import SAMPLE_DB
from tests.support.sampledb import cli

SESSIONS_DB = SAMPLE_DB.with_name("sessions.db")


# ---- global options after the command's name ------------------------------------------


def test_global_options_after_the_command():
    before = cli(None, "--db", str(SAMPLE_DB), "threads", "list", "-n", "2")
    after = cli(None, "threads", "list", "-n", "2", "--db", str(SAMPLE_DB))
    assert before.exit_code == after.exit_code == 0
    assert after.stdout == before.stdout and "loop-research-7" in after.stdout
    r = cli(None, "show", "coder-fix-flaky-test", f"--db={SAMPLE_DB}", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["metadata"]["thread_id"] == "coder-fix-flaky-test"
    # the later one wins, as when both come first; --format too
    r = cli(
        None, "--db", "nope.db", "threads", "list", "--db", str(SESSIONS_DB), "--format", "article", "--json"
    )
    assert r.exit_code == 0 and any(t["thread_id"].startswith("s-") for t in json.loads(r.stdout))


def test_global_flags_after_the_command(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    plain = cli(str(SAMPLE_DB), "log", "support-1042", "--no-color").stdout
    assert "\x1b[33m" not in plain and "ckpt-support-1042-5" in plain
    r = cli(str(SAMPLE_DB), "log", "support-1042", "--pager")
    assert r.exit_code == 0


def test_global_options_after_the_command_take_the_env_vars(monkeypatch):
    monkeypatch.setenv("AGENTCTL_DB", str(SAMPLE_DB))
    r = cli(None, "threads", "show", "support-1042", "--no-color")
    assert r.exit_code == 0 and "support-1042" in r.stdout


def test_global_option_after_the_command_without_its_value():
    r = cli(None, "threads", "list", "--db")
    assert r.exit_code == 2 and "'--db' requires an argument" in r.stderr


def test_nothing_after_double_dash_moves():
    r = cli(None, "search", "--db", str(SAMPLE_DB), "--", "--db")
    assert r.exit_code == 0  # searched for the text "--db"


# ---- --json with --dry-run; empty results on a terminal ---------------------------------


def test_threads_delete_dry_run_json(tmp_path):
    import shutil

    db = tmp_path / "s.db"
    shutil.copyfile(SAMPLE_DB, db)
    r = cli(str(db), "threads", "delete", "support-1042", "--dry-run", "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert (
        data["plan"]["thread_id"] == "support-1042"
        and data["plan"]["checkpoints"] == 5
        and data["dry_run"] is True
    )
    assert cli(str(db), "threads", "show", "support-1042").exit_code == 0  # nothing deleted


def _commands_with_dry_run() -> dict[str, set[str]]:
    """Every command (by its path) that takes --dry-run, with its options."""
    import typer

    from agentctl.cli import root

    out = {}

    def walk(cmd, path):
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                walk(sub, path + (name,))
            return
        opts = {o for p in cmd.params for o in getattr(p, "opts", [])}
        if "--dry-run" in opts:
            out[" ".join(path)] = opts

    walk(typer.main.get_command(root.eager_app()), ())
    return out


def test_every_command_with_dry_run_has_json():
    found = _commands_with_dry_run()
    assert set(found) == {"threads delete", "rewind", "merge", "prune", "purge", "edit", "redo", "undo"}
    assert all("--json" in opts for opts in found.values())


@pytest.mark.parametrize(
    "command",
    [
        ["threads", "delete", "support-1042"],
        ["rewind", "support-1042@2"],
        ["prune", "support-1042", "--keep-last", "1"],
        ["purge"],
        ["merge", "coder-fix-flaky-test-branch-retry-backoff-70e7"],
        ["edit", "support-1042@2", "--set", 'stage="closed"'],
    ],
)
def test_every_dry_run_takes_json(tmp_path, command):
    import shutil

    db = tmp_path / "s.db"
    shutil.copyfile(SAMPLE_DB, db)
    r = cli(str(db), *command, "--dry-run", "--json")
    assert r.exit_code == 0, r.stderr
    json.loads(r.stdout)


@pytest.mark.parametrize(
    "command, message",
    [
        (["search", "no-such-text-anywhere"], "no matches"),
        (["oplog"], "no operations"),
        (["threads", "list", "--prefix", "no-such-thread"], "no threads"),
    ],
)
def test_empty_results_on_a_terminal_say_so(monkeypatch, command, message):
    monkeypatch.setenv("FORCE_COLOR", "1")
    r = cli(str(SAMPLE_DB), *command)
    assert r.exit_code == 0
    assert message in r.stderr and r.stdout.strip() == ""
    monkeypatch.delenv("FORCE_COLOR")  # piped: the header only (a table with no rows)
    r = cli(str(SAMPLE_DB), *command)
    assert r.exit_code == 0 and message not in r.stderr


# ---- piped threads list: whole values ---------------------------------------------------


def test_piped_threads_list_keeps_whole_values():
    r = cli(str(SAMPLE_DB), "threads", "list")
    assert r.exit_code == 0 and "…" not in r.stdout
    rows = {line.split("\t")[0]: line.split("\t") for line in r.stdout.splitlines()[1:]}
    whole = {t["thread_id"]: t for t in json.loads(cli(str(SAMPLE_DB), "threads", "list", "--json").stdout)}
    assert rows.keys() == whole.keys()
    for tid, cells in rows.items():
        assert cells[-1] == whole[tid]["head_summary"] and cells[3] == whole[tid]["updated_at"]
    assert any(len(t["head_summary"]) > 60 for t in whole.values())


# ---- search in the state ----------------------------------------------------------------

from tests.support.sampledb import sample_ro  # noqa: E402,F401  (fixture)

LANGGRAPH_DB = SAMPLE_DB.with_name("langgraph.db")


def _search(db, *args):
    r = cli(db, "search", *args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_search_finds_text_in_the_state_with_its_path(sample_ro):  # noqa: F811
    for scan in ([], ["--scan"]):
        hits = _search(sample_ro, "whitfield", *scan)  # a customer's name lives in the state only
        assert [h["checkpoint_id"].rsplit("-", 1)[0] for h in hits] == [
            f"ckpt-support-1042-{i}" for i in (5, 4, 3, 2, 1)
        ]
        assert {(h["where"], h["path"], h["role"]) for h in hits} == {("state", "state.customer", None)}
        assert all("Whitfield" in h["snippet"] for h in hits)
        assert list(hits[0]) == ["thread_id", "checkpoint_id", "step", "where", "role", "snippet", "path"]
        nested = _search(sample_ro, "exponential", "--in", "state", "--thread", "coder-fix-flaky-test", *scan)
        assert nested and {h["path"] for h in nested} == {"state.retry.strategy"}


def test_search_in_narrows_the_places(sample_ro):  # noqa: F811
    assert _search(sample_ro, "whitfield", "--in", "messages,tools") == []
    assert {h["where"] for h in _search(sample_ro, "exit_code", "--in", "tools")} == {"tools_result"}
    assert {h["where"] for h in _search(sample_ro, "backoff", "--in", "messages")} == {"messages"}
    hits = _search(sample_ro, "backoff", "-n", "1")
    assert hits[0]["path"].startswith("messages[") and hits[0]["path"].endswith("].content")
    tools = _search(sample_ro, "exit_code", "--in", "tools", "-n", "1")
    assert tools[0]["path"].startswith("tools_result.") and tools[0]["path"].endswith(".exit_code")


def test_search_in_refuses_unknown_places():
    r = cli(str(SAMPLE_DB), "search", "x", "--in", "messages,stat")
    assert r.exit_code == 2 and "unknown search place 'stat'" in r.stderr
    r = cli(str(SAMPLE_DB), "search", "x", "--in", "state", "--role", "user")
    assert r.exit_code == 2 and "--role" in r.stderr


def test_store_search_takes_places(sample_ro):  # noqa: F811
    from agentctl.storage import open_store
    from tests.support.rig import run_sync

    async def go():
        async with open_store(sample_ro) as store:
            default = await store.search("whitfield")
            only_messages = await store.search("whitfield", places=("messages",))
            fts_state = await store.search("A-77812", places=("state",))
            return default, only_messages, fts_state

    default, only_messages, state_hits = run_sync(go)
    assert len(default) == 5 and only_messages == []
    assert state_hits and all(h.where == "state" and h.path == "state.order_id" for h in state_hits)


def test_langgraph_search_runs_and_finds_state():
    hits = _search(str(LANGGRAPH_DB), "3 papers", "--in", "state")
    assert hits and all(h["where"] == "state" and h["path"].startswith("state.notes[") for h in hits)
    assert all(
        h["where"] != "state" for h in _search(str(LANGGRAPH_DB), "3 papers", "--in", "messages,tools")
    )
    assert cli(str(LANGGRAPH_DB), "search", "loop", "--scan").exit_code == 0


# ---- unknown --role values and bad AGENTCTL_KEYMAP entries are errors ---------------------


def test_unknown_role_is_an_error():
    r = cli(str(SAMPLE_DB), "search", "backoff", "--role", "asistant")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "unknown role 'asistant'; did you mean 'assistant'?" in r.stderr
    assert cli(str(SAMPLE_DB), "search", "backoff", "--role", "assistant").exit_code == 0


@pytest.mark.parametrize(
    "spec, message",
    [
        ("rewind", "is not ID=KEY"),
        ("rewind=", "is not ID=KEY"),
        ("rwind=ctrl+r", "no key binding has the id 'rwind'"),
        ("rewind=cntrl+r", "'cntrl+r' is not a key"),
        ("quit=ctrl+q,rewind=ctrl+rr", "'ctrl+rr' is not a key"),
        ("rewind=q", "'rewind=q' takes 'q' from quit"),  # issue 33.15: quit was silently gone
        ("search=?", "'search=?' takes '?' from help"),
        ("help=f1,quit=f1", "'quit=f1' takes 'f1' from help"),
    ],
)
def test_bad_keymap_entries_are_errors(monkeypatch, spec, message):
    import agentctl.cli.commands.tui

    monkeypatch.setattr(agentctl.cli.commands.tui, "_stdout_is_terminal", lambda: True)
    monkeypatch.setenv("AGENTCTL_KEYMAP", spec)
    ran = []
    monkeypatch.setattr("agentctl.tui.app.AgentctlApp.run", lambda self: ran.append(self))
    r = cli(str(SAMPLE_DB), "tui")
    assert r.exit_code == 2 and not ran
    assert r.stderr.startswith("agentctl: AGENTCTL_KEYMAP entry") and r.stderr.count("\n") == 1
    assert message in r.stderr


def test_good_keymap_entries_are_taken(monkeypatch):
    from agentctl.tui.app import AgentctlApp, binding_ids, parse_keymap

    assert parse_keymap("rewind=ctrl+r, help=f1,search=question_mark,", binding_ids()) == {
        "rewind": "ctrl+r",
        "help": "f1",
        "search": "question_mark",
    }
    assert parse_keymap("quit=ctrl+q,rewind=q", binding_ids()) == {"quit": "ctrl+q", "rewind": "q"}
    monkeypatch.setenv("AGENTCTL_KEYMAP", "confirm.yes=enter,quit=ctrl+q")
    assert AgentctlApp(str(SAMPLE_DB))._keymap == {"confirm.yes": "enter", "quit": "ctrl+q"}


# ---- narrow terminals ----------------------------------------------------------------------


@pytest.mark.parametrize("size", [(80, 24), (50, 24), (140, 40)])
async def test_tui_footer_shows_every_key(size):
    from textual.widgets._footer import FooterKey

    from agentctl.tui.app import AgentctlApp
    from agentctl.tui.widgets.detail import DetailPane

    app = AgentctlApp(str(SAMPLE_DB), readonly=True)
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.3)
        for _ in range(100):  # the detail pane's tabs mount after the first frame: the
            if app.query_one(DetailPane).tabs_ready:  # app is whole once they are (a loaded
                break  # machine may take longer than 0.3 s)
            await pilot.pause(0.05)
        footer = app.query_one("KeyFooter")
        keys = list(footer.query(FooterKey))
        shown = {b.description for (_n, b, _e, _t) in app.screen.active_bindings.values() if b.show}
        assert shown <= {k.description for k in keys}
        screen = app.screen.region
        for k in keys:  # each one whole on the screen, none over another
            assert k.region.width and screen.contains_region(k.region), (k.key, k.region)
            # and not cut: its key and description fit in its region ("r Rewin" at 80)
            assert k.region.width >= len(k.key_display) + 1 + len(k.description), (k.key, k.region)
            assert footer.region.contains_region(k.region)
            assert all(not k.region.overlaps(o.region) for o in keys if o is not k), k.key
        if size[0] >= 120:  # room for one line: Textual's footer as it was
            assert footer.region.height == 1 and not footer.compact


async def test_tui_at_80x24_threads_and_diff_are_readable(tmp_path):
    """At 80x24: more than 3 threads visible, and the Diff tab (a 38-column pane) shows
    each change as records, not a table with a 2-letter PATH column."""
    import shutil

    from textual.widgets import Static

    from agentctl.tui.app import AgentctlApp
    from agentctl.tui.widgets.detail import DetailPane
    from tests.support.tui import settle

    db = tmp_path / "c.db"
    shutil.copyfile(SAMPLE_DB, db)
    app = AgentctlApp(str(db), readonly=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for _ in range(100):
            if app.query_one(DetailPane).tabs_ready:
                break
            await pilot.pause(0.05)
        table = app.threads.table
        visible = table.scrollable_content_region.height - 1  # less the header row
        assert min(visible, table.row_count) > 3, visible
        await pilot.press("4")
        await settle(pilot)
        view = app.query_one("#diff-view", Static)
        width = view.content_region.width
        assert width < 60
        lines = [view.render_line(y).text.strip() for y in range(view.size.height)]
        assert any(line.startswith("PATH     [1].content") for line in lines), lines
        assert not any(line.split()[:2] == ["SECTION", "PATH"] for line in lines if line.split())


def _rows_at_40(monkeypatch, db, *args):
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("NO_COLOR", "1")
    r = cli(db, *args)
    assert r.exit_code == 0, r.stderr
    import re

    plain = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout)
    lines = [line.rstrip() for line in plain.splitlines() if line.strip()]
    assert lines
    return lines


def _no_letter_columns(lines):
    """Nothing reads one letter (or a few) per line: most lines keep a word of 6
    characters or more whole (a table squeezed to columns of a few letters has none)."""
    for line in lines:
        assert len(line) <= 40, line
    squeezed = [line for line in lines if max(len(w) for w in line.split()) < 6]
    assert len(squeezed) <= len(lines) // 3, squeezed


@pytest.mark.parametrize(
    "args, words",
    [
        (["log", "coder-fix-flaky-test", "-n", "5"], ["ckpt-coder-fix-flaky-test-13-7fe041"]),
        (["search", "backoff"], ["THREAD", "CHECKPOINT", "coder-fix-flaky-test", "messages[20]"]),
        (["search", "whitfield", "-n", "2"], ["THREAD", "support-1042", "state.customer", "Whitfield"]),
        (["diff", "coder-fix-flaky-test@5", "coder-fix-flaky-test@6"], ["SECTION", "parent_checkpoint_id"]),
    ],
)
def test_tables_at_40_columns(monkeypatch, args, words):
    lines = _rows_at_40(monkeypatch, str(SAMPLE_DB), *args)
    if args[0] != "log":  # log is one line per checkpoint, not a table
        _no_letter_columns(lines)
    text = " ".join(" ".join(lines).split())
    for word in words:  # each column there, and short values whole
        assert word in text, word


@pytest.mark.parametrize(
    "db, args, record",
    [
        (SAMPLE_DB, ["threads", "list"], ["THREAD", "loop-research-7", "CKPTS", "240", "HEAD", "240"]),
        (SAMPLE_DB, ["stats"], ["THREAD", "loop-research-7", "CKPTS", "240", "BYTES", "186.2", "KiB"]),
        (SAMPLE_DB.parent / "sessions.db", ["stats"], ["TOOL_NAME", "get_weather", "CALL_COUNT", "2"]),
        (SAMPLE_DB.parent / "sessions.db", ["threads", "list"], ["THREAD", "s-alice-empty", "CKPTS", "0"]),
    ],
)
def test_threads_list_and_stats_are_records_when_narrow(monkeypatch, db, args, record):
    """Under 60 columns `threads list` and `stats` switch to records (NAME  value, a
    blank line between rows), as search and diff do."""
    lines = _rows_at_40(monkeypatch, str(db), *args)
    assert all(len(line) <= 40 for line in lines), lines
    words = " ".join(" ".join(lines).split())
    assert " ".join(record) in words, lines[:12]


def test_oplog_at_40_columns(monkeypatch, tmp_path):
    import shutil

    db = tmp_path / "s.db"
    shutil.copyfile(SAMPLE_DB, db)
    assert cli(str(db), "rewind", "support-1042@3", "--yes").exit_code == 0
    assert cli(str(db), "branch", "support-1042@2", "x").exit_code == 0
    lines = _rows_at_40(monkeypatch, str(db), "oplog")
    _no_letter_columns(lines)
    text = " ".join(" ".join(lines).split())
    for word in ("SUMMARY", "THREADS", "STATUS", "rewind", "support-1042"):
        assert word in text, word


# ---- files agentctl creates get the database's permission bits (exports: the umask) -------


def _mode(path) -> int:
    import os
    import stat

    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o600])
def test_backup_and_bak_files_get_the_databases_mode(tmp_path, mode):
    import os
    import shutil

    db = tmp_path / "s.db"
    shutil.copyfile(SAMPLE_DB, db)
    os.chmod(db, mode)
    r = cli(str(db), "backup", str(tmp_path / "copy.db"))
    assert r.exit_code == 0 and _mode(tmp_path / "copy.db") == mode
    (tmp_path / "dir").mkdir()
    assert cli(str(db), "backup", str(tmp_path / "dir")).exit_code == 0
    assert _mode(tmp_path / "dir" / "s.db") == mode
    assert cli(str(db), "threads", "delete", "support-1042", "--yes").exit_code == 0
    baks = list(tmp_path.glob("s.db.*.bak"))
    assert len(baks) == 1 and _mode(baks[0]) == mode


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_export_files_follow_the_umask(tmp_path, umask):
    import os

    old = os.umask(umask)
    try:
        out = tmp_path / "out.jsonl"
        assert cli(str(SAMPLE_DB), "export", "support-1042", "-o", str(out)).exit_code == 0
        assert _mode(out) == 0o666 & ~umask
        os.chmod(out, 0o640)  # replacing a file keeps its mode
        assert cli(str(SAMPLE_DB), "export", "support-1042", "-o", str(out), "--force").exit_code == 0
        assert _mode(out) == 0o640
    finally:
        os.umask(old)


# ---- threads show: the thread's own update time; README examples reproducible ---------------

from pathlib import Path  # noqa: E402

from tests.support.rig import REPO  # noqa: E402


@pytest.fixture(scope="module")
def examples(tmp_path_factory) -> Path:
    """The databases sample_db/make_examples.py writes (broken.db, conflict.db)."""
    import os
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("examples")
    r = subprocess.run(
        [sys.executable, str(REPO / "sample_db" / "make_examples.py"), str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return out


def _readme_block(command: str) -> list[str]:
    """The lines the manual (the README, or the page of docs/ the example moved to) shows
    after `$ COMMAND`, up to the next command or fence."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    lines = next(
        lines
        for lines in (p.read_text(encoding="utf-8").splitlines() for p in pages)
        if f"$ {command}" in lines
    )
    start = lines.index(f"$ {command}") + 1
    out = []
    for line in lines[start:]:
        if line.startswith("$ ") or line.startswith("```"):
            break
        out.append(line.rstrip())
    return out


def _terminal(monkeypatch, *args, db):
    import re

    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("NO_COLOR", "1")
    r = cli(str(db), *args)
    return r, [line.rstrip() for line in re.sub(r"\x1b\[[0-9;]*m", "", r.stdout).splitlines()]


def test_threads_show_updated_is_the_threads_own(examples, monkeypatch):
    """conflict.db: the branch was written after the thread's head; `updated` is the
    thread's head's time, not its branch's."""
    db = examples / "conflict.db"
    head = json.loads(cli(str(db), "log", "coder-fix-flaky-test", "-n", "1", "--json").stdout)[0]
    shown = json.loads(cli(str(db), "threads", "show", "coder-fix-flaky-test", "--json").stdout)
    branch = [
        t
        for t in json.loads(cli(str(db), "threads", "list", "--json").stdout)
        if "try-mocks" in t["thread_id"]
    ][0]
    assert branch["updated_at"] > head["created_at"]
    assert shown["updated_at"] == head["created_at"] == "2026-11-02T10:00:21+00:00"
    _, lines = _terminal(monkeypatch, "threads", "show", "coder-fix-flaky-test", db=db)
    assert "updated      2026-11-02T10:00:21+00:00" in lines
    _, lines = _terminal(monkeypatch, "threads", "show", "coder-fix-flaky-test", db=SAMPLE_DB)
    assert lines[:5] == _readme_block("agentctl threads show coder-fix-flaky-test")[:5]


def test_readme_doctor_example_is_reproducible(examples, monkeypatch):
    monkeypatch.chdir(examples)
    r = cli("broken.db", "doctor")
    expected = _readme_block('agentctl --db broken.db doctor; echo "exit $?"')
    assert r.stdout.splitlines() + [f"exit {r.exit_code}"] == expected


def test_readme_merge_conflict_example_is_reproducible(examples, monkeypatch):
    branch = "coder-fix-flaky-test-branch-try-mocks-3788"
    db = examples / "conflict.db"
    r, lines = _terminal(monkeypatch, "merge", branch, db=db)
    expected = _readme_block(f"agentctl --db conflict.db merge {branch}")
    assert r.exit_code == 4
    assert lines + [r.stderr.rstrip()] == expected
    r, lines = _terminal(monkeypatch, "merge", branch, "--strategy", "theirs", "--dry-run", db=db)
    assert r.exit_code == 0
    assert lines == _readme_block(f"agentctl --db conflict.db merge {branch} --strategy theirs --dry-run")


# ---- messages: nothing to purge, skipped imports, "object" ------------------------------------


def test_purge_with_nothing_to_purge_says_so(tmp_path):
    import shutil

    db = tmp_path / "s.db"
    shutil.copyfile(SAMPLE_DB, db)
    for args in (["purge", "--dry-run"], ["purge", "--yes"]):
        r = cli(str(db), *args)
        assert r.exit_code == 0
        out = r.stdout + r.stderr
        assert "nothing to purge" in out and "free 0 row(s)" not in out and "0 operation(s)" not in out
    assert list(tmp_path.glob("*.bak")) == []  # nothing to do: no backup either
    data = json.loads(cli(str(db), "purge", "--yes", "--json").stdout)
    assert data["ops"] == [] and data["rows"] == 0 and data["dry_run"] is False


def _export(tmp_path, *threads):
    out = tmp_path / "x.jsonl"
    assert cli(str(SAMPLE_DB), "export", *threads, "-o", str(out), "--force").exit_code == 0
    return out.read_text().splitlines(keepends=True)


def test_an_import_that_skips_rows_says_how_many_and_why(tmp_path):
    lines = _export(tmp_path, "support-1042")
    db = str(tmp_path / "new.db")
    (tmp_path / "first3.jsonl").write_text("".join(lines[:3]))
    (tmp_path / "twice.jsonl").write_text("".join(lines + lines))
    assert cli(db, "import", "--create", str(tmp_path / "first3.jsonl")).exit_code == 0
    r = cli(db, "import", str(tmp_path / "twice.jsonl"))
    assert r.exit_code == 0
    assert "import 2 checkpoint(s) into 1 thread(s); skipped 8 checkpoint(s)" in r.stdout
    assert "5: id repeated in the import" in r.stdout and "3: id exists in the database" in r.stdout
    r = cli(db, "import", str(tmp_path / "twice.jsonl"), "--json")
    data = json.loads(r.stdout)
    assert data["op_id"] is None and data["summary"].startswith("nothing to import: skipped 10 checkpoint(s)")
    assert len(data["skipped"]) == 5 and all("exists in the database" in v for v in data["skipped"].values())


@pytest.mark.parametrize(
    "line, message",
    [
        ("[1, 2]", "a JSON array where an object is expected"),
        ('{"metadata": 3}', "metadata: a JSON number where an object is expected"),
        (
            '{"metadata": {"thread_id": "t", "checkpoint_id": "c", "step": 1, "created_at": "2026-01-01T00:00:00+00:00"},'
            ' "messages": {"a": 1}}',
            "messages: a JSON object where an array is expected",
        ),
        (
            '{"metadata": {"thread_id": "t", "checkpoint_id": "c", "step": 1, "created_at": "2026-01-01T00:00:00+00:00"},'
            ' "state": ["x"]}',
            "state: a JSON array where an object is expected",
        ),
    ],
)
def test_import_names_json_types_as_json_does(tmp_path, line, message):
    f = tmp_path / "bad.jsonl"
    f.write_text(line + "\n")
    r = cli(str(tmp_path / "new.db"), "import", "--create", str(f))
    assert r.exit_code == 2 and message in r.stderr
    assert "dict" not in r.stderr and "list" not in r.stderr


def test_corrupt_rows_name_json_types_as_json_does(tmp_path):
    import shutil
    import sqlite3

    db = tmp_path / "s.db"
    shutil.copyfile(SAMPLE_DB, db)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE checkpoints SET state_blob = '[1]', tools_blob = '\"x\"' "
            "WHERE checkpoint_id = 'ckpt-support-1042-5-f0f5ba'"
        )
        conn.execute(
            "UPDATE checkpoints SET messages_blob = '{\"a\": 1}' "
            "WHERE checkpoint_id = 'ckpt-support-1042-4-3958a3'"
        )
    r = cli(str(db), "show", "ckpt-support-1042-5-f0f5ba")
    # (issue 33.16: the row's metadata and this placeholder, exit 0, not exit 6)
    assert r.exit_code == 0 and "JSON array where an object is expected" in r.stdout, r.stderr
    d = json.loads(cli(str(db), "doctor", "--json").stdout)
    reasons = {(p["checkpoint_id"], p["column"]): p["reason"] for p in d["problems"]["invalid_json"]}
    assert reasons == {
        ("ckpt-support-1042-5-f0f5ba", "state_blob"): "JSON array where an object is expected",
        ("ckpt-support-1042-5-f0f5ba", "tools_blob"): "JSON string where an object is expected",
        ("ckpt-support-1042-4-3958a3", "messages_blob"): "JSON object where an array is expected",
    }


# ---- the README's first steps -------------------------------------------------------------


def test_readme_first_steps():
    import re

    text = (REPO / "README.md").read_text(encoding="utf-8")
    quick = text[text.index("## Quick start") : text.index("## Formats") if "## Formats" in text else None]
    requires = re.search(
        r'^requires-python\s*=\s*"([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M
    ).group(1)  # (tomllib is 3.11+)
    assert requires == ">=3.10" and "Python 3.10 or newer" in quick
    # a virtual environment first, then the README's two commands, unchanged
    venv = quick.index("python3 -m venv .venv && . .venv/bin/activate")
    assert venv < quick.index("pip install . && agentctl --db sample_db/checkpoints.db threads list")
    assert "pip install -e '.[test]' && python -m pytest -q -n auto" in quick
    # and it is the command CI runs
    assert "-e '.[test]' && python -m pytest -q -n auto" in (REPO / ".ci" / "run").read_text()
    assert "minutes" in quick  # how long the tests take
    for need in ("`postgres` user", "runuser", "TMPDIR", "AGENTCTL_TEST_PG_DSN"):  # as root
        assert need in quick, need
