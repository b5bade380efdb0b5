"""agentctl next to a live agent: a separate process (tests/support/seed_writer.py, a writer like
the seeds': its own connection per write, the driver's default timeout, no WAL) writes
snapshots as fast as it can while agentctl lists, shows, diffs, searches, branches,
rewinds, merges and prunes the same database. Nobody sees an error, and every
checkpoint the writer committed is still there at the end, unchanged: in its thread,
in the archive thread the rewind moved it to, or in the trash of the prune."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.support.rig import REPO, SCRIPTS, SUPPORT, run_sync
from tests.support.sampledb import cli
from tests.support.seed_writer import NEEDLE, expected_messages, expected_state

_ID = re.compile(r"^ckpt-(?P<thread>live-[ab])-(?P<step>\d+)-[0-9a-f]{6}$")


class Writer:
    """The writer process and the checkpoint ids it logged as committed."""

    def __init__(self, url: str, tmp: Path):
        self.log = tmp / "committed.txt"
        self.stop_file = tmp / "stop"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(SUPPORT / "seed_writer.py"),
                url,
                "--log",
                str(self.log),
                "--stop",
                str(self.stop_file),
                "--threads",
                "live-a,live-b",
                "--max-seconds",
                "120",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def committed(self) -> list[str]:
        if not self.log.exists():
            return []
        return [line for line in self.log.read_text().splitlines() if line]

    def wait_for(self, n: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while len(self.committed()) < n:
            if self.proc.poll() is not None:
                pytest.fail(f"the writer ended early: {self.proc.communicate()}")
            if time.monotonic() > deadline:
                pytest.fail(f"the writer committed only {len(self.committed())} rows")
            time.sleep(0.02)

    def finish(self) -> tuple[int, str, str]:
        self.stop_file.touch()
        out, err = self.proc.communicate(timeout=120)
        return self.proc.returncode, out, err


def ok(url: str, *args: str, codes=(0,)) -> object:
    r = cli(url, *args)
    assert r.exit_code in codes, (args, r.exit_code, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    return json.loads(r.stdout) if "--json" in args else r.stdout


def rows_sqlite(path: str, table: str) -> list[dict]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return [
            dict(r)
            for r in conn.execute(
                f"SELECT thread_id, checkpoint_id, parent_id, step, messages_blob, state_blob FROM {table}"
            )
        ]
    finally:
        conn.close()


async def rows_postgres(dsn: str, table: str) -> list[dict]:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        return [
            dict(r)
            for r in await conn.fetch(
                "SELECT thread_id, checkpoint_id, parent_id, step, messages_blob::text AS messages_blob, "
                f"state_blob::text AS state_blob FROM {table}"
            )
        ]
    finally:
        await conn.close()


def read_rows(url: str, table: str) -> dict[str, dict]:
    got = (
        run_sync(lambda: rows_postgres(url, table)) if url.startswith("postgres") else rows_sqlite(url, table)
    )
    return {r["checkpoint_id"]: r for r in got}


@pytest.fixture
def fast_dir(tmp_path):
    """A directory in memory (tmpfs) when there is one. On a disk every commit of the
    writer waits for fsync (about 100 writes a second here) and, in rollback-journal
    mode, readers wait for those commits: correct, but the test would take a minute.
    In memory the writer is CPU-bound and writes many times faster."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    d = Path(tempfile.mkdtemp(prefix="agentctl-live-", dir=shm))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgres"])
def live_url(request, fast_dir) -> str:
    if request.param == "postgres":
        return request.getfixturevalue("pg_dsn")
    return str(fast_dir / "agent.db")  # the writer creates it: the seeds' rollback journal


def test_agentctl_next_to_a_live_writer(live_url, tmp_path):
    url = live_url
    writer = Writer(url, tmp_path)
    try:
        writer.wait_for(40)
        started = len(writer.committed())

        # reads while rows arrive
        threads = {t["thread_id"] for t in ok(url, "threads", "list", "--json")}
        assert {"live-a", "live-b"} <= threads
        assert ok(url, "log", "live-a", "--json")
        assert ok(url, "show", "live-a", "--json")["metadata"]["thread_id"] == "live-a"
        ok(url, "diff", "live-a~1", "live-a", "--json")
        ok(url, "diff", "live-a~3", "live-a", "--patch")
        assert ok(url, "search", NEEDLE, "--json")
        ok(url, "tree", "live-a", "--json")
        ok(url, "stats", "--json")
        ok(url, "doctor", "--json", codes=(0, 5))
        ok(url, "export", "live-b")

        # writes through the engine while rows arrive
        branch = ok(url, "branch", "live-a~2", "try", "--json")["thread_id"]
        rewind = ok(url, "rewind", "live-a~5", "--yes", "--json")
        archive = rewind["archive_thread"]
        assert archive and rewind["moved"]
        merged = ok(url, "merge", branch, "--into", "live-a", "--strategy", "theirs", "--json")
        # (the branch copies a row live-a still descends from: usually nothing to merge)
        wrote_merge = not merged.get("up_to_date", False)
        pruned = ok(url, "prune", "live-b", "--keep-last", "3", "--yes", "--json")
        deleted = [cid for res in pruned["results"] for cid in res["deleted"]]
        assert deleted

        # and reads again
        ok(url, "threads", "list", "--json")
        ok(url, "log", "live-a", "--graph", "--json")
        ok(url, "show", "live-b~1", "--json")
        ok(url, "oplog", "--json")
        during = len(writer.committed()) - started
    finally:
        code, out, err = writer.finish()
    assert (code, err) == (0, ""), err
    assert during > 0, "the writer wrote nothing while agentctl worked"

    committed = writer.committed()
    present = read_rows(url, "checkpoints")
    # the journal's trash holds images of the rows the ops changed: those gone are the prune's
    trash = {cid: r for cid, r in read_rows(url, "agentctl_trash_checkpoints").items() if cid not in present}
    assert set(deleted) == set(trash)  # the prune's rows, and only they, are in the trash
    for cid in committed:
        m = _ID.match(cid)
        assert m, cid
        thread, step = m["thread"], int(m["step"])
        row = present.get(cid) or trash.get(cid)
        assert row is not None, f"{cid}, committed by the writer, is gone"
        if cid in trash:
            assert cid not in present and thread == "live-b"
        else:
            assert row["thread_id"] in (thread, archive), (cid, row["thread_id"])
            if row["thread_id"] == archive:
                assert cid in rewind["moved"]
        assert row["step"] == step
        assert json.loads(row["messages_blob"]) == expected_messages(thread, step)
        assert json.loads(row["state_blob"]) == expected_state(thread, step)
    # nothing else came from nowhere: the other rows are agentctl's own (branch, merge)
    theirs = set(present) - set(committed)
    assert all(present[c]["thread_id"] in (branch, "live-a") for c in theirs), theirs
    assert len(theirs) == len(ok(url, "log", branch, "--all", "--json")) + wrote_merge  # + a merge
    if not url.startswith("postgres"):
        assert not os.path.exists(url + "-journal") or os.path.getsize(url + "-journal") == 0


def test_a_row_an_agent_writes_during_a_rewind_is_not_moved_unrecorded(pg_dsn, tmp_path):
    """Deterministically, the race the live test can only hope to hit: rewind paused
    inside its transaction (tests/scripts/paused_agentctl.py) just before it moves rows; an
    agent then writes a new head. The agent waits for the rewind (on SQLite BEGIN
    IMMEDIATE sees to that; on Postgres the engine's table lock), so the rewind moves
    exactly the rows it recorded, and the agent's row stays in its thread."""
    import asyncio

    import asyncpg

    from tests.support.seed_writer import init_postgres, snapshot, write_postgres

    async def seed() -> list[str]:
        await init_postgres(pg_dsn)
        ids, parent = [], None
        for step in range(1, 7):
            cp = snapshot("live-a", step, parent)
            await write_postgres(pg_dsn, cp)
            ids.append(parent := cp["checkpoint_id"])
        return ids

    ids = run_sync(seed)
    ready, resume = tmp_path / "ready", tmp_path / "resume"
    proc = subprocess.Popen(
        [
            sys.executable,
            str(SCRIPTS / "paused_agentctl.py"),
            str(ready),
            "before-first-change",
            "--",
            "--db",
            pg_dsn,
            "rewind",
            ids[1],
            "--yes",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "AGENTCTL_TEST_RESUME_FILE": str(resume)},
    )
    deadline = time.monotonic() + 120
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the rewind did not reach its pause: {proc.communicate()}")
        time.sleep(0.02)
    agent_row = snapshot("live-a", 7, ids[-1])

    async def agent_writes_meanwhile() -> bool:
        """The agent's write; True when it had to wait for the rewind's transaction."""
        monitor = await asyncpg.connect(pg_dsn)
        try:
            task = asyncio.ensure_future(write_postgres(pg_dsn, agent_row))
            waiting = False
            while not task.done() and not waiting:
                waiting = await monitor.fetchval(
                    "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted "
                    "AND relation = to_regclass('checkpoints'))"
                )
                await asyncio.sleep(0.02)
            resume.touch()  # let the rewind go on (and commit)
            await asyncio.wait_for(task, 120)
            return waiting
        finally:
            await monitor.close()

    waited = run_sync(agent_writes_meanwhile)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    result = json.loads(out)
    assert result["moved"] == ids[2:]
    rows = read_rows(pg_dsn, "checkpoints")
    archive = sorted((r["step"], c) for c, r in rows.items() if r["thread_id"] == result["archive_thread"])
    assert [c for _, c in archive] == ids[2:], "rows moved that the rewind did not record"
    assert rows[agent_row["checkpoint_id"]]["thread_id"] == "live-a"
    assert waited
