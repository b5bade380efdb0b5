"""Checks the formats on the journal share (tests/formats/test_journal_<format>.py):
a write undone and redone row for row, and every write, undo and redo failed at each
statement."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from tests.support.contract_formats import asyncpg_connect, dump
from tests.support.fault_injection import fails_cleanly_then_works

Frame = Callable[[], Awaitable[Any]]


async def undo_redo_row_for_row(h: Any, frame: Frame, before: Any, kind: str) -> None:
    """After a write of op kind `kind` (h.last_op_id) that left the tables as `before`
    was: undo gives `before`, redo what the write left, twice over, then undo again."""
    after = await frame()
    assert after != before
    [op] = [o for o in await h.oplog() if o.op_id == h.last_op_id]
    assert op.kind == kind and not op.undone
    for _ in range(2):
        undone = await h.undo()
        assert undone.summary.startswith(f"undid operation {op.op_id} ")
        assert await frame() == before
        redone = await h.redo()
        assert redone.summary.startswith(f"redid operation {op.op_id} ")
        assert await frame() == after
    await h.undo()
    assert await frame() == before


async def writes_undo_redo_atomic(
    url: str,
    store: Any,
    prepare: Callable[[str], Awaitable[Frame]],
    writes: Sequence[str],
    moves_failed: Sequence[str],
) -> None:
    """Each write of `writes` (made by `prepare(kind)`), and the undo and redo of those
    of `moves_failed`, failed at each statement, leaves every table as it was."""
    conn = await asyncpg_connect(url)
    h = store.history()
    try:

        async def state() -> dict:
            return await dump(url, conn=conn)

        for kind in writes:
            write = await prepare(kind)
            assert await fails_cleanly_then_works(store, state, write) > 2, kind
            if kind in moves_failed:
                assert await fails_cleanly_then_works(store, state, h.undo) > 2, kind
                assert await fails_cleanly_then_works(store, state, h.redo) > 2, kind
            await h.undo()
    finally:
        if conn is not None:
            await conn.close()


async def old_ops_undone_and_redone(url: str, frame: Frame, refused: int, done: Sequence[int]) -> None:
    """A database of the previous release: its op `refused` (undone by that release,
    which kept no copy of its rows) cannot be redone (exit 1, one line, nothing written);
    its ops `done` are undone by the CLI newest first (the first undo migrates the old
    log) and redone oldest first, the tables as before each undo."""
    from pathlib import Path

    from tests.support.sampledb import cli, cli_json

    before = Path(url).read_bytes()
    r = cli(url, "redo", str(refused))
    assert r.exit_code == 1 and r.stderr.strip().splitlines() == [
        f"agentctl: operation {refused} was undone by an agentctl release before the journal, which kept no copy "
        "of what it wrote; it cannot be redone"
    ]
    assert Path(url).read_bytes() == before
    states = [await frame()]
    for op in reversed(done):
        cli_json(url, "undo", str(op))
        states.append(await frame())
    for op, state in zip(done, reversed(states[:-1]), strict=False):
        assert cli(url, "redo", str(op)).exit_code == 0
        assert await frame() == state, op
    assert cli(url, "redo", str(refused)).exit_code == 1
    log = {o["op_id"]: o for o in cli_json(url, "oplog")}
    assert all(not log[o]["undone"] for o in done) and log[refused]["undone"]


async def migration_is_atomic(
    url: str, branch: Callable[[Any], Awaitable[Frame]], old: Callable[[str], bool]
) -> None:
    """A failure at any statement of the first write (`branch(store)` makes it; the
    migration runs inside it) leaves the previous op log and trash as they were; then
    it is moved (no table `old` names stays), its ops listed alike."""
    from agentctl.storage import open_store
    from tests.support.sampledb import cli_json

    listed = [(o["op_id"], o["kind"], o["summary"], o["undone"]) for o in cli_json(url, "oplog")]
    async with open_store(url, readonly=False) as store:
        write = await branch(store)
        assert await fails_cleanly_then_works(store, lambda: dump(url), write) > 10
    assert not [t for t in await dump(url) if old(t)]
    after = [(o["op_id"], o["kind"], o["summary"], o["undone"]) for o in cli_json(url, "oplog")]
    assert after[1:] == listed and after[0][1] == "branch" and after[0][0] == listed[0][0] + 1


def old_fixture(tmp_path: Any, name: str) -> str:
    """A copy of tests/fixtures/journal/NAME.db (a database of the release before the journal)."""
    import shutil
    from pathlib import Path

    db = Path(tmp_path) / f"{name}.db"
    shutil.copyfile(Path(__file__).resolve().parent.parent / "fixtures" / "journal" / f"{name}.db", db)
    return str(db)


async def frame(url: str, conn: Any = None) -> dict:
    """Every table but agentctl's, row for row (what undo and redo must give back)."""
    from tests.support.contract_formats import dump

    return await dump(url, side_tables=False, conn=conn)
