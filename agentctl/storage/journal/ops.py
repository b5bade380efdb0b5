"""The journal's op log: `agentctl_journal`, one row per op (kind, summary, threads,
details, the tables it changed with their key columns, the fingerprints of its threads
after it), and its row changes as images in the trash tables (`trash.py`): a deleted
row's "before" image, an inserted row's "after" image, an updated row's both. Undo and
redo are then one move to one image (undo: "before", redo: "after"): rows held in that
image alone are inserted, rows held in both are updated in place (so that a parent row
the op updated is never deleted, which would cascade to its children), rows held in the
other image alone are deleted; both images stay until purge, so an op can be undone and
redone again. Everything runs in the caller's write transaction.

A format's write:

    op = await journal.begin(tx, "rewind", summary, threads, details)
    await op.delete("events", ("id",), "session_id = ? AND seq > ?", (sid, n))
    await op.update("sessions", ("id",), "id = ?", (sid,), "update_time = ?", (now,))
    ... its own INSERTs ...;  await op.inserted("events", ("id",), "id = ?", (eid,))
    await op.finish(fingerprints)   # {thread: the format's fingerprint after the write}

Undo and redo take the same fingerprint as a callable (tx, thread) -> value and refuse
when a thread's differs from the one the op's last move left.

Undo thread by thread (a prune of several threads, some of which the framework wrote to
since): a write names each table's thread column (`thread=`, recorded in the op's
`tables` as {"key": [...], "thread": column}); `undo(..., threads=[...])` then moves the
images of those threads alone, checks their fingerprints alone, and keeps the threads it
restored in the op's details ("restored"); the op stays not undone until every thread is
restored (a later whole undo restores the rest), then is undone as a whole.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from agentctl.errors import OperationError
from agentctl.storage.journal import trash

#: the format's fingerprint of a thread in a transaction: what "nothing changed since" compares
Fingerprint = Callable[[Any, str], Awaitable[Any]]

LOG = "agentctl_journal"
#: in an adopted op's details: the release before the journal undid it and kept no copy
#: of what it wrote, so it cannot be redone (`check` refuses with one line)
NO_REDO = "agentctl_no_redo"
#: Postgres: the lock of a thread every agentctl write (and the AgentOS engine's
#: snapshots) takes for the transaction, undo and redo included
THREAD_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(?, 7340))"


def _ddl(kind: str) -> str:
    op_id = "bigserial PRIMARY KEY" if kind == "postgres" else "INTEGER PRIMARY KEY AUTOINCREMENT"
    return (
        f"CREATE TABLE IF NOT EXISTS {LOG} (op_id {op_id}, created_at TEXT NOT NULL, kind TEXT NOT NULL, "
        "summary TEXT NOT NULL, threads TEXT NOT NULL, details TEXT NOT NULL, tables TEXT NOT NULL, "
        "fingerprints TEXT NOT NULL DEFAULT '{}', undone INTEGER NOT NULL DEFAULT 0, "
        "purged INTEGER NOT NULL DEFAULT 0, undo_of INTEGER, undone_by INTEGER)"
    )


async def _prints(tx: Any, threads: Sequence[str], fingerprint: Fingerprint) -> dict[str, Any]:
    # through JSON, so that what is compared is what is stored
    return json.loads(json.dumps({t: await fingerprint(tx, t) for t in threads}))


class Op:
    """One op being written: its row changes, recorded as they are made."""

    def __init__(self, tx: Any, op_id: int, threads: Sequence[str] = ()):
        self.tx = tx
        self.op_id = op_id
        self.threads = list(threads)
        #: table -> key columns (or {"key": columns, "thread": column}), in the order first changed
        self.tables: dict[str, Any] = {}
        self._updated: list[tuple[str, str, Sequence[Any]]] = []

    def _touch(self, table: str, key: Sequence[str], thread: str | None = None) -> None:
        self.tables.setdefault(table, {"key": list(key), "thread": thread} if thread else list(key))

    async def declare(self, table: str, key: Sequence[str], *, thread: str | None = None) -> None:
        """Name a table the op may change before it changes it: tables are put back in
        the order they were first named (parents before the rows that refer to them)."""
        await trash.ensure(self.tx, table)
        self._touch(table, key, thread)

    async def delete(
        self,
        table: str,
        key: Sequence[str],
        where: str,
        params: Sequence[Any] = (),
        *,
        thread: str | None = None,
    ) -> int:
        """Delete the rows matching `where`, their before-images kept. `thread`: the
        table's thread column (the op can then be undone thread by thread)."""
        self._touch(table, key, thread)
        await trash.set_aside(self.tx, self.op_id, table, where, params)
        return await self.tx.execute(f'DELETE FROM "{table}" WHERE {where}', *params)

    async def delete_each(
        self,
        table: str,
        key: Sequence[str],
        where: str,
        params_each: Sequence[Sequence[Any]],
        *,
        thread: str | None = None,
    ) -> int:
        """`delete` with each parameter set of `where` in turn (a chunk of rows at a time),
        the statements handed to the transaction at once (`execute_each`: SQLite runs them
        in one call on its connection's thread); the rows deleted."""
        self._touch(table, key, thread)
        copy = await trash.copy_sql(self.tx, table, where)
        statements: list[tuple[str, Sequence[Any]]] = []
        for params in params_each:
            statements += [
                (copy, [self.op_id, "before", *params]),
                (f'DELETE FROM "{table}" WHERE {where}', params),
            ]
        return sum((await self.tx.execute_each(statements))[1::2])

    async def update(
        self,
        table: str,
        key: Sequence[str],
        where: str,
        params: Sequence[Any],
        assign: str,
        values: Sequence[Any],
        *,
        thread: str | None = None,
    ) -> int:
        """`UPDATE table SET assign WHERE where`, the before-images kept (the after-images
        at `finish`). The update must not change the key columns."""
        self._touch(table, key, thread)
        await trash.set_aside(self.tx, self.op_id, table, where, params)
        self._updated.append((table, where, params))
        return await self.tx.execute(f'UPDATE "{table}" SET {assign} WHERE {where}', *values, *params)

    async def inserted(
        self,
        table: str,
        key: Sequence[str],
        where: str,
        params: Sequence[Any] = (),
        *,
        thread: str | None = None,
    ) -> int:
        """Record the rows the format inserted (those matching `where`) as the op's."""
        self._touch(table, key, thread)
        return await trash.set_aside(self.tx, self.op_id, table, where, params, image="after")

    async def was(self, table: str, key: Sequence[str], select: str, params: Sequence[Any] = ()) -> int:
        """Record the before-image of a row changed outside the op (a framework's own write,
        recorded after it) from a SELECT of its values named as `table`'s columns."""
        self._touch(table, key)
        return await trash.add_images(self.tx, self.op_id, table, "before", select, params)

    async def finish(self, fingerprints: Mapping[str, Any] | None = None, summary: str | None = None) -> int:
        """The op's after-images of updated rows, its tables, its threads (`threads` may
        have changed since `begin`), their fingerprints and (if given) its summary."""
        for table, where, params in self._updated:
            await trash.set_aside(self.tx, self.op_id, table, where, params, image="after")
        await self.tx.execute(
            f"UPDATE {LOG} SET tables = ?, fingerprints = ?, threads = ?, "
            "summary = COALESCE(?, summary) WHERE op_id = ?",
            json.dumps(self.tables),
            json.dumps(dict(fingerprints or {})),
            json.dumps(self.threads),
            summary,
            self.op_id,
        )
        return self.op_id


async def begin(
    tx: Any, kind: str, summary: str, threads: Sequence[str], details: Mapping[str, Any], created_at: str
) -> Op:
    """Start recording an op in this transaction (the log created on the first write)."""
    await trash.make_missing(tx, LOG, _ddl(tx.kind))
    rows = await tx.fetch(
        f"INSERT INTO {LOG} (created_at, kind, summary, threads, details, tables) "
        "VALUES (?, ?, ?, ?, ?, '{}') RETURNING op_id",
        created_at,
        kind,
        summary,
        json.dumps(list(threads)),
        json.dumps(dict(details)),
    )
    return Op(tx, int(rows[0]["op_id"]), threads)


async def entry(tx: Any, kind: str, summary: str, threads: Sequence[str], of: int, created_at: str) -> int:
    """A line of the log that changed no row itself: an undo or redo of op `of`."""
    await trash.make_missing(tx, LOG, _ddl(tx.kind))
    rows = await tx.fetch(
        f"INSERT INTO {LOG} (created_at, kind, summary, threads, details, tables, undo_of) "
        "VALUES (?, ?, ?, ?, ?, '{}', ?) RETURNING op_id",
        created_at,
        kind,
        summary,
        json.dumps(list(threads)),
        json.dumps({f"{kind}_of": of}),
        of,
    )
    return int(rows[0]["op_id"])


async def adopt(tx: Any, record: Mapping[str, Any]) -> None:
    """Put an op of a format's previous op log into the journal under its own op id
    (migration): `record` has op_id, created_at, kind, summary, threads, details, and
    optionally tables, fingerprints, undone, purged, undo_of, undone_by. Its images go
    into the trash with `trash.add_images`. On Postgres the id sequence moves past it."""
    await trash.make_missing(tx, LOG, _ddl(tx.kind))
    r = dict(record)
    await tx.execute(
        f"INSERT INTO {LOG} (op_id, created_at, kind, summary, threads, details, tables, fingerprints, "
        "undone, purged, undo_of, undone_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        int(r["op_id"]),
        r["created_at"],
        r["kind"],
        r["summary"],
        json.dumps(list(r["threads"])),
        json.dumps(dict(r.get("details") or {})),
        json.dumps(dict(r.get("tables") or {})),
        json.dumps(dict(r.get("fingerprints") or {})),
        int(bool(r.get("undone"))),
        int(bool(r.get("purged"))),
        r.get("undo_of"),
        r.get("undone_by"),
    )
    if tx.kind == "postgres":
        await tx.execute(
            f"SELECT setval(pg_get_serial_sequence('{LOG}', 'op_id'), (SELECT MAX(op_id) FROM {LOG}))"
        )


def _decoded(row: Mapping[str, Any]) -> dict[str, Any]:
    r = dict(row)
    for k in ("threads", "details", "tables", "fingerprints"):
        r[k] = json.loads(r[k])
    return r


async def record(tx: Any, op_id: int) -> dict[str, Any]:
    rows = await tx.fetch(f"SELECT * FROM {LOG} WHERE op_id = ?", op_id)
    if not rows:
        raise LookupError(f"operation {op_id} not found")
    return _decoded(rows[0])


async def find(tx: Any, op_id: int) -> dict[str, Any] | None:
    """The op `op_id`, or None when there is no such op (or no journal yet)."""
    if not await tx.table_exists(LOG):
        return None
    rows = await tx.fetch(f"SELECT * FROM {LOG} WHERE op_id = ?", op_id)
    return _decoded(rows[0]) if rows else None


async def listing(reader: Any, limit: int = 50) -> list[dict[str, Any]]:
    """The newest ops first, through a store's connection (`query`, a read) or a transaction; no
    journal yet: none (a read creates nothing)."""
    if not await reader.table_exists(LOG):
        return []
    fetch = getattr(reader, "fetch", None) or reader.query
    return [_decoded(r) for r in await fetch(f"SELECT * FROM {LOG} ORDER BY op_id DESC LIMIT ?", limit)]


def key_of(spec: Any) -> list[str]:
    """The key columns of a table of an op's `tables`."""
    return list(spec["key"]) if isinstance(spec, dict) else list(spec)


def thread_column(spec: Any) -> str | None:
    """The thread column of a table of an op's `tables` (None: not recorded)."""
    return spec.get("thread") if isinstance(spec, dict) else None


def by_thread(r: Mapping[str, Any]) -> bool:
    """Whether the op of record `r` can be undone thread by thread."""
    return bool(r["tables"]) and all(thread_column(s) for s in r["tables"].values())


def left(r: Mapping[str, Any]) -> list[str]:
    """The threads of the op of record `r` an undo has not restored yet."""
    done = set(r["details"].get("restored") or ())
    return [t for t in r["threads"] if t not in done]


def brief(names: Sequence[str]) -> str:
    return ", ".join(names[:10]) + (", …" if len(names) > 10 else "")


async def check(
    tx: Any,
    r: Mapping[str, Any],
    undone: int,
    fingerprint: Fingerprint | None,
    threads: Sequence[str] | None = None,
) -> None:
    """Refuse (OperationError) to undo (`undone` 1) or redo (0) the op of record `r`:
    purged, already so, or a thread's fingerprint not as the op's last move left it.
    `threads`: an undo of those threads alone (only theirs are checked)."""
    op_id = r["op_id"]
    if not undone and r["details"].get(NO_REDO):
        raise OperationError(
            f"operation {op_id} was undone by an agentctl release before the journal, which kept "
            "no copy of what it wrote; it cannot be redone"
        )
    if r["purged"]:
        raise OperationError(f"operation {op_id} was purged; it can no longer be undone or redone")
    if bool(r["undone"]) == bool(undone):
        raise OperationError(f"operation {op_id} is {'already undone' if undone else 'not undone'}")
    if threads is not None:
        if not by_thread(r):
            raise OperationError(f"operation {op_id} cannot be undone thread by thread; undo it whole")
        unknown = [t for t in threads if t not in left(r)]
        if unknown:
            raise OperationError(f"operation {op_id} has no thread {unknown[0]!r} left to restore")
    if fingerprint is not None:
        todo = list(threads) if threads is not None else left(r) if undone else list(r["threads"])
        now = await _prints(tx, todo, fingerprint)
        changed = sorted(t for t in todo if now.get(t) != r["fingerprints"].get(t))
        if changed:
            still = [t for t in todo if t not in changed]
            hint = ""
            if undone and threads is None and still and by_thread(r):
                hint = (
                    f"; `agentctl undo {op_id} --thread THREAD` (repeatable) restores the {len(still)} "
                    f"that did not: {brief(still)}"
                )
            raise OperationError(
                f"{', '.join(changed)} changed since operation {op_id} was "
                f"{'written' if undone else 'undone'}; nothing was changed{hint}"
            )


#: how a format names rows of a table in a refusal: (table, their keys) -> text
Describe = Callable[[str, Sequence[tuple[Any, ...]]], str]


async def _move(
    tx: Any,
    op_id: int,
    image: str,
    undone: int,
    fingerprint: Fingerprint | None,
    threads: Sequence[str] | None = None,
    describe: Describe | None = None,
) -> dict[str, Any]:
    r = await record(tx, op_id)
    await check(tx, r, undone, fingerprint, threads)
    restored = list(r["details"].get("restored") or [])
    moving = list(threads) if threads is not None else left(r) if undone else list(r["threads"])
    partial = bool(undone) and (threads is not None or bool(restored))
    tables = list(r["tables"].items())
    left_image = "after" if undone else "before"  # what the op's last move left
    for table, spec in tables:
        bad = await trash.changed_keys(
            tx, op_id, table, key_of(spec), left_image, thread_column(spec), moving if partial else None
        )
        if bad:
            what = describe(table, bad) if describe else f"{table} row(s) {bad}"
            raise OperationError(
                f"cannot {'undo' if undone else 'redo'} operation {op_id} ({r['kind']}): {what} "
                f"changed after {'it' if undone else 'its undo'} (another write); nothing was changed"
            )
    # rows the op changed go back in place, rows it inserted or deleted come and go
    # around them: parents before their children come, children before their parents go
    # (in the order the op first touched its tables), so foreign keys hold throughout
    await trash.move(
        tx,
        op_id,
        [(t, key_of(spec), thread_column(spec)) for t, spec in tables],
        image,
        moving if partial else None,
    )
    # the fingerprints the next move of this op compares against
    prints = dict(r["fingerprints"])
    if fingerprint is not None:
        prints.update(await _prints(tx, moving, fingerprint))
    done = not partial or set(restored + moving) >= set(r["threads"])
    details = dict(r["details"])
    details.pop("restored", None)
    if not done:
        details["restored"] = restored + moving
    await tx.execute(
        f"UPDATE {LOG} SET undone = ?, fingerprints = ?, details = ? WHERE op_id = ?",
        undone if done else 0,
        json.dumps(prints),
        json.dumps(details),
        op_id,
    )
    return {
        **r,
        "moved": moving,
        "done": done,
        "left": [t for t in left(r) if t not in moving] if undone else [],
    }


async def undo(
    tx: Any,
    op_id: int,
    fingerprint: Fingerprint | None = None,
    threads: Sequence[str] | None = None,
    describe: Describe | None = None,
) -> dict[str, Any]:
    """Put the op's before-images back where its rows stand, when each of its threads'
    `fingerprint` is as the op left it (else OperationError, nothing changed). `threads`:
    those threads' images alone (the op stays undoable for the others; see the module
    doc); the returned record's "moved" names the threads restored, "done" whether the
    op is now undone, "left" the threads still to restore."""
    return await _move(tx, op_id, "before", 1, fingerprint, threads, describe)


async def redo(
    tx: Any, op_id: int, fingerprint: Fingerprint | None = None, describe: Describe | None = None
) -> dict[str, Any]:
    """Put the op's after-images back (`trash.move`), when each of its threads'
    `fingerprint` is as the undo left it (else OperationError, nothing changed)."""
    return await _move(tx, op_id, "after", 0, fingerprint, None, describe)


async def purge(tx: Any, dry_run: bool = False) -> tuple[list[int], int]:
    """Free the trash of every op not purged yet (they can no longer be undone or
    redone): (the ops that held images, how many rows were freed). `dry_run`: count,
    write nothing."""
    if not await tx.table_exists(LOG):
        return [], 0
    recs = await tx.fetch(f"SELECT op_id, tables FROM {LOG} WHERE purged = 0 ORDER BY op_id")
    ids = [int(r["op_id"]) for r in recs]
    marks = ", ".join("?" for _ in ids)
    held: set[int] = set()
    rows = 0
    for table in sorted({t for r in recs for t in json.loads(r["tables"])}):
        for r in await tx.fetch(
            f'SELECT {trash.OP} AS op, count(*) AS n FROM "{trash.trash_name(table)}" '
            f"WHERE {trash.OP} IN ({marks}) GROUP BY {trash.OP}",
            *ids,
        ):
            held.add(int(r["op"]))
            rows += int(r["n"])
        if not dry_run:
            await trash.free(tx, table, ids)
    if ids and not dry_run:
        await tx.execute(f"UPDATE {LOG} SET purged = 1 WHERE purged = 0")
    return sorted(held), rows


async def log_purge(tx: Any, freed: Sequence[int], rows: int, created_at: str) -> int:
    """The purge as a line of the log (nothing to undo: marked purged); its op id."""
    op = await begin(
        tx,
        "purge",
        f"purge the trash of {len(freed)} operation(s): {rows} row(s)",
        [],
        {"ops": list(freed), "rows": rows},
        created_at,
    )
    await op.finish({})
    await tx.execute(f"UPDATE {LOG} SET purged = 1 WHERE op_id = ?", op.op_id)
    return op.op_id


async def last_id(reader: Any) -> int:
    """The newest op's id (0: none, or no journal yet); through a store's connection or a transaction."""
    if not await reader.table_exists(LOG):
        return 0
    fetch = getattr(reader, "fetch", None) or reader.query
    return int((await fetch(f"SELECT COALESCE(MAX(op_id), 0) AS o FROM {LOG}"))[0]["o"])


async def done_details(reader: Any, kind: str) -> list[dict[str, Any]]:
    """The details of the ops of `kind` not undone (a read; none without a journal)."""
    if not await reader.table_exists(LOG):
        return []
    fetch = getattr(reader, "fetch", None) or reader.query
    return [
        json.loads(r["details"] or "{}")
        for r in await fetch(f"SELECT details FROM {LOG} WHERE kind = ? AND undone = 0 ORDER BY op_id", kind)
    ]


async def later(tx: Any, op_id: int, threads: Sequence[str]) -> list[int]:
    """The ops after `op_id`, not undone, that changed any of `threads` (newest first):
    those to undo before it."""
    rows = await tx.fetch(
        f"SELECT op_id, threads FROM {LOG} WHERE op_id > ? AND undone = 0 "
        "AND kind NOT IN ('undo', 'redo', 'purge') ORDER BY op_id DESC",
        op_id,
    )
    return [int(r["op_id"]) for r in rows if set(json.loads(r["threads"])) & set(threads)]
