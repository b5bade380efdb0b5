"""What a test run builds once for all its xdist workers: `run_shared` (a session
fixture) is the run's folder the workers share (their temporary folders' parent; the
session's own without xdist), and `built(folder, name, build)` makes `folder/name` by
`build(path)` once, under a file lock (the other workers wait for the first, then find
it done); each test copies what it needs out of it."""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

_DONE = ".built"


@pytest.fixture(scope="session")
def run_shared(tmp_path_factory, worker_id) -> Path:
    root = tmp_path_factory.getbasetemp()
    shared = (root.parent if worker_id != "master" else root) / "shared"
    shared.mkdir(exist_ok=True)
    return shared


def built(folder: Path, name: str, build: Callable[[Path], None]) -> Path:
    """`folder/name`, made by `build(folder/name)` unless done already (by this worker or
    another); a build that raised leaves nothing behind, and the next asker tries again."""
    path = folder / name
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / f"{name}{_DONE}").exists():
            return path
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir()
        build(path)
        (folder / f"{name}{_DONE}").write_text("ok\n")
    return path
