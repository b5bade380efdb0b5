"""Python LangGraph's PostgresSaver in a schema other than `public` (issue 35 item 3): the
real langgraph-checkpoint-postgres writes its tables in a schema (libpq's
`options=-csearch_path=SCHEMA`); agentctl, given `?search_path=SCHEMA` in the DSN, reads
that schema, rewinds a thread there (its journal in the same schema) and undoes it;
LangGraph then resumes from agentctl's checkpoint as from its own replay. `public` and
another LangGraph schema in the same database are left as they were."""

from __future__ import annotations

import json
import uuid

import pytest

pytest.importorskip("langgraph.checkpoint.postgres")

from langgraph.checkpoint.postgres import PostgresSaver  # noqa: E402

from tests.formats.test_langgraph_writes import at_step, cfg, ids_of, loop_graph, new_states, strip_ids  # noqa: E402
from tests.support.contract_formats import dump, psycopg_dsn  # noqa: E402
from tests.support.rig import pg_execute, run_sync, with_search_path  # noqa: E402
from tests.support.sampledb import cli, cli_json  # noqa: E402


@pytest.fixture
def schemas(pg_base_dsn):
    """Two fresh schemas (neither `public`) in the rig's database, dropped afterwards."""
    names = [f"agents_{uuid.uuid4().hex[:10]}" for _ in range(2)]
    pg_execute(pg_base_dsn, *(f"CREATE SCHEMA {n}" for n in names))
    yield pg_base_dsn, names
    pg_execute(pg_base_dsn, *(f"DROP SCHEMA {n} CASCADE" for n in names))


def _tables(base: str) -> set[tuple[str, str]]:
    async def go() -> set[tuple[str, str]]:
        import asyncpg

        conn = await asyncpg.connect(base)
        try:
            return {
                (r[0], r[1])
                for r in await conn.fetch(
                    "SELECT table_schema, table_name FROM information_schema.tables "
                    "WHERE table_name LIKE 'checkpoint%' OR table_name LIKE 'agentctl%'"
                )
            }
        finally:
            await conn.close()

    return run_sync(go)


def test_a_python_langgraph_schema_read_written_and_resumed(schemas):
    base, (mine, other) = schemas
    url, theirs = with_search_path(base, mine), with_search_path(base, other)
    public_before = {t for t in _tables(base) if t[0] == "public"}
    with (
        PostgresSaver.from_conn_string(psycopg_dsn(url)) as saver,
        PostgresSaver.from_conn_string(psycopg_dsn(theirs)) as other_saver,
    ):
        saver.setup()
        other_saver.setup()
        graph = loop_graph(5).compile(checkpointer=saver)
        graph.invoke({"n": 0, "log": []}, cfg("t1"))
        loop_graph(3).compile(checkpointer=other_saver).invoke({"n": 0, "log": []}, cfg("o1"))
        assert {t for t in _tables(base) if t[1] == "checkpoints"} >= {
            (mine, "checkpoints"),
            (other, "checkpoints"),
        }

        # reads: the schema's threads alone, the checkpoints LangGraph has
        assert cli_json(url, "formats")["database"]["format"] == "langgraph"
        assert [t["thread_id"] for t in cli_json(url, "threads", "list")] == ["t1"]
        assert cli_json(url, "threads", "list")[0]["checkpoints"] == len(ids_of(graph, "t1"))
        log = cli_json(url, "log", "t1")
        assert {e["checkpoint_id"] for e in (log if isinstance(log, list) else log["checkpoints"])} == ids_of(
            graph, "t1"
        )

        # a write: rewind to step 2, as one undoable op; its journal in the same schema
        other_rows = run_sync(lambda: dump(theirs))
        ref = at_step(graph, "t1", 2)
        ref_id = ref.config["configurable"]["checkpoint_id"]
        rows = run_sync(lambda: dump(url, side_tables=False))
        r = cli(url, "rewind", ref_id, "--yes", "--json")
        assert r.exit_code == 0, r.stderr
        fork_id = json.loads(r.stdout)["checkpoint_id"]
        journal = {t for t in _tables(base) if t[1].startswith("agentctl")}
        assert journal and {s for s, _ in journal} == {mine}, journal

        # LangGraph sees agentctl's fork as the head and resumes from it as from its own replay
        head = graph.get_state(cfg("t1"))
        assert head.config["configurable"]["checkpoint_id"] == fork_id
        assert strip_ids(head.values) == strip_ids(ref.values) and head.next == ref.next
        before = ids_of(graph, "t1")
        ours = graph.invoke(None, cfg("t1"))
        ours_states = new_states(graph, "t1", before)
        before = ids_of(graph, "t1")
        replay = graph.invoke(None, cfg("t1", ref_id))
        assert strip_ids(ours) == strip_ids(replay) and ours["n"] == 5
        assert [(strip_ids(ref.values), tuple(ref.next))] + ours_states == new_states(graph, "t1", before)

        # undo of the rewind (after LangGraph wrote on: refused, nothing changed)
        assert cli(url, "undo").exit_code != 0
        assert run_sync(lambda: dump(theirs)) == other_rows
        assert {t for t in _tables(base) if t[0] == "public"} == public_before

        # on a fresh run of the same thread: rewind then undo gives every row back
        graph.invoke({"n": 0, "log": []}, cfg("t2"))
        rows = run_sync(lambda: dump(url, side_tables=False))
        assert cli(url, "rewind", "t2@2", "--yes").exit_code == 0
        assert run_sync(lambda: dump(url, side_tables=False)) != rows
        assert cli(url, "undo").exit_code == 0
        assert run_sync(lambda: dump(url, side_tables=False)) == rows
        assert run_sync(lambda: dump(theirs)) == other_rows
