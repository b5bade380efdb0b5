"""Stores as plug-ins: every format registers in the entry-point group `agentctl.stores`,
the built-in ones too (pyproject.toml's `[project.entry-points."agentctl.stores"]`, each
`NAME = "module:FORMAT"` naming its FormatSpec), so a package outside agentctl adds a
store that detection finds and `agentctl formats` lists by installing itself.

Detection order: the built-in formats first, in their fixed order (`BUILTIN`: LangGraph
before AgentOS, both have a `checkpoints` table), whether or not their entry points are
installed (a checkout run with PYTHONPATH alone has none); then the plug-ins, sorted by
entry-point name, each after the built-ins unless its FormatSpec names formats it is
tried before (`detect_before`). A plug-in that does not load, is not a FormatSpec or
reuses a known name is left out, with one line on stderr.

The group is read from the import path's installed distributions (`*.dist-info`,
`*.egg-info`: their entry_points.txt) directly, a couple of milliseconds, not through
importlib.metadata, whose import and scan would add some 50-100 ms to every
`threads list`. Only the plug-ins' modules are imported, when the formats are first
listed; `agentctl --help` lists none."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:  # pragma: no cover
    from agentctl.storage.contract import FormatSpec

GROUP = "agentctl.stores"

#: the built-in formats' specs, in detection order (also registered in GROUP)
BUILTIN = (
    "agentctl.storage.langgraph:FORMAT",
    "agentctl.storage.agentos:FORMAT",
    "agentctl.storage.article:FORMAT",
    "agentctl.storage.openai_agents:FORMAT",
    "agentctl.storage.adk:FORMAT",
    "agentctl.storage.agno:FORMAT",
    "agentctl.storage.crewai:FORMAT",
    "agentctl.storage.crewai:FLOWS",
    "agentctl.storage.crewai:REPLAY",
)


def _section(text: str, group: str = GROUP) -> list[tuple[str, str]]:
    """(name, value) of one section of an entry_points.txt (INI: `[group]`, `name = value`)."""
    out = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            inside = line == f"[{group}]"
        elif inside and "=" in line:
            name, _, value = line.partition("=")
            out.append((name.strip(), value.strip()))
    return out


def entry_points(path: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """(name, "module:attribute") of every entry point of GROUP installed on the import
    path (`sys.path` unless given), the first of a name kept, sorted by name."""
    found: dict[str, str] = {}
    for folder in sys.path if path is None else path:
        try:
            with os.scandir(folder or ".") as entries:
                dists = sorted(e.path for e in entries if e.name.endswith((".dist-info", ".egg-info")))
        except (OSError, TypeError):
            continue
        for dist in dists:
            try:
                with open(os.path.join(dist, "entry_points.txt"), encoding="utf-8") as f:
                    text = f.read()
            except (OSError, UnicodeDecodeError):
                continue
            if f"[{GROUP}]" in text:
                for name, value in _section(text):
                    found.setdefault(name, value)
    return sorted(found.items())


def _skip(name: str, why: str) -> None:
    from agentctl.text import inert

    sys.stderr.write(inert(f"agentctl: store plug-in {name!r} left out: {why}") + "\n")


def ordered(builtins: Sequence[FormatSpec], plugins: Sequence[FormatSpec]) -> list[FormatSpec]:
    """The detection order: the built-ins, then each plug-in at the end or before the
    first of the formats it names in `detect_before`."""
    out = list(builtins)
    for spec in plugins:
        names = [s.name for s in out]
        at = min((names.index(n) for n in spec.detect_before if n in names), default=len(out))
        out.insert(at, spec)
    return out


def load_formats() -> list[FormatSpec]:
    """Every format: the built-ins and the installed plug-ins, in detection order."""
    from agentctl.storage.contract import FormatSpec, _entry_point

    builtins = [cast(FormatSpec, _entry_point(value)) for value in BUILTIN]
    names = {spec.name for spec in builtins}
    plugins: list[FormatSpec] = []
    for name, value in entry_points():
        value = value.replace(" ", "")  # `module : attribute` is allowed
        if value in BUILTIN:
            continue
        try:
            spec = _entry_point(value)
        except Exception as exc:  # noqa: BLE001 - a broken plug-in must not stop agentctl
            _skip(name, f"{value} does not load ({type(exc).__name__}: {exc})")
            continue
        if not isinstance(spec, FormatSpec):
            _skip(name, f"{value} is a {type(spec).__name__}, not a FormatSpec")
        elif spec.name in names:
            _skip(name, f"format {spec.name!r} is known already")
        else:
            names.add(spec.name)
            plugins.append(spec)
    return ordered(builtins, plugins)
