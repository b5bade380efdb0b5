"""Writes: each declared one (rewind, branch, merge, prune, delete) done and undone row for row
through the library and the CLI, each undeclared one refused, nothing written on a read-only
store.

Part of the storage contract suite (tests/formats/contract/: every format x {SQLite, Postgres}).
"""

from __future__ import annotations

import pytest

from agentctl.errors import AgentctlError
from agentctl.refs import resolve
from agentctl.storage import Capability, PruneSpec, Unsupported, open_store
from agentctl.tree import checkpoint_tree
from tests.support.contract_formats import Built, FormatCase, dump
from tests.support.contract_suite import WRITES, _cli_branch_to_merge, _ok, content, data_rows
from tests.support.format_contract import check_store
from tests.support.sampledb import cli


async def test_writes_refused_on_a_read_only_store(built):
    _, b = built
    before = await dump(b.url)
    async with open_store(b.url) as store:
        first = (await store.read_thread(b.main, 1))[0].checkpoint_id
        try:
            history = store.history()
        except Unsupported:
            return
        for call in (
            lambda: history.rewind(first),
            lambda: history.branch(first, "ro"),
            lambda: history.delete_thread(b.main),
        ):
            with pytest.raises(AgentctlError):
                await call()
    assert await dump(b.url) == before


async def _rewind(case: FormatCase, b: Built) -> None:
    before = await data_rows(case, b.url)
    for hard in (False, True) if case.hard_rewind else (False,):
        async with open_store(b.url, readonly=False) as store:
            metas = await store.read_thread(b.main, 1000)
            target = metas[1]
            want = content(case, await store.get(target.checkpoint_id))
            h = store.history()
            plan = await h.plan_rewind(target.checkpoint_id, hard=hard)
            assert [m.checkpoint_id for m in plan.moved] == [m.checkpoint_id for m in metas[2:]]
            assert await data_rows(case, b.url) == before  # a plan writes nothing
            result = await h.rewind(target.checkpoint_id, hard=hard, archive_thread=plan.archive_thread)
            assert result.op_id
            head = await store.get_latest(b.main)
            assert (head.metadata.checkpoint_id == target.checkpoint_id) != (hard in case.rewind_appends)
            assert content(case, head) == want
            if head.metadata.checkpoint_id != target.checkpoint_id:
                # the appended head's step may repeat an abandoned checkpoint's (a LangGraph
                # fork has step REF+1, as the checkpoint after REF has): @STEP names the head
                assert await resolve(store, f"{b.main}@{head.metadata.step}") == head.metadata
            await check_store(store, **_written(case))
            await h.undo()
        assert await data_rows(case, b.url) == before, f"hard={hard}"


async def _branch(case: FormatCase, b: Built) -> None:
    before = await data_rows(case, b.url)
    async with open_store(b.url, readonly=False) as store:
        source = (await store.read_thread(b.main, 1000))[1]
        want = content(case, await store.get(source.checkpoint_id))
        h = store.history()
        new = await h.branch(source.checkpoint_id, "contract")
        assert new not in b.threads
        assert content(case, await store.get_latest(new)) == want
        if case.branch_lineage:
            summary = await store.thread_summary(new)
            assert summary.branch_of == b.main and summary.branch_point == source.checkpoint_id
            assert new in [t["thread_id"] for t in (await checkpoint_tree(store, b.main))["threads"]]
        await check_store(store, **_written(case))
        await h.undo()
        assert await store.thread_summary(new) is None
    assert await data_rows(case, b.url) == before


async def _merge(case: FormatCase, b: Built) -> None:
    text = "merged from the branch"
    async with open_store(b.url, readonly=False) as store:
        head = await store.get_latest(b.main)
        branch = await store.history().branch(head.metadata.checkpoint_id, "to-merge")
    await case.append(b.url, branch, text)  # an agent goes on on the branch
    before = await data_rows(case, b.url)
    async with open_store(b.url, readonly=False) as store:
        h = store.history()
        plan = await h.plan_merge(branch, b.main)
        assert not plan.conflicts
        assert await data_rows(case, b.url) == before
        new_head = await h.merge_branch(branch, b.main)
        merged = await store.get_latest(b.main)
        assert merged.metadata.checkpoint_id == new_head
        # the branch's new message is in the merged head (a program may answer it, as
        # LangGraph's graph does, so it need not be the last one)
        assert text in [m.get("content") for m in merged.messages[-3:]]
        await check_store(store, **_written(case))
        await h.undo()
    assert await data_rows(case, b.url) == before


async def _prune(case: FormatCase, b: Built) -> None:
    spec = PruneSpec(**{k: ([b.main] if v == ["THREAD"] else v) for k, v in case.prune.items()})
    before = await data_rows(case, b.url)
    async with open_store(b.url, readonly=False) as store:
        h = store.history()
        plans = await h.plan_prune_spec(spec)
        assert plans and await data_rows(case, b.url) == before
        results = await h.prune_spec(spec)
        assert results and await data_rows(case, b.url) != before
        await check_store(store, **_gaps_allowed(case))
        await h.undo()
    assert await data_rows(case, b.url) == before


def _written(case: FormatCase) -> dict:
    """The store checks after one of agentctl's writes."""
    return dict(case.store_checks if case.written_checks is None else case.written_checks)


def _gaps_allowed(case: FormatCase) -> dict:
    """The store checks after a prune, which may leave gaps in a thread's steps."""
    return {k: v for k, v in _written(case).items() if k != "first_step"}


async def _delete(case: FormatCase, b: Built) -> None:
    before = await data_rows(case, b.url)
    async with open_store(b.url, readonly=False) as store:
        h = store.history()
        await h.delete_thread(b.main)
        assert await store.thread_summary(b.main) is None
        assert b.main not in await store.all_thread_ids()
        await check_store(store, **_written(case))
        await h.undo()
        assert await store.thread_summary(b.main) is not None
    assert await data_rows(case, b.url) == before


async def _refused(case: FormatCase, b: Built, cap: Capability) -> None:
    """An undeclared capability: the library raises Unsupported and writes nothing."""
    before = await dump(b.url)
    async with open_store(b.url, readonly=False) as store:
        first = (await store.read_thread(b.main, 1))[0].checkpoint_id
        calls = {
            Capability.REWIND: lambda h: h.rewind(first),
            Capability.BRANCH: lambda h: h.branch(first, "refused"),
            Capability.MERGE: lambda h: h.merge_branch(b.main, b.threads[-1]),
            Capability.PRUNE: lambda h: h.prune_spec(PruneSpec(threads=[b.main], keep_last=1)),
            Capability.DELETE: lambda h: h.delete_thread(b.main),
        }
        with pytest.raises(Unsupported, match="does not support"):
            await calls[cap](store.history())
    assert await dump(b.url) == before


DO = {
    Capability.REWIND: _rewind,
    Capability.BRANCH: _branch,
    Capability.MERGE: _merge,
    Capability.PRUNE: _prune,
    Capability.DELETE: _delete,
}


@pytest.mark.parametrize("cap", WRITES, ids=[c.value for c in WRITES])
async def test_write(built, cap):
    case, b = built
    async with open_store(b.url) as store:
        declared = store.can(cap)
        assert store.can(Capability.UNDO) or not declared, "a write without undo"
    if declared:
        await DO[cap](case, b)
    else:
        await _refused(case, b, cap)


def _cli_write_args(case: FormatCase, b: Built, cap: Capability, ref: str, other: str) -> list[str]:
    return {
        Capability.REWIND: ["rewind", ref, "--yes"],
        Capability.BRANCH: ["branch", ref, "cli"],
        Capability.MERGE: ["merge", other, "--into", b.main],
        Capability.PRUNE: ["prune", *[b.main if a == "THREAD" else a for a in case.prune_cli], "--yes"],
        Capability.DELETE: ["threads", "delete", b.main, "--yes"],
    }[cap]


@pytest.mark.parametrize("cap", WRITES, ids=[c.value for c in WRITES])
async def test_cli_write(built, cap):
    """A declared write exits 0 and `undo` puts every row back; an undeclared one exits
    2 with one line naming the format and the operation, and writes nothing."""
    case, b = built
    async with open_store(b.url) as store:
        declared = store.can(cap)
        undo = store.can(Capability.UNDO)
        ref = f"{b.main}@{(await store.read_thread(b.main, 2))[1].step}"
        other = b.branch or next((t for t in b.threads if t != b.main), b.main)
    if cap is Capability.MERGE and declared:
        other = await _cli_branch_to_merge(case, b)
    before_all = await dump(b.url)
    before = await data_rows(case, b.url)
    r = cli(b.url, "--no-color", *_cli_write_args(case, b, cap, ref, other))
    if not declared:
        assert r.exit_code == 2, (r.stdout, r.stderr)
        lines = [x for x in r.stderr.splitlines() if "does not support" in x]
        assert lines and case.name in lines[0], r.stderr
        assert "Traceback" not in r.stderr
        assert await dump(b.url) == before_all
        return
    _ok(r)
    assert await data_rows(case, b.url) != before
    if undo:
        _ok(cli(b.url, "--no-color", "undo"))
        assert await data_rows(case, b.url) == before
