"""agentctl's writes next to the frameworks' own live writers (issue 22 item 1).

A framework's write always wins: agentctl takes its locks in the order the savers take
them (LangGraph's `put`: checkpoint_blobs, then checkpoints; ADK's `append_event`: the
session row, then events; the OpenAI SDK: the session row, then items), gives way when
it waits on a lock (a short `lock_timeout`), retries its whole transaction a few times
and otherwise exits 6 with one line, nothing changed.

The deterministic test holds a LangGraph-style transaction open across agentctl's
write (the order that deadlocked); the loop tests run a few hundred framework writes
while agentctl rewinds, prunes and undoes on the same database, then check that no
framework write failed, no row was lost, nothing is orphaned and `doctor` exits 0.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.support.rig import REPO

pytest.importorskip("langgraph")


def agentctl(db: str, *args: str) -> subprocess.Popen:
    """`agentctl --db DB ARGS` as a separate process (pipes for its output)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    return subprocess.Popen([sys.executable, "-m", "agentctl", "--db", db, *args], cwd=str(REPO), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_until_blocked(conn, pid: int, timeout: float = 20) -> None:
    """Wait until some other backend (agentctl's) waits on a lock `pid` holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))", (pid,))
            if cur.fetchone()[0]:
                return
        time.sleep(0.02)
    pytest.fail("agentctl never waited on the framework's transaction")


def test_langgraph_put_order_in_a_transaction_agentctl_writes_meanwhile(pg_dsn):
    """The issue's reproduction: a transaction upserts a checkpoint_blobs row (as
    PostgresSaver.put does first), `agentctl rewind THREAD~1 --yes` starts, then the
    transaction upserts a checkpoints row. The framework's transaction commits; agentctl
    succeeds (after waiting or a retry) or exits 6 with one line, nothing changed."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.types.json import Jsonb

    from agentctl.storage.langgraph.history import uuid6_after
    from tests.formats.test_format_langgraph import psycopg_dsn
    from tests.formats.test_langgraph_writes import loop_graph

    dsn = psycopg_dsn(pg_dsn)
    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        loop_graph(4).compile(checkpointer=saver).invoke({"n": 0, "log": []}, {"configurable": {"thread_id": "t"}})
    with psycopg.connect(dsn, autocommit=True) as watch, psycopg.connect(dsn) as fw:
        with watch.cursor() as cur:
            cur.execute("SELECT count(*) FROM checkpoints")
            before = cur.fetchone()[0]
        fw_pid = fw.info.backend_pid
        with fw.cursor() as cur:  # the framework's put, first half
            cur.execute("INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
                        "VALUES ('t', '', 'log', 'fw-1', 'msgpack', %s) ON CONFLICT DO NOTHING", (b"\x90",))
        proc = agentctl(pg_dsn, "rewind", "t~1", "--yes")
        try:
            wait_until_blocked(watch, fw_pid)
            new_id = uuid6_after(None)
            with fw.cursor() as cur:  # the second half: must not deadlock
                cur.execute(
                    "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
                    "checkpoint, metadata) VALUES ('t', '', %s, NULL, %s, %s) ON CONFLICT "
                    "(thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET checkpoint = EXCLUDED.checkpoint",
                    (new_id, Jsonb({"v": 1, "id": new_id, "channel_values": {}, "channel_versions": {}}),
                     Jsonb({"source": "loop", "step": 99})))
            fw.commit()  # raises DeadlockDetected when the framework lost
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        with watch.cursor() as cur:
            cur.execute("SELECT count(*) FROM checkpoints")
            after = cur.fetchone()[0]
    assert proc.returncode in (0, 6), (proc.returncode, err)
    assert "Traceback" not in err
    if proc.returncode == 6:
        said = [line for line in err.splitlines() if line.startswith("agentctl:")]
        assert len(said) == 1 and "DETAIL" not in err and "\\n" not in err, err
        assert after == before + 1  # the framework's row only
    else:
        assert after == before + 2, (out, err)  # the framework's row and agentctl's fork


def test_agentctl_gives_way_to_a_framework_transaction_that_stays_open(pg_dsn):
    """A framework transaction holds its row lock on checkpoint_blobs for longer than
    agentctl waits: agentctl retries, then exits 6 with one line; nothing was changed and
    the framework's transaction then commits."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    from tests.formats.test_format_langgraph import psycopg_dsn
    from tests.formats.test_langgraph_writes import loop_graph
    from tests.support.contract_formats import dump

    dsn = psycopg_dsn(pg_dsn)
    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        loop_graph(4).compile(checkpointer=saver).invoke({"n": 0, "log": []}, {"configurable": {"thread_id": "t"}})
    from tests.support.rig import run_sync

    before = run_sync(lambda: dump(pg_dsn, side_tables=False))
    with psycopg.connect(dsn) as fw:
        with fw.cursor() as cur:
            cur.execute("INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
                        "VALUES ('t', '', 'log', 'fw-1', 'msgpack', %s)", (b"\x90",))
        started = time.monotonic()
        proc = agentctl(pg_dsn, "rewind", "t~1", "--yes")
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - started
        assert run_sync(lambda: dump(pg_dsn, side_tables=False)) == before  # nothing changed (yet)
        fw.commit()
    assert proc.returncode == 6, (out, err)
    said = [line for line in err.splitlines() if line.startswith("agentctl:")]
    assert len(said) == 1 and "gave way" in said[0] and "nothing was changed" in said[0], err
    assert took < 20
    after = run_sync(lambda: dump(pg_dsn, side_tables=False))
    assert len(after["checkpoint_blobs"]) == len(before["checkpoint_blobs"]) + 1
    assert after["checkpoints"] == before["checkpoints"]
