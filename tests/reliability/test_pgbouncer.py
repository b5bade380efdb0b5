"""issue 33 item 26: Postgres behind a connection pooler (pgbouncer in transaction mode,
as the pooled URLs of Supabase, Neon and others are).

A real pgbouncer (tests/support/pgbouncer.py) in front of the rig's server; each format's
database is written by its own program straight to the server, then agentctl works on
it through the pooler: the reads print what they print straight to the server, every
write the format declares, undo and redo exit 0 and do what they do straight to the
server, and what the pooler refuses is one `agentctl:` line, exit 6.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import uuid
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest

from agentctl.storage import Capability, open_store
from tests.support import pgbouncer
from tests.support.contract_formats import CASES, NEEDLE, ON_POSTGRES, FormatCase, dump
from tests.support.rig import REPO, run_sync, unavailable
from tests.support.sampledb import cli

#: `edit` on each format: a key of its state (or message / item) and a new value
EDITS = {
    "agentos": ("k", "99"),
    "article": ("session.title", '"pooled"'),
    "langgraph": ("count", "9"),
    "openai-agents": ("content", '"pooled"'),
    "adk": ("turn", "9"),
    "agno": ("content", '"pooled"'),
}


def _start(pg_base_dsn: str, ignore: str = ""):
    if pgbouncer.find_binary() is None:
        unavailable("pgbouncer not found (apt-get install pgbouncer)")
    try:
        return pgbouncer.start(pg_base_dsn, ignore=ignore)
    except RuntimeError as exc:
        unavailable(f"pgbouncer did not start: {exc}")


@pytest.fixture(scope="session")
def bouncer(pg_base_dsn):
    """pgbouncer in transaction mode in front of the rig's server (session-wide)."""
    b = _start(pg_base_dsn)
    yield b
    b.stop()


@pytest.fixture(scope="session")
def lenient_bouncer(pg_base_dsn):
    """One that drops `default_transaction_read_only` rather than refuse it (as users
    set pgbouncer up after its refusal)."""
    b = _start(pg_base_dsn, ignore="default_transaction_read_only")
    yield b
    b.stop()


@pytest.fixture
def pooled(pg_base_dsn, bouncer):
    """A fresh database: (its DSN straight to the server, its DSN through the pooler).
    (A database, not a schema: pgbouncer 1.18 refuses `search_path` as a startup
    parameter.)"""
    import asyncpg

    name = "pgb_" + uuid.uuid4().hex[:12]

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(pg_base_dsn)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    run_sync(lambda: admin(f"CREATE DATABASE {name}"))
    parts = urlsplit(pg_base_dsn)
    yield parts._replace(path="/" + name, query="").geturl(), bouncer.dsn(name)
    run_sync(lambda: admin(f"DROP DATABASE {name} WITH (FORCE)"))


def _needs(case: FormatCase) -> None:
    for module in case.needs:
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"{module} is not installed")


def _ok(r, what) -> None:
    assert r.exit_code == 0, (what, r.exit_code, r.stdout, r.stderr)
    assert "Traceback" not in r.stdout + r.stderr, what


async def _build(name: str, direct: str):
    """The format's database written by its own program straight to the server: its
    FormatCase, Built, the main thread's checkpoints and what the format can do."""
    case = CASES[name]
    _needs(case)
    b = await case.build("postgres", direct)
    async with open_store(direct) as store:
        metas = await store.read_thread(b.main, 1000)
        can = {c: store.can(c) for c in Capability}
    return case, b, metas, can


@pytest.mark.parametrize("name", ON_POSTGRES)
async def test_reads_through_pgbouncer_print_what_they_print_straight(name, pooled):
    direct, via = pooled
    _, b, metas, _ = await _build(name, direct)
    first, last = metas[0].checkpoint_id, metas[-1].checkpoint_id
    for args in (
        ("threads", "list"),
        ("show", b.main),
        ("show", first),
        ("log", b.main),
        ("diff", first, last),
        ("search", NEEDLE),
    ):
        for extra in ((), ("--json",)):
            want = cli(direct, "--no-color", *args, *extra)
            _ok(want, args)
            for _ in range(2):  # twice: on the server connections the first run left
                got = cli(via, "--no-color", *args, *extra)
                _ok(got, args)
                assert got.stdout == want.stdout, args
    assert b.main in json.loads(cli(via, "search", NEEDLE, "--json").stdout)[0]["thread_id"]


async def _rows(case: FormatCase, url: str) -> dict:
    return await dump(url, side_tables=False, volatile=case.volatile)


@pytest.mark.parametrize("name", ON_POSTGRES)
async def test_every_write_undo_and_redo_through_pgbouncer(name, pooled):
    direct, via = pooled
    case, b, metas, can = await _build(name, direct)
    ref = f"{b.main}@{metas[1].step}"
    writes = {
        Capability.REWIND: ["rewind", ref, "--yes"],
        Capability.BRANCH: ["branch", ref, "pooled"],
        Capability.PRUNE: ["prune", *[b.main if a == "THREAD" else a for a in case.prune_cli], "--yes"],
        Capability.DELETE: ["threads", "delete", b.main, "--yes"],
    }
    key, value = EDITS[name]
    commands = [args for cap, args in writes.items() if can[cap]]
    commands.append(["edit", b.main, "--set", f"{key}={value}", "--yes"])
    assert can[Capability.UNDO]
    for args in commands:
        before = await _rows(case, direct)
        _ok(cli(via, "--no-color", *args), args)
        after = await _rows(case, direct)
        assert after != before, args
        _ok(cli(via, "--no-color", "undo"), ("undo", args))
        assert await _rows(case, direct) == before, ("undo", args)
        _ok(cli(via, "--no-color", "redo"), ("redo", args))
        assert await _rows(case, direct) != before, ("redo", args)
        _ok(cli(via, "--no-color", "undo"), ("undo again", args))
        assert await _rows(case, direct) == before, ("undo again", args)
    r = cli(via, "oplog", "--json")
    _ok(r, "oplog")
    assert json.loads(r.stdout) == json.loads(cli(direct, "oplog", "--json").stdout)
    assert len(json.loads(r.stdout)) >= 4 * len(commands)


def _agentctl(db: str, *args: str):
    """agentctl in a process of its own (asyncpg names its statements per process)."""
    r = subprocess.run(
        [sys.executable, "-m", "agentctl", "--db", db, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return SimpleNamespace(exit_code=r.returncode, stdout=r.stdout, stderr=r.stderr)


def _one_line_exit_6(r) -> str:
    assert r.exit_code == 6, (r.exit_code, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentctl: "), r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    return lines[0]


async def test_what_the_pooler_refuses_is_one_line(pooled):
    """A startup parameter pgbouncer refuses (a server setting in the DSN); and a pooler
    said not to be one (agentctl_pooler=0): one line, exit 6, nothing written."""
    direct, via = pooled
    b = await CASES["agentos"].build("postgres", direct)
    before = await dump(direct)
    for setting in ("statement_timeout=5000", "search_path=public"):
        line = _one_line_exit_6(cli(via + "?" + setting, "threads", "list"))
        assert "unsupported startup parameter: " + setting.split("=")[0] in line, line
    r = cli(via + "?agentctl_pooler=maybe", "threads", "list")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "agentctl_pooler" in r.stderr, r.stderr
    line = _one_line_exit_6(cli(via + "?agentctl_pooler=0", "--no-color", "threads", "list"))
    assert "default_transaction_read_only" in line, line
    assert await dump(direct) == before
    # A write with asyncpg's statement cache: the next run's statements meet the names
    # the last one left on the pooler's server connections.
    codes = []
    for i in range(4):
        r = _agentctl(via + "?agentctl_pooler=0", "--no-color", "branch", b.main, f"cached{i}")
        codes.append(r.exit_code)
        if r.exit_code:
            assert "agentctl_pooler=1" in _one_line_exit_6(r), r.stderr
        else:
            _ok(r, "branch")
    assert 6 in codes, codes


async def test_a_pooler_that_drops_the_read_only_setting_is_noticed(pooled, lenient_bouncer):
    """Behind a pgbouncer that drops `default_transaction_read_only` (the session would
    not be read-only) agentctl still notices the pooler: show and log, each run in a
    process of its own (asyncpg's statement names start again in each), exit 0 and
    print what they print straight to the server."""
    direct, via = pooled
    via = lenient_bouncer.dsn(urlsplit(via).path.lstrip("/"))
    b = await CASES["agentos"].build("postgres", direct)
    for args in (("show", b.main, "--json"), ("log", b.main, "--json"), ("threads", "list", "--json")):
        want = _agentctl(direct, *args)
        _ok(want, args)
        # found out, or said in the DSN (agentctl's option, Prisma's)
        for url in (via, via, via, via + "?agentctl_pooler=1", via + "?pgbouncer=true"):
            got = _agentctl(url, *args)
            _ok(got, args)
            assert got.stdout == want.stdout, args


@pytest.mark.parametrize("lenient", [False, True], ids=["refuses", "drops"])
async def test_a_read_only_session_behind_a_pooler_writes_nothing(pooled, bouncer, lenient_bouncer, lenient):
    """Behind a pooler the session is not read-only (the pooler's server sessions are
    shared): each read is a READ ONLY transaction, so a write there is refused."""
    from agentctl.errors import ReadOnlyDatabase
    from agentctl.storage.agentos.postgres import PostgresCheckpointer

    direct, via = pooled
    await CASES["agentos"].build("postgres", direct)
    if lenient:
        via = lenient_bouncer.dsn(urlsplit(via).path.lstrip("/"))
    before = await dump(direct)
    backend = PostgresCheckpointer(via, readonly=True, create=False)
    try:
        assert await backend.query("SELECT current_setting('transaction_read_only') AS ro") == [{"ro": "on"}]
        with pytest.raises(ReadOnlyDatabase):
            await backend.query("CREATE TABLE agentctl_written (a int)")
        with pytest.raises(ReadOnlyDatabase):
            await backend.query("DELETE FROM checkpoints")
    finally:
        await backend.close()
    assert await dump(direct) == before


@pytest.mark.parametrize("name", ON_POSTGRES)
async def test_merge_import_and_purge_through_pgbouncer(name, pooled, tmp_path):
    """The writes the test above leaves out, where the format has them: merge (of a
    branch made through the pooler), import (of what export wrote), undone and redone;
    then purge, which empties the trash for good."""
    direct, via = pooled
    case, b, metas, can = await _build(name, direct)

    async def undoable(args: list[str]) -> None:
        before = await _rows(case, direct)
        _ok(cli(via, "--no-color", *args), args)
        assert await _rows(case, direct) != before, args
        _ok(cli(via, "--no-color", "undo"), ("undo", args))
        assert await _rows(case, direct) == before, ("undo", args)
        _ok(cli(via, "--no-color", "redo"), ("redo", args))
        assert await _rows(case, direct) != before, ("redo", args)

    if can[Capability.MERGE]:
        r = cli(via, "branch", f"{b.main}@{metas[1].step}", "pooled", "--json")
        _ok(r, "branch")
        pooled = json.loads(r.stdout)["thread_id"]
        if (
            cli(via, "merge", b.main, "--into", pooled, "--dry-run").exit_code == 0
        ):  # main's later steps into it
            await undoable(["merge", b.main, "--into", pooled, "--strategy", "theirs", "--yes"])
        else:  # the article's store merges a branch's new messages into its source only, and
            assert name == "article"  # a branch gains messages from the app alone (its merge: test_article_*)
    if can[Capability.IMPORT]:  # a thread nothing continues from, exported, deleted, imported
        exported = tmp_path / "x.jsonl"
        r = cli(direct, "branch", f"{b.main}@{metas[1].step}", "leaf", "--json")
        _ok(r, "branch leaf")
        leaf = json.loads(r.stdout)["thread_id"]
        _ok(cli(direct, "export", leaf, "-o", str(exported)), "export")
        _ok(cli(direct, "threads", "delete", leaf, "--yes"), "delete")
        await undoable(["import", str(exported)])
    trashing = (
        ["threads", "delete", b.threads[-1], "--yes"]
        if can[Capability.DELETE]
        else ["rewind", f"{b.main}@{metas[1].step}", "--yes"]
    )
    _ok(cli(via, "--no-color", *trashing), trashing)
    dry = cli(via, "purge", "--dry-run", "--json")
    _ok(dry, "purge --dry-run")
    _ok(cli(via, "--no-color", "purge", "--yes"), "purge")
    again = cli(direct, "purge", "--dry-run", "--json")
    _ok(again, "purge --dry-run after")
    assert json.loads(dry.stdout) != json.loads(again.stdout)
    assert cli(direct, "undo").exit_code != 0 or name == "agentos"  # what purge freed is gone for good
