"""Driving the Textual app in tests (Pilot): wait for what matters, not for idle CPU."""

from __future__ import annotations

import asyncio
from typing import Any

from textual.screen import ModalScreen
from textual.worker import WorkerState


def busy(app: Any) -> bool:
    """Whether a worker is still loading (follow mode always runs; a write flow waits
    for its modal while one is open)."""
    modal = isinstance(app.screen, ModalScreen)
    return any(
        w.state in (WorkerState.PENDING, WorkerState.RUNNING)
        for w in app.workers
        if w.group != "follow" and not (modal and w.group == "write")
    )


def skip_idle_waits(monkeypatch: Any) -> None:
    """Pilot waits after each key until the process looks idle (CPU time against wall
    time), which on a loaded machine takes up to a second per key. `settle` waits for
    what matters instead: the screen's messages and the app's workers."""

    async def yield_once(*args: Any, **kwargs: Any) -> None:
        await asyncio.sleep(0)

    monkeypatch.setattr("textual.app.wait_for_idle", yield_once)
    monkeypatch.setattr("textual.pilot.wait_for_idle", yield_once)


async def settle(pilot: Any, timeout: float = 20.0) -> None:
    """Wait until every load has finished and its messages are handled."""
    app = pilot.app
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    quiet = 0
    while quiet < 3:
        await pilot.pause()
        quiet = 0 if busy(app) else quiet + 1
        if loop.time() > deadline:
            raise AssertionError(f"the app kept working: {[w for w in app.workers]}")
        await asyncio.sleep(0.002 if quiet else 0.01)
