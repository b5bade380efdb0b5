"""The storage contract suite: the same tests on every format × {SQLite, Postgres}.

Each pair gets a small database written by the format's own program
(tests/support/contract_formats.py). The tests ask the store what it can do
(`store.can(cap)`): a declared capability is exercised (and undone, every table row for
row); an undeclared one must be refused (`Unsupported`; the CLI exits 2 with "does not
support" and writes nothing). A format that starts declaring a capability is therefore
tested by this module without a change here. What legitimately differs between formats
is data in the builders' `FormatCase`, not branches on format names.
"""

from __future__ import annotations

import importlib.util
import json

import pytest
from tests.support.format_contract import check_step_refs, check_store
from tests.support.rig import REPO
from tests.support.sampledb import cli, cli_json
from tests.support.contract_formats import (
    CASES,
    NEEDLE,
    WIDE,
    Built,
    FormatCase,
    copy_sample,
    dump,
)

from agentctl.errors import AgentctlError, AmbiguousReference, NotFoundError
from agentctl.model import Checkpoint
from agentctl.refs import resolve
from agentctl.storage import (
    Capability,
    Problem,
    PruneSpec,
    Unsupported,
    detect,
    formats,
    open_store,
)
from agentctl.tree import checkpoint_tree

KINDS = ("sqlite", "postgres")
PAIRS = [(name, kind) for name in CASES for kind in KINDS]
WRITES = (Capability.REWIND, Capability.BRANCH, Capability.MERGE, Capability.PRUNE, Capability.DELETE)


#: the formats whose framework cannot write here (CrewAI needs a SQLite newer than this
#: Python's: it runs in a venv of its own, tests/support/crewairig.py), with the suites
#: that prove them instead
OWN_SUITES = {"crewai": "tests/formats/test_crewai_writes.py", "crewai-flows": "tests/formats/test_crewai_writes.py",
              "crewai-replay": "tests/formats/test_format_crewai.py"}


def test_every_format_has_a_builder():
    assert sorted([*CASES, *OWN_SUITES]) == sorted(f.name for f in formats())
    assert all((REPO / path).exists() for path in OWN_SUITES.values())


def _needs(case: FormatCase) -> None:
    for module in case.needs:
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"{module} is not installed")
        pytest.importorskip(module)


@pytest.fixture(params=PAIRS, ids=[f"{n}-{k}" for n, k in PAIRS])
async def built(request, tmp_path) -> tuple[FormatCase, Built]:
    name, kind = request.param
    case = CASES[name]
    _needs(case)
    if kind == "sqlite":
        return case, await request.getfixturevalue("sqlite_builds").copy(case, tmp_path / "db.sqlite")
    return case, await case.build(kind, request.getfixturevalue("pg_dsn"))


def content(case: FormatCase, cp: Checkpoint):
    return case.content(cp)


async def data_rows(case: FormatCase, url: str) -> dict:
    """The format's own tables, row for row (agentctl's side tables left out)."""
    return await dump(url, side_tables=False, volatile=case.volatile)


# ---- detection and reads -----------------------------------------------------------------


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
    _, b = built
    async with open_store(b.url) as store:
        metas = await store.read_thread(b.main, 1000)
        assert len(metas) >= 3
        for m in metas:
            assert await resolve(store, m.checkpoint_id) == m
        assert await resolve(store, b.main) == metas[-1]
        assert await resolve(store, f"{b.main}~1") == metas[-2]
        assert await resolve(store, f"{b.main}~") == metas[-2]
        assert await resolve(store, f"{b.main}~{len(metas) - 1}") == metas[0]
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


async def test_step_ref_after_a_fork_names_the_head_line(built):
    """issue 33.23: x0 -> x1 -> x2 (abandoned by a rewind to x1) and the newer line
    x1 -> y2 -> y3 (the head): THREAD@2 is y2, the head line's, not the oldest row at
    the step. Where a format keeps the abandoned checkpoints in the thread (LangGraph's
    fork), the step has both and the newer one is named; every step checked as the
    README's rule says (check_step_refs)."""
    case, b = built
    if case.append is None:
        pytest.skip("the format's program writes no more steps here")
    if not next(f for f in formats() if f.name == case.name).can(Capability.REWIND):
        pytest.skip(f"{case.name} does not declare rewind")

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


async def test_search(built):
    _, b = built
    async with open_store(b.url) as store:
        store.last_search_path = ""
        hits = await store.search(NEEDLE)
        assert hits and b.main in {h.thread_id for h in hits}
        assert store.last_search_path in ("fts", "scan")
        assert {h.thread_id for h in await store.search(NEEDLE.upper())} == {h.thread_id for h in hits}
        assert {h.thread_id for h in await store.search(NEEDLE, thread_id=b.main)} == {b.main}
        scanned = await store.search(NEEDLE, scan=True)
        assert store.last_search_path == "scan"
        assert {(h.thread_id, h.checkpoint_id) for h in scanned} == {(h.thread_id, h.checkpoint_id) for h in hits}
        assert await store.search("no such text anywhere 0xdeadbeef") == []


PAGED = [(n, k) for n, k in PAIRS if n in ("adk", "openai-agents")]


def _hits(found) -> list:
    return [(h.thread_id, h.checkpoint_id, h.where, h.snippet) for h in found]


async def _scan_a_row_a_page(store, monkeypatch) -> tuple[list, list[str]]:
    """The hits of a scan for "e" reading one row per first page, and its pages' SQL."""
    sql: list[str] = []
    real = store._q

    async def seen(query, *params):
        sql.append(query)
        return await real(query, *params)

    monkeypatch.setattr(store, "_q", seen)
    monkeypatch.setattr(store, "scan_page", 1)
    found = _hits(await store.search("e", scan=True, limit=1000))
    pages = [q for q in sql if " LIMIT ?" in q]
    assert len(pages) >= 2
    return found, pages


@pytest.mark.parametrize("built", PAGED, ids=[f"{n}-{k}" for n, k in PAGED], indirect=True)
async def test_a_scan_from_a_row_a_page_finds_what_one_page_finds(built, monkeypatch):
    """The SDK formats' scan reads its rows a page at a time, each page going on below
    the last row the one before read (no OFFSET): from a row a page, the hits of one
    page, in the same order."""
    _, b = built
    async with open_store(b.url) as store:
        whole = _hits(await store.search("e", scan=True, limit=1000))
        assert len(whole) >= 3
        found, pages = await _scan_a_row_a_page(store, monkeypatch)
        assert found == whole and not any("OFFSET" in q for q in pages)


@pytest.mark.parametrize("built", [("adk", "sqlite")], ids=["adk-sqlite"], indirect=True)
async def test_an_adk_scan_pages_by_offset_when_its_key_may_be_null(built, monkeypatch):
    """An events table that does not declare the scan's key NOT NULL (made by another
    writer): the scan pages by OFFSET instead of below the last row, and finds the same."""
    import sqlite3

    _, b = built
    async with open_store(b.url) as store:
        whole = _hits(await store.search("e", scan=True, limit=1000))
        assert len(whole) >= 3
    con = sqlite3.connect(b.url)
    con.executescript("CREATE TABLE loose AS SELECT * FROM events; DROP TABLE events; "
                      "ALTER TABLE loose RENAME TO events")
    con.close()
    async with open_store(b.url) as store:
        found, pages = await _scan_a_row_a_page(store, monkeypatch)
        assert found == whole and all(q.endswith("OFFSET ?") for q in pages)


async def test_search_beyond_ascii(built):
    """Case-insensitive for any letter, through the index and by a scan alike."""
    _, b = built
    async with open_store(b.url) as store:
        want = {(h.thread_id, h.checkpoint_id) for h in await store.search(WIDE, scan=True)}
        assert b.main in {t for t, _ in want}
        for text in (WIDE, WIDE.lower(), WIDE.upper()):
            for scan in (False, True):
                got = {(h.thread_id, h.checkpoint_id) for h in await store.search(text, scan=scan)}
                assert got == want, (text, scan, store.last_search_path)


async def test_search_filters(built):
    _, b = built
    async with open_store(b.url) as store:
        hits = await store.search(NEEDLE)
        assert len(await store.search(NEEDLE, limit=1)) == 1
        for role in {h.role for h in hits if h.role}:
            assert {h.role for h in await store.search(NEEDLE, role=role)} == {role}
        for h in hits:  # a hit names a checkpoint of its thread
            meta = await store.get_metadata(h.checkpoint_id)
            assert meta is not None and meta.thread_id == h.thread_id and meta.step == h.step


async def test_follow_sees_another_writer(built):
    """FOLLOW: the change token moves when the format's own program writes a step."""
    case, b = built
    async with open_store(b.url) as store:
        if not store.can(Capability.FOLLOW):
            pytest.skip(f"{case.name} does not declare follow")
        everything, thread = await store.change_token(None), await store.change_token(b.main)
    await case.append(b.url, b.main, "one more step")
    async with open_store(b.url) as store:
        assert await store.change_token(None) != everything
        assert await store.change_token(b.main) != thread
        head = await store.get_latest(b.main)
        assert "one more step" in json.dumps(head.messages, ensure_ascii=False)


async def test_writes_refused_on_a_read_only_store(built):
    _, b = built
    before = await dump(b.url)
    async with open_store(b.url) as store:
        first = (await store.read_thread(b.main, 1))[0].checkpoint_id
        try:
            history = store.history()
        except Unsupported:
            return
        for call in (lambda: history.rewind(first), lambda: history.branch(first, "ro"),
                     lambda: history.delete_thread(b.main)):
            with pytest.raises(AgentctlError):
                await call()
    assert await dump(b.url) == before


async def test_stats_and_backup_as_declared(built, tmp_path):
    case, b = built
    async with open_store(b.url) as store:
        if store.can(Capability.STATS):
            json.dumps(await store.usage_stats())
        else:
            with pytest.raises(Unsupported):
                await store.usage_stats()
        if store.can(Capability.BACKUP):
            dest = str(tmp_path / "copy.db")
            await store.backup(dest)
            assert (await detect(dest)).name == case.name
            async with open_store(dest) as copy:
                assert await copy.all_thread_ids() == await store.all_thread_ids()
        else:
            with pytest.raises(Unsupported):
                await store.backup(str(tmp_path / "copy.db"))


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


async def test_backup_listed_where_the_command_works(built, tmp_path):
    """`formats` lists backup exactly where `agentctl backup` copies the database (every
    format on SQLite, none on Postgres)."""
    case, b = built
    r = cli(b.url, "backup", str(tmp_path / "cli-copy.db"))
    async with open_store(b.url) as store:
        assert (r.exit_code == 0) == store.can(Capability.BACKUP), r.stderr
    if r.exit_code == 0:
        listed = {f["name"]: f["capabilities"] for f in json.loads(cli(b.url, "formats", "--json").stdout)["formats"]}
        assert "backup" in listed[case.name]


async def test_doctor(built):
    _, b = built
    async with open_store(b.url) as store:
        if store.can(Capability.DOCTOR):
            problems = await store.doctor()
            assert isinstance(problems, list) and all(isinstance(p, Problem) for p in problems)
            assert all(p.kind in ("error", "warning") for p in problems)
            assert not [p for p in problems if p.kind == "error"], problems
        else:
            with pytest.raises(Unsupported):
                await store.doctor()


# ---- writes through the library ------------------------------------------------------------


async def _rewind(case: FormatCase, b: Built) -> None:
    before = await data_rows(case, b.url)
    for hard in (False, True):
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


DO = {Capability.REWIND: _rewind, Capability.BRANCH: _branch, Capability.MERGE: _merge,
      Capability.PRUNE: _prune, Capability.DELETE: _delete}


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


@pytest.mark.parametrize("cap", (Capability.REWIND, Capability.BRANCH), ids=["rewind", "branch"])
async def test_undo_refused_after_the_program_wrote(built, cap):
    """After agentctl's write the format's own program writes to the thread: undo then
    refuses (it would drop or garble what the program wrote) and writes nothing."""
    case, b = built
    async with open_store(b.url, readonly=False) as store:
        if not (store.can(cap) and store.can(Capability.UNDO)):
            pytest.skip(f"{case.name} does not declare {cap.value} with undo")
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


async def test_purge_frees_what_undo_could_bring_back(built):
    """A hard rewind's rows wait in the trash: purge --dry-run lists the operation and
    writes nothing, purge frees them, then that undo is refused and writes nothing."""
    case, b = built
    async with open_store(b.url, readonly=False) as store:
        if not (store.can(Capability.REWIND) and store.can(Capability.UNDO)):
            pytest.skip(f"{case.name} does not declare rewind with undo")
        target = (await store.read_thread(b.main, 1000))[1].checkpoint_id
        h = store.history()
        op = (await h.rewind(target, hard=True)).op_id
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


# ---- the CLI -----------------------------------------------------------------------------------


def _ok(r, codes=(0,)) -> None:
    assert r.exit_code in codes, (r.exit_code, r.stdout, r.stderr)
    assert "Traceback" not in r.stdout + r.stderr


async def test_cli_reads(built):
    _, b = built
    async with open_store(b.url) as store:
        metas = await store.read_thread(b.main, 1000)
        can = {c: store.can(c) for c in Capability}
    first, last = metas[0].checkpoint_id, metas[-1].checkpoint_id
    other = (await _other_head(b))
    commands = [
        (("threads", "list"), True), (("threads", "show", b.main), True), (("log", b.main), True),
        (("log", b.main, "--graph"), False), (("show", b.main), True), (("show", f"{b.main}@{metas[1].step}"), True),
        (("diff", first, last), True), (("diff", last, other), True), (("tree", b.main), True),
        (("search", NEEDLE), True), (("stats",), True), (("doctor",), True), (("oplog",), True),
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
    assert json.dumps(shown, sort_keys=True) == json.dumps(head_dict := await _cp_dict(b, first), sort_keys=True), head_dict
    exported = cli(b.url, "export", b.main)
    _ok(exported)
    assert [json.loads(x)["metadata"]["checkpoint_id"] for x in exported.stdout.splitlines()] == \
        [m.checkpoint_id for m in metas]


def _entries(log):
    return log if isinstance(log, list) else log.get("checkpoints", log.get("entries", []))


async def _cp_dict(b: Built, cid: str) -> dict:
    async with open_store(b.url) as store:
        return json.loads(json.dumps((await store.get(cid)).to_dict(), default=str))


async def _other_head(b: Built) -> str:
    async with open_store(b.url) as store:
        other = next(t for t in b.threads if t != b.main)
        return (await store.get_latest(other)).metadata.checkpoint_id


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
        other = b.branch or next(t for t in b.threads if t != b.main)
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
    cap = {"rewind": Capability.REWIND, "rewind-hard": Capability.REWIND, "merge": Capability.MERGE,
           "prune": Capability.PRUNE, "delete": Capability.DELETE}[what]
    async with open_store(b.url) as store:
        declared = store.can(cap)
        target = (await store.read_thread(b.main, 2))[1]
    ref = f"{b.main}@{target.step}"
    # a thread with what goes with it or stays (a branch, a LangGraph subgraph's namespace)
    victim = next(iter(b.branches), b.main)
    args = {
        "rewind": ["rewind", ref], "rewind-hard": ["rewind", ref, "--hard"],
        "prune": ["prune", *[b.main if a == "THREAD" else a for a in case.prune_cli]],
        "delete": ["threads", "delete", victim],
    }.get(what)
    if what == "merge":
        args = ["merge", await _cli_branch_to_merge(case, b) if declared else b.threads[-1], "--into", b.main]
    before_all = await dump(b.url)
    if not declared:
        for extra in (["--dry-run"], ["--dry-run", "--json"], [] if what == "merge" else ["--yes"]):
            r = cli(b.url, "--no-color", *args, *extra)
            assert r.exit_code == 2 and "does not support" in r.stderr, (extra, r.stdout, r.stderr)
            assert r.stdout == "", r.stdout  # no plan
        assert await dump(b.url) == before_all and not _backups(b)
        return
    plan = cli_json(b.url, *args, "--dry-run")
    assert await dump(b.url) == before_all  # a plan writes nothing
    rows = await _rows(case, b)
    done = cli_json(b.url, *args, "--yes", "--no-backup") if what != "merge" else cli_json(b.url, *args)
    gone = rows - await _rows(case, b)
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
            left = set(await (store.all_addresses() if hasattr(store, "all_addresses") else store.all_thread_ids()))
        assert not left & set(plan["included"]) and set(plan["branches_kept"]) <= left


async def test_doctor_agrees_after_prune(built):
    """issue 23 item 4: after a prune (and after its undo) `doctor` finds nothing wrong
    on every format that prunes: no parent left pointing at a deleted checkpoint."""
    case, b = built
    async with open_store(b.url) as store:
        prunes = store.can(Capability.PRUNE) and store.can(Capability.DOCTOR)
    if not prunes:  # a format that does not prune refuses it: exit 2, nothing written
        r = cli(b.url, "prune", "--all", "--keep-last", "1", "--yes", "--no-backup")
        assert r.exit_code == 2 and "does not support" in r.stderr, (r.exit_code, r.stderr)
        return
    _ok(cli(b.url, "doctor"))
    for args in ([*[b.main if a == "THREAD" else a for a in case.prune_cli]], ["--all", "--keep-last", "1"]):
        results = cli_json(b.url, "prune", *args, "--yes", "--no-backup")["results"]
        assert any(r["deleted"] for r in results), args
        r = cli(b.url, "doctor")
        assert r.exit_code == 0, (args, r.stdout)
        _ok(cli(b.url, "undo"))
        _ok(cli(b.url, "doctor"))


async def _cli_branch_to_merge(case: FormatCase, b: Built) -> str:
    async with open_store(b.url, readonly=False) as store:
        branch = await store.history().branch((await store.get_latest(b.main)).metadata.checkpoint_id, "cli-m")
    await case.append(b.url, branch, "from the cli branch")
    return branch


async def test_cli_fix_indexes_and_import(built, tmp_path):
    """doctor --fix-indexes and import (IMPORT) exit 0 where the format offers them,
    else 2 with "does not support"; neither changes a row of the format's tables."""
    case, b = built
    async with open_store(b.url) as store:
        can_import = store.can(Capability.IMPORT)
    before = await data_rows(case, b.url)
    r = cli(b.url, "doctor", "--fix-indexes")
    assert r.exit_code in (0, 2) and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 0 or "does not support" in r.stderr
    exported = tmp_path / "main.jsonl"
    _ok(cli(b.url, "export", b.main, "-o", str(exported)))
    r = cli(b.url, "import", str(exported), "--on-conflict", "skip")
    if can_import:
        _ok(r)
    else:
        assert r.exit_code == 2 and "does not support" in r.stderr, r.stderr
        # the refusal is of import alone: export (which just worked) is not said to fail
        assert "does not support import (export works" in r.stderr and "import/export" not in r.stderr
    assert await data_rows(case, b.url) == before


async def test_undo_says_undid_on_every_format(built):
    """The undo's line (and its op summary) reads the same on every format."""
    case, b = built
    async with open_store(b.url) as store:
        if not (store.can(Capability.BRANCH) and store.can(Capability.UNDO)):
            pytest.skip(f"{case.name} cannot branch and undo")
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


# ---- the TUI on every format's bundled sample --------------------------------------------------

KEYS = {Capability.REWIND: "r", Capability.BRANCH: "b", Capability.MERGE: "M", Capability.PRUNE: "p",
        Capability.UNDO: "u"}


@pytest.mark.parametrize("name", list(CASES))
async def test_tui_browses_the_sample_and_refuses_what_the_format_cannot_do(name, tmp_path, monkeypatch):
    pytest.importorskip("textual")
    from tests.tui.test_tui import select_thread, settle, view_text  # the Pilot helpers

    from agentctl.tui.app import AgentctlApp

    case = CASES[name]
    path = copy_sample(case.sample, tmp_path / case.sample)
    before = await dump(str(path))
    async with open_store(str(path)) as store:
        count = await store.count_threads()
        cannot = [c for c in KEYS if not store.can(c)]
        first = next(t.thread_id for t in await store.thread_summaries(100) if t.checkpoints)
        steps = [m.step for m in await store.read_thread(first, 1000)]

    async def idle(*args, **kwargs) -> None:
        import asyncio

        await asyncio.sleep(0)

    monkeypatch.setattr("textual.app.wait_for_idle", idle)
    monkeypatch.setattr("textual.pilot.wait_for_idle", idle)
    app = AgentctlApp(str(path))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert app.threads.table.row_count == min(count, app.threads.table.row_count) > 0
        await select_thread(pilot, first)
        assert app.selected is not None and app.selected.step == steps[-1]
        from agentctl.tui.widgets.timeline import CheckpointItem

        app.timeline.focus()
        nodes = [c for c in app.timeline.root.children if isinstance(c.data, CheckpointItem)]
        app.timeline.move_to_node(nodes[0])
        await settle(pilot)
        assert app.selected.step == nodes[0].data.meta.step
        header = view_text(app, "detail-header")
        assert f"{first}@{app.selected.step}" in header
        view_text(app, "messages-view")
        for tab in "234":
            await pilot.press(tab)
            await settle(pilot)
        for cap in cannot:
            app.clear_notifications()
            await pilot.press(KEYS[cap])
            await settle(pilot)
            said = [n.message for n in app._notifications]
            assert any("does not support" in m and cap.value in m for m in said), (cap, said)
    assert await dump(str(path)) == before


async def _tui_to(pilot, thread: str, checkpoint_id: str) -> None:
    from tests.tui.test_tui import select_thread, settle

    from agentctl.tui.widgets.timeline import CheckpointItem

    app = pilot.app
    await select_thread(pilot, thread)
    app.timeline.focus()
    node = next(c for c in app.timeline.root.children
                if isinstance(c.data, CheckpointItem) and c.data.meta.checkpoint_id == checkpoint_id)
    app.timeline.move_to_node(node)
    await settle(pilot)
    assert app.selected.checkpoint_id == checkpoint_id


@pytest.mark.parametrize("name", list(CASES))
async def test_tui_rewind_branch_and_undo_where_declared(name, tmp_path, monkeypatch, sqlite_builds):
    """The TUI's r, b and u on a database each format's program wrote: the same result
    as the library's, and undo puts every row back."""
    pytest.importorskip("textual")
    from tests.tui.test_tui import settle

    from agentctl.tui.app import AgentctlApp

    case = CASES[name]
    _needs(case)
    b = await sqlite_builds.copy(case, tmp_path / "db.sqlite")
    async with open_store(b.url) as store:
        can = {c: store.can(c) for c in (Capability.REWIND, Capability.BRANCH, Capability.UNDO)}
        target = (await store.read_thread(b.main, 1000))[1]
        want = case.content(await store.get(target.checkpoint_id))
        threads = set(await store.all_thread_ids())
    if not (can[Capability.REWIND] or can[Capability.BRANCH]):
        pytest.skip(f"{name} declares neither rewind nor branch")

    async def idle(*args, **kwargs) -> None:
        import asyncio

        await asyncio.sleep(0)

    monkeypatch.setattr("textual.app.wait_for_idle", idle)
    monkeypatch.setattr("textual.pilot.wait_for_idle", idle)
    before = await data_rows(case, b.url)
    app = AgentctlApp(b.url)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)

        async def keys(*names: str) -> None:
            for k in names:
                await pilot.press(k)
                await settle(pilot)

        if can[Capability.REWIND]:
            await _tui_to(pilot, b.main, target.checkpoint_id)
            await keys("r", "y")
            async with open_store(b.url) as store:
                assert case.content(await store.get_latest(b.main)) == want
            await keys("u", "y")
            assert await data_rows(case, b.url) == before, [n.message for n in app._notifications]
        if can[Capability.BRANCH]:
            await _tui_to(pilot, b.main, target.checkpoint_id)
            await keys("b")
            for ch in "tui":
                await pilot.press(ch)
            await keys("enter")
            async with open_store(b.url) as store:
                (new,) = set(await store.all_thread_ids()) - threads
                assert case.content(await store.get_latest(new)) == want
            await keys("u", "y")
            assert await data_rows(case, b.url) == before, [n.message for n in app._notifications]


@pytest.mark.parametrize("name", list(CASES))
async def test_tui_prune_dialog_offers_what_the_format_means(name, tmp_path, monkeypatch, sqlite_builds):
    """issue 23 item 10: the TUI's prune dialog offers the policies a prune of one
    thread means in the format (History.prune_policies: the article's store prunes a
    session whole, by age; LangGraph has no milestones), and each one it offers plans
    without an error."""
    pytest.importorskip("textual")
    from textual.widgets import Select
    from tests.tui.test_tui import settle

    from agentctl.tui.app import AgentctlApp
    from agentctl.tui.flows import prune_spec
    from agentctl.tui.screens.prompt import PruneScreen

    case = CASES[name]
    _needs(case)
    b = await sqlite_builds.copy(case, tmp_path / "db.sqlite")
    async with open_store(b.url) as store:
        if not store.can(Capability.PRUNE):  # nothing to offer: the format refuses prune
            r = cli(b.url, "prune", b.main, "--keep-last", "1", "--yes", "--no-backup")
            assert r.exit_code == 2 and "does not support" in r.stderr, (r.exit_code, r.stderr)
            return
        h = store.history()
        offered = h.prune_policies
        for policy in offered:  # each means something here: a plan, no error
            await h.plan_prune_spec(prune_spec(b.main, policy, 2))
    assert {"article": ("keep_age",), "langgraph": ("keep_last_n", "keep_age")}.get(
        name, ("keep_last_n", "keep_age", "keep_milestones")) == offered

    async def idle(*args, **kwargs) -> None:
        import asyncio

        await asyncio.sleep(0)

    monkeypatch.setattr("textual.app.wait_for_idle", idle)
    monkeypatch.setattr("textual.pilot.wait_for_idle", idle)
    app = AgentctlApp(b.url)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await _tui_to(pilot, b.main, (await _first(b)))
        await pilot.press("p")
        await settle(pilot)
        assert isinstance(app.screen, PruneScreen)
        select = app.screen.query_one("#prune-policy", Select)
        assert [value for _, value in select._options if value != Select.BLANK] == list(offered)
        await pilot.press("escape")


async def _first(b: Built) -> str:
    async with open_store(b.url) as store:
        return (await store.read_thread(b.main, 1))[0].checkpoint_id
