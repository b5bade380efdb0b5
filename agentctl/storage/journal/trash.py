"""Trash tables: `agentctl_trash_<table>`, the source table's own columns and types plus
`agentctl_op_id` (the op that set the rows aside) and `agentctl_image`, created inside the caller's write
transaction on the first use, never by a read. Rows go in and come back by
INSERT ... SELECT on the database's side, so their values are never converted in Python
(BLOBs, JSONB, timestamps exact to the byte).

SQLite: `CREATE TABLE ... AS SELECT ... WHERE 0` gives each column the source column's
type affinity (the values were stored under that affinity already, so they are kept as
they are). Postgres: `LIKE source` (columns, types, NOT NULL; no keys, defaults or
identity), so a trash table never refuses a row its source held.

`tx` is a write transaction of the backends (`execute`, `fetch`, `?` placeholders on
both dialects, `kind`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

PREFIX = "agentctl_trash_"
OP = "agentctl_op_id"
#: which image of a row: "before" the op (a deleted row, an updated row's old values) or
#: "after" it (an inserted row, an updated row's new values: what redo puts back)
IMAGE = "agentctl_image"


#: Postgres: the lock every agentctl writer takes before it makes a side table (the
#: journal, a trash table, its index) in its transaction
DDL_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('agentctl side tables', 7340))"


def trash_name(table: str) -> str:
    return PREFIX + table


async def make_missing(tx: Any, name: str, *ddl: str) -> bool:
    """Run `ddl` (CREATE ... IF NOT EXISTS) unless the table `name` exists (an index's
    `ddl` runs unless Postgres finds it: IF NOT EXISTS makes it once); whether it ran.
    Postgres: under DDL_LOCK, so that two agentctl writers making it at once do not
    collide (the second waits for the first's commit, then finds it made). (SQLite's
    writers are one at a time: BEGIN IMMEDIATE.)"""
    if await tx.table_exists(name):
        return False
    if tx.kind == "postgres":
        await tx.execute(DDL_LOCK)
    for statement in ddl:
        await tx.execute(statement)
    return True


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


async def columns(tx: Any, table: str) -> list[str]:
    """The table's columns, in their order. A source table's are read once per
    transaction (only the journal alters a table inside one, and only a trash: a trash
    table's are read each time)."""
    known = None if table.startswith(PREFIX) else tx.__dict__.setdefault("_agentctl_columns", {})
    if known is not None and table in known:
        return list(known[table])
    if tx.kind == "postgres":
        rows = await tx.fetch(
            "SELECT attname AS c FROM pg_attribute WHERE attrelid = to_regclass(?) "
            "AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            _q(table),
        )
    else:
        rows = await tx.fetch("SELECT name AS c FROM pragma_table_info(?) ORDER BY cid", table)
    found = [r["c"] for r in rows]
    if known is not None and found:  # (a missing table is asked again: it may be made)
        known[table] = found
    return list(found)


async def ensure(tx: Any, table: str) -> tuple[str, str]:
    """The trash table of `table`, created in this transaction if missing with its index
    by op id (an undo, redo or purge reads one op's images, not the whole trash), and given
    the columns the source gained since it was made (a framework's migration, another
    program's column): every image holds every column of the row. Also the source's
    columns as a SQL list (read once per transaction: only the journal alters a table
    inside one, and only a trash)."""
    name = trash_name(table)
    done = tx.__dict__.setdefault("_agentctl_trash_ready", {})  # once per transaction and table
    if table in done:
        return name, done[table]
    source = await columns(tx, table)
    done[table] = ", ".join(_q(c) for c in source)
    made = (
        f"CREATE TABLE IF NOT EXISTS {_q(name)} ({OP} bigint NOT NULL, {IMAGE} text NOT NULL, LIKE {_q(table)})"
        if tx.kind == "postgres"
        else f"CREATE TABLE IF NOT EXISTS {_q(name)} AS SELECT 0 AS {OP}, '' AS {IMAGE}, * FROM {_q(table)} WHERE 0"
    )
    have = await columns(tx, name)  # none: there is no trash yet (a table has a column)
    if have:
        await widen(tx, table, source, have)
    else:
        if tx.kind == "postgres":
            await tx.execute(DDL_LOCK)  # as make_missing: two writers making it at once
        await tx.execute(made)
    # (a trash made before this index is given it by its next write, undo or redo)
    index = f"CREATE INDEX IF NOT EXISTS {_q(name + '_op')} ON {_q(name)} ({OP})"
    if tx.kind == "postgres":  # found, it is not asked for again (that would lock the trash)
        await make_missing(tx, name + "_op", index)
    else:  # SQLite: IF NOT EXISTS is the check (writers are one at a time)
        await tx.execute(index)
    return name, done[table]


async def copy_sql(tx: Any, table: str, where: str) -> str:
    """The statement copying the rows of `table` matching `where` into its trash; its
    parameters: the op id, the image, then `where`'s."""
    name, cols = await ensure(tx, table)
    return (
        f"INSERT INTO {_q(name)} ({OP}, {IMAGE}, {cols}) SELECT ?, ?, {cols} FROM {_q(table)} WHERE {where}"
    )


async def set_aside(
    tx: Any, op_id: int, table: str, where: str, params: Sequence[Any] = (), image: str = "before"
) -> int:
    """Copy the rows of `table` matching `where` (SQL, `?` parameters) into its trash
    under `op_id` as `image`; returns how many. The caller then deletes or updates them."""
    return await tx.execute(await copy_sql(tx, table, where), op_id, image, *params)


async def add_images(
    tx: Any, op_id: int, table: str, image: str, select: str, params: Sequence[Any] = ()
) -> int:
    """Put rows into `table`'s trash under `op_id` as `image` from any SELECT whose
    columns are named as `table`'s (migration of an older trash); returns how many."""
    name, cols = await ensure(tx, table)
    return await tx.execute(
        f"INSERT INTO {_q(name)} ({OP}, {IMAGE}, {cols}) SELECT ?, ?, {cols} FROM ({select}) AS agentctl_src",
        op_id,
        image,
        *params,
    )


async def row_select(tx: Any, table: str, row: dict[str, Any]) -> tuple[str, list[Any]]:
    """A SELECT of one row of `table` from its values (a format's row read as values,
    Postgres' as text), typed as the table's columns: (sql, params) for `add_images` (a
    framework's write recorded after it: `Op.was`)."""
    cols = list(row)
    if tx.kind != "postgres":
        return "SELECT " + ", ".join(f"? AS {c}" for c in cols), [row[c] for c in cols]
    types = {
        r["c"]: r["t"]
        for r in await tx.fetch(
            "SELECT attname AS c, format_type(atttypid, atttypmod) AS t FROM pg_attribute WHERE attrelid = "
            "to_regclass(?) AND attnum > 0 AND NOT attisdropped",
            table,
        )
    }
    return (
        "SELECT " + ", ".join(f"CAST(CAST(? AS TEXT) AS {types[c]}) AS {c}" for c in cols),
        [None if row[c] is None else str(row[c]) for c in cols],
    )


def _held(tx: Any, table: str, key: Sequence[str], row: str, pick: str) -> str:
    """SQL: the op (`?`) holds an image (`?`) of the row `row` (a table's alias) by key,
    of the threads `pick` names (a partial undo's filter on the trash rows, its own `?`s).
    SQLite: a row-value IN, which it answers from the table's key index; Postgres: an
    EXISTS, which it plans as a (hash) semi-join, where a NOT IN may rescan per row."""
    name = _q(trash_name(table))
    if tx.kind == "postgres":
        match = " AND ".join(f"o.{_q(k)} = {row}.{_q(k)}" for k in key)
        return f"EXISTS (SELECT 1 FROM {name} AS o WHERE o.{OP} = ? AND o.{IMAGE} = ? AND {match}{pick.format('o.')})"
    keys = ", ".join(f"{row}.{_q(k)}" for k in key)
    return (
        f"({keys}) IN (SELECT {', '.join(_q(k) for k in key)} FROM {name} WHERE {OP} = ? AND {IMAGE} = ?"
        f"{pick.format('')})"
    )


async def move(
    tx: Any,
    op_id: int,
    tables: Sequence[tuple[str, Sequence[str], str | None]],
    image: str,
    threads: Sequence[str] | None = None,
) -> None:
    """Put `image` ("before": undo, "after": redo) of the rows `op_id` changed in
    `tables` (table, key columns, thread column; in the order the op first touched them)
    back, keeping the images: the rows only `image` holds are inserted (tables in order:
    parents first), the rows both images hold (the op updated them) are updated in place
    — never deleted and inserted again, so rows of other tables that refer to them
    (foreign keys, ON DELETE CASCADE) stay — and the rows at the keys only the other
    image holds are deleted (tables in reverse order: children first). `threads`: the
    images of those threads alone (by each table's thread column; a partial undo)."""
    other = "after" if image == "before" else "before"
    picks: dict[str, tuple[str, list[Any]]] = {}
    for table, _, thread in tables:
        if threads is None or thread is None:
            picks[table] = ("", [])
        else:
            picks[table] = (f" AND {{}}{_q(thread)} IN ({', '.join('?' for _ in threads)})", list(threads))
    for table, key, _ in tables:
        name, cols = _q(trash_name(table)), await columns(tx, table)
        pick, args = picks[table]
        listed = ", ".join(_q(c) for c in cols)
        await tx.execute(
            f"INSERT INTO {_q(table)} ({listed}) SELECT {', '.join('s.' + _q(c) for c in cols)} "
            f"FROM {name} AS s WHERE s.{OP} = ? AND s.{IMAGE} = ?{pick.format('s.')} "
            f"AND NOT {_held(tx, table, key, 's', pick)}",
            op_id,
            image,
            *args,
            op_id,
            other,
            *args,
        )
        rest = [c for c in cols if c not in key]
        if rest:
            match = " AND ".join(f"{_q(table)}.{_q(k)} = s.{_q(k)}" for k in key)
            await tx.execute(
                f"UPDATE {_q(table)} SET {', '.join(f'{_q(c)} = s.{_q(c)}' for c in rest)} "
                f"FROM {name} AS s WHERE s.{OP} = ? AND s.{IMAGE} = ?{pick.format('s.')} AND {match} "
                f"AND {_held(tx, table, key, 's', pick)}",
                op_id,
                image,
                *args,
                op_id,
                other,
                *args,
            )
    for table, key, _ in reversed(tables):
        here = _q(table)
        pick, args = picks[table]
        await tx.execute(
            f"DELETE FROM {here} WHERE {_held(tx, table, key, here, pick)} "
            f"AND NOT {_held(tx, table, key, here, pick)}",
            op_id,
            other,
            *args,
            op_id,
            image,
            *args,
        )


async def changed_keys(
    tx: Any,
    op_id: int,
    table: str,
    key: Sequence[str],
    image: str,
    thread: str | None = None,
    threads: Sequence[str] | None = None,
) -> list[tuple[Any, ...]]:
    """The keys (five at most) at which the rows of `table` are not exactly the op's
    `image` of them — the image its last move left ("after" a write or a redo, "before"
    an undo): a row changed, gone, or standing where the image holds none. [] when every
    row is as the op left it: what undo and redo check before they move (a write by
    anyone since, on a row the op holds, would be lost). `thread`/`threads`: those
    threads' rows alone (a partial undo)."""
    other = "after" if image == "before" else "before"
    name, here = _q(trash_name(table)), _q(table)
    pick, args = "", []
    if threads is not None and thread is not None:
        pick, args = f" AND {{}}{_q(thread)} IN ({', '.join('?' for _ in threads)})", list(threads)
    cols = await columns(tx, table)
    if tx.kind == "postgres":
        same = " AND ".join(
            f"CAST(s.{_q(c)} AS TEXT) IS NOT DISTINCT FROM CAST(t.{_q(c)} AS TEXT)" for c in cols
        )
    else:
        same = " AND ".join(f"s.{_q(c)} IS t.{_q(c)}" for c in cols)
    match = " AND ".join(f"s.{_q(k)} = t.{_q(k)}" for k in key)
    at = f"({_held(tx, table, key, 't', pick)} OR {_held(tx, table, key, 't', pick)})"
    at_args = [op_id, image, *args, op_id, other, *args]
    counts = (
        await tx.fetch(
            f"SELECT (SELECT COUNT(*) FROM {name} AS s WHERE s.{OP} = ? AND s.{IMAGE} = ?{pick.format('s.')}) AS n, "
            f"(SELECT COUNT(*) FROM {here} AS t WHERE {at}) AS at, "
            f"(SELECT COUNT(*) FROM {name} AS s JOIN {here} AS t ON {match} WHERE s.{OP} = ? AND s.{IMAGE} = ?"
            f"{pick.format('s.')} AND {same}) AS kept",
            op_id,
            image,
            *args,
            *at_args,
            op_id,
            image,
            *args,
        )
    )[0]
    if counts["n"] == counts["at"] == counts["kept"]:
        return []
    keys = ", ".join(f"t.{_q(k)}" for k in key)
    skeys = ", ".join(f"s.{_q(k)}" for k in key)
    rows = await tx.fetch(
        f"SELECT {keys} FROM {here} AS t WHERE {at} AND NOT EXISTS (SELECT 1 FROM {name} AS s WHERE s.{OP} = ? "
        f"AND s.{IMAGE} = ?{pick.format('s.')} AND {match} AND {same}) "
        f"UNION SELECT {skeys} FROM {name} AS s WHERE s.{OP} = ? AND s.{IMAGE} = ?{pick.format('s.')} "
        f"AND NOT EXISTS (SELECT 1 FROM {here} AS t WHERE {match}) ORDER BY 1 LIMIT 5",
        *at_args,
        op_id,
        image,
        *args,
        op_id,
        image,
        *args,
    )
    return [tuple(r.values()) for r in rows]


def images_of(table: str, image: str = "before") -> str:
    """A subquery (one `?`: the op id) of the rows an op set aside from `table` as
    `image`, with the table's columns: for a write that needs what it set aside so far
    (LangGraph's prune: the blobs only its deleted checkpoints named)."""
    return f"(SELECT * FROM {_q(trash_name(table))} WHERE {OP} = ? AND {IMAGE} = '{image}')"


async def held(tx: Any, op_id: int, table: str, columns: Sequence[str]) -> list[dict[str, Any]]:
    """`columns` of every image op `op_id` holds of `table` (the image as "image"), in
    `columns` order: for a format that keeps something beside the rows in step by hand
    (the article's messages_fts: the messages an undo or redo deletes, puts back, moves)."""
    cols = ", ".join(_q(c) for c in columns)
    return await tx.fetch(
        f"SELECT {cols}, {IMAGE} AS image FROM {_q(trash_name(table))} WHERE {OP} = ? ORDER BY {cols}", op_id
    )


async def widen(tx: Any, table: str, source: Sequence[str], have: Sequence[str] = ()) -> list[str]:
    """Add to `table`'s trash (its columns `have`, read when not given) the columns the
    source table (its columns `source`) gained since the trash was made (a framework's
    own schema migration); the columns added."""
    name = trash_name(table)
    present = set(have or await columns(tx, name))
    added = [c for c in source if c not in present]
    for col in added:
        typ = ""
        if tx.kind == "postgres":
            typ = (
                " "
                + (
                    await tx.fetch(
                        "SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute "
                        "WHERE attrelid = to_regclass(?) AND attname = ?",
                        _q(table),
                        col,
                    )
                )[0]["t"]
            )
        await tx.execute(f"ALTER TABLE {_q(name)} ADD COLUMN {_q(col)}{typ}")
    return added


async def free(tx: Any, table: str, op_ids: Sequence[int]) -> int:
    """Drop the rows of these ops from `table`'s trash for good (purge); returns how many."""
    if not op_ids:
        return 0
    marks = ", ".join("?" for _ in op_ids)
    return await tx.execute(f"DELETE FROM {_q(trash_name(table))} WHERE {OP} IN ({marks})", *op_ids)
