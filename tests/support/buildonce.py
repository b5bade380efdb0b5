"""What a test run builds once for all its xdist workers: `run_shared` (a session
fixture) is the run's folder the workers share (their temporary folders' parent; the
session's own without xdist), and `built(folder, name, build)` makes `folder/name` by
`build(path)` once, under a file lock (the other workers wait for the first, then find
it done); each test copies what it needs out of it."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

_DONE = ".built"


def shared_folder(tmp_path_factory: Any, name: str) -> Path:
    """`name` in the folder this run's xdist workers share (their temporary folders'
    parent; the session's own temporary folder without xdist), made if need be."""
    root = tmp_path_factory.getbasetemp()
    shared = (root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root) / name
    shared.mkdir(exist_ok=True)
    return shared


@pytest.fixture(scope="session")
def run_shared(tmp_path_factory) -> Path:
    return shared_folder(tmp_path_factory, "shared")


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
