"""The TUI's modules point one way: the app imports its screens and the palette, never
the other way round (issue 20: the app.py <-> screens/main.py <-> palette.py circle).
Any import counts: at module level, in a function, or under TYPE_CHECKING."""

from __future__ import annotations

import ast
from pathlib import Path

import agentctl.tui

TUI = Path(agentctl.tui.__file__).parent


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_nothing_the_app_imports_imports_the_app():
    below = [p for p in TUI.rglob("*.py") if p.name not in ("app.py", "__init__.py") or p.parent != TUI]
    assert any(p.name == "main.py" for p in below) and any(p.name == "palette.py" for p in below)
    offenders = [str(p.relative_to(TUI)) for p in below if "agentctl.tui.app" in _imports(p)]
    assert offenders == [], f"these import agentctl.tui.app: {offenders}"
