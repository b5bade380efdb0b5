"""The TUI on every format: browsing the bundled sample, refusing what the format cannot do,
rewind / branch / undo and the prune dialog on a database the format's program wrote.

Part of the storage contract suite (tests/formats/contract/: every format x {SQLite, Postgres}).
"""

from __future__ import annotations

import pytest

from agentctl.storage import Capability, open_store
from tests.support.contract_formats import CASES, SAMPLED, Built, copy_sample, dump
from tests.support.contract_suite import _needs, data_rows
from tests.support.sampledb import cli

KEYS = {
    Capability.REWIND: "r",
    Capability.BRANCH: "b",
    Capability.MERGE: "M",
    Capability.PRUNE: "p",
    Capability.UNDO: "u",
}


@pytest.mark.parametrize("name", SAMPLED)
async def test_tui_browses_the_sample_and_refuses_what_the_format_cannot_do(name, tmp_path, monkeypatch):
    pytest.importorskip("textual")
    from agentctl.tui.app import AgentctlApp
    from tests.tui.test_tui import select_thread, settle, view_text  # the Pilot helpers

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
    from agentctl.tui.widgets.timeline import CheckpointItem
    from tests.tui.test_tui import select_thread, settle

    app = pilot.app
    await select_thread(pilot, thread)
    app.timeline.focus()

    def walk(node):  # (a thread with several roots, as CrewAI's main, nests its lines)
        for child in node.children:
            yield child
            yield from walk(child)

    node = next(
        c
        for c in walk(app.timeline.root)
        if isinstance(c.data, CheckpointItem) and c.data.meta.checkpoint_id == checkpoint_id
    )
    app.timeline.move_to_node(node)
    await settle(pilot)
    assert app.selected.checkpoint_id == checkpoint_id


#: the stores whose TUI offers r or b (a read-only store, crewai-replay, offers neither)
TIME_TRAVEL = [name for name in CASES if CASES[name].writes]


@pytest.mark.parametrize("name", TIME_TRAVEL)
async def test_tui_rewind_branch_and_undo_where_declared(name, tmp_path, monkeypatch, sqlite_builds):
    """The TUI's r, b and u on a database each format's program wrote: the same result
    as the library's, and undo puts every row back."""
    pytest.importorskip("textual")
    from agentctl.tui.app import AgentctlApp
    from tests.tui.test_tui import settle

    case = CASES[name]
    _needs(case)
    b = await sqlite_builds.copy(case, tmp_path / "db.sqlite")
    async with open_store(b.url) as store:
        can = {c: store.can(c) for c in (Capability.REWIND, Capability.BRANCH, Capability.UNDO)}
        target = (await store.read_thread(b.main, 1000))[1]
        want = case.content(await store.get(target.checkpoint_id))
        threads = set(await store.all_thread_ids())
    assert can[Capability.REWIND] or can[Capability.BRANCH], (
        f"{name} writes but declares neither rewind nor branch"
    )

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

    from agentctl.tui.app import AgentctlApp
    from agentctl.tui.flows import prune_spec
    from agentctl.tui.screens.prompt import PruneScreen
    from tests.tui.test_tui import settle

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
    assert case.prune_policies == offered

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
