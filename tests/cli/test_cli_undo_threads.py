"""Undo checks only what it will touch (issue 22 item 5).

- A prune of several threads, one of which the framework wrote to since: `undo` is
  refused (one line naming the thread that moved and the `--thread` way out), and
  `undo N --thread T` restores the threads that did not move, row for row, saying which
  it left; the op stays undoable for the thread left, refused while it has moved.
- A LangGraph branch's undo deletes the branch only: it is not refused because its
  source thread moved.
"""

from __future__ import annotations

import json

import pytest

from tests.support.contract_formats import (
    append_agentos,
    append_langgraph,
    build_agentos,
    build_langgraph,
    dump,
    is_pg,
)
from tests.support.rig import run_sync
from tests.support.sampledb import cli

BUILDERS = {"agentos": (build_agentos, append_agentos), "langgraph": (build_langgraph, append_langgraph)}


@pytest.fixture(
    params=[(f, k) for f in BUILDERS for k in ("sqlite", "postgres")], ids=lambda p: f"{p[0]}-{p[1]}"
)
def db(request, tmp_path):
    fmt, kind = request.param
    if fmt == "langgraph":
        pytest.importorskip("langgraph.checkpoint.sqlite")
        if kind == "postgres":
            pytest.importorskip("langgraph.checkpoint.postgres")
    url = str(tmp_path / "db.sqlite") if kind == "sqlite" else request.getfixturevalue("pg_dsn")
    built = run_sync(lambda: BUILDERS[fmt][0](kind, url))
    return fmt, url, built


def counts(url: str) -> dict[str, int]:
    """Checkpoints per thread_id (a LangGraph thread's namespaces together)."""
    sql = "SELECT thread_id, COUNT(*) AS n FROM checkpoints GROUP BY thread_id"
    if is_pg(url):
        import asyncpg

        async def q():
            conn = await asyncpg.connect(url)
            try:
                return {r["thread_id"]: r["n"] for r in await conn.fetch(sql)}
            finally:
                await conn.close()

        return run_sync(q)
    import sqlite3

    conn = sqlite3.connect(url)
    try:
        return dict(conn.execute(sql).fetchall())
    finally:
        conn.close()


def rows_of(url: str, threads: set[str], tables: dict[str, list] | None = None) -> dict[str, list]:
    """The data tables' rows of these threads (agentctl's side tables left out)."""
    out = {}
    for table, rows in (tables or run_sync(lambda: dump(url, side_tables=False))).items():
        out[table] = [r for r in rows if any(f"('thread_id', '{t}')" in r for t in threads)]
    return out


def test_undo_of_a_prune_restores_the_threads_that_did_not_move(db):
    fmt, url, built = db
    before = counts(url)
    original = run_sync(lambda: dump(url, side_tables=False))
    r = cli(url, "prune", "--all", "--keep-last", "1", "--yes", "--no-backup")
    assert r.exit_code == 0, r.stderr
    (op,) = [o["op_id"] for o in json.loads(cli(url, "oplog", "--json").stdout) if o["kind"] == "prune"]
    pruned = {t for t, n in counts(url).items() if n < before[t]}
    assert built.main in pruned and len(pruned) >= 2
    others = sorted(pruned - {built.main})
    idle_before = rows_of(url, set(others), original)
    run_sync(lambda: BUILDERS[fmt][1](url, built.main, "the agent goes on"))  # the live thread moves
    live = counts(url)[built.main]
    after_write = run_sync(lambda: dump(url, side_tables=False))

    r = cli(url, "undo")
    assert r.exit_code == 1
    said = [line for line in r.stderr.splitlines() if line.startswith("agentctl:")]
    assert len(said) == 1 and built.main in said[0] and f"undo {op} --thread" in said[0], r.stderr
    for t in others:
        assert t in said[0]
    assert run_sync(lambda: dump(url, side_tables=False)) == after_write  # nothing changed

    r = cli(url, "undo", str(op), "--thread", built.main)  # the one that moved: refused
    assert r.exit_code == 1 and "changed" in r.stderr
    r = cli(url, "undo", str(op), "--thread", "no-such-thread")
    assert r.exit_code == 2 and "no thread 'no-such-thread'" in r.stderr

    r = cli(url, "undo", str(op), *[a for t in others[:1] for a in ("--thread", t)])
    assert r.exit_code == 0, r.stderr
    assert f"left {built.main}" in r.stdout, r.stdout
    if others[1:]:
        r = cli(url, "undo", str(op), *[a for t in others[1:] for a in ("--thread", t)])
        assert r.exit_code == 0, r.stderr
    assert rows_of(url, set(others)) == idle_before  # back row for row
    assert counts(url)[built.main] == live  # the thread left stays as the framework left it
    ops = json.loads(cli(url, "oplog", "--json").stdout)
    prune = next(o for o in ops if o["op_id"] == op)
    assert not prune["undone"] and prune["undoable"]  # still undoable for the thread left
    assert prune["details"]["restored"] == others
    line = next(x for x in cli(url, "oplog").stdout.splitlines() if x.startswith(f"{op}\t"))
    assert line.endswith(f"partly undone ({len(others)} thread(s))"), line
    r = cli(url, "undo", str(op))
    assert r.exit_code == 1 and built.main in r.stderr


def test_undo_of_a_prune_with_thread_when_nothing_moved_finishes_the_op(db):
    fmt, url, built = db
    original = run_sync(lambda: dump(url, side_tables=False))
    before = counts(url)
    assert cli(url, "prune", "--all", "--keep-last", "1", "--yes", "--no-backup").exit_code == 0
    (op,) = [o["op_id"] for o in json.loads(cli(url, "oplog", "--json").stdout) if o["kind"] == "prune"]
    pruned = sorted(t for t, n in counts(url).items() if n < before[t])
    first, rest = pruned[:1], pruned[1:]
    r = cli(url, "undo", str(op), "--thread", first[0])
    assert r.exit_code == 0, r.stderr
    r = cli(url, "undo", *[a for t in rest for a in ("--thread", t)])  # the newest op: the same prune
    assert r.exit_code == 0, r.stderr
    assert run_sync(lambda: dump(url, side_tables=False)) == original
    ops = json.loads(cli(url, "oplog", "--json").stdout)
    assert next(o for o in ops if o["op_id"] == op)["undone"]
    assert cli(url, "undo", str(op)).exit_code == 1  # already undone


def test_thread_option_is_refused_for_an_op_that_is_not_a_prune(db):
    fmt, url, built = db
    assert cli(url, "rewind", f"{built.main}~1", "--yes", "--no-backup").exit_code == 0
    r = cli(url, "undo", "--thread", built.main)
    assert r.exit_code == 2 and "prune" in r.stderr


def test_langgraph_branch_undo_while_its_source_moved(tmp_path):
    """Undo of a branch deletes the branch thread: the source thread's new checkpoints
    (LangGraph ran on it) do not stand in its way, and stay."""
    pytest.importorskip("langgraph.checkpoint.sqlite")
    url = str(tmp_path / "lg.db")
    built = run_sync(lambda: build_langgraph("sqlite", url))
    original = counts(url)
    r = cli(url, "branch", f"{built.main}~1", "try", "--json")
    assert r.exit_code == 0, r.stderr
    run_sync(lambda: append_langgraph(url, built.main, "the agent goes on"))
    moved = counts(url)[built.main]
    assert moved > original[built.main]
    r = cli(url, "undo")
    assert r.exit_code == 0, r.stderr
    assert counts(url) == {**original, built.main: moved}
