"""Terminal safety: text from the database (messages, states, tool results, ids, tags,
summaries) carrying escape sequences, carriage returns or Rich markup is shown inert by
every command, piped, on a forced terminal and on a real pseudo-terminal. (The TUI's
part is in test_reliability_tui.py; tests/cli/test_cli_safety.py checks the main read
commands against a shorter payload.)"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys

import pytest

from agentctl.backends import open_backend
from tests.support.helpers import make_cp
from tests.support.rig import REPO, run_sync
from tests.support.sampledb import cli

# Every way text can take over a terminal: colours, clearing the screen and moving the
# cursor, a title change, hyperlinks (OSC 8, ended by BEL and by ST), a carriage return
# that overwrites the line, 8-bit CSI, a bidi override, a backspace, Rich markup.
EVIL = (
    "[bold red]loud[/bold red] \x1b[31mRED\x1b[0m \x1b[2J\x1b[H\x1b[10A "
    "\x1b]0;pwned\x07 \x1b]8;;http://x.example\x1b\\click\x1b]8;;\x1b\\ "
    "\x1b]8;;http://y.example\x07bell\x1b]8;;\x07 [link=http://z.example]L[/link] "
    "over\rwrite \x9b31mC1 \u202eevil\u202c back\x08space"
)
EVIL_THREAD = "t-\x1b]0;pwned\x07-[b]x[/b]"
PLAIN = "t-plain"

# What may never reach the output (Rich's own SGR colour codes removed first).
FORBIDDEN = ["\x1b", "\x07", "\r", "\x9b", "\u202e", "\x08"]
ESCAPED = ["\\e[31mRED", "\\u001b[31mRED"]  # inert() and JSON spell ESC visibly


def visible(text: str) -> str:
    """The output without Rich's own styling (SGR), which is allowed on a terminal."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def assert_inert(text: str, where: object) -> None:
    shown = visible(text)
    for bad in FORBIDDEN:
        assert bad not in shown, (where, repr(bad), shown[:2000])


async def build(url: str) -> None:
    async with open_backend(url, readonly=False, create=True) as b:
        async with b.transaction() as tx:
            for thread in (EVIL_THREAD, PLAIN):
                await tx.put(
                    make_cp(
                        thread,
                        1,
                        cid=f"{thread}-1",
                        summary=EVIL,
                        tags=[EVIL, "manual"],
                        messages=[{"role": "user", "content": EVIL}],
                        state={"k": "base"},
                    )
                )
                await tx.put(
                    make_cp(
                        thread,
                        2,
                        cid=f"{thread}-2",
                        parent=f"{thread}-1",
                        summary=EVIL,
                        next_node=EVIL,
                        messages=[
                            {"role": "user", "content": EVIL},
                            {
                                "role": EVIL,
                                "content": [{"type": "text", "text": EVIL}],
                                "tool_calls": [{"id": EVIL, "name": EVIL, "arguments": {EVIL: EVIL}}],
                            },
                        ],
                        state={"k": EVIL, EVIL: [EVIL, 1]},
                        tools={EVIL: {"out": EVIL}},
                    )
                )
                # duplicate steps: doctor names the thread
                await tx.put(make_cp(thread, 2, cid=f"{thread}-2b", parent=f"{thread}-2", summary=EVIL))


@pytest.fixture
def evil_sqlite(tmp_path) -> str:
    """The same on SQLite only, for what does not depend on the backend (rendering)."""
    return make_evil(str(tmp_path / "evil.db"))


def make_evil(url: str) -> str:
    run_sync(lambda: build(url))
    # some history: a branch of the evil thread (its name in the op log), and a
    # conflicting change on both sides for `merge`
    r = cli(url, "branch", "--json", "--", f"{EVIL_THREAD}-1", "b")
    assert r.exit_code == 0, r.stderr
    branch = json.loads(r.stdout)["thread_id"]

    async def diverge() -> None:
        async with open_backend(url, readonly=False) as b:
            await b.put(
                make_cp(
                    branch,
                    1,
                    cid=f"{branch}-x",
                    parent=f"{EVIL_THREAD}-1",
                    state={"k": EVIL + " theirs"},
                    summary=EVIL,
                )
            )

    run_sync(diverge)
    return url


READS = [
    ["show", f"{EVIL_THREAD}-2"],
    ["show", EVIL_THREAD],
    ["show", f"{PLAIN}-2"],
    ["log", EVIL_THREAD],
    ["log", EVIL_THREAD, "--graph"],
    ["log", PLAIN],
    ["diff", f"{PLAIN}-1", f"{PLAIN}-2"],
    ["diff", f"{EVIL_THREAD}-2"],
    ["diff", f"{PLAIN}-1", f"{PLAIN}-2", "--patch"],
    ["threads", "list"],
    ["threads", "show", EVIL_THREAD],
    ["tree", EVIL_THREAD],
    ["search", "loud"],
    ["search", "RED", "--scan"],
    ["stats"],
    ["doctor"],
    ["oplog"],
    ["export", PLAIN],
]
JSON_READS = [
    ["show", f"{PLAIN}-2", "--json"],
    ["log", EVIL_THREAD, "--json"],
    ["diff", f"{PLAIN}-1", f"{PLAIN}-2", "--json"],
    ["threads", "list", "--json"],
    ["tree", EVIL_THREAD, "--json"],
    ["search", "loud", "--json"],
    ["stats", "--json"],
    ["doctor", "--json"],
    ["oplog", "--json"],
]


# Piped output is the same code on both backends: Postgres runs the terminal layout.
@pytest.mark.parametrize(
    "backend,tty",
    [("sqlite", False), ("sqlite", True), ("postgres", True)],
    ids=["sqlite-piped", "sqlite-forced-terminal", "postgres-forced-terminal"],
)
def test_every_command_shows_database_text_inert(backend, tty, request, tmp_path, monkeypatch):
    url = make_evil(str(tmp_path / "evil.db") if backend == "sqlite" else request.getfixturevalue("pg_dsn"))
    if tty:  # Rich's switch for the terminal layout, with colours
        monkeypatch.setenv("FORCE_COLOR", "1")
        monkeypatch.setenv("COLUMNS", "240")
    for args in READS + JSON_READS:
        r = cli(url, "--", *args) if args[0] != "threads" else cli(url, *args)
        assert r.exit_code in (0, 5), (args, r.exit_code, r.stderr)
        assert_inert(r.stdout, args)
        assert_inert(r.stderr, args)
    # the text is still there, spelled out
    for args in (["show", f"{PLAIN}-2"], ["log", PLAIN], ["threads", "list"], ["search", "loud"]):
        shown = visible(cli(url, *args).stdout)
        assert any(e in shown for e in ESCAPED) and "[bold red]loud[/bold red]" in shown, (args, shown[:500])
    # JSON carries the exact text (parsers get it back; the terminal sees escapes)
    d = json.loads(cli(url, "show", f"{PLAIN}-2", "--json").stdout)
    assert d["messages"][0]["content"] == EVIL and d["next_node"] == EVIL

    # writes report on names taken from the database, and errors quote them, inertly
    for args in (
        ["branch", "--", EVIL_THREAD, "b2"],
        ["rewind", "--yes", "--", f"{EVIL_THREAD}-1"],
        ["prune", "--keep-last", "1", "--yes", "--", PLAIN],
        ["undo"],
        ["rewind", "--dry-run", "--", f"{PLAIN}-1"],
        ["show", "--", EVIL_THREAD + "-nope"],
        ["log", "--", "\x1b]0;pwned\x07"],
    ):
        r = cli(url, *args)
        assert r.exit_code in (0, 3), (args, r.exit_code, r.stderr)
        assert_inert(r.stdout, args)
        assert_inert(r.stderr, args)


def test_merge_conflicts_are_inert(evil_sqlite, monkeypatch):
    url = evil_sqlite
    branch = [
        t["thread_id"]
        for t in json.loads(cli(url, "threads", "list", "--json").stdout)
        if t["thread_id"].startswith(EVIL_THREAD + "-branch-")
    ][0]
    for tty in (False, True):
        if tty:
            monkeypatch.setenv("FORCE_COLOR", "1")
        for extra in ([], ["--json"], ["--dry-run"]):
            r = cli(url, "merge", "--into", EVIL_THREAD, *extra, "--", branch)
            assert r.exit_code == 4, (extra, r.stderr)
            assert_inert(r.stdout, extra)
            assert_inert(r.stderr, extra)
            if not extra:
                assert "loud" in visible(r.stdout)  # the conflicting values are shown, escaped


def run_in_pty(args: list[str]) -> str:
    """agentctl with stdout on a real pseudo-terminal; everything it wrote to it."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "COLUMNS")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentctl", *args],
        stdout=slave,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        cwd=REPO,
        env={**env, "PYTHONPATH": str(REPO), "TERM": "xterm-256color"},
    )
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError(f"no output from {args}")
        try:
            data = os.read(master, 65536)
        except OSError:  # the other side closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=60) in (0, 5), args
    return b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def test_on_a_real_pseudo_terminal(evil_sqlite):
    evil_url = evil_sqlite
    for args in (
        ["show", f"{PLAIN}-2"],
        ["log", EVIL_THREAD, "--graph"],
        ["diff", f"{PLAIN}-1", f"{PLAIN}-2"],
    ):
        out = run_in_pty(["--db", evil_url, *args])
        assert_inert(out, args)
        assert "pwned" in out, args
