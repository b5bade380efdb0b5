"""Reads: detection, the read invariants, refs, the tree, following another writer, the local
file, and every CLI read command.

Part of the storage contract suite (tests/formats/contract/: every format x {SQLite, Postgres}).
"""

from __future__ import annotations

import json

import pytest

from agentctl.errors import AmbiguousReference, NotFoundError
from agentctl.refs import resolve
from agentctl.storage import Capability, detect, formats, open_store
from agentctl.tree import checkpoint_tree
from tests.support.contract_formats import CASES, NEEDLE, Built, dump
from tests.support.contract_suite import _ok
from tests.support.format_contract import check_step_refs, check_store
from tests.support.sampledb import cli


def test_every_format_has_a_case_and_its_flags_agree_with_its_spec():
    """Every store is in CASES (the one list); what a case says the store lacks is what
    its format declares: Postgres (`dialects`), writes (a History)."""
    specs = {f.name: f for f in formats()}
    assert sorted(CASES) == sorted(specs)
    for name, case in CASES.items():
        spec = specs[name]
        assert case.writes == bool(spec.history) == spec.can(Capability.REWIND), name
        assert case.postgres == spec.can(Capability.READ, "postgres"), name
        assert case.append is not None or case.no_append, f"{name}: say why it has no append"


async def test_detection(built):
    case, b = built
    assert (await detect(b.url)).name == case.name
    async with open_store(b.url) as store:
        assert store.format.name == case.name
    data = json.loads(cli(b.url, "formats", "--json").stdout)
    assert data["database"]["format"] == case.name
    assert case.name in [f["name"] for f in data["formats"]]


async def test_forcing_a_format(built, monkeypatch):
    """--format (and AGENTCTL_FORMAT) NAME: the right one reads; any other exits 6 with
    one line, no traceback, nothing written."""
    case, b = built
    before = await dump(b.url)
    for name in CASES:
        r = cli(b.url, "--format", name, "threads", "list", "--json")
        if name == case.name:
            _ok(r)
            assert {t["thread_id"] for t in json.loads(r.stdout)} >= set(b.threads)
        else:
            assert r.exit_code == 6 and "Traceback" not in r.stderr, (name, r.exit_code, r.stderr)
    r = cli(b.url, "threads", "list", "--json", env={"AGENTCTL_FORMAT": case.name})
    _ok(r)
    assert await dump(b.url) == before


async def test_read_invariants(built):
    case, b = built
    async with open_store(b.url) as store:
        await check_store(store, **case.store_checks)
        assert set(b.threads) <= set(await store.all_thread_ids())
        for source, branch in b.branches.items():
            assert (await store.thread_summary(branch)).branch_of == source
            assert branch in [m.thread_id for m in await store.branches_of([source])]


async def test_refs(built):
    case, b = built
    async with open_store(b.url) as store:
        metas = await store.read_thread(b.main, 1000)
        # (the write tests' thread has 3; CrewAI's replay store holds its last kickoff's 2 tasks)
        assert len(metas) >= (3 if case.writes else 2)
        for m in metas:
            assert await resolve(store, m.checkpoint_id) == m
        # THREAD~N: N parents up the head's line (all of a linear thread; CrewAI's main
        # thread has a root per fresh kickoff)
        line, by_id = [metas[-1]], {m.checkpoint_id: m for m in metas}
        while line[-1].parent_checkpoint_id in by_id:
            line.append(by_id[line[-1].parent_checkpoint_id])
        assert len(line) >= 2 and (case.store_checks.get("linear", True) is False or line == metas[::-1])
        assert await resolve(store, b.main) == line[0]
        assert await resolve(store, f"{b.main}~1") == line[1]
        assert await resolve(store, f"{b.main}~") == line[1]
        assert await resolve(store, f"{b.main}~{len(line) - 1}") == line[-1]
        for m in metas:
            assert await resolve(store, f"{b.main}@{m.step}") == m
        for m in metas:  # a prefix: unique, or ambiguous naming its candidates
            prefix = m.checkpoint_id[:-1]
            if not prefix or await store.thread_summary(prefix) is not None:
                continue
            found = await store.find_checkpoint_ids(prefix)
            if found == [m.checkpoint_id]:
                assert await resolve(store, prefix) == m
            else:
                with pytest.raises(AmbiguousReference):
                    await resolve(store, prefix)


@pytest.mark.needs("rewind", "append")
async def test_step_ref_after_a_fork_names_the_head_line(built):
    """issue 33.23: x0 -> x1 -> x2 (abandoned by a rewind to x1) and the newer line
    x1 -> y2 -> y3 (the head): THREAD@2 is y2, the head line's, not the oldest row at
    the step. Where a format keeps the abandoned checkpoints in the thread (LangGraph's
    fork), the step has both and the newer one is named; every step checked as the
    README's rule says (check_step_refs)."""
    case, b = built

    async def rewind_and_append(target: str, *texts: str) -> list:
        async with open_store(b.url, readonly=False) as store:
            h = store.history()
            plan = await h.plan_rewind(target)
            await h.rewind(target, archive_thread=plan.archive_thread)
        for text in texts:
            await case.append(b.url, b.main, text)
        async with open_store(b.url) as store:
            metas = await store.read_thread(b.main, 1000)
            by_id = {m.checkpoint_id: m for m in metas}
            line, cur = [], metas[-1]
            while cur is not None and cur not in line:
                line.append(cur)
                cur = by_id.get(cur.parent_checkpoint_id) if cur.parent_checkpoint_id else None
            shared = [m for m in line if len([c for c in metas if c.step == m.step]) > 1]
            for m in shared:  # the head line's, whether the newer or the older at its step
                assert await resolve(store, f"{b.main}@{m.step}") == m, m.step
            await check_step_refs(store, b.main, metas)
            return shared

    async with open_store(b.url) as store:
        x = await store.read_thread(b.main, 1000)
    first = await rewind_and_append(x[1].checkpoint_id, "y2", "y3")  # the head line's is the newer
    assert bool(first) == (case.name == "langgraph"), [m.step for m in first]
    if first:  # and back onto the abandoned x2: a third line forks off x1
        assert await rewind_and_append(x[2].checkpoint_id, "z")


async def test_refs_that_name_nothing(built):
    _, b = built
    async with open_store(b.url) as store:
        n = await store.count(b.main)
        last = (await store.read_thread(b.main, 1, descending=True))[0].step
        for ref in ("no-such-checkpoint-zz", f"{b.main}~{n}", f"{b.main}@{last + 1000}", "no-such-thread@1"):
            with pytest.raises(NotFoundError):
                await resolve(store, ref)


async def test_tree(built):
    _, b = built
    async with open_store(b.url) as store:
        tree = await checkpoint_tree(store, b.main)
        threads = [t["thread_id"] for t in tree["threads"]]
        assert threads[0] == b.main
        if b.branch is not None:
            assert b.branch in threads
        for source, branch in b.branches.items():
            assert branch in [t["thread_id"] for t in (await checkpoint_tree(store, source))["threads"]]
        ids = {n["id"] for n in tree["nodes"]}
        for t in threads:
            assert {m.checkpoint_id for m in await store.read_thread(t, 1000)} <= ids
        assert tree["total_checkpoints"] == len(ids)
        for e in tree["edges"]:
            assert e["from"] in ids and e["to"] in ids


@pytest.mark.needs("follow", "append")
async def test_follow_sees_another_writer(built):
    """FOLLOW: the change token moves when the format's own program writes a step."""
    case, b = built
    async with open_store(b.url) as store:
        everything, thread = await store.change_token(None), await store.change_token(b.main)
    await case.append(b.url, b.main, "one more step")
    async with open_store(b.url) as store:
        assert await store.change_token(None) != everything
        assert await store.change_token(b.main) != thread
        head = await store.get_latest(b.main)
        assert "one more step" in json.dumps(head.messages, ensure_ascii=False)


async def test_the_store_names_its_local_file(built):
    """`Store.local_file`: the database's file on SQLite (what `backup` copies), None on
    Postgres; `agentctl.storage.local_file(url)` says the same before a store is open."""
    import os

    from agentctl.storage import local_file

    _, b = built
    async with open_store(b.url) as store:
        if b.url.startswith("postgres"):
            assert store.local_file is None
        else:
            assert store.local_file is not None and os.path.samefile(store.local_file, b.url)
        assert local_file(b.url) == store.local_file


async def test_cli_reads(built):
    _, b = built
    async with open_store(b.url) as store:
        metas = await store.read_thread(b.main, 1000)
        can = {c: store.can(c) for c in Capability}
    first, last = metas[0].checkpoint_id, metas[-1].checkpoint_id
    other = await _other_head(b)
    commands = [
        (("threads", "list"), True),
        (("threads", "show", b.main), True),
        (("log", b.main), True),
        (("log", b.main, "--graph"), False),
        (("show", b.main), True),
        (("show", f"{b.main}@{metas[1].step}"), True),
        (("diff", first, last), True),
        (("diff", last, other), True),
        (("tree", b.main), True),
        (("search", NEEDLE), True),
        (("stats",), True),
        (("doctor",), True),
        (("oplog",), True),
    ]
    needs = {"stats": Capability.STATS, "doctor": Capability.DOCTOR, "oplog": Capability.UNDO}
    for args, has_json in commands:
        cap = needs.get(args[0])
        for extra in ((), ("--json",)) if has_json else ((),):
            r = cli(b.url, "--no-color", *args, *extra)
            if cap is not None and not can[cap]:
                assert r.exit_code == 2 and "does not support" in r.stderr, (args, r.stderr)
                continue
            _ok(r, (0, 5) if args[0] == "doctor" else (0,))
            if extra:
                json.loads(r.stdout)
    r = cli(b.url, "--no-color", "search", NEEDLE, "--json")
    assert b.main in r.stdout
    rows = json.loads(cli(b.url, "threads", "list", "--json").stdout)
    keys = {"thread_id", "checkpoints", "head_step", "head_checkpoint_id", "updated_at", "branch_of"}
    assert all(keys <= set(row) for row in rows)
    assert {row["thread_id"] for row in rows} >= set(b.threads)
    main = next(row for row in rows if row["thread_id"] == b.main)
    assert (main["checkpoints"], main["head_checkpoint_id"]) == (len(metas), last)
    log = json.loads(cli(b.url, "log", b.main, "--json").stdout)
    assert sorted(e["checkpoint_id"] for e in _entries(log)) == sorted(m.checkpoint_id for m in metas)
    shown = json.loads(cli(b.url, "show", first, "--json").stdout)
    assert json.dumps(shown, sort_keys=True) == json.dumps(
        head_dict := await _cp_dict(b, first), sort_keys=True
    ), head_dict
    exported = cli(b.url, "export", b.main)
    _ok(exported)
    assert [json.loads(x)["metadata"]["checkpoint_id"] for x in exported.stdout.splitlines()] == [
        m.checkpoint_id for m in metas
    ]


def _entries(log):
    return log if isinstance(log, list) else log.get("checkpoints", log.get("entries", []))


async def _cp_dict(b: Built, cid: str) -> dict:
    async with open_store(b.url) as store:
        return json.loads(json.dumps((await store.get(cid)).to_dict(), default=str))


async def _other_head(b: Built) -> str:
    """Another thread's head (the main thread's first checkpoint where it is alone)."""
    async with open_store(b.url) as store:
        other = next((t for t in b.threads if t != b.main), None)
        if other is None:
            return (await store.read_thread(b.main, 1))[0].checkpoint_id
        return (await store.get_latest(other)).metadata.checkpoint_id
