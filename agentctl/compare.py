"""Where did two runs part? (`agentctl compare A B`; headless: no rich, no textual.)

A run is the line of checkpoints from a root to a checkpoint along parent links (across
threads: a branch's run starts in the thread it was branched from). A checkpoint whose
content (messages and state) equals its parent's is not a step of its own
(a LangGraph fork copy, an update that changed nothing) and is left out. The two runs'
steps are aligned one to one from the root; the first pair whose contents differ is where
they parted, with the structural diff there (the JSON paths of `diff`).

Checkpoints both runs share (the same ids, from the root to their last common ancestor)
are equal by definition and are not decoded: only what comes after the fork point is
read in full, so comparing two long runs of one thread costs what they do not share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentctl.diff import Change, diff_values, json_equal
from agentctl.errors import CheckpointNotFound, CorruptRowError

if TYPE_CHECKING:
    from agentctl.model import Checkpoint, CheckpointMetadata
    from agentctl.storage.contract import Store

__all__ = ["Comparison", "compare", "run_path", "CONTENT_SECTIONS"]

#: what makes a step: the run's messages and state, not the checkpoint's ids, times, step
#: numbers or pending writes (tool results: LangGraph's carry task ids that differ in every
#: run); in the state, not the keys a format adds of its own (`__metadata__`,
#: `__internal__`: dunder names)
CONTENT_SECTIONS = ("messages", "state")


def _own_state(state: Any) -> Any:
    if not isinstance(state, dict):
        return state
    return {k: v for k, v in state.items()
            if not (isinstance(k, str) and k.startswith("__") and k.endswith("__"))}


@dataclass
class Comparison:
    """The result of `compare`: where two runs parted, and what differed there."""

    a: str                      # the checkpoint A names
    b: str                      # the checkpoint B names
    first_divergent_step: int | None  # the step (of B's checkpoint, else A's) where they parted
    a_at: str | None            # A's checkpoint at the divergence
    b_at: str | None            # B's checkpoint at the divergence
    changes: list[Change] = field(default_factory=list)
    a_steps: int = 0            # A's steps after the divergence (or after the shared part)
    b_steps: int = 0            # B's steps after the divergence (or after the shared part)
    common_steps: int = 0       # the steps both runs have alike before they part
    fork_point: str | None = None  # the last checkpoint both runs go through (their common ancestor)

    def to_dict(self) -> dict[str, Any]:
        return {
            "a_ref": self.a,
            "b_ref": self.b,
            "first_divergent_step": self.first_divergent_step,
            "a": self.a_at,
            "b": self.b_at,
            "changes": [c.to_dict() for c in self.changes],
            "a_steps": self.a_steps,
            "b_steps": self.b_steps,
            "common_steps": self.common_steps,
            "fork_point": self.fork_point,
        }


async def run_path(store: Store, meta: CheckpointMetadata) -> list[CheckpointMetadata]:
    """The checkpoints from the root to `meta` along parent links, root first. Each thread
    met on the way is read once (its metadata, a page of all of it); a parent in another
    thread is looked up by id. A parent that no longer exists (pruned) ends the line there;
    a cycle (a buggy writer) ends it where it repeats."""
    known: dict[str, CheckpointMetadata] = {}
    read_threads: set[str] = set()

    async def load(thread_id: str) -> None:
        if thread_id in read_threads:
            return
        read_threads.add(thread_id)
        total = await store.count(thread_id)
        for m in await store.read_thread(thread_id, max(total, 1), 0):
            known.setdefault(m.checkpoint_id, m)

    path: list[CheckpointMetadata] = []
    seen: set[str] = set()
    cur: CheckpointMetadata | None = meta
    while cur is not None and cur.checkpoint_id not in seen:
        seen.add(cur.checkpoint_id)
        path.append(cur)
        pid = cur.parent_checkpoint_id
        if not pid:
            break
        if pid not in known:
            parent = await store.get_metadata(pid)
            if parent is None:
                break
            await load(parent.thread_id)
            known.setdefault(pid, parent)
        cur = known.get(pid)
    path.reverse()
    return path


async def _full(store: Store, metas: list[CheckpointMetadata]) -> dict[str, Checkpoint]:
    """The checkpoints of `metas`, decoded: streamed a thread at a time when many are
    wanted (one query per batch), else read one by one."""
    want = {m.checkpoint_id for m in metas}
    out: dict[str, Checkpoint] = {}
    if len(want) <= 32:
        for cid in want:
            cp = await store.get(cid)
            if cp is None:
                raise CheckpointNotFound(cid)
            out[cid] = cp
        return out
    threads = sorted({m.thread_id for m in metas})
    async for item in store.iter_checkpoints(threads):
        if isinstance(item, CorruptRowError):
            if item.checkpoint_id in want:
                raise item
            continue
        if item.metadata.checkpoint_id in want:
            out[item.metadata.checkpoint_id] = item
    missing = want - out.keys()
    if missing:
        raise CheckpointNotFound(sorted(missing)[0])
    return out


def _content(cp: Checkpoint) -> tuple[Any, ...]:
    """(messages, state): the messages only where the state does not hold them (LangGraph's
    transcript is its `messages` channel, shown once)."""
    state = _own_state(cp.state)
    in_state = isinstance(state, dict) and "messages" in state
    return (None if in_state else cp.messages), state


def _same(x: tuple[Any, ...], y: tuple[Any, ...]) -> bool:
    # Python's == first (in C): values it finds unequal are unequal as JSON too (JSON's
    # rule is the stricter: 1, 1.0 and true differ); only equal ones need json_equal
    return all(p == q and json_equal(p, q) for p, q in zip(x, y))


def _steps(after: Checkpoint | None, line: list[Checkpoint]) -> list[tuple[Checkpoint, tuple[Any, ...]]]:
    """`line` without the checkpoints whose content equals the one before (`after` first),
    each with its content (computed once)."""
    out: list[tuple[Checkpoint, tuple[Any, ...]]] = []
    prev = _content(after) if after is not None else None
    for cp in line:
        content = _content(cp)
        if prev is None or not _same(prev, content):
            out.append((cp, content))
        prev = content
    return out


def _diff(x: tuple[Any, ...], y: tuple[Any, ...]) -> list[Change]:
    changes: list[Change] = []
    for section, p, q in zip(CONTENT_SECTIONS, x, y):
        changes.extend(diff_values(p, q, section))
    return changes


async def compare(store: Store, a: CheckpointMetadata, b: CheckpointMetadata) -> Comparison:
    """Compare the runs that end at `a` and at `b` (see the module's text)."""
    path_a, path_b = await run_path(store, a), await run_path(store, b)
    shared = 0
    for ma, mb in zip(path_a, path_b):
        if ma.checkpoint_id != mb.checkpoint_id:
            break
        shared += 1
    rest_a, rest_b = path_a[shared:], path_b[shared:]
    fork = path_a[shared - 1] if shared else None
    decoded = await _full(store, ([fork] if fork else []) + rest_a + rest_b)
    base = decoded[fork.checkpoint_id] if fork else None
    # The shared part is alike on both sides by definition (the same checkpoints): only
    # what follows the fork point is aligned step by step.
    steps_a = _steps(base, [decoded[m.checkpoint_id] for m in rest_a])
    steps_b = _steps(base, [decoded[m.checkpoint_id] for m in rest_b])
    result = Comparison(a=a.checkpoint_id, b=b.checkpoint_id, first_divergent_step=None,
                        a_at=None, b_at=None, fork_point=fork.checkpoint_id if fork else None,
                        common_steps=shared)
    for i, ((x, cx), (y, cy)) in enumerate(zip(steps_a, steps_b)):
        if not _same(cx, cy):
            result.first_divergent_step = y.metadata.step
            result.a_at, result.b_at = x.metadata.checkpoint_id, y.metadata.checkpoint_id
            result.changes = _diff(cx, cy)
            result.common_steps = shared + i
            result.a_steps = len(steps_a) - i - 1
            result.b_steps = len(steps_b) - i - 1
            return result
    n = min(len(steps_a), len(steps_b))
    result.common_steps = shared + n
    result.a_steps, result.b_steps = len(steps_a) - n, len(steps_b) - n
    return result
