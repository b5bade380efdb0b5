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

from typing import Any, Optional, Sequence, Tuple

PREFIX = "agentctl_trash_"
OP = "agentctl_op_id"
#: which image of a row: "before" the op (a deleted row, an updated row's old values) or
#: "after" it (an inserted row, an updated row's new values: what redo puts back)
IMAGE = "agentctl_image"


def trash_name(table: str) -> str:
    return PREFIX + table


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


async def columns(tx: Any, table: str) -> list[str]:
    """The source table's columns, in their order."""
    if tx.kind == "postgres":
        rows = await tx.fetch("SELECT attname AS c FROM pg_attribute WHERE attrelid = to_regclass(?) "
                              "AND attnum > 0 AND NOT attisdropped ORDER BY attnum", _q(table))
    else:
        rows = await tx.fetch("SELECT name AS c FROM pragma_table_info(?) ORDER BY cid", table)
    return [r["c"] for r in rows]


async def ensure(tx: Any, table: str) -> str:
    """The trash table of `table`, created in this transaction if missing."""
    name = trash_name(table)
    if tx.kind == "postgres":
        await tx.execute(f"CREATE TABLE IF NOT EXISTS {_q(name)} ({OP} bigint NOT NULL, {IMAGE} text NOT NULL, "
                         f"LIKE {_q(table)})")
    else:
        await tx.execute(f"CREATE TABLE IF NOT EXISTS {_q(name)} AS "
                         f"SELECT 0 AS {OP}, '' AS {IMAGE}, * FROM {_q(table)} WHERE 0")
    return name


async def set_aside(tx: Any, op_id: int, table: str, where: str, params: Sequence[Any] = (),
                    image: str = "before") -> int:
    """Copy the rows of `table` matching `where` (SQL, `?` parameters) into its trash
    under `op_id` as `image`; returns how many. The caller then deletes or updates them."""
    name = await ensure(tx, table)
    cols = ", ".join(_q(c) for c in await columns(tx, table))
    return await tx.execute(f"INSERT INTO {_q(name)} ({OP}, {IMAGE}, {cols}) SELECT ?, ?, {cols} "
                            f"FROM {_q(table)} WHERE {where}", op_id, image, *params)


async def add_images(tx: Any, op_id: int, table: str, image: str, select: str, params: Sequence[Any] = ()) -> int:
    """Put rows into `table`'s trash under `op_id` as `image` from any SELECT whose
    columns are named as `table`'s (migration of an older trash); returns how many."""
    name = await ensure(tx, table)
    cols = ", ".join(_q(c) for c in await columns(tx, table))
    return await tx.execute(f"INSERT INTO {_q(name)} ({OP}, {IMAGE}, {cols}) SELECT ?, ?, {cols} "
                            f"FROM ({select}) AS agentctl_src", op_id, image, *params)


#: (a thread column, its values): the images of those threads alone (a partial undo)
Only = Optional[Tuple[str, Sequence[str]]]


def _only(only: Any, alias: str = "") -> tuple[str, list[Any]]:
    if only is None:
        return "", []
    column, values = only
    return f" AND {alias}{_q(column)} IN ({', '.join('?' for _ in values)})", list(values)


async def put_back(tx: Any, op_id: int, table: str, image: str = "before", *, keep: bool = False,
                   only: Only = None) -> int:
    """Insert the rows `op_id` set aside from `table` as `image` back into it, exactly,
    and (unless `keep`) drop them from the trash; returns how many. `only` (column,
    values): the rows of those threads alone."""
    name = trash_name(table)
    cols = ", ".join(_q(c) for c in await columns(tx, table))
    pick, args = _only(only)
    n = await tx.execute(f"INSERT INTO {_q(table)} ({cols}) SELECT {cols} FROM {_q(name)} "
                         f"WHERE {OP} = ? AND {IMAGE} = ?{pick}", op_id, image, *args)
    if not keep:
        await tx.execute(f"DELETE FROM {_q(name)} WHERE {OP} = ? AND {IMAGE} = ?{pick}", op_id, image, *args)
    return n


async def remove_images(tx: Any, op_id: int, table: str, key: Sequence[str], *, only: Only = None) -> int:
    """Delete from `table` the rows whose `key` columns match a row `op_id` holds in its
    trash (either image): what stands where undo or redo puts rows back. `only`
    (column, values): the images of those threads alone."""
    name = trash_name(table)
    match = " AND ".join(f"{_q(table)}.{_q(k)} = s.{_q(k)}" for k in key)
    pick, args = _only(only, "s.")
    return await tx.execute(f"DELETE FROM {_q(table)} WHERE EXISTS "
                            f"(SELECT 1 FROM {_q(name)} AS s WHERE s.{OP} = ? AND {match}{pick})", op_id, *args)


def images_of(table: str, image: str = "before") -> str:
    """A subquery (one `?`: the op id) of the rows an op set aside from `table` as
    `image`, with the table's columns: for a write that needs what it set aside so far
    (LangGraph's prune: the blobs only its deleted checkpoints named)."""
    return f"(SELECT * FROM {_q(trash_name(table))} WHERE {OP} = ? AND {IMAGE} = '{image}')"


async def widen(tx: Any, table: str) -> list[str]:
    """Add to `table`'s trash (when it exists) the columns the source table gained since
    it was made (a framework's own schema migration); the columns added."""
    name = trash_name(table)
    if not await tx.table_exists(name):
        return []
    have = set(await columns(tx, name))
    added = [c for c in await columns(tx, table) if c not in have]
    for col in added:
        typ = ""
        if tx.kind == "postgres":
            typ = " " + (await tx.fetch("SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute "
                                        "WHERE attrelid = to_regclass(?) AND attname = ?", _q(table), col))[0]["t"]
        await tx.execute(f"ALTER TABLE {_q(name)} ADD COLUMN {_q(col)}{typ}")
    return added


async def free(tx: Any, table: str, op_ids: Sequence[int]) -> int:
    """Drop the rows of these ops from `table`'s trash for good (purge); returns how many."""
    if not op_ids:
        return 0
    marks = ", ".join("?" for _ in op_ids)
    return await tx.execute(f"DELETE FROM {_q(trash_name(table))} WHERE {OP} IN ({marks})", *op_ids)
