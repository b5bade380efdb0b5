"""Issue 38 item 2: a write command opens the database once and runs one event loop: its
plan, its question, its safety copy, the write and VACUUM all on the one store
(agentctl.cli.writes.perform over agentctl.ops), where rewind, prune and edit opened it
two or three times (one asyncio.run per phase). Counted on the real sample, SQLite and
Postgres: every call of agentctl.storage.open_store, and of asyncio.run."""

from __future__ import annotations

import asyncio

import pytest

import agentctl.storage
from tests.support.sampledb import cli, sample_url  # noqa: F401  (fixture)

MAIN = "coder-fix-flaky-test"
BRANCH = "coder-fix-flaky-test-branch-retry-backoff-70e7"

#: each write command, in an order that leaves the next one something to do
WRITES: list[tuple[str, list[str]]] = [
    ("rewind", ["rewind", MAIN + "@10", "--yes", "--no-backup"]),
    ("rewind --hard", ["rewind", MAIN + "@8", "--hard", "--yes", "--no-backup"]),
    ("branch", ["branch", MAIN + "@6", "try-opens"]),
    ("merge", ["merge", BRANCH, "--strategy", "theirs"]),
    ("edit", ["edit", MAIN + "@6", "--set", 'plan=["opened once"]', "--yes"]),
    ("prune --vacuum", ["prune", "loop-research-7", "--keep-last", "20", "--yes", "--no-backup", "--vacuum"]),
    ("threads delete", ["threads", "delete", "support-1042", "--yes", "--no-backup"]),
    ("undo", ["undo"]),
    ("redo", ["redo"]),
    ("purge", ["purge", "--yes", "--no-backup"]),
]


@pytest.fixture
def counted(monkeypatch):
    """{"open": open_store calls, "loop": asyncio.run calls, "readonly": each open's
    readonly} (the real functions run)."""
    counts: dict = {"open": 0, "loop": 0, "readonly": []}
    real_open, real_run = agentctl.storage.open_store, asyncio.run

    def open_store(*args, **kwargs):
        counts["open"] += 1
        counts["readonly"].append(kwargs.get("readonly"))
        return real_open(*args, **kwargs)

    def run(*args, **kwargs):
        counts["loop"] += 1
        return real_run(*args, **kwargs)

    monkeypatch.setattr(agentctl.storage, "open_store", open_store)
    monkeypatch.setattr(asyncio, "run", run)
    return counts


def test_each_write_opens_the_database_once(sample_url, counted):  # noqa: F811
    seen = {}
    for name, args in WRITES:
        counted.update(open=0, loop=0, readonly=[])
        r = cli(sample_url, *args)
        assert r.exit_code == 0, (name, r.stdout, r.stderr)
        seen[name] = (counted["open"], counted["loop"], counted["readonly"])
    assert seen == {name: (1, 1, [False]) for name, _ in WRITES}, seen


def test_a_dry_run_opens_it_once_read_only(sample_url, counted):  # noqa: F811
    for args in (
        ["rewind", MAIN + "@6"],
        ["prune", "--all", "--keep-last", "3"],
        ["merge", BRANCH, "--into", MAIN],
        ["edit", MAIN + "@6", "--set", "plan=[]"],
        ["threads", "delete", MAIN],
        ["purge"],
    ):
        counted.update(open=0, loop=0, readonly=[])
        r = cli(sample_url, *args, "--dry-run")
        assert r.exit_code == 0, (args, r.stderr)
        assert (counted["open"], counted["loop"], counted["readonly"]) == (1, 1, [True]), args


def test_edit_through_the_graph_and_run_open_it_once(tmp_path, counted):
    """The writes the framework does in the user's interpreter (LangGraph's update_state,
    a run): agentctl opens the database once for the plan and the op's record (the child
    opens its own, with the framework's saver). The story's graph (sample_db/story)."""
    from tests.support.sampledb import story_db

    db, config = story_db(tmp_path)
    seen = {}
    for name, args in (
        ("edit", ["edit", "trip@1", "--set", 'plan.next_city="Paris"', "--config", config, "--yes"]),
        ("run", ["run", "trip", "--config", config]),
    ):
        counted.update(open=0, loop=0, readonly=[])
        r = cli(db, *args)
        assert r.exit_code == 0, (name, r.stdout, r.stderr)
        seen[name] = (counted["open"], counted["loop"], counted["readonly"])
    assert seen == {"edit": (1, 1, [False]), "run": (1, 1, [False])}, seen
