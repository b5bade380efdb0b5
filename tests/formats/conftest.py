"""Fixtures shared by the format tests."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support import buildonce
from tests.support.buildonce import built

run_shared = buildonce.run_shared  # the fixture: the run's folder its workers share


@pytest.fixture(scope="session")
def bare_python(run_shared) -> str:
    """An interpreter with none of the agent frameworks: a venv without pip and without
    the system's site-packages (`import langgraph`, `agents`, `google.adk` all fail);
    made once per test run (tests/support/buildonce.py)."""

    def make(folder) -> None:
        venv = folder / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        for module in ("langgraph", "agents", "google.adk"):
            probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True)
            assert probe.returncode != 0, f"{python} imports {module}"

    return str(built(run_shared, "bare", make) / "venv" / "bin" / "python")


@pytest.fixture(scope="session")
def sqlite_builds(tmp_path_factory):
    """Each format's SQLite test database built once, copied per test (SQLiteBuilds)."""
    from tests.support.contract_formats import SQLiteBuilds

    return SQLiteBuilds(tmp_path_factory.mktemp("builds"))
