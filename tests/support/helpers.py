"""Small builders shared by the tests."""

from __future__ import annotations

from typing import Any

from agentctl.model import Checkpoint, CheckpointMetadata


def ts(i: int, day: int = 1) -> str:
    return f"2026-03-{day:02d}T10:{i // 60 % 60:02d}:{i % 60:02d}.000001+00:00"


def make_cp(
    thread: str,
    step: int,
    *,
    cid: str | None = None,
    parent: str | None = None,
    created_at: str | None = None,
    tags: list[str] | None = None,
    summary: str = "",
    messages: list[dict[str, Any]] | None = None,
    state: dict[str, Any] | None = None,
    tools: dict[str, Any] | None = None,
    next_node: str = "",
) -> Checkpoint:
    return Checkpoint(
        metadata=CheckpointMetadata(
            thread_id=thread,
            checkpoint_id=cid or f"ckpt-{thread}-{step}",
            step=step,
            parent_checkpoint_id=parent,
            created_at=created_at or ts(step),
            tags=list(tags or ["manual"]),
            summary=summary or f"step {step}",
        ),
        messages=messages if messages is not None else [{"role": "user", "content": f"m{step}"}],
        state=state if state is not None else {"step": step},
        tools_result=tools if tools is not None else {},
        next_node=next_node,
    )


def same(a, b) -> bool:
    """Type-strict JSON equality written independently of the module under test:
    bool never equals a number, ints and floats compare by value, MISSING only
    equals itself. Iterative, so it works on deeply nested values."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, bool) or isinstance(y, bool):
            if type(x) is not type(y) or x != y:
                return False
        elif isinstance(x, (int, float)) and isinstance(y, (int, float)):
            if x != y:
                return False
        elif isinstance(x, dict):
            if not isinstance(y, dict) or x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list):
            if not isinstance(y, list) or len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif type(x) is not type(y) or x != y:
            return False
    return True
