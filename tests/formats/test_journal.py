"""The journal (agentctl/storage/journal/), SQLite and Postgres.

Trash tables (trash.py): rows set aside and put back are the same rows, value for value
and type for type (BLOBs, JSON/JSONB, timestamps with microseconds, NULLs, floats); the
trash table is created in the write's transaction (a rolled-back write leaves none), and
`free` drops an op's rows.

The op log (ops.py): a write recorded as row changes (a delete, an update, an insert) then
undone gives every table but agentctl's back row for row; redo gives the tables as after
the write; a failure injected at each statement of the write, the undo and the redo
leaves the database as it was."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agentctl.backends import make_backend
from agentctl.errors import NotFoundError, OperationError, UsageError
from agentctl.storage.journal import ops, trash
from agentctl.storage.journal.history import JournalHistory
from tests.support.contract_formats import dump
from tests.support.fault_injection import fails_cleanly_then_works

SQLITE_DDL = (
    "CREATE TABLE items (id INTEGER PRIMARY KEY, body TEXT NOT NULL, raw BLOB, score REAL, "
    "n NUMERIC, at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)"
)
PG_DDL = (
    "CREATE TABLE items (id bigint PRIMARY KEY, body text NOT NULL, raw bytea, score double precision, "
    "n numeric, at timestamptz DEFAULT now(), doc jsonb)"
)


class Boom(RuntimeError):
    pass


@pytest.fixture(params=["sqlite", "postgres"])
async def backend(request, tmp_path):
    url = str(tmp_path / "t.db") if request.param == "sqlite" else request.getfixturevalue("pg_dsn")
    b = make_backend(url, readonly=False, create=True)
    await b.connect()
    async with b.transaction() as tx:
        if tx.kind == "postgres":
            await tx.execute(PG_DDL)
            await tx.execute(
                "INSERT INTO items VALUES (1, 'a', '\\x00ff'::bytea, 0.1, 1.50, "
                "'2026-01-02 03:04:05.123456+00', '{\"k\": [1, \"ü\"]}'), "
                "(2, 'b', NULL, NULL, NULL, NULL, NULL), (3, 'c', '', 1e300, 7, now(), 'null')"
            )
        else:
            await tx.execute(SQLITE_DDL)
            await tx.execute(
                "INSERT INTO items VALUES (1, 'a', x'00ff', 0.1, 1.50, '2026-01-02 03:04:05.123456'), "
                "(2, 'b', NULL, NULL, NULL, NULL), (3, '{\"k\": \"ü\"}', x'', 1e300, '7', 'x')"
            )
    try:
        yield b, url
    finally:
        await b.close()


async def test_set_aside_and_move_back_exact(backend) -> None:
    b, url = backend
    before = await dump(url)
    async with b.transaction() as tx:
        assert await trash.set_aside(tx, 7, "items", "id IN (?, ?)", (1, 3)) == 2
        await tx.execute("DELETE FROM items WHERE id IN (?, ?)", 1, 3)
    mid = await dump(url)
    assert len(mid["items"]) == 1 and len(mid["agentctl_trash_items"]) == 2
    async with b.transaction() as tx:
        await trash.move(tx, 7, [("items", ["id"], None)], "before")
    after = await dump(url)
    assert after.pop("agentctl_trash_items") == mid["agentctl_trash_items"]  # the images stay
    assert after == before
    # type for type, not only as text
    rows_before = await b.query("SELECT * FROM items ORDER BY id")
    types = (
        "SELECT typeof(raw) AS a, typeof(score) AS b, typeof(n) AS c, typeof(at) AS d FROM items ORDER BY id"
        if b.kind == "sqlite"
        else "SELECT 1 AS a"
    )
    types_before = await b.query(types)
    async with b.transaction() as tx:
        await trash.set_aside(tx, 8, "items", "1 = 1")
        await tx.execute("DELETE FROM items")
        await trash.move(tx, 8, [("items", ["id"], None)], "before")
    assert await b.query("SELECT * FROM items ORDER BY id") == rows_before
    assert await b.query(types) == types_before


@pytest.mark.parametrize("on_thread", [True, False], ids=["one-call", "per-statement"])
async def test_delete_each_deletes_chunk_by_chunk_like_delete(backend, on_thread, monkeypatch) -> None:
    """`Op.delete_each` (a prune's chunks handed over at once; SQLite runs them in one call
    on its connection's thread, or one by one on an aiosqlite without that): the rows of
    every chunk deleted with their before-images, as `delete` of each; a failing chunk
    fails the whole write, nothing written."""
    import agentctl.storage.sql.sqlite as sqlite_backend

    b, url = backend
    if not on_thread:
        monkeypatch.setattr(sqlite_backend, "_thread_runner", lambda conn: None)
    before = await dump(url)
    bad = "CAST(? AS jsonb) IS NULL" if b.kind == "postgres" else "json(?) IS NULL"
    with pytest.raises(Exception, match="(?i)json"):
        async with b.transaction() as tx:
            op = await ops.begin(tx, "delete", "delete", ["t"], {}, NOW)
            await op.delete_each("items", ["id"], f"id = ? OR {bad}", [[1, "1"], [2, "{"]])
    assert await dump(url) == before
    async with b.transaction() as tx:
        op = await ops.begin(tx, "delete", "delete", ["t"], {}, NOW)
        assert await op.delete_each("items", ["id"], "id IN (?, ?)", [[1, 9], [3, 2]]) == 3
        await op.finish()
    assert await b.query("SELECT id FROM items") == []
    assert sorted(r["id"] for r in await b.query("SELECT id FROM agentctl_trash_items")) == [1, 2, 3]
    async with b.transaction() as tx:
        await trash.move(tx, op.op_id, [("items", ["id"], None)], "before")
    after = await dump(url, side_tables=False)
    assert after == {k: v for k, v in before.items() if not k.startswith("agentctl_")}


async def test_trash_table_made_inside_the_write(backend) -> None:
    b, url = backend
    before = await dump(url)
    with pytest.raises(Boom):
        async with b.transaction() as tx:
            await trash.set_aside(tx, 1, "items", "id = ?", (2,))
            raise Boom()
    assert await dump(url) == before  # no trash table, no row


async def test_trash_is_indexed_by_op_and_an_older_trash_gets_the_index(backend) -> None:
    """An undo, redo or purge reads one op's images through the trash's index by op id;
    a trash made without it (an earlier release) is given it by the next write."""
    b, url = backend
    indexes = (
        "SELECT name FROM pragma_index_list('agentctl_trash_items')"
        if b.kind == "sqlite"
        else "SELECT indexname AS name FROM pg_indexes WHERE tablename = 'agentctl_trash_items'"
    )
    async with b.transaction() as tx:
        await trash.set_aside(tx, 1, "items", "id = ?", (2,))
    assert [r["name"] for r in await b.query(indexes)] == ["agentctl_trash_items_op"]
    async with b.transaction() as tx:
        await tx.execute('DROP INDEX "agentctl_trash_items_op"')
    assert not await b.query(indexes)
    async with b.transaction() as tx:
        await trash.set_aside(tx, 2, "items", "id = ?", (3,))
    assert [r["name"] for r in await b.query(indexes)] == ["agentctl_trash_items_op"]


async def test_free(backend) -> None:
    b, url = backend
    async with b.transaction() as tx:
        await trash.set_aside(tx, 1, "items", "id = ?", (1,))
        await trash.set_aside(tx, 2, "items", "id = ?", (2,))
        assert await trash.free(tx, "items", [1]) == 1
        assert await trash.free(tx, "items", []) == 0
    rows = await b.query("SELECT agentctl_op_id AS op FROM agentctl_trash_items")
    assert [r["op"] for r in rows] == [2]


# ---- the op log ----

NOW = "2026-11-27T00:00:00+00:00"


async def frame(url: str) -> dict:
    return await dump(url, side_tables=False)


async def write(b: Any) -> int:
    async with b.transaction() as tx:
        op = await ops.begin(tx, "test", "delete 1, update 2, insert 9", ["t"], {"n": 1}, NOW)
        await op.delete("items", ("id",), "id = ?", (1,))
        await op.update("items", ("id",), "id = ?", (2,), "body = ?, score = ?", ("B", 2.5))
        await tx.execute("INSERT INTO items (id, body) VALUES (9, 'nine')")
        await op.inserted("items", ("id",), "id = ?", (9,))
        return await op.finish({"t": "fp"})


async def atomic(url: str, b: Any, run: Callable[[], Awaitable[Any]]) -> None:
    assert await fails_cleanly_then_works(b, lambda: dump(url), run) > 2


async def test_write_undo_redo_row_for_row(backend) -> None:
    b, url = backend
    before = await frame(url)
    op_id = await write(b)
    after = await frame(url)
    assert after != before
    await round_trips(url, b, op_id, before, after)
    async with b.transaction() as tx:
        rec = await ops.record(tx, op_id)
    assert rec["kind"] == "test" and rec["threads"] == ["t"] and rec["fingerprints"] == {"t": "fp"}
    assert rec["tables"] == {"items": ["id"]} and rec["undone"] == 0


async def test_find_an_op(backend) -> None:
    """ops.find: the op, or None for an unknown id and before any journal (made by nothing)."""
    b, url = backend
    async with b.transaction() as tx:
        assert await ops.find(tx, 1) is None
    assert "agentctl_journal" not in await dump(url)
    op_id = await write(b)
    async with b.transaction() as tx:
        assert await ops.find(tx, op_id) == await ops.record(tx, op_id)
        assert await ops.find(tx, op_id + 1) is None


async def test_write_undo_redo_are_atomic(backend) -> None:
    b, url = backend
    await atomic(url, b, lambda: write(b))
    op_id = (await b.query("SELECT max(op_id) AS m FROM agentctl_journal"))[0]["m"]
    await moves_atomic(url, b, op_id)


async def _moved(b: Any, op_id: int, move: Any) -> None:
    async with b.transaction() as tx:
        await move(tx, op_id)


async def moves_atomic(url: str, b: Any, op_id: int) -> None:
    """The op's undo, then its redo, each failed at every statement, then done."""
    await atomic(url, b, lambda: _moved(b, op_id, ops.undo))
    await atomic(url, b, lambda: _moved(b, op_id, ops.redo))


async def round_trips(url: str, b: Any, op_id: int, before: dict, after: dict) -> None:
    """Undo gives `before`, redo `after`, again and again."""
    for _ in range(2):
        await _moved(b, op_id, ops.undo)
        assert await frame(url) == before
        await _moved(b, op_id, ops.redo)
        assert await frame(url) == after


async def _print(tx: Any, thread: str) -> Any:
    """The test's fingerprint of its one thread: every row of items."""
    return [list(map(str, r.values())) for r in await tx.fetch("SELECT * FROM items ORDER BY id")]


async def _refused(b: Any, url: str, move: Any, op_id: int) -> None:
    state = await dump(url)
    with pytest.raises(OperationError, match="changed since operation"):
        async with b.transaction() as tx:
            await move(tx, op_id, _print)
    assert await dump(url) == state


async def test_undo_and_redo_refused_when_changed_since(backend) -> None:
    b, url = backend
    async with b.transaction() as tx:
        op = await ops.begin(tx, "test", "delete 1", ["t"], {}, NOW)
        await op.delete("items", ("id",), "id = ?", (1,))
        op_id = await op.finish({"t": await _print(tx, "t")})
    async with b.transaction() as tx:
        await tx.execute("UPDATE items SET body = 'changed' WHERE id = 2")
    await _refused(b, url, ops.undo, op_id)
    async with b.transaction() as tx:
        await tx.execute("UPDATE items SET body = 'b' WHERE id = 2")
        await ops.undo(tx, op_id, _print)
    with pytest.raises(OperationError, match="already undone"):
        async with b.transaction() as tx:
            await ops.undo(tx, op_id, _print)
    async with b.transaction() as tx:
        await tx.execute("INSERT INTO items (id, body) VALUES (5, 'new')")
    await _refused(b, url, ops.redo, op_id)
    async with b.transaction() as tx:
        await tx.execute("DELETE FROM items WHERE id = 5")
        await ops.redo(tx, op_id, _print)
    assert [r["id"] for r in await b.query("SELECT id FROM items ORDER BY id")] == [2, 3]


async def write_nothing(b: Any) -> int:
    async with b.transaction() as tx:
        return await (await ops.begin(tx, "test", "no change", [], {}, NOW)).finish()


async def test_purge_frees_the_trash(backend) -> None:
    b, url = backend
    assert await ops.listing(b) == []
    async with b.transaction() as tx:
        assert await ops.purge(tx) == ([], 0)  # no journal yet: nothing made
    assert "agentctl_journal" not in await dump(url)
    op_id = await write(b)
    second = await write_nothing(b)
    assert [r["op_id"] for r in await ops.listing(b)] == [second, op_id]
    assert [r["op_id"] for r in await ops.listing(b, limit=1)] == [second]
    async with b.transaction() as tx:
        # the ops that held images (1 deleted, 1 updated x2, 1 inserted); the second held none
        assert await ops.purge(tx, dry_run=True) == ([op_id], 4)
    state = await dump(url)
    async with b.transaction() as tx:
        assert await ops.purge(tx) == ([op_id], 4)
    after = await dump(url)
    assert after["agentctl_trash_items"] == [] and after["items"] == state["items"]
    with pytest.raises(OperationError, match="purged"):
        async with b.transaction() as tx:
            await ops.undo(tx, op_id)
    async with b.transaction() as tx:
        assert await ops.purge(tx) == ([], 0)


# ---- the History methods shared by the formats on the journal (history.py) ----


class _Format:
    name = "journal-test"


class _Store:
    """The store side the mixin reaches: `connect`, `connection`, `format`."""

    format = _Format()

    def __init__(self, b: Any) -> None:
        self.connection = b

    async def connect(self) -> None:
        await self.connection.connect()


class ItemsHistory(JournalHistory):
    """A format of one thread "t" over the test's `items` table."""

    def __init__(self, b: Any, migrate: Callable[[Any], Awaitable[None]] | None = None) -> None:
        self.store = _Store(b)
        self._now = lambda: NOW
        self._migrate = migrate

    async def fingerprint(self, tx: Any, thread: str) -> Any:
        return await _print(tx, thread)

    async def migrate(self, tx: Any) -> None:
        if self._migrate is not None:
            await self._migrate(tx)

    def undo_result(self, record: dict, image: str) -> dict:
        return {"created": [image]}

    async def delete(self, item: int) -> int:
        async with self.journal_tx(["t"]) as tx:
            op = await self.journal_begin(tx, "delete", f"delete item {item}", ["t"], {"item": item})
            await op.delete("items", ("id",), "id = ?", (item,))
            return await self.journal_finish(op)


async def test_history_undo_redo_oplog_purge(backend) -> None:
    b, url = backend
    h = ItemsHistory(b)
    before = await frame(url)
    assert await h.oplog() == [] and "agentctl_journal" not in await dump(url)
    with pytest.raises(OperationError, match="nothing to undo"):
        await h.undo()
    with pytest.raises(OperationError, match="nothing to redo"):
        await h.redo()
    op_id = await h.delete(1)
    assert h.last_op_id == op_id
    after = await frame(url)
    [rec] = await h.oplog()
    assert (rec.op_id, rec.kind, rec.summary, rec.threads, rec.undone, rec.purgeable_rows) == (
        op_id,
        "delete",
        "delete item 1",
        ["t"],
        False,
        1,
    )
    with pytest.raises(OperationError, match="not undone"):
        await h.redo(op_id)
    with pytest.raises(UsageError, match="undone whole"):
        await h.undo(threads=["t"])
    undone = await h.undo()
    assert undone.summary == f"undid operation {op_id} (delete item 1)" and undone.created == ["before"]
    assert await frame(url) == before
    log = await h.oplog()
    assert [(r.kind, r.undo_of, r.undone, r.undone_by) for r in log] == [
        ("undo", op_id, False, None),
        ("delete", None, True, undone.op_id),
    ]
    with pytest.raises(OperationError, match="is an undo"):
        await h.undo(undone.op_id)
    with pytest.raises(NotFoundError):
        await h.undo(999)
    state = await dump(url)
    planned = await h.redo(dry_run=True)
    assert planned.op_id is None and planned.summary == f"redo operation {op_id} (delete item 1)"
    assert await dump(url) == state
    redone = await h.redo()
    assert redone.summary == f"redid operation {op_id} (delete item 1)" and await frame(url) == after
    assert (await h.oplog())[0].kind == "redo"
    # the redo, undone, is the op undone again (as the CLI's "undo: agentctl undo N" says)
    assert (await h.undo(redone.op_id)).summary == f"undid operation {op_id} (delete item 1)"
    assert await frame(url) == before
    with pytest.raises(OperationError, match=f"is a redo .*redo operation {op_id} instead"):
        await h.redo(redone.op_id)
    await h.redo()
    # the thread written to since the op: both directions refused, nothing changed
    async with b.transaction() as tx:
        await tx.execute("UPDATE items SET body = 'changed' WHERE id = 2")
    state = await dump(url)
    with pytest.raises(OperationError, match="changed since"):
        await h.undo()
    assert await dump(url) == state
    async with b.transaction() as tx:
        await tx.execute("UPDATE items SET body = 'b' WHERE id = 2")
    planned = await h.purge(dry_run=True)
    assert (planned.ops, planned.rows) == ([op_id], 1)
    freed = await h.purge()
    assert freed.rows == 1 and op_id in freed.ops and not (await h.purge(dry_run=True)).ops
    with pytest.raises(OperationError, match="purged"):
        await h.undo(op_id)


async def test_history_migrates_inside_the_write(backend) -> None:
    """The previous op log is migrated in the write's own transaction: a write that
    fails leaves it as it was; one that succeeds finds it adopted under its op id."""
    b, url = backend

    async def migrate(tx: Any) -> None:
        if await tx.table_exists("agentctl_old_oplog"):
            for r in await tx.fetch("SELECT op_id, summary FROM agentctl_old_oplog"):
                await ops.adopt(
                    tx,
                    {
                        "op_id": r["op_id"],
                        "created_at": NOW,
                        "kind": "old",
                        "summary": r["summary"],
                        "threads": ["t"],
                    },
                )
            await tx.execute("DROP TABLE agentctl_old_oplog")

    async with b.transaction() as tx:
        await tx.execute("CREATE TABLE agentctl_old_oplog (op_id INTEGER PRIMARY KEY, summary TEXT)")
        await tx.execute("INSERT INTO agentctl_old_oplog VALUES (41, 'old op')")
    h = ItemsHistory(b, migrate)
    state = await dump(url)
    with pytest.raises(Boom):
        async with h.journal_tx(["t"]) as tx:
            await h.journal_begin(tx, "delete", "x", ["t"])
            raise Boom()
    assert await dump(url) == state
    op_id = await h.delete(1)
    assert op_id == 42  # after the adopted op's id
    assert [(r.op_id, r.kind) for r in await h.oplog()] == [(42, "delete"), (41, "old")]


async def test_moves_keep_foreign_keys(backend) -> None:
    """A parent row the op updated is put back in place, not deleted and inserted (its
    children, ON DELETE CASCADE, stay); a parent the op inserted comes before and goes
    after the children the op moved onto it (as a rewind moves items to a new archive
    session and touches the session's row)."""
    b, url = backend
    async with b.transaction() as tx:
        await tx.execute("CREATE TABLE parents (id TEXT PRIMARY KEY, at TEXT)")
        await tx.execute(
            "CREATE TABLE children (id INTEGER PRIMARY KEY, pid TEXT NOT NULL "
            "REFERENCES parents (id) ON DELETE CASCADE)"
        )
        await tx.execute("INSERT INTO parents VALUES ('p', 'then')")
        await tx.execute("INSERT INTO children VALUES (1, 'p'), (2, 'p'), (3, 'p')")
    before = await frame(url)
    async with b.transaction() as tx:
        op = await ops.begin(tx, "test", "move 2, 3 to q", ["p", "q"], {}, NOW)
        await op.update("parents", ("id",), "id = ?", ("p",), "at = ?", ("now",))
        await tx.execute("INSERT INTO parents VALUES ('q', 'new')")
        await op.inserted("parents", ("id",), "id = ?", ("q",))
        await op.update("children", ("id",), "id > ?", (1,), "pid = ?", ("q",))
        op_id = await op.finish()
    after = await frame(url)
    await round_trips(url, b, op_id, before, after)


async def test_in_place_keeps_the_rows_that_cascade_from_it(backend) -> None:
    """An updated parent row is put back by an UPDATE, not deleted and inserted again:
    on Postgres the children it does not know of (ON DELETE CASCADE) stay; a parent the
    op inserted goes on undo and comes back on redo."""
    b, url = backend
    ts = "timestamptz" if b.kind == "postgres" else "TIMESTAMP"
    async with b.transaction() as tx:
        await tx.execute(
            f"CREATE TABLE parents (a TEXT, b TEXT, state TEXT NOT NULL, at {ts}, PRIMARY KEY (a, b))"
        )
        await tx.execute(
            "CREATE TABLE kids (id TEXT, a TEXT, b TEXT, PRIMARY KEY (id), FOREIGN KEY (a, b) "
            "REFERENCES parents (a, b) ON DELETE CASCADE)"
        )
        await tx.execute("INSERT INTO parents VALUES ('x', '1', '{}', '2026-01-02 03:04:05.123456')")
        await tx.execute("INSERT INTO kids VALUES ('k1', 'x', '1'), ('k2', 'x', '1')")
    before = await frame(url)
    async with b.transaction() as tx:
        op = await ops.begin(tx, "test", "update x/1, insert y/2 and a kid", ["t"], {}, NOW)
        await op.update(
            "parents", ("a", "b"), "a = ? AND b = ?", ("x", "1"), "state = ?, at = NULL", ('{"n": 1}',)
        )
        await tx.execute("INSERT INTO parents VALUES ('y', '2', '{}', NULL)")
        await op.inserted("parents", ("a", "b"), "a = ?", ("y",))
        await tx.execute("INSERT INTO kids VALUES ('k3', 'x', '1'), ('k4', 'y', '2')")
        await op.inserted("kids", ("id",), "id IN (?, ?)", ("k3", "k4"))
        op_id = await op.finish()
    after = await frame(url)
    await round_trips(url, b, op_id, before, after)
    async with b.transaction() as tx:
        assert (await ops.record(tx, op_id))["tables"] == {"parents": ["a", "b"], "kids": ["id"]}
    await atomic(url, b, lambda: _moved(b, op_id, ops.undo))


# ---- moves: tables that refer to each other ----


async def _parent_child(b: Any) -> None:
    async with b.transaction() as tx:
        await tx.execute("CREATE TABLE parents (id TEXT PRIMARY KEY, n INTEGER, at TEXT)")
        await tx.execute(
            "CREATE TABLE kids (id INTEGER PRIMARY KEY, parent TEXT NOT NULL REFERENCES parents(id), "
            "body TEXT)"
        )
        await tx.execute("INSERT INTO parents VALUES ('p', 2, 't0'), ('q', 0, 't0')")
        await tx.execute("INSERT INTO kids VALUES (1, 'p', 'a'), (2, 'p', 'b')")


async def in_place_write(b: Any) -> int:
    """Moves kid 2 to a new parent 'r', updates 'p' (kept referred to by kid 1), deletes
    'q', inserts kid 3: parents first in the op's tables."""
    async with b.transaction() as tx:
        op = await ops.begin(tx, "test", "parents and kids", ["t"], {}, NOW)
        await tx.execute("INSERT INTO parents VALUES ('r', 1, 't1')")
        await op.inserted("parents", ("id",), "id = ?", ("r",))
        await op.update("kids", ("id",), "id = ?", (2,), "parent = ?", ("r",))
        await tx.execute("INSERT INTO kids VALUES (3, 'p', 'c')")
        await op.inserted("kids", ("id",), "id = ?", (3,))
        await op.update("parents", ("id",), "id = ?", ("p",), "n = ?, at = ?", (2, "t1"))
        await op.delete("parents", ("id",), "id = ?", ("q",))
        return await op.finish({})


async def test_in_place_moves_keep_foreign_keys(backend) -> None:
    """Undo and redo: a row referred to by rows the op did not touch is updated back,
    never deleted and inserted again (Postgres checks the foreign key at each
    statement); row for row both ways, atomic."""
    b, url = backend
    await _parent_child(b)
    before = await frame(url)
    op_id = await in_place_write(b)
    after = await frame(url)
    await round_trips(url, b, op_id, before, after)
    await moves_atomic(url, b, op_id)


async def test_history_journal_move_is_the_formats_hook(backend) -> None:
    """A format extends `journal_move` (checks first, keeps its own index in step): what
    it raises refuses the undo with nothing changed; calling the journal's move undoes."""
    b, url = backend
    seen: list[str] = []

    class Checked(ItemsHistory):
        refuse = True

        async def journal_move(self, tx: Any, record: dict, image: str, threads: Any = None) -> dict:
            seen.append(image)
            if self.refuse:
                raise OperationError("the format refuses")
            return await super().journal_move(tx, record, image, threads)

    h = Checked(b)
    before = await frame(url)
    await h.delete(1)
    state = await dump(url)
    with pytest.raises(OperationError, match="the format refuses"):
        await h.undo()
    assert await dump(url) == state
    h.refuse = False
    await h.undo()
    assert await frame(url) == before and seen == ["before", "before"]


# ---- undo thread by thread (a prune of several threads) ----


async def _pieces(b: Any) -> None:
    async with b.transaction() as tx:
        await tx.execute(
            "CREATE TABLE pieces (thread text NOT NULL, n integer NOT NULL, body text, "
            "PRIMARY KEY (thread, n))"
        )
        for t in ("a", "b", "c"):
            for n in range(3):
                await tx.execute("INSERT INTO pieces VALUES (?, ?, ?)", t, n, f"{t}{n}")


async def _print_of(tx: Any, thread: str) -> Any:
    return [
        [r["n"], r["body"]]
        for r in await tx.fetch("SELECT n, body FROM pieces WHERE thread = ? ORDER BY n", thread)
    ]


async def test_undo_thread_by_thread(backend) -> None:
    b, url = backend
    await _pieces(b)
    before = await frame(url)
    async with b.transaction() as tx:  # a "prune" of three threads
        op = await ops.begin(tx, "prune", "prune a, b, c", ["a", "b", "c"], {}, NOW)
        await op.delete("pieces", ("thread", "n"), "n < ?", (2,), thread="thread")
        op_id = await op.finish({t: await _print_of(tx, t) for t in "abc"})
    after = await frame(url)
    async with b.transaction() as tx:  # the framework writes to b
        await tx.execute("INSERT INTO pieces VALUES ('b', 9, 'new')")
    moved = await frame(url)
    with pytest.raises(
        OperationError, match=r"b changed since .*undo \d+ --thread THREAD.* 2 that did not: a, c"
    ):
        async with b.transaction() as tx:
            await ops.undo(tx, op_id, _print_of)
    assert await frame(url) == moved
    for bad, match in ((["b"], "b changed since"), (["zz"], "no thread 'zz'")):
        with pytest.raises(OperationError, match=match):
            async with b.transaction() as tx:
                await ops.undo(tx, op_id, _print_of, bad)
    async with b.transaction() as tx:
        r = await ops.undo(tx, op_id, _print_of, ["a"])
        assert (r["moved"], r["done"], r["left"]) == (["a"], False, ["b", "c"])
        rec = await ops.record(tx, op_id)
    assert not rec["undone"] and rec["details"]["restored"] == ["a"]
    rows = (await frame(url))["pieces"]
    assert [x for x in rows if "'a'" in x] == [x for x in before["pieces"] if "'a'" in x]
    assert [x for x in rows if "'c'" in x] == [x for x in after["pieces"] if "'c'" in x]
    with pytest.raises(OperationError, match="no thread 'a' left"):
        async with b.transaction() as tx:
            await ops.undo(tx, op_id, _print_of, ["a"])
    with pytest.raises(OperationError, match="b changed since"):  # the rest: b still moved
        async with b.transaction() as tx:
            await ops.undo(tx, op_id, _print_of)
    async with b.transaction() as tx:
        await tx.execute("DELETE FROM pieces WHERE thread = 'b' AND n = 9")
        await tx.execute("UPDATE pieces SET body = 'a changed' WHERE thread = 'a' AND n = 0")
        r = await ops.undo(tx, op_id, _print_of)  # the rest (a, changed since its undo, is not checked)
        assert (r["moved"], r["done"]) == (["b", "c"], True)
        await tx.execute("UPDATE pieces SET body = 'a0' WHERE thread = 'a' AND n = 0")
    assert await frame(url) == before
    async with b.transaction() as tx:
        rec = await ops.record(tx, op_id)
        assert rec["undone"] and "restored" not in rec["details"]
        await ops.redo(tx, op_id, _print_of)
    assert await frame(url) == after
    async with b.transaction() as tx:  # and whole again
        await ops.undo(tx, op_id, _print_of)
    assert await frame(url) == before
    # an op whose tables have no thread column is undone whole
    async with b.transaction() as tx:
        op = await ops.begin(tx, "test", "delete 1", ["a", "b"], {}, NOW)
        await op.delete("items", ("id",), "id = ?", (1,))
        other = await op.finish()
    with pytest.raises(OperationError, match="cannot be undone thread by thread"):
        async with b.transaction() as tx:
            await ops.undo(tx, other, None, ["a"])


async def test_undo_thread_by_thread_is_atomic(backend) -> None:
    b, url = backend
    await _pieces(b)
    async with b.transaction() as tx:
        op = await ops.begin(tx, "prune", "prune a, b", ["a", "b"], {}, NOW)
        await op.delete("pieces", ("thread", "n"), "n < ?", (2,), thread="thread")
        op_id = await op.finish({t: await _print_of(tx, t) for t in "ab"})

    async def undo_a() -> None:
        async with b.transaction() as tx:
            await ops.undo(tx, op_id, _print_of, ["a"])

    await atomic(url, b, undo_a)


async def test_undo_and_redo_wait_for_the_threads_lock(pg_dsn) -> None:
    """Postgres: undo and redo take the op's threads' lock, as every agentctl write does:
    while another agentctl write holds a thread's lock, they wait for it."""
    import asyncio

    import asyncpg

    from agentctl.storage.agentos.postgres import THREAD_LOCK

    b = make_backend(pg_dsn, readonly=False, create=True)
    await b.connect()
    try:
        async with b.transaction() as tx:
            await tx.execute(PG_DDL)
            await tx.execute("INSERT INTO items (id, body) VALUES (1, 'a'), (2, 'b')")
        h = ItemsHistory(b)
        await h.delete(1)
        for move in (h.undo, h.redo):
            holder = await asyncpg.connect(pg_dsn)
            try:
                async with holder.transaction():
                    await holder.execute(THREAD_LOCK.replace("?", "$1"), "t")
                    task = asyncio.ensure_future(move())
                    await asyncio.sleep(0.5)
                    assert not task.done()
                await asyncio.wait_for(task, 10)
            finally:
                await holder.close()
        assert [r["id"] for r in await b.query("SELECT id FROM items ORDER BY id")] == [2]
    finally:
        await b.close()


async def test_two_first_writes_at_once_make_the_side_tables_once(pg_dsn) -> None:
    """Postgres: two agentctl writers whose first writes on a database run at the same
    time (no journal, trash or index yet) do not collide making them: the second waits
    for the first's commit, finds them made, and both ops are recorded."""
    import asyncio

    b1 = make_backend(pg_dsn, readonly=False, create=True)
    b2 = make_backend(pg_dsn, readonly=False, create=True)
    await b1.connect()
    await b2.connect()
    try:
        async with b1.transaction() as tx:
            await tx.execute(PG_DDL)
            await tx.execute("INSERT INTO items (id, body) VALUES (1, 'a'), (2, 'b'), (3, 'c')")

        async def second() -> int:
            async with b2.transaction() as tx2:
                op2 = await ops.begin(tx2, "delete", "delete 2", ["t"], {}, "2026-01-01")
                await op2.delete("items", ["id"], "id = ?", [2])
                return await op2.finish()

        async with b1.transaction() as tx1:
            op1 = await ops.begin(tx1, "delete", "delete 1", ["t"], {}, "2026-01-01")
            await op1.delete("items", ["id"], "id = ?", [1])
            task = asyncio.ensure_future(second())
            await asyncio.sleep(0.5)
            assert not task.done()  # waiting for the first writer's side tables
            await op1.finish()
        assert await asyncio.wait_for(task, 10) != op1.op_id
        assert [r["id"] for r in await b1.query("SELECT id FROM items")] == [3]
        assert sorted(r["id"] for r in await b1.query("SELECT id FROM agentctl_trash_items")) == [1, 2]
        assert len(await b1.query(f"SELECT op_id FROM {ops.LOG}")) == 2
        assert [
            r["n"]
            for r in await b1.query(
                "SELECT indexname AS n FROM pg_indexes WHERE tablename = 'agentctl_trash_items'"
            )
        ] == ["agentctl_trash_items_op"]
    finally:
        await b1.close()
        await b2.close()


async def test_undo_and_redo_refused_when_a_row_the_op_holds_changed(backend) -> None:
    """Whatever the format's fingerprint sees: a row the op changed that someone changed
    since (or deleted, or a row standing again at a key the op deleted) stops undo and
    redo with one line naming it, nothing changed; once it is back as the op left it,
    they go on."""
    b, url = backend
    h = ItemsHistory(b)

    async def blind(tx: Any, thread: str) -> Any:  # a fingerprint that sees nothing
        return "same"

    h.fingerprint = blind  # type: ignore[method-assign]
    async with h.journal_tx(["t"]) as tx:
        op = await h.journal_begin(tx, "test", "update 2, delete 3", ["t"])
        await op.update("items", ("id",), "id = ?", (2,), "body = ?", ("B",))
        await op.delete("items", ("id",), "id = ?", (3,))
        op_id = await h.journal_finish(op)
    for change, undo_back in (
        ("UPDATE items SET body = 'other' WHERE id = 2", "UPDATE items SET body = 'B' WHERE id = 2"),
        ("INSERT INTO items (id, body) VALUES (3, 'again')", "DELETE FROM items WHERE id = 3"),
        ("DELETE FROM items WHERE id = 2", "INSERT INTO items (id, body, at) VALUES (2, 'B', NULL)"),
    ):
        async with b.transaction() as tx:
            await tx.execute(change)
        state = await dump(url)
        with pytest.raises(
            OperationError, match=r"^cannot undo operation \d+ \(test\): items row\(s\) [23] changed after it"
        ):
            await h.undo(op_id)
        assert await dump(url) == state
        async with b.transaction() as tx:
            await tx.execute(undo_back)
    await h.undo(op_id)
    assert (
        [r["body"] for r in await b.query("SELECT body FROM items ORDER BY id")] == ["a", "b", '{"k": "ü"}']
        if b.kind == "sqlite"
        else ["a", "b", "c"]
    )


async def test_held_lists_the_images_of_an_op(backend) -> None:
    """`trash.held`: the columns asked of every image an op holds (a deleted row's
    "before", an inserted row's "after", an updated row's both), in key order."""
    b, _ = backend
    await write(b)
    async with b.transaction() as tx:
        rows = await trash.held(tx, 1, "items", ("id", "body"))
    assert [(r["id"], r["body"], r["image"]) for r in rows] == [
        (1, "a", "before"),
        (2, "B", "after"),
        (2, "b", "before"),
        (9, "nine", "after"),
    ]


async def test_was_records_a_change_made_outside_the_op(backend) -> None:
    """`Op.was`: a row a framework changed before the op was recorded gets its
    before-image from a SELECT of its old values; undo puts it back, redo the change."""
    b, url = backend
    before = await frame(url)
    async with b.transaction() as tx:
        await tx.execute("UPDATE items SET body = 'changed' WHERE id = 2")
        op = await ops.begin(tx, "run", "a foreign write", ["t"], {}, NOW)
        assert await op.was("items", ("id",), "SELECT * FROM items WHERE id = 2 AND 0 = 1") == 0
        await op.was(
            "items",
            ("id",),
            "SELECT id, 'b' AS body, raw, score, n, at"
            + (", doc" if b.kind == "postgres" else "")
            + " FROM items WHERE id = ?",
            (2,),
        )
        await op.inserted("items", ("id",), "id = ?", (2,))
        op_id = await op.finish({"t": "fp"})
    after = await frame(url)
    assert after != before
    async with b.transaction() as tx:
        await ops.undo(tx, op_id)
    assert await frame(url) == before
    async with b.transaction() as tx:
        await ops.redo(tx, op_id)
    assert await frame(url) == after


async def test_columns_the_table_gained_after_its_trash_come_back_type_for_type(backend) -> None:
    """A framework's migration adds columns after the trash was made (INTEGER, REAL, no
    type; on Postgres bigint, double precision, numeric): the trash gets them, and an
    update's and a delete's undo and redo give back every value exactly, type for type."""
    b, url = backend
    await write(b)  # the trash exists, made with the table's first columns
    async with b.transaction() as tx:
        if tx.kind == "postgres":
            await tx.execute(
                "ALTER TABLE items ADD COLUMN i bigint, ADD COLUMN r double precision, ADD COLUMN u numeric"
            )
            await tx.execute("UPDATE items SET i = 7, r = 1.0::double precision / 3, u = 0.1 + 0.2")
        else:
            await tx.execute("ALTER TABLE items ADD COLUMN i INTEGER")
            await tx.execute("ALTER TABLE items ADD COLUMN r REAL")
            await tx.execute("ALTER TABLE items ADD COLUMN u")
            await tx.execute("UPDATE items SET i = 7, r = 1.0 / 3, u = x'00ff' WHERE id = 2")
            await tx.execute(
                "UPDATE items SET i = 2.5, r = '1/3', u = 1.0 / 3 WHERE id = 3"
            )  # not the columns' types
            await tx.execute("UPDATE items SET i = 9007199254740993, r = 1e-300, u = 12 WHERE id = 9")
    types = (
        "SELECT id, typeof(i) AS ti, typeof(r) AS tr, typeof(u) AS tu, i, r, hex(u) AS hu, "
        "quote(u) AS su FROM items ORDER BY id"
        if b.kind == "sqlite"
        else "SELECT id, i, r, u, CAST(r AS text) AS sr FROM items ORDER BY id"
    )
    before, rows_before = await frame(url), await b.query(types)
    async with b.transaction() as tx:
        op = await ops.begin(tx, "test", "update 2, delete 3 and 9", ["t"], {}, NOW)
        await op.update("items", ("id",), "id = ?", (2,), "r = ?, i = ?, u = ?", (0.5, 1, None))
        await op.delete("items", ("id",), "id IN (?, ?)", (3, 9))
        op_id = await op.finish({"t": "fp"})
    after, rows_after = await frame(url), await b.query(types)
    assert after != before
    for _ in range(2):
        await _moved(b, op_id, ops.undo)  # refused before: the trash held the new columns as text
        assert await frame(url) == before and await b.query(types) == rows_before
        await _moved(b, op_id, ops.redo)
        assert await frame(url) == after and await b.query(types) == rows_after
