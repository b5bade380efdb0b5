"""Undo, the op log and purge: refused after the format's program wrote, purge frees what undo
could bring back, the same wording on every format.

Part of the storage contract suite (tests/formats/contract/: every format x {SQLite, Postgres}).
"""

from __future__ import annotations

import json

import pytest

from agentctl.errors import AgentctlError
from agentctl.storage import Capability, open_store
from tests.support.contract_formats import dump
from tests.support.contract_suite import _ok, data_rows
from tests.support.sampledb import cli


@pytest.mark.needs("cap", "undo", "append")
@pytest.mark.parametrize("cap", (Capability.REWIND, Capability.BRANCH), ids=["rewind", "branch"])
async def test_undo_refused_after_the_program_wrote(built, cap):
    """After agentctl's write the format's own program writes to the thread: undo then
    refuses (it would drop or garble what the program wrote) and writes nothing."""
    case, b = built
    async with open_store(b.url, readonly=False) as store:
        target = (await store.read_thread(b.main, 1000))[1].checkpoint_id
        h = store.history()
        if cap is Capability.REWIND:
            plan = await h.plan_rewind(target)
            await h.rewind(target, archive_thread=plan.archive_thread)
            thread = b.main
        else:
            thread = await h.branch(target, "then-written")
    await case.append(b.url, thread, "written after agentctl")
    before = await dump(b.url)
    async with open_store(b.url, readonly=False) as store:
        with pytest.raises(AgentctlError):
            await store.history().undo()
    assert await dump(b.url) == before


@pytest.mark.needs("rewind", "undo")
async def test_purge_frees_what_undo_could_bring_back(built):
    """A hard rewind's rows (where the store has no --hard: a deleted thread's) wait in
    the trash: purge --dry-run lists the operation and writes nothing, purge frees them,
    then that undo is refused and writes nothing."""
    case, b = built
    async with open_store(b.url, readonly=False) as store:
        target = (await store.read_thread(b.main, 1000))[1].checkpoint_id
        h = store.history()
        op = (await (h.rewind(target, hard=True) if case.hard_rewind else h.delete_thread(b.main))).op_id
        rewound = await data_rows(case, b.url)
        everything = await dump(b.url)
        planned = await h.purge(dry_run=True)
        assert op in planned.ops and planned.rows > 0
        assert await dump(b.url) == everything
        await h.purge()
        assert await data_rows(case, b.url) == rewound
        assert not (await h.purge(dry_run=True)).ops
    everything = await dump(b.url)
    async with open_store(b.url, readonly=False) as store:
        with pytest.raises(AgentctlError):
            await store.history().undo(op)
    assert await dump(b.url) == everything


@pytest.mark.needs("branch", "undo")
async def test_undo_says_undid_on_every_format(built):
    """The undo's line (and its op summary) reads the same on every format."""
    case, b = built
    _ok(cli(b.url, "branch", b.main, "wording"))
    r = cli(b.url, "undo")
    _ok(r)
    assert r.stdout.startswith("undid operation "), r.stdout
    assert json.loads(cli(b.url, "oplog", "--json").stdout)[0]["summary"].startswith("undid operation ")


async def test_cli_undo_oplog_purge(built):
    """With nothing written yet: undo says so (exit 1), oplog and purge --dry-run exit 0;
    without the capability all three exit 2. Nothing is written either way."""
    _, b = built
    async with open_store(b.url) as store:
        undo = store.can(Capability.UNDO)
    before = await dump(b.url)
    for args, code in ((("undo",), 1), (("purge", "--dry-run"), 0), (("oplog",), 0)):
        r = cli(b.url, "--no-color", *args)
        assert "Traceback" not in r.stdout + r.stderr
        if undo:
            assert r.exit_code == code, (args, r.stdout, r.stderr)
        else:
            assert r.exit_code == 2 and "does not support" in r.stderr, (args, r.stderr)
    assert await dump(b.url) == before
