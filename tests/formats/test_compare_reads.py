"""`compare`'s reads (the store's `lineage` and `read_contents`): the AgentOS store's own
(one thread's metadata or one recursive query; the stored texts as keys, decoded only
where two differ) give the very result of the contract's defaults (whole checkpoints
decoded), on SQLite and Postgres: a divergence deep in a long run, copies with equal
texts, equal contents stored in other texts, a branch in another thread, a line longer
in SQL than in its thread, a cycle, delta rows, a corrupt row."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentctl.compare import compare
from agentctl.errors import CorruptRowError
from agentctl.model import Checkpoint, CheckpointMetadata
from agentctl.storage.contract import Store
from tests.support.engine_helpers import make_engine
from tests.support.sampledb import cli_json


class DefaultReads:
    """The same store through the contract's default `lineage` and `read_contents`."""

    def __init__(self, store: Any):
        self.store = store

    async def lineage(self, checkpoint_id: str):
        return await Store.lineage(self.store, checkpoint_id)

    async def read_contents(self, metas):
        return await Store.read_contents(self.store, metas)

    async def without_copies(self, line):
        return await self.store.without_copies(line)

    async def run_lines(self, checkpoint_ids):
        return await Store.run_lines(self, checkpoint_ids)  # type: ignore[arg-type]

    async def get_metadata(self, checkpoint_id: str):
        return await self.store.get_metadata(checkpoint_id)


def _state(thread: str, k: int, **extra: Any) -> dict[str, Any]:
    return {
        "step": k,
        "plan": {"next": f"城市-{k % 7}", "done": [i for i in range(k % 5)]},
        "notes": ["x" * (k % 3)],
        **extra,
    }


async def _run(
    backend,
    thread: str,
    n: int,
    *,
    parent: str | None = None,
    start: int = 0,
    edit_from: int | None = None,
    repeat_every: int = 0,
    prefix: str = "",
) -> list[str]:
    """n checkpoints of a thread, each the child of the one before (the first of
    `parent`); from `edit_from` on the state holds an extra key; every `repeat_every`th
    checkpoint repeats its parent's content (not a step). Their ids."""
    ids: list[str] = []
    prev, prev_content = parent, None
    async with backend.transaction() as tx:
        for i in range(n):
            k = start + i
            cid = f"{prefix or thread}-{k:05d}"
            if repeat_every and prev_content is not None and i % repeat_every == 0:
                messages, state = prev_content
            else:
                state = _state(
                    thread, k, **({"edited": True} if edit_from is not None and k >= edit_from else {})
                )
                messages = [{"role": "assistant", "content": f"step {k}"}]
            await tx.put(
                Checkpoint(
                    CheckpointMetadata(
                        thread, cid, k, prev, f"2026-01-01T00:{k // 60 % 60:02d}:{k % 60:02d}+00:00"
                    ),
                    messages,
                    state,
                    {"call": {"id": f"{thread}-{k}"}},
                    "",
                )
            )
            prev, prev_content = cid, (messages, state)
            ids.append(cid)
    return ids


async def _both(backend, a: str, b: str) -> dict[str, Any]:
    """compare through the store's reads and through the defaults: the same result."""
    ma, mb = await backend.get_metadata(a), await backend.get_metadata(b)
    fast = (await compare(backend, ma, mb)).to_dict()
    slow = (await compare(DefaultReads(backend), ma, mb)).to_dict()  # type: ignore[arg-type]
    assert fast == slow
    # the store's run_lines and the default's: the same lines, the same contents
    (lines, got), (want_lines, want) = (
        await backend.run_lines([a, b]),
        await DefaultReads(backend).run_lines([a, b]),
    )
    assert lines == want_lines and set(got) == set(want)
    assert all(got[cid].value() == want[cid].value() for cid in got)
    assert [m.checkpoint_id for m in await backend.lineage(b)] == [
        m.checkpoint_id for m in await Store.lineage(backend, b)
    ]
    return fast


async def test_a_divergence_deep_in_two_long_runs_of_separate_threads(backend):
    a = await _run(backend, "a", 600)
    b = await _run(backend, "b", 600, edit_from=540, prefix="a-copy")
    out = await _both(backend, a[-1], b[-1])
    assert out["first_divergent_step"] == 540 and out["fork_point"] is None
    assert (out["a"], out["b"]) == (a[540], b[540])
    assert [(c["section"], c["path"], c["op"]) for c in out["changes"]] == [("state", "/edited", "added")]
    assert (out["common_steps"], out["a_steps"], out["b_steps"]) == (540, 59, 59)
    # a copy whose texts are equal all along: no divergence, a prefix of the other
    same = await _both(backend, a[300], b[-1])
    assert same["first_divergent_step"] is None and (same["a_steps"], same["b_steps"]) == (0, 299)
    # a branch off a[50]: most of a's thread after the fork is wanted (read whole, its
    # first rows left out)
    c = await _run(backend, "c", 3, parent=a[50], start=51, edit_from=51)
    out = await _both(backend, a[-1], c[-1])
    assert (out["fork_point"], out["first_divergent_step"], out["a_steps"], out["b_steps"]) == (
        a[50],
        51,
        548,
        2,
    )


async def test_checkpoints_repeating_their_parent_are_not_steps_and_a_branch_parts_after_its_fork(backend):
    a = await _run(backend, "a", 200, repeat_every=10)
    # a branch in another thread from a[120], parting at once
    b = await _run(backend, "b", 50, parent=a[120], start=121, edit_from=121)
    out = await _both(backend, a[-1], b[-1])
    assert out["fork_point"] == a[120] and out["first_divergent_step"] == 121
    # 79 checkpoints after the fork in a, every 10th a repeat (130, 140, ... 190): 72
    # steps, the first of them where the runs part; b's 50 are all steps
    assert (out["a_steps"], out["b_steps"]) == (72 - 1, 50 - 1)
    assert (await _both(backend, a[-1], a[-1]))["first_divergent_step"] is None


async def test_equal_contents_in_other_texts_are_equal_and_a_corrupt_row_is_an_error(backend):
    a = await _run(backend, "a", 60)
    b = await _run(backend, "b", 60, prefix="a-copy")
    if backend.kind == "sqlite":
        # the same values written with the keys in another order and other spacing
        for k in (10, 30, 59):
            state = _state("b", k)
            text = json.dumps(dict(reversed(list(state.items()))), indent=1)
            await backend._write("UPDATE checkpoints SET state_blob = ? WHERE checkpoint_id = ?", text, b[k])
    out = await _both(backend, a[-1], b[-1])
    assert out["first_divergent_step"] is None and out["common_steps"] == 60
    if backend.kind == "sqlite":
        await backend._write("UPDATE checkpoints SET state_blob = '{not json' WHERE checkpoint_id = ?", b[40])
        with pytest.raises(CorruptRowError):
            await compare(backend, await backend.get_metadata(a[-1]), await backend.get_metadata(b[-1]))


async def test_a_step_that_changes_only_the_messages_is_a_step(backend):
    """States are compared first; equal states then need the messages."""
    ids: list[str] = []
    prev = None
    async with backend.transaction() as tx:
        for k in range(40):
            state = _state("m", k // 2)  # the state changes every other checkpoint
            cid = f"m-{k:03d}"
            await tx.put(
                Checkpoint(
                    CheckpointMetadata("m", cid, k, prev),
                    [{"role": "user", "content": f"say {k}"}],
                    state,
                    {},
                    "",
                )
            )
            ids.append(cid)
            prev = cid
    out = await _both(backend, ids[10], ids[-1])
    assert out["first_divergent_step"] is None and (out["a_steps"], out["b_steps"]) == (0, 29)
    # the same states with other messages part where the messages first differ
    prev = None
    async with backend.transaction() as tx:
        for k in range(40):
            cid = f"o-{k:03d}"
            text = f"say {k}" if k < 25 else "something else"
            await tx.put(
                Checkpoint(
                    CheckpointMetadata("o", cid, k, prev),
                    [{"role": "user", "content": text}],
                    _state("m", k // 2),
                    {},
                    "",
                )
            )
            prev = cid
    out = await _both(backend, ids[-1], "o-039")
    assert out["first_divergent_step"] == 25
    assert [(c["section"], c["path"]) for c in out["changes"]] == [("messages", "/0/content")]
    # after 25: a's 14 checkpoints are all steps; o's 26..39 change the state only at even k
    assert (out["a_steps"], out["b_steps"]) == (14, 7)


async def test_a_line_longer_than_its_thread_read_and_a_cycle(backend):
    # a thread much longer than the line of an early checkpoint: the recursive query
    a = await _run(backend, "big", 1400)
    b = await _run(backend, "side", 5, parent=a[3], start=4, edit_from=6)
    out = await _both(backend, a[8], b[-1])
    assert out["fork_point"] == a[3] and out["first_divergent_step"] == 6
    # a buggy writer's cycle: the line ends where it repeats
    c = await _run(backend, "loop", 4)
    await backend._write("UPDATE checkpoints SET parent_id = ? WHERE checkpoint_id = ?", c[3], c[0])
    assert [m.checkpoint_id for m in await backend.lineage(c[3])] == [c[0], c[1], c[2], c[3]]
    await _both(backend, c[3], c[2])
    # ... and where the run starts in a thread of its own (one read of its line and texts)
    d = await _run(backend, "other", 3)
    out = await _both(backend, c[3], d[-1])
    assert (await backend.run_lines([c[3], d[-1]]))[0] == [c[:4], d]
    assert out["fork_point"] is None


async def test_delta_rows_are_resolved(backend):
    engine = make_engine(backend, delta_snapshots=True, delta_keyframe_every=4)
    ids = []
    big = {"blob": "y" * 4000}
    for k in range(12):
        ids.append(await engine.snapshot("d", [{"role": "user", "content": "hi"}], {**big, "k": k // 2}, {}))
    raw = await backend._fetch(
        "SELECT COUNT(*) AS n FROM checkpoints WHERE state_blob LIKE '%agentctl_delta%'"
        if backend.kind == "sqlite"
        else "SELECT COUNT(*) AS n FROM checkpoints WHERE state_blob::text LIKE '%agentctl_delta%'"
    )
    assert raw[0]["n"] > 0  # the engine wrote deltas
    other = await _run(backend, "e", 1, parent=ids[5], start=6, edit_from=6)
    out = await _both(backend, ids[-1], other[-1])
    assert out["fork_point"] == ids[5]
    # k repeats in pairs: 12 checkpoints, 6 steps; after ids[5] (k=2): k=3,4,5 -> 3 steps
    assert out["first_divergent_step"] is not None and out["a_steps"] == 2


async def test_two_branches_of_a_third_thread(backend):
    """Runs that start in threads of their own and go through a third one (the source
    of both branches): its rows are read by their metadata, their texts by id (the part
    the runs share too: its steps are counted)."""
    a = await _run(backend, "a", 120)
    c1 = await _run(backend, "c1", 5, parent=a[100], start=101, edit_from=103)
    c2 = await _run(backend, "c2", 30, parent=a[60], start=61, edit_from=70)
    out = await _both(backend, c1[-1], c2[-1])
    assert out["fork_point"] == a[60] and out["first_divergent_step"] == 70
    assert (out["common_steps"], out["a_steps"], out["b_steps"]) == (70, 35, 20)
    lines, contents = await backend.run_lines([c1[-1], c2[-1]])
    assert lines == [a[:101] + c1, a[:61] + c2]
    assert set(contents) == set(a[:101] + c1 + c2)  # the shared part's to count its steps


async def test_a_utf16_sqlite_file(tmp_path):
    """A SQLite file whose text encoding is UTF-16: its texts are read as text (their
    bytes are not UTF-8 JSON), and compare finds what it finds in a UTF-8 file."""
    import sqlite3

    from agentctl.backends import make_backend

    db = tmp_path / "utf16.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA encoding = 'UTF-16le'")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("DROP TABLE t")
    conn.close()
    b = make_backend(str(db), readonly=False, create=True)
    await b.connect()
    try:
        assert (await b._fetch_tuples("PRAGMA encoding"))[0][0] == "UTF-16le"
        a = await _run(b, "a", 40)
        c = await _run(b, "c", 40, edit_from=30, prefix="a-copy")
        out = await _both(b, a[-1], c[-1])
        assert (out["first_divergent_step"], out["common_steps"], out["a_steps"]) == (30, 30, 9)
    finally:
        await b.close()


def test_the_cli_on_a_long_run_and_its_copy(tmp_path):
    """`agentctl compare` prints what the library finds (JSON)."""
    import asyncio

    from agentctl.backends import make_backend

    db = str(tmp_path / "c.db")

    async def make() -> None:
        b = make_backend(db, readonly=False, create=True)
        await b.connect()
        try:
            await _run(b, "a", 300)
            await _run(b, "b", 300, edit_from=250, prefix="a-copy")
        finally:
            await b.close()

    asyncio.run(make())
    out = cli_json(db, "compare", "a", "b")
    assert (out["first_divergent_step"], out["a"], out["b"]) == (250, "a-00250", "a-copy-00250")
    assert (out["common_steps"], out["a_steps"], out["b_steps"]) == (250, 49, 49)


async def test_a_fork_copy_in_the_shared_part_is_not_a_common_step(backend):
    """B equal to A except a fork copy at step 5 (in the part they share), then B repeats
    A's stored texts: it does not part, with 10 steps alike (the copy is not one)."""
    a = await _run(backend, "a", 5)  # steps 0..4
    cp = await backend.get(a[4])
    async with backend.transaction() as tx:  # a copy of step 4 at step 5
        await tx.put(Checkpoint(CheckpointMetadata("a", "a-copy", 5, a[4]), cp.messages, cp.state, {}, ""))
    line = a + ["a-copy"] + await _run(backend, "a", 5, parent="a-copy", start=5, prefix="a-on")  # 5..9
    b = await _run(backend, "b", 2, parent=line[8], start=8)  # a branch from step 7: 8, 9 again
    out = await _both(backend, line[-1], b[-1])
    assert out["fork_point"] == line[8]
    assert (out["first_divergent_step"], out["common_steps"], out["a_steps"], out["b_steps"]) == (
        None,
        10,
        0,
        0,
    ), out
