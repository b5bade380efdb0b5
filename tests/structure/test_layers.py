"""The layers, read from the source: all SQL lives in the storage layer (one adapter
per format), the CLI and the TUI reach data only through agentctl.storage (never a
format's store or history, nor the library's facades agentctl.backends / agentctl.engine),
the storage layer imports neither rich nor textual, and no modules import each other in
a circle."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from tests.support.rig import REPO

PKG = REPO / "agentctl"

# The storage layer: the formats' adapters (AgentOS's too: storage/agentos/, its store and
# its History, the engine) and what they share. agentctl/backends/ and agentctl/engine/
# are the library's public names only (re-exports, no SQL).
STORAGE = ("storage/",)
# SQL as the code writes it (keywords in capitals), not prose that starts with "Delete".
SQL = re.compile(
    r"\b(SELECT\b.*\bFROM\b|INSERT\s+INTO\b|UPDATE\s+\w+\s+SET\b|DELETE\s+FROM\b|"
    r"CREATE\s+(TABLE|INDEX|VIRTUAL|TEMP|UNIQUE)\b|DROP\s+(TABLE|INDEX)\b|"
    r"PRAGMA\s+\w+|^\s*VACUUM\b|BEGIN\s+IMMEDIATE\b)",
    re.S,
)


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
# contract's types, the plans and results every format's writes return, and the library
# capabilities that are not a format's.
LIBRARY_MODULES = ("agentctl.storage.contract", "agentctl.storage.results", "agentctl.storage.backup")


def test_cli_and_tui_reach_data_only_through_the_storage_package():
    bad = []
    for path in _files(lambda rel: rel.startswith(("cli/", "tui/"))):
        for name in _imports(path):
            if name.startswith(("agentctl.backends", "agentctl.engine")) or (
                name.startswith("agentctl.storage.") and name not in LIBRARY_MODULES
            ):
                bad.append(f"{path.relative_to(PKG)}: imports {name}")
    assert not bad, "\n".join(bad)


def test_storage_layer_imports_no_rich_or_textual():
    bad = []
    for path in _files(_in_storage):
        for name in _imports(path):
            if name.split(".")[0] in ("rich", "textual"):
                bad.append(f"{path.relative_to(PKG)}: imports {name}")
    assert not bad, "\n".join(bad)


def test_the_storage_layer_does_not_import_the_public_facades():
    """The facades (agentctl.engine, agentctl.backends) are for the library's users: the
    storage layer imports the modules behind them (agentctl.storage.agentos, .results)."""
    bad = []
    for path in _files(_in_storage):
        for name in _imports(path):
            if name.startswith(("agentctl.engine", "agentctl.backends")):
                bad.append(f"{path.relative_to(PKG)}: imports {name}")
    assert not bad, "\n".join(bad)


def test_the_facades_hold_no_logic():
    """agentctl.backends and agentctl.engine are the library's public names: their
    modules define no function or class but the lazy loader's `__getattr__`/`__dir__`."""
    found = []
    for path in _files(lambda rel: rel.startswith(("backends/", "engine/"))):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name not in (
                "__getattr__",
                "__dir__",
            ):
                found.append(f"{path.relative_to(PKG)}: {node.name}")
    assert not found, "\n".join(found)


def test_the_sql_check_sees_sql():
    """The check above would find SQL if it were there (it is not vacuous)."""
    sample = PKG / "storage" / "agentos" / "queries.py"
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


# ---- import circles ---------------------------------------------------------------------
#
# The module graph: an edge A -> B for every `import` / `from ... import` anywhere in A
# (at the top, in a function, in a try), relative imports resolved, `from pkg import name`
# an edge to the module pkg.name when there is one (else to pkg). Imports under
# `if TYPE_CHECKING:` count too, and no circle is allowed: a type-only back-reference
# still ties two modules together (a helper that needs its caller's type names it as a
# small Protocol one level down: storage/agentos/protocols.py, tui/host.py).
# Names loaded through importlib by a string (the lazy facades `agentctl`, `agentctl.engine`;
# a FormatSpec's "module:name" entry points) are not import statements and not edges.


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _all_imports(tree: ast.AST):
    """Every import node of the tree: at the top, in a function, in a try, and under
    `if TYPE_CHECKING:` too."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node


def import_graph() -> dict[str, set[str]]:
    """{module: the agentctl modules it imports} for every module of the package."""
    paths = {_module_name(p): p for p in PKG.rglob("*.py")}

    def known(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets: set[str | None] = set()
        for node in _all_imports(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(known(a.name) for a in node.names if a.name.startswith("agentctl"))
                continue
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            if base.split(".")[0] != "agentctl":
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.add(full if full in paths else known(base))
        graph[module] = {t for t in targets if t and t != module}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circles():
    graph = import_graph()
    bad = import_cycles(graph)
    lines = []
    for component in bad:
        members = set(component)
        lines.append(f"a circle of {len(component)} modules:")
        lines.extend(f"  {m} -> {', '.join(sorted(graph[m] & members))}" for m in component)
    assert not bad, "\n".join(lines)


def test_the_circle_check_sees_circles():
    """The check finds a circle through a function-level, a relative and a TYPE_CHECKING
    import (it is not vacuous)."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": set()}
    assert import_cycles(graph) == [["a", "b", "c"]]
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from agentctl.model import Checkpoint\n"
        "else:\n    from agentctl import text\n"
        "def f():\n    from . import diff\n"
        "try:\n    import agentctl.refs\nexcept ImportError:\n    pass\n"
    )
    names = {
        (n.module if isinstance(n, ast.ImportFrom) else n.names[0].name)
        for n in _all_imports(ast.parse(source))
    }
    assert names == {"typing", "agentctl.model", "agentctl", None, "agentctl.refs"}
    real = import_graph()
    assert "agentctl.storage.contract" in real["agentctl.storage"]  # a plain from-import
    assert "agentctl.cli.startup" in real["agentctl.cli"]  # `from agentctl.cli import startup` in a function
    assert "agentctl.storage.agentos.protocols" in real["agentctl.storage.agentos.doctor"]  # TYPE_CHECKING
    assert "agentctl.tui.host" in real["agentctl.tui.flows"]  # TYPE_CHECKING
