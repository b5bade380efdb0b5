"""AgentOS's writes on the journal (issue 20), SQLite and Postgres, databases written by
the engine's own `snapshot` (tests/support/contract_formats.py):

- each write kind (rewind, hard rewind, branch, merge, prune of several threads, threads
  delete, edit, import replacing a row) then `undo` gives the `checkpoints` table back
  row for row (row ids, timestamps), `redo` gives it as after the write, and undo again
  as before; `undo --thread` of a prune restores that thread alone;
- a failure injected at each statement of each write (and of the undo and redo of a
  hard rewind, a rewind and a prune) leaves every table (agentctl's included) as it was;
- the previous release's op log (tests/fixtures/journal/agentos.db) is moved into the
  journal atomically by the first write, lists the same ops, and its ops are undone and
  redone; an op the previous release undid cannot be redone (one line)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from agentctl.errors import OperationError
from agentctl.model import Checkpoint
from agentctl.storage import open_store
from agentctl.storage.contract import PruneSpec
from tests.support.contract_formats import append_agentos, build_agentos, build_once, dump
from tests.support.journal_checks import (
    frame,
    migration_is_atomic,
    old_fixture,
    old_ops_undone_and_redone,
    undo_redo_row_for_row,
    writes_undo_redo_atomic,
)
from tests.support.sampledb import cli_json

WRITES = ("rewind", "rewind_hard", "branch", "merge", "prune", "delete", "edit", "import")
#: the writes whose undo and redo are failed at each statement too: every one
MOVES_FAILED = WRITES


@pytest.fixture(params=["sqlite", "postgres"])
async def ao(request, tmp_path):
    url = str(tmp_path / "ao.db") if request.param == "sqlite" else request.getfixturevalue("pg_dsn")
    built = await build_once(request, "agentos", request.param, url)
    async with open_store(url, readonly=False) as store:
        yield url, built, store


async def ids(store: Any, thread: str) -> list[str]:
    return [m.checkpoint_id for m in await store.read_thread(thread, 100)]


async def prepare(kind: str, url: str, store: Any, h: Any) -> Callable[[], Awaitable[Any]]:
    """The write of `kind`, its preparation (the engine's own snapshots) done."""
    main = await ids(store, "agent-main")
    if kind == "rewind":
        return lambda: h.rewind(main[1])
    if kind == "rewind_hard":
        return lambda: h.rewind(main[1], hard=True)
    if kind == "branch":
        return lambda: h.branch(main[2], "j")
    if kind == "merge":  # a branch of agent-side on which the agent wrote one more step
        branch = await h.branch((await ids(store, "agent-side"))[-1], "m")
        await append_agentos(url, branch, "on the branch")
        return lambda: h.merge_branch(branch, "agent-side")
    if kind == "prune":
        return lambda: h.prune_spec(PruneSpec(threads=["agent-main", "agent-side"], keep_last=1))
    if kind == "delete":
        return lambda: h.delete_thread("agent-one")
    if kind == "edit":
        return lambda: h.edit_state(main[-1], {"k": 7}, "set k")
    assert kind == "import"
    old = await store.get(main[0])
    new = Checkpoint.from_dict({**old.to_dict(), "state": {"k": "replaced"}})
    fresh = Checkpoint.from_dict({**old.to_dict(), "state": {"k": "new"}})
    fresh.metadata.checkpoint_id, fresh.metadata.thread_id = "ckpt-imported-1", "imported"
    return lambda: h.import_checkpoints([new, fresh], on_conflict="replace")


@pytest.mark.parametrize("kind", WRITES)
async def test_write_undo_redo_row_for_row(ao, kind) -> None:
    url, built, store = ao
    h = store.history()
    write = await prepare(kind, url, store, h)
    before = await frame(url)
    await write()
    await undo_redo_row_for_row(
        h, lambda: frame(url), before, {"rewind_hard": "rewind", "delete": "delete_thread"}.get(kind, kind)
    )
    assert "agentctl_oplog" not in await dump(url)  # the previous op log is not made


async def test_undo_of_a_prune_thread_by_thread(ao) -> None:
    url, built, store = ao
    h = store.history()
    before = await frame(url)
    [res] = await h.prune_spec(PruneSpec(threads=["agent-main", "agent-side"], keep_last=1))
    await append_agentos(url, "agent-main", "the agent goes on")
    with pytest.raises(OperationError, match="agent-main changed after it.*--thread THREAD"):
        await h.undo(res.op_id)
    part = await h.undo(res.op_id, ["agent-side"])
    assert "for thread(s) agent-side" in part.summary
    now = await frame(url)
    side = [r for r in now["checkpoints"] if "agent-side" in r]
    assert side == [r for r in before["checkpoints"] if "agent-side" in r]
    with pytest.raises(OperationError, match="changed after it"):
        await h.undo(res.op_id)


async def test_redo_refused_after_the_agent_wrote(ao) -> None:
    url, built, store = ao
    h = store.history()
    await h.rewind((await ids(store, "agent-main"))[1], hard=True)
    await h.undo()
    await append_agentos(url, "agent-main", "the agent goes on")
    state = await dump(url)
    with pytest.raises(OperationError, match="agent-main changed since operation"):
        await h.redo()
    assert await dump(url) == state


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_writes_undo_redo_are_atomic(kind, tmp_path, request) -> None:
    url = str(tmp_path / "ao.db") if kind == "sqlite" else request.getfixturevalue("pg_dsn")
    await build_once(request, "agentos", kind, url)
    async with open_store(url, readonly=False) as store:
        h = store.history()
        await writes_undo_redo_atomic(url, store, lambda k: prepare(k, url, store, h), WRITES, MOVES_FAILED)


# ---- the previous release's op log ----


async def test_migration_is_atomic(tmp_path: Path) -> None:
    """A failure at any statement of the first write (the migration inside it) leaves
    the old op log and trash as they were; then it is moved, its ops listed alike."""
    url = old_fixture(tmp_path, "agentos")

    async def branch(store: Any) -> Callable[[], Awaitable[Any]]:
        ref = (await ids(store, "agent-side"))[0]
        return lambda: store.history().branch(ref, "x")

    await migration_is_atomic(url, branch, lambda t: t.startswith("agentctl_oplog") or t == "agentctl_trash")


async def test_old_ops_undone_and_redone_after_the_migration(tmp_path: Path) -> None:
    url = old_fixture(tmp_path, "agentos")
    ops = {o["op_id"]: o for o in cli_json(url, "oplog")}
    assert ops[3]["kind"] == "branch" and ops[3]["undone"]  # undone by the previous release
    # (op 1, a branch the agent wrote to since, stays refused)
    done = [o for o in sorted(ops) if o > 1 and ops[o]["kind"] != "undo" and not ops[o]["undone"]]
    assert done == [2, 5, 6]
    await old_ops_undone_and_redone(url, lambda: frame(url), 3, done)


@pytest.mark.parametrize("kind", ["rewind", "rewind_hard", "prune", "edit"])
async def test_a_column_another_program_added_comes_back(kind, tmp_path) -> None:
    """A column a foreign tool added to `checkpoints`: its values come back with undo
    (the images hold the table's columns as they are, not the format's list)."""
    import sqlite3

    url = str(tmp_path / "ao.db")
    await build_agentos("sqlite", url)
    conn = sqlite3.connect(url)
    conn.execute("ALTER TABLE checkpoints ADD COLUMN reviewer_note TEXT")
    conn.execute("UPDATE checkpoints SET reviewer_note = 'seen by ' || checkpoint_id")
    conn.commit()
    conn.close()
    async with open_store(url, readonly=False) as store:
        h = store.history()
        write = await prepare(kind, url, store, h)
        before = await frame(url)
        await write()
        await undo_redo_row_for_row(h, lambda: frame(url), before, kind.split("_")[0])
