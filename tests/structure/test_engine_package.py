"""The AgentOS engine (in agentctl/storage/agentos/, public as `agentctl.engine`): every
name imported from `agentctl.engine` anywhere in the repository still resolves, the old module paths are
gone, production code holds no test hooks, and a reader of the op log or the deltas
loads only that module."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "agentctl"


def _imported_names() -> set[tuple[str, str]]:
    found = set()
    for folder in ("agentctl", "tests", "bench", "sample_db"):
        for path in (REPO / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.ImportFrom)
                    and node.module
                    and node.module.startswith("agentctl.engine")
                ):
                    found.update((node.module, a.name) for a in node.names)
    return found


def test_every_name_imported_from_the_engine_resolves():
    names = _imported_names()
    assert ("agentctl.engine", "CheckpointEngine") in names  # the scan is not vacuous
    for module, name in sorted(names):
        mod = importlib.import_module(module)
        assert hasattr(mod, name) or importlib.import_module(f"{module}.{name}"), (module, name)


def test_the_public_names_of_the_old_module_are_there():
    import agentctl.engine as engine

    for name in (
        "CheckpointEngine",
        "CheckpointGC",
        "MergePlan",
        "OpRecord",
        "OpResult",
        "PrunePlan",
        "PurgeResult",
        "RewindPlan",
        "SnapshotConfig",
        "SnapshotTrigger",
        "TimeTravelResult",
        "create_checkpoint_engine",
        "AgentctlError",
        "MergeConflictError",
        "SnapshotTooLarge",
    ):
        assert name in engine.__all__
        assert getattr(engine, name) is not None
    with pytest.raises(ImportError):
        exec("from agentctl.engine import NoSuchName")


@pytest.mark.parametrize("old", ["engine.py", "oplog.py", "delta.py"])
def test_the_old_modules_are_gone(old):
    assert not (PKG / old).exists()
    if old != "engine.py":
        with pytest.raises(ImportError):
            importlib.import_module(f"agentctl.{old[:-3]}")


def test_no_test_hooks_in_production_code():
    hooks = (
        "_fail_at_statement",
        "InjectedFault",
        "_GuardedTx",
        "_guarded_steps",
        "_HasDeltas",
        "_NothingToDo",
    )
    bad = [f"{p.relative_to(PKG)}: {h}" for p in PKG.rglob("*.py") for h in hooks if h in p.read_text()]
    assert not bad, bad


@pytest.mark.parametrize("module", ["agentctl.storage.agentos.oplog", "agentctl.storage.agentos.delta"])
def test_a_reader_of_the_oplog_or_deltas_loads_only_that_module(module):
    """Of the AgentOS history's modules (once agentctl/engine/), a reader of the op log
    or the deltas loads only the one it reads."""
    writes = {
        f"agentctl.storage.agentos.{m}"
        for m in (
            "history",
            "context",
            "types",
            "snapshot",
            "rewind",
            "merge",
            "retention",
            "transfer",
            "undo",
            "oplog",
            "delta",
            "edit",
        )
    }
    code = (
        f"import sys, {module}\nprint(' '.join(sorted(m for m in sys.modules if m.startswith('agentctl.'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60, check=True
    ).stdout.split()
    assert module in out
    assert sorted(set(out) & writes) == [module]
