"""The AgentOS format's doctor checks: duplicate steps, parents that do not exist, JSON
that does not parse, parent cycles, and the indexes the reads want (`fix_indexes`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentctl.storage.agentos.rows import DIALECT_INDEXES, INDEXES, index_sql
from agentctl.storage.contract import Problem
from agentctl.storage.sqlutil import in_chunks
from agentctl.storage.textindex import search_index_problems

if TYPE_CHECKING:
    from agentctl.storage.agentos.protocols import Checked

EXPECTED_INDEXES = tuple(name for name, _ in INDEXES)


async def problems(backend: Checked, limit: int = 100) -> list[Problem]:
    """Every finding, errors first, then warnings (missing indexes)."""
    out: list[Problem] = []
    for d in await backend.duplicate_steps(limit):
        out.append(
            Problem(
                "error",
                "duplicate_steps",
                d["thread_id"],
                f"step {d['step']} occurs {d['count']} times",
                "duplicate-step",
                d,
            )
        )
    for d in await backend.orphan_parents(limit):
        out.append(
            Problem(
                "error",
                "orphan_parents",
                d["thread_id"],
                f"{d['checkpoint_id']}: parent {d['parent_id']} does not exist",
                "orphan-parent",
                d,
            )
        )
    for d in await backend.invalid_json(limit):
        out.append(
            Problem(
                "error",
                "invalid_json",
                d["checkpoint_id"],
                f"{d['column']}: {d['reason']}",
                "invalid-json",
                d,
            )
        )
    for cycle in await find_cycles(backend, limit):
        out.append(
            Problem(
                "error",
                "cycles",
                cycle[0],
                " -> ".join(cycle + [cycle[0]]) + " (each the parent of the one before)",
                "cycle",
                cycle,
            )
        )
    for note in await schema_notes(backend):
        out.append(Problem("warning", "schema", "", note, "warning", note))
    out.extend(await search_index_problems(backend))
    return out


async def find_cycles(backend: Checked, limit: int = 20, page: int = 50_000) -> list[list[str]]:
    """Parent chains that loop back on themselves (each cycle once), as checkpoint ids.

    The parent links are read as pairs of row ids (a join on the checkpoint_id index,
    paged by row id), so memory holds integers, not every id string."""
    parent: dict[int, int] = {}
    last = -1
    while True:
        rows = await backend._fetch(
            "SELECT c.id AS child, p.id AS parent FROM checkpoints c "
            "JOIN checkpoints p ON p.checkpoint_id = c.parent_id "
            "WHERE c.id > ? ORDER BY c.id LIMIT ?",
            last,
            page,
        )
        for r in rows:
            parent[r["child"]] = r["parent"]
        if len(rows) < page:
            break
        last = rows[-1]["child"]
    done: dict[int, int] = {}  # 1 = on the path being walked, 2 = finished
    cycles: list[list[int]] = []
    for start in parent:
        if start in done:
            continue
        path: list[int] = []
        node: int | None = start
        while node is not None and node not in done:
            done[node] = 1
            path.append(node)
            node = parent.get(node)
        if node is not None and done[node] == 1:  # came back onto this path
            cycles.append(path[path.index(node) :])
        for n in path:
            done[n] = 2
        if len(cycles) >= limit:
            break
    if not cycles:
        return []
    wanted = sorted({n for c in cycles for n in c})
    names: dict[int, str] = {}
    for ph, chunk in in_chunks(wanted):
        for r in await backend._fetch(
            f"SELECT id, checkpoint_id FROM checkpoints WHERE id IN ({ph})", *chunk
        ):
            names[r["id"]] = r["checkpoint_id"]
    return [[names[n] for n in c] for c in cycles]


async def index_names(backend: Checked) -> set[str]:
    if backend.kind == "sqlite":
        rows = await backend._fetch(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'checkpoints'"
        )
    else:
        rows = await backend._fetch(
            "SELECT indexname AS name FROM pg_indexes WHERE tablename = 'checkpoints' "
            "AND schemaname = current_schema()"
        )
    return {r["name"] for r in rows}


async def schema_notes(backend: Checked) -> list[str]:
    """What differs from the format's schema and only slows things down (missing indexes)."""
    have = await index_names(backend)
    return [f"index {name} is missing (reads are slower)" for name in EXPECTED_INDEXES if name not in have]


def index_ddl() -> dict[str, str]:
    """The indexes --fix-indexes creates, by name: the format's, and idx_created_at, which
    the format's Postgres variant has and which on SQLite lets `threads list` walk the
    newest rows instead of every thread's head (bench/README.md)."""
    return {name: index_sql(name, columns) for name, columns in DIALECT_INDEXES["postgres"]}


async def fix_indexes(backend: Checked) -> list[str]:
    """Create the missing indexes of index_ddl() in one transaction; their names."""
    have = await index_names(backend)
    missing = {name: ddl for name, ddl in index_ddl().items() if name not in have}
    if missing:
        async with backend.transaction() as tx:
            for ddl in missing.values():
                await tx.execute(ddl)
    return list(missing)
