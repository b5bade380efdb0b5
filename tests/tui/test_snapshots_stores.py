"""The main screen of every store's database at 80x24 and 160x48 (SVG snapshots,
pytest-textual-snapshot; tests/tui/__snapshots__/test_snapshots_stores/).

Each store's bundled sample (`FormatCase.sample`, sample_db/), LangGraph.js's own
database (tests/fixtures/tui/langgraphjs.db, written by LangGraph.js) and CrewAI's
(tests/fixtures/tui/crewai/, written by crewai: make_crewai.py), their ids and times
fixed by the commit. A relative path keeps the status line the same on every
machine. After a deliberate change of the screen: `--snapshot-update`, then look at
the new SVGs before committing them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentctl.tui.app import AgentctlApp
from tests.support.contract_formats import CASES, SAMPLED
from tests.support.rig import REPO
from tests.support.tui import settle

#: every store's database: the samples of CASES, LangGraph.js's and CrewAI's
TUI = REPO / "tests" / "fixtures" / "tui"
DATABASES = {name: REPO / "sample_db" / str(CASES[name].sample) for name in SAMPLED}
DATABASES["langgraphjs"] = TUI / "langgraphjs.db"
DATABASES.update(
    {
        "crewai": TUI / "crewai" / "checkpoints.db",
        "crewai-flows": TUI / "crewai" / "flow_states.db",
        "crewai-replay": TUI / "crewai" / "latest_kickoff_task_outputs.db",
    }
)
SIZES = {"80x24": (80, 24), "160x48": (160, 48)}


async def settled(pilot) -> None:
    """Every load done, then a while for what the loads set going (the checkpoint list's
    scroll to the head, a layout after it), then done again: on a loaded machine one
    settle could end before the list reached its head (once in a full run)."""
    await settle(pilot)
    await pilot.pause(0.25)
    await settle(pilot)


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("store", list(DATABASES))
def test_main_screen(snap_compare, tmp_path, monkeypatch, store, size):
    source: Path = DATABASES[store]
    monkeypatch.chdir(tmp_path)
    shutil.copyfile(source, tmp_path / source.name)
    assert snap_compare(AgentctlApp(source.name), terminal_size=SIZES[size], run_before=settled)
