"""`agentctl edit`'s changes: `--set KEY=JSON` and `--unset KEY`, parsed and applied to a
state as `show --json` shows it (headless: no rich, no textual).

KEY is a key of the state with dots for nested keys (`plan.next_city`, `messages.3.content`:
a number indexes a list). The value is JSON. Applying them gives the state the edit
writes, for the plan's diff; the framework applies the same changes to its own objects.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from agentctl.errors import UsageError

__all__ = ["Edit", "parse_edits", "apply_edits"]


@dataclass(frozen=True)
class Edit:
    path: tuple[str, ...]
    value: Any = None
    unset: bool = False

    @property
    def key(self) -> str:
        return ".".join(self.path)

    def to_wire(self) -> list[Any]:
        """[path, value, "set" | "unset"]: what a runner child takes."""
        return [list(self.path), self.value, "unset" if self.unset else "set"]


def _path(key: str, option: str) -> tuple[str, ...]:
    parts = tuple(key.split("."))
    if not key or any(not p for p in parts):
        raise UsageError(f"{option} {key!r}: a key is NAME or NAME.NESTED (no empty parts)")
    return parts


def parse_edits(sets: list[str] | None, unsets: list[str] | None) -> list[Edit]:
    """The edits of the command line, in order (sets then unsets); exit 2 on bad input."""
    out: list[Edit] = []
    for item in sets or []:
        key, eq, text = item.partition("=")
        if not eq:
            raise UsageError(f"--set {item!r}: use KEY=JSON (e.g. --set plan.next_city='\"Paris\"')")
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"--set {key}: the value is not JSON ({exc}); a string needs quotes: "
                             f"{key}='\"{text}\"'") from None
        out.append(Edit(_path(key.strip(), "--set"), value))
    for key in unsets or []:
        out.append(Edit(_path(key.strip(), "--unset"), unset=True))
    if not out:
        raise UsageError("nothing to edit: give --set KEY=JSON or --unset KEY")
    return out


def _apply(node: Any, path: tuple[str, ...], edit: Edit) -> None:
    key, rest = path[0], path[1:]
    where = edit.key
    if isinstance(node, dict):
        if rest:
            if key not in node:
                raise UsageError(f"{where}: no key {key!r} (there: {', '.join(map(str, sorted(node)))})")
            _apply(node[key], rest, edit)
        elif edit.unset:
            if key not in node:
                raise UsageError(f"--unset {where}: there is no such key")
            del node[key]
        else:
            node[key] = copy.deepcopy(edit.value)
        return
    if isinstance(node, list):
        try:
            i = int(key)
            node[i]
        except (ValueError, IndexError):
            raise UsageError(f"{where}: no item {key!r} in a list of {len(node)}") from None
        if rest:
            _apply(node[i], rest, edit)
        elif edit.unset:
            del node[i]
        else:
            node[i] = copy.deepcopy(edit.value)
        return
    raise UsageError(f"{where}: {'.'.join(path[:-1]) or key!r} holds a {type(node).__name__}, not an object or list")


def apply_edits(state: dict[str, Any], edits: list[Edit], *, top_level: set[str] | None = None) -> dict[str, Any]:
    """A copy of `state` with the edits made. An unknown top-level key is an error naming
    the keys there are (`top_level`: the keys that may be set, default the state's)."""
    known = set(state) if top_level is None else top_level
    out = copy.deepcopy(state)
    for e in edits:
        if e.path[0] not in known:
            raise UsageError(f"the state has no key {e.path[0]!r} (its keys: {', '.join(sorted(known))})")
        _apply(out, e.path, e)
    return out
