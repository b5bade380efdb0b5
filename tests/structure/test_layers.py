"""The layers, read from the source: all SQL lives in the storage layer (one adapter
per format), the CLI and the TUI reach data only through agentctl.storage (never a
backend or the engine module directly), and the storage layer imports neither rich nor
textual."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from tests.support.rig import REPO

PKG = REPO / "agentctl"

# The storage layer: the formats' adapters and the connections they share. The AgentOS
# format's writes (the engine package: CheckpointEngine, op log, deltas) are its History.
STORAGE = ("storage/", "backends/", "engine/")
# SQL as the code writes it (keywords in capitals), not prose that starts with "Delete".
SQL = re.compile(r"\b(SELECT\b.*\bFROM\b|INSERT\s+INTO\b|UPDATE\s+\w+\s+SET\b|DELETE\s+FROM\b|"
                 r"CREATE\s+(TABLE|INDEX|VIRTUAL|TEMP|UNIQUE)\b|DROP\s+(TABLE|INDEX)\b|"
                 r"PRAGMA\s+\w+|^\s*VACUUM\b|BEGIN\s+IMMEDIATE\b)", re.S)


def _files(pred) -> list[Path]:
    return [p for p in sorted(PKG.rglob("*.py")) if pred(p.relative_to(PKG).as_posix())]


def _in_storage(rel: str) -> bool:
    return rel.startswith(STORAGE) or rel in STORAGE


def _strings(path: Path) -> list[tuple[int, str]]:
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if tok.type == tokenize.STRING:
            try:
                value = ast.literal_eval(tok.string)
            except (ValueError, SyntaxError):  # f-strings: their literal text is enough
                value = re.sub(r"^[a-zA-Z]*['\"]{1,3}", "", tok.string)
            if isinstance(value, str):
                out.append((tok.start[0], value))
    return out


def test_no_sql_outside_the_storage_layer():
    found = []
    for path in _files(lambda rel: not _in_storage(rel)):
        for line, text in _strings(path):
            if SQL.search(text):
                found.append(f"{path.relative_to(PKG)}:{line}: {text.strip()[:60]!r}")
    assert not found, "SQL outside the storage layer:\n" + "\n".join(found)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


# The storage modules the faces may import besides agentctl.storage itself: the
# contract's types and the library capabilities that are not a format's.
LIBRARY_MODULES = ("agentctl.storage.contract", "agentctl.storage.backup")


def test_cli_and_tui_reach_data_only_through_the_storage_package():
    bad = []
    for path in _files(lambda rel: rel.startswith(("cli/", "tui/"))):
        for name in _imports(path):
            if name.startswith(("agentctl.backends", "agentctl.engine")) or (
                    name.startswith("agentctl.storage.") and name not in LIBRARY_MODULES):
                bad.append(f"{path.relative_to(PKG)}: imports {name}")
    assert not bad, "\n".join(bad)


def test_storage_layer_imports_no_rich_or_textual():
    bad = []
    for path in _files(_in_storage):
        for name in _imports(path):
            if name.split(".")[0] in ("rich", "textual"):
                bad.append(f"{path.relative_to(PKG)}: imports {name}")
    assert not bad, "\n".join(bad)


def test_the_sql_check_sees_sql():
    """The check above would find SQL if it were there (it is not vacuous)."""
    sample = PKG / "backends" / "queries.py"
    assert any(SQL.search(text) for _, text in _strings(sample))


def test_no_command_module_imports_another():
    """Each command module (cli/commands/) stands on the CLI's infrastructure and the
    library only: what several commands share lives beside them (cli/writes.py, ...), so
    that `agentctl COMMAND` imports one command module."""
    found = []
    for path in _files(lambda rel: rel.startswith("cli/commands/")):
        for name in _imports(path):
            if name.startswith("agentctl.cli.commands."):
                found.append(f"{path.relative_to(PKG)} imports {name}")
    assert not found, "\n".join(found)
