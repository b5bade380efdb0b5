"""Three-way merge of JSON values, and of message lists.

This module is pure: no I/O, standard library only, no Rich/Textual/drivers.
Paths are RFC 6901 JSON Pointers built exactly as :mod:`agentctl.diff` builds
them, and equality is :func:`agentctl.diff.json_equal` (``1 == 1.0``, ``True != 1``).

Rules of :func:`three_way_merge`, applied at the root and then key by key
-------------------------------------------------------------------------
1. ours equals theirs            -> ours (both deleted -> the key stays deleted);
2. ours equals base              -> theirs (theirs' change or deletion wins);
3. theirs equals base            -> ours;
4. base, ours and theirs are all dicts -> merge them key by key (rules 1-5);
5. otherwise it is a conflict at that path: lists, scalars and type changes are
   atomic, and a key deleted on one side and changed on the other conflicts.
   "three-way" keeps ours there and reports a :class:`Conflict`; "ours"/"theirs"
   take that side and report the conflict as resolved.

What it guarantees
------------------
* It never raises on JSON input (only on an unknown strategy), and nothing
  recurses on the Python stack.
* ``merge(base, x, base)``, ``merge(base, base, x)`` and ``merge(base, x, x)``
  give x with no conflict; with strategy "ours"/"theirs", ``conflicts`` is
  always empty and every path in ``resolved`` holds that side's value (or is
  absent when that side deleted it).
* Changes to disjoint keys never conflict. A key that both sides add with
  different values conflicts as a whole (a missing base is not a dict).
* Keys of a merged dict come in ours' order, then keys new in theirs.
* Inputs are never mutated; the result shares unchanged subtrees with them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentctl.diff import MISSING, escape_token, json_equal, quick_equal

__all__ = [
    "STRATEGIES",
    "Conflict",
    "MergeResult",
    "common_prefix_length",
    "merge_messages",
    "three_way_merge",
]

STRATEGIES = ("three-way", "ours", "theirs")


def _plain(value: Any) -> Any:
    return None if value is MISSING else value


@dataclass(frozen=True)
class Conflict:
    """Both sides changed the value at ``path`` (a JSON Pointer) differently.

    ``base``, ``ours`` and ``theirs`` are the three values there, :data:`MISSING`
    where the key is absent (added on a side, or deleted on a side).
    """

    path: str
    base: Any
    ours: Any
    theirs: Any

    def to_dict(self) -> dict[str, Any]:
        """``{"path", "base", "ours", "theirs", "base_missing", "ours_missing",
        "theirs_missing"}``: MISSING renders as None, and the ``*_missing`` flags
        tell an absent key from a JSON null."""
        return {
            "path": self.path,
            "base": _plain(self.base),
            "ours": _plain(self.ours),
            "theirs": _plain(self.theirs),
            "base_missing": self.base is MISSING,
            "ours_missing": self.ours is MISSING,
            "theirs_missing": self.theirs is MISSING,
        }


@dataclass
class MergeResult:
    """The merged ``value`` (MISSING only if the root itself ends up absent).

    ``conflicts`` lists unresolved conflicts (strategy "three-way"; ``value``
    holds ours there); ``resolved`` lists conflicts settled by strategy "ours" or
    "theirs". Both are in depth-first key order.
    """

    value: Any
    conflicts: list[Conflict] = field(default_factory=list)
    resolved: list[Conflict] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """True when nothing is left for a human to decide."""
        return not self.conflicts

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": _plain(self.value),
            "conflicts": [conflict.to_dict() for conflict in self.conflicts],
            "resolved": [conflict.to_dict() for conflict in self.resolved],
        }


# One pending decision: (pointer, base, ours, theirs, container to write into, key).
_Task = tuple[str, Any, Any, Any, dict, Any]
_ROOT = object()


def _key_tasks(path: str, base: dict, ours: dict, theirs: dict, out: dict) -> Iterator[_Task]:
    """Tasks for every key of ours (in order), then every key new in theirs.

    A key only in base was deleted on both sides, so it needs no task.
    """
    for key, value in ours.items():
        yield f"{path}/{escape_token(key)}", base.get(key, MISSING), value, theirs.get(key, MISSING), out, key
    for key, value in theirs.items():
        if key not in ours:
            yield f"{path}/{escape_token(key)}", base.get(key, MISSING), MISSING, value, out, key


def three_way_merge(base: Any, ours: Any, theirs: Any, strategy: str = "three-way") -> MergeResult:
    """Merge ``ours`` and ``theirs``, both derived from ``base`` (see the module doc).

    Any of the three may be :data:`MISSING` (no value). Raises ValueError for a
    strategy other than "three-way", "ours" or "theirs".
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown merge strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    found: list[Conflict] = []
    holder: dict[Any, Any] = {}
    stack: list[Iterator[_Task]] = [iter((("", base, ours, theirs, holder, _ROOT),))]
    while stack:
        task = next(stack[-1], None)
        if task is None:
            stack.pop()
            continue
        path, b, o, t, out, key = task
        if isinstance(b, dict) and isinstance(o, dict) and isinstance(t, dict):
            # Only cheap checks here: when they cannot decide, merging key by key
            # gives the same result (equalities hold key-wise) and never recurses.
            if quick_equal(o, t) is True or quick_equal(t, b) is True:
                value = o
            elif quick_equal(o, b) is True:
                value = t
            else:
                merged: dict[Any, Any] = {}
                out[key] = merged
                stack.append(_key_tasks(path, b, o, t, merged))
                continue
        elif json_equal(o, t) or json_equal(t, b):
            value = o
        elif json_equal(o, b):
            value = t
        else:
            conflict = Conflict(path, b, o, t)
            found.append(conflict)
            value = t if strategy == "theirs" else o
        if value is not MISSING:
            out[key] = value
    final = holder.get(_ROOT, MISSING)
    if strategy == "three-way":
        return MergeResult(final, conflicts=found)
    return MergeResult(final, resolved=found)


def common_prefix_length(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading elements ``a`` and ``b`` share (compared with json_equal)."""
    n = 0
    for x, y in zip(a, b, strict=False):  # stops at the shorter one
        if not json_equal(x, y):
            break
        n += 1
    return n


def merge_messages(base: Sequence[Any] | None, ours: Sequence[Any], theirs: Sequence[Any]) -> list[Any]:
    """Ours' messages followed by the messages theirs added since ``base``.

    "Added since base" means the messages of theirs after the longest common
    prefix of base and theirs (all of theirs when base is None). Messages are
    appended as they are, even if ours already holds an equal message; the
    inputs are not mutated and the message objects are not copied.
    """
    start = common_prefix_length(base or [], theirs)
    return [*ours, *theirs[start:]]
