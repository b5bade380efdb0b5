"""How the TUI names a checkpoint in its messages and titles (THREAD@STEP, inert)."""

from __future__ import annotations

from agentctl.model import CheckpointMetadata
from agentctl.text import inert


def short_meta(meta: CheckpointMetadata) -> str:
    return f"{inert(meta.thread_id, one_line=True)}@{meta.step}"
