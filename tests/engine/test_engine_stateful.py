"""A hypothesis state machine: random sequences of snapshot, rewind, hard rewind, branch,
merge, prune, delete, undo and purge against a plain in-memory model, on SQLite and on
the real Postgres server. After every step: every row (row id, thread, parent, step,
created_at, tags, blobs) is what the model says, every head is the model's, the trash
holds exactly what undoable deletions removed (nothing is lost but what a purge freed),
and an undo brings back the exact rows."""

from __future__ import annotations

import asyncio
import random
import shutil
import tempfile
import uuid
from collections import deque
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from agentctl.backends import make_backend
from agentctl.diff import MISSING
from agentctl.engine import CheckpointEngine, CheckpointGC, SnapshotConfig
from agentctl.errors import MergeConflictError, OperationError
from agentctl.merge import merge_messages, three_way_merge
from agentctl.storage.agentos.base import loads
from tests.support.engine_helpers import T0, Clock

JSON_COLUMNS = ("tags", "messages_blob", "state_blob", "tools_blob")
SETTINGS = settings(max_examples=20, stateful_step_count=15, deadline=None)

states = st.dictionaries(st.sampled_from("abc"), st.integers(0, 2), max_size=3)
picks = st.integers(0, 10**6)


def norm(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (loads(v) if k in JSON_COLUMNS else v) for k, v in row.items() if k != "op_id"}


def order(row: dict[str, Any]) -> tuple:
    return (row["step"], row["created_at"], row["id"])


@dataclass
class ModelOp:
    op_id: int
    kind: str
    threads: list[str]  # the threads it changed
    before: dict[str, dict]  # the rows of those threads before it
    after: dict[str, set] = field(default_factory=dict)  # thread -> {(cid, row id)} after it
    inserted: set[str] = field(default_factory=set)
    trash: dict[str, dict] = field(default_factory=dict)
    undone: bool = False
    purged: bool = False


class EngineMachine(RuleBasedStateMachine):
    kind = "sqlite"
    pg_base_dsn = ""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.tmp = None
        self.schema = None
        if self.kind == "sqlite":
            self.tmp = tempfile.mkdtemp()
            url = f"{self.tmp}/checkpoints.db"
        else:
            self.schema = "h_" + uuid.uuid4().hex[:12]
            self._admin(f"CREATE SCHEMA {self.schema}")
            url = f"{self.pg_base_dsn}{'&' if '?' in self.pg_base_dsn else '?'}search_path={self.schema}"
        self.backend = make_backend(url, readonly=False, create=True)
        self.run(self.backend.connect())
        self.clock = Clock(start=T0, step=timedelta(0))
        self.engine = CheckpointEngine(
            self.backend,
            SnapshotConfig(gc_policy=CheckpointGC.KEEP_ALL),
            rng=random.Random(7),
            clock=self.clock,
        )
        self.rows: dict[str, dict] = {}
        self.counters: dict[str, int] = {}
        self.ops: list[ModelOp] = []
        self.n = 0

    # ---- plumbing ---------------------------------------------------------------------

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def _admin(self, sql: str) -> None:
        import asyncpg

        async def go() -> None:
            conn = await asyncpg.connect(self.pg_base_dsn)
            try:
                await conn.execute(sql)
            finally:
                await conn.close()

        self.run(go())

    def teardown(self) -> None:
        self.run(self.backend.close())
        if self.schema:
            self._admin(f"DROP SCHEMA {self.schema} CASCADE")
        self.loop.close()
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def db_rows(self) -> dict[str, dict]:
        return {
            r["checkpoint_id"]: norm(r) for r in self.run(self.backend.query("SELECT * FROM checkpoints"))
        }

    def db_trash(self) -> dict[int, dict[str, dict]]:
        """The rows each op (not undone, not purged) deleted: the journal's before-images
        of rows it holds no after-image of."""
        if not self.run(self.backend.table_exists("agentctl_trash_checkpoints")):
            return {}
        out: dict[int, dict[str, dict]] = {}
        for r in self.run(
            self.backend.query(
                "SELECT t.* FROM agentctl_trash_checkpoints t JOIN agentctl_journal j "
                "ON j.op_id = t.agentctl_op_id WHERE j.undone = 0 AND j.purged = 0 "
                "AND t.agentctl_image = 'before' AND NOT EXISTS (SELECT 1 FROM agentctl_trash_checkpoints a "
                "WHERE a.agentctl_op_id = t.agentctl_op_id AND a.agentctl_image = 'after' "
                "AND a.checkpoint_id = t.checkpoint_id)"
            )
        ):
            op = int(r.pop("agentctl_op_id"))
            r.pop("agentctl_image")
            out.setdefault(op, {})[r["checkpoint_id"]] = norm(r)
        return out

    def fetch(self, cid: str) -> dict:
        return norm(self.run(self.backend.query("SELECT * FROM checkpoints WHERE checkpoint_id = ?", cid))[0])

    def threads(self) -> list[str]:
        return sorted({r["thread_id"] for r in self.rows.values()})

    def thread_rows(self, thread: str) -> list[dict]:
        return sorted((r for r in self.rows.values() if r["thread_id"] == thread), key=order)

    def head(self, thread: str) -> dict | None:
        rows = self.thread_rows(thread)
        return rows[-1] if rows else None

    def next_step(self, thread: str) -> int:
        steps = [r["step"] for r in self.thread_rows(thread)]
        return max(max(steps, default=0), self.counters.get(thread, 0)) + 1

    def pick(self, items: list, i: int) -> Any:
        return items[i % len(items)]

    def begin(self, kind: str, threads: list[str]) -> ModelOp:
        before = {cid: dict(r) for cid, r in self.rows.items() if r["thread_id"] in threads}
        return ModelOp(0, kind, threads, before)

    def record(self, op: ModelOp, op_id: int, undo_now: bool) -> None:
        op.op_id = op_id
        assert self.engine.last_op_id == op_id
        op.after = {t: {(r["checkpoint_id"], r["id"]) for r in self.thread_rows(t)} for t in op.threads}
        self.ops.append(op)
        if undo_now:  # straight back: the exact rows of before
            before = {cid: r for cid, r in self.rows.items() if r["thread_id"] not in op.threads}
            before.update(op.before)
            self.try_undo(op, None)
            assert self.db_rows() == before

    # ---- rules ------------------------------------------------------------------------

    @initialize(first=st.lists(states, min_size=2, max_size=6), second=st.lists(states, max_size=4))
    def two_threads(self, first: list, second: list) -> None:
        for thread, seq in (("t0", first), ("t1", second)):
            for state in seq:
                self.snapshot_to(thread, state, "init")

    @rule(
        i=picks,
        new=st.integers(0, 5),
        state=states,
        text=st.sampled_from(["hi", "ok", "你好"]),
        seconds=st.sampled_from([0, 0, 1, 5, 30]),
    )
    def snapshot(self, i: int, new: int, state: dict, text: str, seconds: int) -> None:
        self.clock.now += timedelta(seconds=seconds)
        threads = self.threads()
        self.snapshot_to(
            f"t{len(threads)}" if new == 0 or not threads else self.pick(threads, i), state, text
        )

    def snapshot_to(self, thread: str, state: dict, text: str) -> None:
        step = self.next_step(thread)
        head = self.head(thread)
        messages = [{"role": "user", "content": f"{text} {self.n}"}]
        self.n += 1
        cid = self.run(self.engine.snapshot(thread, messages, state, {"n": self.n}))
        row = self.fetch(cid)
        assert (row["thread_id"], row["step"], row["tags"]) == (thread, step, ["manual"])
        assert row["parent_id"] == (head["checkpoint_id"] if head else None)
        assert (row["messages_blob"], row["state_blob"]) == (messages, state)
        self.rows[cid] = row
        self.counters[thread] = max(self.counters.get(thread, 0), step)

    @rule(i=picks, hard=st.booleans(), undo_now=st.booleans())
    def rewind(self, i: int, hard: bool, undo_now: bool) -> None:
        if not self.rows:
            return
        target = self.rows[self.pick(sorted(self.rows), i)]
        thread = target["thread_id"]
        later = [r for r in self.thread_rows(thread) if order(r) > order(target)]
        op = self.begin("rewind", [thread])
        result = self.run(self.engine.rewind(target["checkpoint_id"], hard=hard))
        assert result.rewind_depth == len(later)
        assert result.checkpoint.metadata.checkpoint_id == target["checkpoint_id"]
        self.counters[thread] = target["step"]
        event(f"rewind hard={hard} moved={bool(later)}")
        if not later:
            assert result.op_id is None
            return
        ids = [r["checkpoint_id"] for r in later]
        if hard:
            assert result.deleted == ids and result.archive_thread is None
            for cid in ids:
                op.trash[cid] = self.rows.pop(cid)
        else:
            archive = result.archive_thread
            assert result.moved == ids and archive.startswith(f"{thread}-branch-rewind-")
            assert archive not in self.threads()
            op.threads.append(archive)
            for cid in ids:
                self.rows[cid] = {**self.rows[cid], "thread_id": archive}
            if not self.rows[ids[0]]["parent_id"]:
                self.rows[ids[0]]["parent_id"] = target["checkpoint_id"]
        self.record(op, result.op_id, undo_now)

    @rule(i=picks, name=st.sampled_from(["x", "fix"]), undo_now=st.booleans())
    def branch(self, i: int, name: str, undo_now: bool) -> None:
        if not self.rows:
            return
        source = self.rows[self.pick(sorted(self.rows), i)]
        thread = self.run(self.engine.branch(source["checkpoint_id"], name))
        assert thread.startswith(f"{source['thread_id']}-branch-{name}-") and thread not in self.threads()
        op = self.begin("branch", [thread])
        row = self.fetch(f"ckpt-{thread}-0")
        assert (row["step"], row["parent_id"], row["tags"]) == (0, source["checkpoint_id"], ["branch", name])
        for col in ("messages_blob", "state_blob", "tools_blob", "next_node"):
            assert row[col] == source[col]
        self.rows[row["checkpoint_id"]] = row
        op.inserted.add(row["checkpoint_id"])
        self.counters[thread] = 0
        self.record(op, self.engine.last_op_id, undo_now)

    def parents(self, cid: str) -> list[str]:
        row = self.rows.get(cid)
        if row is None:
            return []
        links = [row["parent_id"]] if row["parent_id"] else []
        return links + [t[len("merged:") :] for t in row["tags"] if t.startswith("merged:")]

    def walk(self, start: str) -> list[str]:
        seen, queue, out = {start}, deque([start]), []
        while queue:
            cid = queue.popleft()
            out.append(cid)
            for p in self.parents(cid):
                if p not in seen:
                    seen.add(p)
                    queue.append(p)
        return out

    @rule(i=picks, j=picks, strategy=st.sampled_from(["three-way", "ours", "theirs"]), undo_now=st.booleans())
    def merge(self, i: int, j: int, strategy: str, undo_now: bool) -> None:
        threads = self.threads()
        if len(threads) < 2:
            return
        branch = self.pick(threads, i)
        into = self.pick([t for t in threads if t != branch], j)
        ours, theirs = self.head(into), self.head(branch)
        ancestors = set(self.walk(ours["checkpoint_id"]))
        base_id = next(
            (c for c in self.walk(theirs["checkpoint_id"]) if c in ancestors and c in self.rows), None
        )
        base = self.rows[base_id] if base_id else None
        merged, conflicts = {}, []
        for col in ("state_blob", "tools_blob"):
            res = three_way_merge(base[col] if base else {}, ours[col], theirs[col], strategy)
            merged[col] = {} if res.value is MISSING else res.value
            conflicts += res.conflicts
        event(f"merge conflicts={bool(conflicts)} up_to_date={base_id == theirs['checkpoint_id']}")
        if conflicts:
            with pytest.raises(MergeConflictError):
                self.run(self.engine.merge_branch(branch, into, strategy))
            return
        messages = merge_messages(
            base["messages_blob"] if base else None, ours["messages_blob"], theirs["messages_blob"]
        )
        if base_id == theirs["checkpoint_id"] or (
            messages == ours["messages_blob"]
            and merged["state_blob"] == ours["state_blob"]
            and merged["tools_blob"] == ours["tools_blob"]
        ):
            # nothing new on the branch, or nothing the merge would change: nothing written
            with pytest.raises(OperationError, match="nothing to merge"):
                self.run(self.engine.merge_branch(branch, into, strategy))
            return
        step = self.next_step(into)
        op = self.begin("merge", [into])
        cid = self.run(self.engine.merge_branch(branch, into, strategy))
        row = self.fetch(cid)
        assert (row["thread_id"], row["step"], row["parent_id"]) == (into, step, ours["checkpoint_id"])
        assert row["tags"] == ["merge", f"merged:{theirs['checkpoint_id']}", f"branch:{branch}"]
        assert row["state_blob"] == merged["state_blob"] and row["tools_blob"] == merged["tools_blob"]
        assert row["messages_blob"] == merge_messages(
            base["messages_blob"] if base else None, ours["messages_blob"], theirs["messages_blob"]
        )
        self.rows[cid] = row
        op.inserted.add(cid)
        self.counters[into] = max(self.counters.get(into, 0), step)
        self.record(op, self.engine.last_op_id, undo_now)

    @rule(
        i=picks,
        policy=st.sampled_from(["keep_last_n", "keep_milestones", "keep_age"]),
        param=st.integers(0, 3),
        undo_now=st.booleans(),
    )
    def prune(self, i: int, policy: str, param: int, undo_now: bool) -> None:
        if not self.rows:
            return
        thread = self.rows[self.pick(sorted(self.rows), i)]["thread_id"]  # longer threads likelier
        rows = self.thread_rows(thread)
        total = len(rows)
        if policy == "keep_age":
            param *= 5
            cutoff = (self.clock.now - timedelta(seconds=param)).isoformat()
            doomed = [r for p, r in enumerate(rows) if p < total - 1 and r["created_at"] < cutoff]
        elif policy == "keep_last_n" or param <= 1:
            doomed = rows[: max(total - max(param, 1), 0)]
        else:
            n = param
            doomed = (
                []
                if total <= n
                else [
                    r
                    for p, r in enumerate(rows)
                    if not (p == 0 or p * (n - 1) // (total - 1) > (p - 1) * (n - 1) // (total - 1))
                ]
            )
        # fork points stay: the parent of a row in another thread, or of several rows
        kids: dict[str, list[dict]] = {}
        for r in self.rows.values():
            if r["parent_id"]:
                kids.setdefault(r["parent_id"], []).append(r)
        doomed = [
            r
            for r in doomed
            if not (
                len(kids.get(r["checkpoint_id"], [])) > 1
                or any(k["thread_id"] != thread for k in kids.get(r["checkpoint_id"], []))
            )
        ]
        op = self.begin("prune", [thread])
        result = self.run(self.engine.prune(thread, policy, param))
        assert sorted(result.deleted) == sorted(r["checkpoint_id"] for r in doomed)
        event(f"prune deleted={bool(doomed)}")
        if not doomed:
            assert result.op_id is None
            return
        for r in doomed:
            op.trash[r["checkpoint_id"]] = self.rows.pop(r["checkpoint_id"])
        for r in self.rows.values():  # a kept row whose parent went: its nearest kept ancestor
            if r["thread_id"] == thread and r["parent_id"] in op.trash:
                up = r["parent_id"]
                while up in op.trash:
                    up = op.trash[up]["parent_id"]
                r["parent_id"] = up if up in self.rows else None
        self.record(op, result.op_id, undo_now)

    @rule(i=picks, undo_now=st.booleans())
    def delete_thread(self, i: int, undo_now: bool) -> None:
        if not self.rows:
            return
        thread = self.pick(self.threads(), i)
        op = self.begin("delete_thread", [thread])
        result = self.run(self.engine.delete_thread(thread))
        for r in self.thread_rows(thread):
            op.trash[r["checkpoint_id"]] = self.rows.pop(r["checkpoint_id"])
        self.counters.pop(thread, None)
        self.record(op, result.op_id, undo_now)

    def undoable(self, op: ModelOp) -> bool:
        if op.undone or op.purged:
            return False
        for thread in op.threads:
            now = {(r["checkpoint_id"], r["id"]) for r in self.thread_rows(thread)}
            if now != op.after[thread]:
                return False
        for row in self.rows.values():
            if (
                row["parent_id"] in op.inserted
                and row["checkpoint_id"] not in op.inserted
                and row["parent_id"] not in op.trash
            ):
                return False
        return True

    def undo_model(self, op: ModelOp, undo_id: int) -> None:
        for cid in [c for c, r in self.rows.items() if r["thread_id"] in op.threads]:
            del self.rows[cid]
        self.rows.update({cid: dict(r) for cid, r in op.before.items()})
        op.undone = True
        for thread in op.threads:
            self.counters.pop(thread, None)
        self.ops.append(ModelOp(undo_id, "undo", [], {}, undone=True))

    def try_undo(self, op: ModelOp | None, op_id: int | None) -> None:
        event(f"undo {'refused' if op is None or not self.undoable(op) else op.kind}")
        if op is None or not self.undoable(op):
            with pytest.raises(OperationError):
                self.run(self.engine.undo(op_id))
            return
        result = self.run(self.engine.undo(op_id))
        assert sorted(result.created) == sorted(op.trash)
        assert sorted(result.deleted) == sorted(op.inserted)
        self.undo_model(op, result.op_id)

    @rule()
    def undo_last(self) -> None:
        candidates = [op for op in self.ops if not op.undone and op.kind != "undo"]
        self.try_undo(candidates[-1] if candidates else None, None)

    @rule(i=picks)
    def undo_one(self, i: int) -> None:
        if not self.ops:
            return
        op = self.pick(self.ops, i)
        self.try_undo(op, op.op_id)

    @rule()
    def purge(self) -> None:
        result = self.run(self.engine.purge())
        # the journal keeps every op's images (an undone op's for redo) until purge
        freed = [op for op in self.ops if op.kind not in ("undo", "purge") and not op.purged]
        assert result.ops == sorted(op.op_id for op in freed)
        for op in self.ops:
            op.purged = True
        if result.op_id is not None:
            self.ops.append(ModelOp(result.op_id, "purge", [], {}, undone=True))

    # ---- what must hold after every step ----------------------------------------------

    @invariant()
    def database_matches_the_model(self) -> None:
        assert self.db_rows() == self.rows
        for thread in self.threads():
            head = self.run(self.backend.get_latest(thread))
            assert head.metadata.checkpoint_id == self.head(thread)["checkpoint_id"]
        want = {op.op_id: op.trash for op in self.ops if op.trash and not op.undone and not op.purged}
        assert self.db_trash() == want


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_engine_state_machine(kind, request):
    machine = type(f"EngineMachine_{kind}", (EngineMachine,), {"kind": kind})
    if kind == "postgres":
        machine.pg_base_dsn = request.getfixturevalue("pg_base_dsn")
    run_state_machine_as_test(machine, settings=SETTINGS)
