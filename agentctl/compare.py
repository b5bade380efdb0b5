"""Where did two runs part? (`agentctl compare A B`; headless: no rich, no textual.)

A run is the line of checkpoints from a root to a checkpoint along parent links (across
threads: a branch's run starts in the thread it was branched from). A checkpoint whose
content (messages and state) equals its parent's is not a step of its own
(a LangGraph fork copy, an update that changed nothing) and is left out. The two runs'
steps are aligned one to one from the root; the first pair whose contents differ is where
they parted, with the structural diff there (the JSON paths of `diff`).

Checkpoints both runs share (the same ids, from the root to their last common ancestor)
are equal by definition: they are not compared, only their steps counted (a fork copy
among them is not one). Unless `exact`, steps whose contents differ are compared again
with the ids and times the frameworks generate paired by place (`paired`). The
lines and the contents come from the store's `run_lines` (AgentOS: a thread's line and
texts in one read where the runs start in threads of their own; else `lineage`, then
`read_contents`): where a format gives keys (the stored texts), checkpoints with equal
keys are equal without decoding, and where B's line holds A's texts place by place it
takes A's steps, so a copy of a run (or its unchanged prefix) costs one decoding, not
two. The states themselves are decoded to find the steps: texts that differ can hold
equal values (key order, spacing, escapes, 1 and 1.0, a `__dunder__` key of the format's).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentctl.diff import MISSING, Change, diff_values, json_equal, resolve_pointer
from agentctl.errors import CheckpointNotFound
from agentctl.storage.contract import shared_prefix

if TYPE_CHECKING:
    from agentctl.model import CheckpointMetadata
    from agentctl.storage.contract import Content, Store

__all__ = ["Comparison", "compare", "run_path", "CONTENT_SECTIONS", "paired"]

#: what makes a step: the run's messages and state, not the checkpoint's ids, times, step
#: numbers or pending writes (tool results: LangGraph's carry task ids that differ in every
#: run); in the state, not the keys a format adds of its own (`__metadata__`,
#: `__internal__`: dunder names)
CONTENT_SECTIONS = ("messages", "state")


#: keys whose values the frameworks generate anew in every run (ids, times): unless
#: `exact`, they are paired by position and left out of the verdict. Ids: an `id` of a
#: message, tool call or event (LangChain message and tool-call ids, OpenAI item ids, ADK
#: event and function-call ids), `tool_call_id`, `call_id`, `run_id`, `response_id`,
#: `invocation_id`, and the session a transcript is in (the SDK formats' `session_id`:
#: a branch's or a replay's session is another one); times: timestamps.
GENERATED_IDS = frozenset(
    {
        "tool_call_id",
        "call_id",
        "run_id",
        "response_id",
        "previous_response_id",
        "invocation_id",
        "session_id",
    }
)
GENERATED_TIMES = frozenset({"timestamp", "created_at", "create_time", "update_time", "last_update_time"})
#: an object whose `id` is a framework's: it has one of these keys (a message, a tool
#: call, an event, an item), or a `type` of `_ID_TYPES` (a LangChain message's, an
#: OpenAI item's), or it is the value of one of `_ID_HOLDERS`; an `id` elsewhere (an
#: order's in the user's state) is compared
_ID_SIBLINGS = frozenset(
    {
        "role",
        "author",
        "invocation_id",
        "tool_calls",
        "args",
        "arguments",
        "call_id",
        "tool_call_id",
        "response_metadata",
    }
)
_ID_TYPES = frozenset(
    {
        "human",
        "ai",
        "tool",
        "system",
        "function",
        "chat",
        "AIMessageChunk",
        "tool_call",
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "web_search_call",
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "code_interpreter_call",
        "image_generation_call",
        "local_shell_call",
        "custom_tool_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
    }
)
_ID_HOLDERS = frozenset({"kwargs", "function_call", "function_response", "functionCall", "functionResponse"})


def _holds_generated_id(obj: dict[Any, Any], holder: str | None) -> bool:
    if holder in _ID_HOLDERS or not _ID_SIBLINGS.isdisjoint(obj):
        return True
    kind = obj.get("type")
    return isinstance(kind, str) and kind in _ID_TYPES


_TIME = "<time>"


def _generated(value: Any) -> bool:
    """Whether a `paired` value stands for a generated id or time."""
    return isinstance(value, str) and (value == _TIME or (value.startswith("<id ") and value.endswith(">")))


def paired(value: Any) -> Any:
    """`value` with the ids the frameworks generate (GENERATED_IDS, a message's, tool
    call's or event's `id`) replaced by their place: `<id N>`, N counting the distinct
    ids from the start (objects' keys in sorted order), so that two values are equal
    when their ids pair one to one at the same places (a `tool_call_id` that names its
    call still names it), and with times (GENERATED_TIMES) replaced by `<time>`."""
    ids: dict[Any, str] = {}

    def walk(v: Any, holder: str | None) -> Any:
        if isinstance(v, dict):
            own_id = "id" in v and _holds_generated_id(v, holder)
            done = {}
            for k in sorted(v, key=str):  # numbered in an order the keys' order does not change
                x = v[k]
                if (
                    isinstance(x, (str, int))
                    and not isinstance(x, bool)
                    and (k in GENERATED_IDS or (k == "id" and own_id))
                ):
                    done[k] = ids.setdefault(x, f"<id {len(ids)}>")
                elif k in GENERATED_TIMES and isinstance(x, (str, int, float)) and not isinstance(x, bool):
                    done[k] = _TIME
                else:
                    done[k] = walk(x, k if isinstance(k, str) else None)
            return {k: done[k] for k in v}  # in the value's own order (the diff's)
        if isinstance(v, list):
            return [walk(x, holder) for x in v]
        return v

    return walk(value, None)


def _own_state(state: Any) -> Any:
    if not isinstance(state, dict):
        return state
    return {
        k: v for k, v in state.items() if not (isinstance(k, str) and k.startswith("__") and k.endswith("__"))
    }


@dataclass
class Comparison:
    """The result of `compare`: where two runs parted, and what differed there."""

    a: str  # the checkpoint A names
    b: str  # the checkpoint B names
    first_divergent_step: int | None  # the step (of B's checkpoint, else A's) where they parted
    a_at: str | None  # A's checkpoint at the divergence
    b_at: str | None  # B's checkpoint at the divergence
    a_step: int | None = None  # A's checkpoint's own step (a replay's steps can be one on)
    b_step: int | None = None  # B's checkpoint's own step
    changes: list[Change] = field(default_factory=list)
    a_steps: int = 0  # A's steps after the divergence (or after the shared part)
    b_steps: int = 0  # B's steps after the divergence (or after the shared part)
    common_steps: int = 0  # the steps both runs have alike before they part
    fork_point: str | None = None  # the last checkpoint both runs go through (their common ancestor)
    exact: bool = False  # generated ids and times compared too (else paired by place)

    def to_dict(self) -> dict[str, Any]:
        return {
            "a_ref": self.a,
            "b_ref": self.b,
            "first_divergent_step": self.first_divergent_step,
            "a": self.a_at,
            "b": self.b_at,
            "a_step": self.a_step,
            "b_step": self.b_step,
            "changes": [c.to_dict() for c in self.changes],
            "a_steps": self.a_steps,
            "b_steps": self.b_steps,
            "common_steps": self.common_steps,
            "fork_point": self.fork_point,
            "exact": self.exact,
        }


async def run_path(store: Store, meta: CheckpointMetadata) -> list[CheckpointMetadata]:
    """The checkpoints from the root to `meta` along parent links, root first (the
    store's `lineage`: across threads; a pruned parent or a cycle ends the line)."""
    return await store.lineage(meta.checkpoint_id) or [meta]


def _own_keys(state: Any) -> Any:
    """`_own_state`, without a copy when no key is a dunder name (the usual case: one
    search of the keys joined, in C)."""
    if not isinstance(state, dict):
        return state
    try:
        if "__" not in "\0".join(state):
            return state
    except TypeError:  # a key that is not a string
        pass
    return _own_state(state)


class _Contents:
    """Whether two checkpoints' contents (messages, state) are equal, decoding as little
    as it can: checkpoints whose stored texts are equal (the store's `Content.key`) are
    equal without decoding; a line that holds another's texts place by place takes that
    line's answers (a copy of a run asks the same questions again); the states are
    compared first (states that differ make contents that differ: the messages are not
    decoded then); a decoded state is kept only while it is one of the last two asked
    for (keeping thousands of decoded states costs several times their decoding)."""

    def __init__(self, contents: dict[str, Content]):
        self._contents = contents
        self._recent: dict[str, Any] = {}

    def _state(self, cid: str) -> Any:
        if cid in self._recent:
            return self._recent[cid]
        state = _own_keys(self._contents[cid].state())
        if len(self._recent) >= 2:
            del self._recent[next(iter(self._recent))]
        self._recent[cid] = state
        return state

    def of(self, cid: str) -> tuple[Any, ...]:
        """(messages, state): the messages only where the state does not hold them
        (LangGraph's transcript is its `messages` channel, shown once)."""
        state = self._state(cid)
        if isinstance(state, dict) and "messages" in state:
            return None, state
        return self._contents[cid].value()[0], state

    def same(self, x: str, y: str) -> bool:
        kx = self._contents[x].key
        if kx is not None and kx == self._contents[y].key:
            return True
        if not _equal(self._state(x), self._state(y)):
            return False
        return _same(self.of(x), self.of(y))

    def alike(self, x: str, y: str, exact: bool) -> bool:
        """Whether x's and y's contents are equal (`same`), or, unless `exact`, equal
        with the ids and times the frameworks generate paired (`paired`)."""
        if self.same(x, y):
            return True
        return not exact and _equal(paired(list(self.of(x))), paired(list(self.of(y))))

    def changes(
        self, after: str | None, line: list[str], like: tuple[list[str], list[bool]] | None = None
    ) -> list[bool]:
        """For each checkpoint of `line`, whether its content differs from the one
        before it (`after` first): whether it is a step. `like`: another line from
        `after` and its answers; while this line holds that line's texts place by
        place, its answers are that line's."""
        contents = self._contents
        other, answers = like if like is not None else ([], [])
        out: list[bool] = []
        prev = after
        aligned = True
        for j, cid in enumerate(line):
            if aligned:
                key = contents[cid].key
                aligned = key is not None and j < len(other) and key == contents[other[j]].key
                if aligned:
                    out.append(answers[j])
                    prev = cid
                    continue
            out.append(prev is None or not self.same(prev, cid))
            prev = cid
        return out


def _equal(p: Any, q: Any) -> bool:
    # Python's == first (in C): values it finds unequal are unequal as JSON too (JSON's
    # rule is the stricter: 1, 1.0 and true differ); only equal ones need json_equal
    return p == q and json_equal(p, q)


def _same(x: tuple[Any, ...], y: tuple[Any, ...]) -> bool:
    return all(_equal(p, q) for p, q in zip(x, y, strict=False))


def _steps(line: list[str], changes: list[bool]) -> list[str]:
    return [cid for cid, changed in zip(line, changes, strict=False) if changed]


def _diff(x: tuple[Any, ...], y: tuple[Any, ...], exact: bool = True) -> list[Change]:
    """The changes from x to y, by section; unless `exact`, those of their `paired`
    values (the ids and times the frameworks generate left out), shown with the values
    stored there."""
    if exact:
        changes: list[Change] = []
        for section, p, q in zip(CONTENT_SECTIONS, x, y, strict=False):
            changes.extend(diff_values(p, q, section))
        return changes
    px, py = paired(list(x)), paired(list(y))
    found = [
        c for i, section in enumerate(CONTENT_SECTIONS[: len(x)]) for c in diff_values(px[i], py[i], section)
    ]
    # ids that pair otherwise (numbered otherwise where the contents differ) are not what
    # parted the runs, unless nothing else differs (a tool result naming another call)
    shown = [c for c in found if not (c.op == "changed" and _generated(c.old) and _generated(c.new))] or found
    changes = []
    for c in shown:
        i = CONTENT_SECTIONS.index(c.section)
        old = c.old if c.old is MISSING else resolve_pointer(x[i], c.path, c.old)
        new = c.new if c.new is MISSING else resolve_pointer(y[i], c.path, c.new)
        changes.append(Change(c.section, c.path, c.op, old, new))
    return changes


async def compare(
    store: Store, a: CheckpointMetadata, b: CheckpointMetadata, exact: bool = False
) -> Comparison:
    """Compare the runs that end at `a` and at `b` (see the module's text). Unless
    `exact`, the ids and times the frameworks generate are paired by place and left out
    of the verdict (`paired`): a replay of an unchanged LLM app does not part."""
    # No cyclic GC while thousands of texts are read and decoded: none of them is garbage
    # until it is dropped (a decoded state is freed by its count as soon as it is
    # compared), and the collector would walk them over and over.
    paused = gc.isenabled()
    gc.disable()
    try:
        return await _compare(store, a, b, exact)
    finally:
        if paused:
            gc.enable()


async def _meta_of(store: Store, cid: str, known: CheckpointMetadata) -> CheckpointMetadata:
    at = known if cid == known.checkpoint_id else await store.get_metadata(cid)
    if at is None:
        raise CheckpointNotFound(cid)
    return at


async def _compare(store: Store, a: CheckpointMetadata, b: CheckpointMetadata, exact: bool) -> Comparison:
    (path_a, path_b), found = await store.run_lines([a.checkpoint_id, b.checkpoint_id])
    shared = shared_prefix([path_a, path_b])
    rest_a, rest_b = path_a[shared:], path_b[shared:]
    base = path_a[shared - 1] if shared else None
    contents = _Contents(found)
    # The shared part is alike on both sides by definition (the same checkpoints): only
    # what follows the fork point is aligned step by step.
    shared_steps = sum(contents.changes(None, path_a[:shared]))
    changes_a = contents.changes(base, rest_a)
    steps_a = _steps(rest_a, changes_a)
    steps_b = _steps(rest_b, contents.changes(base, rest_b, (rest_a, changes_a)))
    result = Comparison(
        a=a.checkpoint_id,
        b=b.checkpoint_id,
        first_divergent_step=None,
        a_at=None,
        b_at=None,
        fork_point=base,
        common_steps=shared_steps,
        exact=exact,
    )
    for i, (x, y) in enumerate(zip(steps_a, steps_b, strict=False)):
        if not contents.alike(x, y, exact):
            at_a, at_b = await _meta_of(store, x, a), await _meta_of(store, y, b)
            result.first_divergent_step = at_b.step
            result.a_at, result.b_at = x, y
            result.a_step, result.b_step = at_a.step, at_b.step
            result.changes = _diff(contents.of(x), contents.of(y), exact)
            result.common_steps = shared_steps + i
            result.a_steps = len(steps_a) - i - 1
            result.b_steps = len(steps_b) - i - 1
            return result
    n = min(len(steps_a), len(steps_b))
    result.common_steps = shared_steps + n
    result.a_steps, result.b_steps = len(steps_a) - n, len(steps_b) - n
    return result
