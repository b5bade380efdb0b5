"""The dry-run-equals-write suite: what `--dry-run --json` plans is what the write does.

Part of the storage contract suite (tests/formats/contract/: every format x {SQLite, Postgres}).
"""

from __future__ import annotations

import pytest

from agentctl.storage import Capability, open_store
from tests.support.contract_formats import Built, FormatCase, dump
from tests.support.contract_suite import _cli_branch_to_merge
from tests.support.sampledb import cli, cli_json


async def _rows(case: FormatCase, b: Built) -> int:
    """How many checkpoints the database holds (rows of the format's checkpoint table)."""
    return len((await dump(b.url, side_tables=False))[case.rows_table])


def _backups(b: Built) -> list[str]:
    import glob

    return [] if "://" in b.url else glob.glob(glob.escape(b.url) + ".*.bak")


PLANNED = ("rewind", "rewind-hard", "merge", "prune", "delete")


@pytest.mark.parametrize("what", PLANNED)
async def test_cli_dry_run_plan_is_what_the_write_does(built, what):
    """issue 23 item 3: for every write command with a plan, `--dry-run --json` says what
    the write then does: the same ids, archive thread and checkpoint id, and the rows
    it counts are the rows the write removes (counted in the database before and
    after). Where the format cannot do it, `--dry-run` and the write both exit 2 before
    any plan, prompt or backup, and write nothing."""
    case, b = built
    cap = {
        "rewind": Capability.REWIND,
        "rewind-hard": Capability.REWIND,
        "merge": Capability.MERGE,
        "prune": Capability.PRUNE,
        "delete": Capability.DELETE,
    }[what]
    async with open_store(b.url) as store:
        declared = store.can(cap)
        target = (await store.read_thread(b.main, 2))[1]
    ref = f"{b.main}@{target.step}"
    # a thread with what goes with it or stays (a branch, a LangGraph subgraph's namespace)
    victim = next(iter(b.branches), b.main)
    args = {
        "rewind": ["rewind", ref],
        "rewind-hard": ["rewind", ref, "--hard"],
        "prune": ["prune", *[b.main if a == "THREAD" else a for a in case.prune_cli]],
        "delete": ["threads", "delete", victim],
    }.get(what)
    if what == "merge":
        args = ["merge", await _cli_branch_to_merge(case, b) if declared else b.threads[-1], "--into", b.main]
    before_all = await dump(b.url)
    # a rewind --hard the store does not offer (FormatCase.hard_rewind) is refused likewise
    refused = "--hard is not offered" if declared else "does not support"
    if not declared or (what == "rewind-hard" and not case.hard_rewind):
        for extra in (["--dry-run"], ["--dry-run", "--json"], [] if what == "merge" else ["--yes"]):
            r = cli(b.url, "--no-color", *args, *extra)
            assert r.exit_code == 2 and refused in r.stderr, (extra, r.stdout, r.stderr)
            assert r.stdout == "", r.stdout  # no plan
        assert await dump(b.url) == before_all and not _backups(b)
        return
    dry = cli_json(b.url, *args, "--dry-run")
    assert await dump(b.url) == before_all  # a plan writes nothing
    rows = await _rows(case, b)
    done = cli_json(b.url, *args, "--yes", "--no-backup") if what != "merge" else cli_json(b.url, *args)
    gone = rows - await _rows(case, b)
    # one JSON shape per command (issue 38 item 2): the dry run's keys are the write's
    assert set(dry) == set(done) and dry["dry_run"] is True and done["dry_run"] is False, (dry, done)
    plan = dry if what == "prune" else dry["plan"]  # (prune: `plans`, each thread's)
    if what.startswith("rewind"):
        moved = [m["checkpoint_id"] for m in plan["moved"]]
        async with open_store(b.url) as store:
            head = (await store.get_latest(b.main)).metadata.checkpoint_id
        written = int(head != target.checkpoint_id)  # a fork copy, or ADK's rewind event
        if what == "rewind-hard":
            assert sorted(done["deleted"]) == sorted(moved) and gone == len(moved) - written
        else:
            assert plan["archive_thread"] == done["archive_thread"]
            assert sorted(done["moved"]) == sorted(moved) and gone == -written
    elif what == "merge":  # one new head, the step the plan said (its id is the write's)
        async with open_store(b.url) as store:
            head = (await store.get_latest(b.main)).metadata
        assert head.checkpoint_id == done["checkpoint_id"] and head.step == plan["merged"]["metadata"]["step"]
        # the id the dry run names is the write's, or the dry run says the write makes it
        if plan["checkpoint_id_at_write"]:
            assert plan["checkpoint_id"] is None and plan["merged"]["metadata"]["checkpoint_id"] is None
            cli_json(b.url, "undo")
            text = cli(b.url, "--no-color", *args, "--dry-run").stdout
            assert "writes: a new checkpoint (its id" in text, text
        else:
            assert plan["checkpoint_id"] == done["checkpoint_id"] == head.checkpoint_id
    elif what == "prune":
        planned = [m["checkpoint_id"] for p in plan["plans"] for m in p["delete"]]
        assert sum(p["delete_count"] for p in plan["plans"]) == len(planned) == gone > 0
        assert sorted(i for r in done["results"] for i in r["deleted"]) == sorted(planned)
    else:
        assert plan["checkpoints"] == gone == len(done["deleted"]) > 0
        async with open_store(b.url) as store:
            left = set(
                await (store.all_addresses() if hasattr(store, "all_addresses") else store.all_thread_ids())
            )
        assert not left & set(plan["included"]) and set(plan["branches_kept"]) <= left
