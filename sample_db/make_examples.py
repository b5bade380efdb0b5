"""Write the databases of the manual's examples (docs/commands/) that the bundled sample does not hold.

    python sample_db/make_examples.py [DIR]   (default: the current directory)

- DIR/broken.db: an AgentOS database with what `agentctl doctor` finds (a duplicate
  step, a parent that does not exist, a messages column holding an object, a cycle of
  parents), for `agentctl --db broken.db doctor`.
- DIR/conflict.db: a copy of sample_db/checkpoints.db where coder-fix-flaky-test was
  branched (try-mocks) and both threads then changed state.retry.attempts (5 in the
  thread, 9 in the branch), for the merge conflict of docs/commands/branch-merge.md.

Deterministic (fixed clock and seed): the ids are the manual's.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentctl.engine import CheckpointEngine  # noqa: E402
from agentctl.model import Checkpoint, CheckpointMetadata  # noqa: E402
from agentctl.storage.agentos.sqlite import SQLiteCheckpointer  # noqa: E402

SAMPLE = Path(__file__).resolve().parent / "checkpoints.db"
THREAD = "coder-fix-flaky-test"
T0 = datetime(2026, 11, 2, 10, 0, 0, tzinfo=timezone.utc)


def _fresh(path: Path) -> None:
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if p.exists():
            p.unlink()


def _cp(thread: str, step: int, cid: str, parent: str | None, created: datetime, **content) -> Checkpoint:
    return Checkpoint(
        CheckpointMetadata(
            thread, cid, step, parent, created.isoformat(), ["manual"], content.pop("summary", f"step {step}")
        ),
        content.get("messages", [{"role": "user", "content": f"m{step}"}]),
        content.get("state", {"step": step}),
        content.get("tools", {}),
    )


async def broken(path: Path) -> None:
    _fresh(path)
    t = T0
    async with SQLiteCheckpointer(str(path), readonly=False, create=True) as b:
        async with b.transaction() as tx:
            for thread, step, cid, parent in (
                ("dup", 1, "d1", None),
                ("dup", 1, "d1b", "d1"),
                ("orph", 2, "o2", "gone-by-gc"),
                ("loop", 1, "c1", "c3"),
                ("loop", 2, "c2", "c1"),
                ("loop", 3, "c3", "c2"),
                ("bad", 1, "b1", None),
            ):
                t += timedelta(seconds=5)
                await tx.put(_cp(thread, step, cid, parent, t))
            # a messages column holding an object where the format has an array
            await tx.execute(
                "UPDATE checkpoints SET messages_blob = ? WHERE checkpoint_id = ?", '{"not": "a list"}', "b1"
            )


async def conflict(path: Path) -> None:
    _fresh(path)
    shutil.copyfile(SAMPLE, path)
    clock = [T0]

    def now() -> str:
        clock[0] += timedelta(seconds=7)
        return clock[0].isoformat()

    async with SQLiteCheckpointer(str(path), readonly=False) as b:
        engine = CheckpointEngine(b, rng=random.Random(14), clock=now)
        head = await b.get_latest(THREAD)
        assert head is not None
        branch = await engine.branch(head.metadata.checkpoint_id, "try-mocks")
        # the agent goes on in both threads; both change state.retry.attempts
        for thread, step, parent, attempts, cid in (
            (THREAD, 14, head.metadata.checkpoint_id, 5, f"ckpt-{THREAD}-14-aaaaaa"),
            (branch, 1, f"ckpt-{branch}-0", 9, f"ckpt-{branch}-1-bbbbbb"),
        ):
            state = {**head.state, "retry": {**head.state["retry"], "attempts": attempts}}
            text = f"Trying exponential backoff, attempt {attempts}."
            await b.put(
                Checkpoint(
                    CheckpointMetadata(
                        thread, cid, step, parent, now(), ["tool_call"], f"[assistant] {text}"
                    ),
                    head.messages + [{"role": "assistant", "content": text}],
                    state,
                    dict(head.tools_result),
                )
            )
    print(branch)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()
    out.mkdir(parents=True, exist_ok=True)
    asyncio.run(broken(out / "broken.db"))
    asyncio.run(conflict(out / "conflict.db"))
    print(f"wrote {out / 'broken.db'} and {out / 'conflict.db'}")


if __name__ == "__main__":
    main()
