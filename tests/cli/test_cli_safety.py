"""What the CLI must never do: let database text drive the terminal, or write when
it only reads."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from agentctl.backends import open_backend
from tests.support.helpers import make_cp
from tests.support.rig import SAMPLE_DB
from tests.support.sampledb import cli

EVIL = (
    "[bold red]loud[/bold red] \x1b[31mRED\x1b[0m \x1b]8;;http://evil.example\x07click\x1b]8;;\x07 "
    "[link=http://x.example]L[/link] over\rwrite \x9b2J"
)
THREAD = "evil-thread"


async def make_evil(url: str) -> None:
    async with open_backend(url, readonly=False, create=True) as b:
        async with b.transaction() as tx:
            await tx.put(
                make_cp(
                    THREAD,
                    1,
                    cid="e1",
                    summary=EVIL,
                    tags=[EVIL],
                    messages=[{"role": "user", "content": EVIL}],
                    state={"k": "plain"},
                )
            )
            await tx.put(
                make_cp(
                    THREAD,
                    2,
                    cid="e2",
                    parent="e1",
                    summary=EVIL,
                    next_node=EVIL,
                    messages=[
                        {"role": "user", "content": EVIL},
                        {
                            "role": "assistant",
                            "content": "ok " + EVIL,
                            "tool_calls": [{"name": EVIL, "arguments": {"a": EVIL}}],
                        },
                    ],
                    state={"k": EVIL, EVIL: 1},
                    tools={"t": EVIL},
                )
            )


def assert_inert(text: str) -> None:
    assert "\x1b[31mRED" not in text and "\x1b]8;" not in text and "\x07" not in text
    assert "\r" not in text and "\x9b" not in text


COMMANDS = [
    ["show", "e2"],
    ["show", THREAD + "~1"],
    ["log", THREAD],
    ["log", THREAD, "--graph"],
    ["diff", "e2"],
    ["diff", "e1", "e2"],
    ["threads", "list"],
    ["threads", "show", THREAD],
    ["search", "loud"],
    ["search", "RED", "--scan"],
]


@pytest.mark.parametrize("tty", [False, True], ids=["piped", "terminal"])
async def test_database_text_is_inert(db_url, tty, monkeypatch):
    await make_evil(db_url)
    if tty:  # Rich's own switch: the terminal layout, with colours
        monkeypatch.setenv("FORCE_COLOR", "1")
        monkeypatch.setenv("COLUMNS", "300")
    for args in COMMANDS:
        r = cli(db_url, *args)
        assert r.exit_code == 0, (args, r.stderr)
        assert_inert(r.stdout)
        shown = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout)  # without Rich's own styling
        assert "\\e[31mRED" in shown or "\\u001b[31mRED" in shown, args
        if args[0] in ("show", "log", "threads", "search"):
            assert "[bold red]loud[/bold red]" in shown, args  # markup shown, not applied
    # errors that quote database-chosen names are inert too
    r = cli(db_url, "show", "e" + EVIL)
    assert r.exit_code == 3 and "\x1b" not in r.stderr and "\r" not in r.stderr


def files(d: Path) -> dict[str, tuple[str, int]]:
    return {
        p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in d.iterdir()
        if p.is_file()
    }


READ_COMMANDS = [
    ["threads", "list"],
    ["threads", "list", "--json"],
    ["threads", "show", "coder-fix-flaky-test"],
    ["log", "coder-fix-flaky-test"],
    ["log", "coder-fix-flaky-test", "--graph", "--json"],
    ["show", "coder-fix-flaky-test@6"],
    ["show", "coder-fix-flaky-test", "--json"],
    ["diff", "coder-fix-flaky-test"],
    ["diff", "coder-fix-flaky-test~3", "coder-fix-flaky-test", "--patch"],
    ["tree", "coder-fix-flaky-test"],
    ["tree", "coder-fix-flaky-test", "--json"],
    ["search", "backoff"],
    ["search", "backoff", "--scan"],
    ["search", "ok", "--json"],
    ["stats"],
    ["stats", "--json"],
    ["doctor"],
    ["doctor", "--json"],
    ["oplog"],
    ["oplog", "--json"],
    ["show", "no-such-checkpoint"],
]


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_read_commands_never_touch_the_file(tmp_path, journal):
    d = tmp_path / "db"
    d.mkdir()
    db = d / "checkpoints.db"
    shutil.copyfile(SAMPLE_DB, db)
    if journal == "wal":  # an agent's own file (the library creates WAL files)
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.close()
    before = files(d)
    out = tmp_path / "out"
    out.mkdir()
    for args in READ_COMMANDS + [["export", "-o", str(out / "x.jsonl")], ["backup", str(out / "b.db")]]:
        r = cli(str(db), *args)
        assert r.exit_code in (0, 3), (args, r.stderr)
        after = files(d)
        if journal == "wal":
            # SQLite's WAL machinery may leave empty -wal/-shm beside a WAL database
            # (it cannot remove them through a read-only connection); the data is untouched.
            extra = {k: v for k, v in after.items() if k not in before}
            assert set(extra) <= {"checkpoints.db-wal", "checkpoints.db-shm"}, args
            assert os.path.getsize(d / "checkpoints.db-wal") == 0 if "checkpoints.db-wal" in extra else True
            after = {k: v for k, v in after.items() if k in before}
        assert after == before, args
    assert sorted(p.name for p in out.iterdir()) == ["b.db", "x.jsonl"]
