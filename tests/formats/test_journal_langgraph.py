"""LangGraph's writes on the journal (issue 20), SQLite and Postgres, databases written by
LangGraph's own savers (tests/support/contract_formats.py):

- each write kind (rewind, hard rewind, branch, merge, prune of several threads, threads
  delete, edit, the record of a run) then `undo` gives LangGraph's tables back row for
  row, `redo` gives them as after the write, and undo again as before;
- a failure injected at each statement of each write (and of the undo and redo of a
  hard rewind, a merge and a prune) leaves every table (agentctl's included) as it was;
- the previous release's op log (tests/fixtures/journal/langgraph.db) is moved into the
  journal atomically by the first write, lists the same ops, and its ops are undone and
  redone; an op the previous release undid cannot be redone (one line)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.checkpoint.sqlite")

from agentctl.errors import OperationError  # noqa: E402
from agentctl.refs import resolve  # noqa: E402
from agentctl.storage import open_store  # noqa: E402
from agentctl.storage.contract import PruneSpec  # noqa: E402
from tests.support.contract_formats import append_langgraph, dump  # noqa: E402
from tests.support.dbcopy import built_case  # noqa: E402
from tests.support.journal_checks import (
    frame,
    migration_is_atomic,
    old_fixture,
    old_ops_undone_and_redone,
    undo_redo_row_for_row,
    writes_undo_redo_atomic,
)  # noqa: E402
from tests.support.sampledb import cli_json  # noqa: E402

WRITES = ("rewind", "rewind_hard", "branch", "merge", "prune", "delete", "edit", "run")
#: the writes whose undo and redo are failed at each statement too: every one
MOVES_FAILED = WRITES


@pytest.fixture(params=["sqlite", "postgres"])
async def lg(request, tmp_path):
    if request.param == "postgres":
        pytest.importorskip("langgraph.checkpoint.postgres")
    url = str(tmp_path / "lg.db") if request.param == "sqlite" else request.getfixturevalue("pg_dsn")
    built = await built_case(request, "langgraph", request.param, url)
    async with open_store(url, readonly=False) as store:
        yield url, built, store


async def cid(store: Any, ref: str) -> str:
    return (await resolve(store, ref)).checkpoint_id


async def prepare(kind: str, url: str, store: Any, h: Any) -> Callable[[], Awaitable[Any]]:
    """The write of `kind`, its preparation (LangGraph's own writes) done."""
    if kind == "rewind":
        ref = await cid(store, "lg-main@1")
        return lambda: h.rewind(ref)
    if kind == "rewind_hard":
        ref = await cid(store, "lg-main@1")
        return lambda: h.rewind(ref, hard=True)
    if kind == "branch":
        ref = await cid(store, "lg-other@1")
        return lambda: h.branch(ref, "j")
    if kind == "merge":  # a branch of lg-side on which LangGraph ran one more turn
        branch = await h.branch(await cid(store, "lg-side"), "m")
        await append_langgraph(url, branch, "on the branch")
        return lambda: h.merge_branch(branch, "lg-side")
    if kind == "prune":
        return lambda: h.prune_spec(PruneSpec(threads=["lg-main", "lg-other"], keep_last=1))
    if kind == "delete":
        return lambda: h.delete_thread("lg-other")
    if kind == "edit":
        ref = await cid(store, "lg-main")
        return lambda: h.edit_state(ref, {"count": 7}, "set count", keys=["count"])
    assert kind == "run"  # what LangGraph wrote, recorded after the fact
    before = await h.run_keys("lg-main")
    await append_langgraph(url, "lg-main", "one more turn")
    return lambda: h.record_run("lg-main", before, "run of the agent", {"agent": "test"})


@pytest.mark.parametrize("kind", WRITES)
async def test_write_undo_redo_row_for_row(lg, kind) -> None:
    url, built, store = lg
    h = store.history()
    ran = await frame(url)  # a run's undo takes back what LangGraph wrote before it was recorded
    write = await prepare(kind, url, store, h)
    before = ran if kind == "run" else await frame(url)
    await write()
    await undo_redo_row_for_row(
        h, lambda: frame(url), before, {"rewind_hard": "rewind", "delete": "delete_thread"}.get(kind, kind)
    )
    assert "agentctl_langgraph_oplog" not in await dump(url)  # the previous op log is not made


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_writes_undo_redo_are_atomic(kind, tmp_path, request) -> None:
    if kind == "postgres":
        pytest.importorskip("langgraph.checkpoint.postgres")
    url = str(tmp_path / "lg.db") if kind == "sqlite" else request.getfixturevalue("pg_dsn")
    await built_case(request, "langgraph", kind, url)
    async with open_store(url, readonly=False) as store:
        h = store.history()
        await writes_undo_redo_atomic(url, store, lambda k: prepare(k, url, store, h), WRITES, MOVES_FAILED)


async def test_redo_refused_after_langgraph_wrote(lg) -> None:
    url, built, store = lg
    h = store.history()
    await h.rewind(await cid(store, "lg-main@1"), hard=True)
    await h.undo()
    await append_langgraph(url, "lg-main", "the agent goes on")
    state = await dump(url)
    with pytest.raises(OperationError, match="lg-main changed since operation"):
        await h.redo()
    assert await dump(url) == state


# ---- the previous release's op log ----


async def test_migration_is_atomic(tmp_path: Path) -> None:
    """A failure at any statement of the first write (the migration inside it) leaves
    the old op log and trash as they were; then it is moved, its ops listed alike."""
    url = old_fixture(tmp_path, "langgraph")

    async def branch(store: Any) -> Callable[[], Awaitable[Any]]:
        ref = await cid(store, "lg-other@1")
        return lambda: store.history().branch(ref, "x")

    await migration_is_atomic(url, branch, lambda t: t.startswith("agentctl_langgraph"))


async def test_old_ops_undone_and_redone_after_the_migration(tmp_path: Path) -> None:
    url = old_fixture(tmp_path, "langgraph")
    ops = {o["op_id"]: o for o in cli_json(url, "oplog")}
    assert ops[3]["kind"] == "rewind" and ops[3]["undone"]  # undone by the previous release
    done = [o for o in sorted(ops) if ops[o]["kind"] != "undo" and not ops[o]["undone"]]
    assert done == [1, 2, 5, 6]
    await old_ops_undone_and_redone(url, lambda: frame(url), 3, done)
