"""`agentctl edit`'s changes: `--set KEY=JSON` and `--unset KEY`, parsed and applied to a
state as `show --json` shows it, and the edit's plan and write that the CLI's `edit` and
the TUI's `e` share (headless: no rich, no textual).

KEY is a key of the state with dots for nested keys (`plan.next_city`, `messages.3.content`:
a number indexes a list). The value is JSON. Applying them gives the state the edit
writes, for the plan's diff; the framework applies the same changes to its own objects.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from agentctl import deep
from agentctl.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from agentctl.model import Checkpoint, CheckpointMetadata
    from agentctl.storage.contract import History, Store
    from agentctl.storage.results import OpResult

__all__ = [
    "Edit",
    "key_path",
    "value_at",
    "parse_edits",
    "apply_edits",
    "EditPlan",
    "editable_state",
    "plan_edit",
    "edit_natively",
    "edit_through_agent",
    "record_edit",
]


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


def key_path(key: str) -> tuple[str, ...]:
    """KEY (dots for nested keys) as a path; UsageError for an empty part."""
    return _path(key, "key")


def value_at(state: Any, path: tuple[str, ...]) -> tuple[bool, Any]:
    """(True, the value at `path`) in a state as `show --json` shows it, else (False, None)."""
    node = state
    for key in path:
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.lstrip("-").isdigit() and -len(node) <= int(key) < len(node):
            node = node[int(key)]
        else:
            return False, None
    return True, node


def parse_edits(sets: list[str] | None, unsets: list[str] | None) -> list[Edit]:
    """The edits of the command line, in order (sets then unsets); exit 2 on bad input."""
    out: list[Edit] = []
    for item in sets or []:
        key, eq, text = item.partition("=")
        if not eq:
            raise UsageError(f"--set {item!r}: use KEY=JSON (e.g. --set plan.next_city='\"Paris\"')")
        try:
            value = deep.strict_loads(text)
        except ValueError as exc:
            raise UsageError(
                f"--set {key}: the value is not JSON ({exc}); a string needs quotes: {key}='\"{text}\"'"
            ) from None
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
    held = ".".join(edit.path[: len(edit.path) - len(path)])  # the key whose value `node` is
    raise UsageError(
        f"{where}: "
        + (f"{held!r} holds" if held else "the state is")
        + f" a {type(node).__name__}, not an object or list"
    )


def apply_edits(
    state: dict[str, Any],
    edits: list[Edit],
    *,
    top_level: set[str] | None = None,
    new_keys: bool = False,
    unset_to_none: bool = False,
) -> dict[str, Any]:
    """A copy of `state` with the edits made. An unknown top-level key is an error naming
    the keys there are (`top_level`: the keys that may be set, default the state's),
    unless `new_keys` (the state is a free mapping: --set may add a key). `unset_to_none`:
    --unset of a top-level key leaves it with None, as the framework removes one (ADK:
    a state_delta's None)."""
    known = set(state) if top_level is None else top_level
    out = copy.deepcopy(state)
    for e in edits:
        if e.path[0] not in known and not (new_keys and not e.unset and len(e.path) == 1):
            raise UsageError(f"the state has no key {e.path[0]!r} (its keys: {', '.join(sorted(known))})")
        if unset_to_none and e.unset and len(e.path) == 1:
            out[e.key] = None
            continue
        _apply(out, e.path, e)
    return out


# ---- one edit, planned then written (the CLI's `edit` and the TUI's `e`) ----------------


@dataclass
class EditPlan:
    """What an edit of one checkpoint will write: the state as the format edits it
    (`old`), the state after the edits (`new`), and how it is written: by the format's
    History itself (`native`: AgentOS, the SDKs) or by the framework in the user's
    interpreter (LangGraph's update_state; `before`: the run keys that record it)."""

    fmt: str
    native: bool
    meta: CheckpointMetadata  # the checkpoint edited
    old: dict[str, Any]
    new: dict[str, Any]
    edits: list[Edit]
    before: Any = None
    changes: list[Any] = field(default_factory=list)
    #: what a native edit does, as the History says it (its EDIT_CONFIRM: {ref}, {thread})
    confirm: str = "write a new head of {thread} holding this checkpoint with these values"

    @property
    def what(self) -> str:
        return ", ".join(("unset " if e.unset else "set ") + e.key for e in self.edits)

    @property
    def confirm_text(self) -> str:
        """What the write does, as the confirmation asks it."""
        m = self.meta
        if not self.native:  # the framework writes it (LangGraph's update_state)
            return f"write a new checkpoint after {m.checkpoint_id} with these values"
        return self.confirm.format(ref=m.checkpoint_id, thread=m.thread_id)


def editable_state(history: History, cp: Checkpoint) -> dict[str, Any]:
    """What an edit's keys name: the History's `edit_view` (the state without the keys
    a format adds of its own, or the format's own view: an SDK's item)."""
    return dict(history.edit_view(cp))


def graph_at_hand(agent: str | None, config: str | None) -> bool:
    """Whether the user's graph is at hand for a LangGraph edit (--agent, --config, or a
    langgraph.json in the current directory): LangGraph itself writes the edit then;
    else agentctl writes the update checkpoint (LangGraphHistory.edit_state)."""
    from pathlib import Path

    from agentctl.runners import CONFIG_NAME

    return agent is not None or config is not None or (Path.cwd() / CONFIG_NAME).is_file()


async def plan_edit(
    store: Store,
    history: History,
    meta: CheckpointMetadata,
    edits: list[Edit],
    *,
    for_write: bool = True,
    graph: bool = False,
) -> EditPlan:
    """The plan of `edits` at checkpoint `meta` (nothing written). A format agentctl
    cannot edit without the framework and runs none of, a subgraph's checkpoint, a key
    that is not there: UsageError (exit 2). `for_write`: also read what a write through
    the framework needs to record its op (not for a dry run). `graph`: the user's graph is
    at hand (`graph_at_hand`): a LangGraph edit goes through it."""
    from agentctl.diff import diff_values
    from agentctl.runners import require_runtime
    from agentctl.storage.contract import editor, run_recorder

    fmt = store.format.name
    # the format writes the edit itself (Capability.EDIT); LangGraph only without the user's graph
    native = not (fmt == "langgraph" and graph)
    if native:
        editor(store, history)
    else:
        require_runtime(fmt, "edit")
        recorder = run_recorder(store, history, "edit")
    if fmt == "langgraph" and "|" in meta.thread_id and meta.thread_id.split("|", 1)[1]:
        raise UsageError(f"{meta.checkpoint_id} is a checkpoint of a subgraph; edit the parent graph's")
    cp = await store.get(meta.checkpoint_id)
    if cp is None:
        raise UsageError(f"checkpoint {meta.checkpoint_id} no longer exists")
    old = editable_state(history, cp)
    new = apply_edits(old, edits, new_keys=history.EDIT_NEW_KEYS, unset_to_none=history.EDIT_UNSET_TO_NONE)
    history.edit_check(old, new)  # what the format's rows can hold
    before = await recorder.run_keys(meta.thread_id) if for_write and not native else None
    return EditPlan(
        fmt, native, meta, old, new, list(edits), before, diff_values(old, new, "state"), history.EDIT_CONFIRM
    )


async def edit_natively(history: History, plan: EditPlan, as_node: str | None = None) -> OpResult:
    """Write a native edit (AgentOS: a new head holding the checkpoint with the new
    state; the OpenAI Agents SDK, the article's store: changed in place; LangGraph
    without the graph: an update checkpoint after REF, as `as_node`): the History's
    OpResult. (`plan_edit` checked that the format declares EDIT.)"""
    from agentctl.storage.contract import EditsState

    extra: dict[str, Any] = {}
    if plan.fmt == "langgraph":
        extra = {
            "keys": list(dict.fromkeys(e.path[0] for e in plan.edits)),
            "as_node": as_node,
            "thread_id": plan.meta.thread_id,
        }
    return await cast(EditsState, history).edit_state(plan.meta.checkpoint_id, plan.new, plan.what, **extra)


def edit_through_agent(
    plan: EditPlan,
    db: str,
    agent: Any,
    python: str,
    as_node: str | None = None,
    settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Let the framework write the edit in the user's interpreter (LangGraph's
    update_state at the checkpoint, as `as_node`; `agent`: agentctl.runners.Agent). Blocks
    until the child is done; returns its "edited" event (the new checkpoint's id, step,
    next). `settings`: agentctl.runs.run_settings' (the graph's context, configurable
    values). The op is not recorded yet: `record_edit` does that."""
    from agentctl.runners import run_child
    from agentctl.storage import target_to_write

    kind, target = target_to_write(db)
    m = plan.meta
    request: dict[str, Any] = {
        "mode": "edit",
        "kind": kind,
        "target": target,
        "thread": m.thread_id,
        "from": m.checkpoint_id,
        **agent.request(),
        "edits": [e.to_wire() for e in plan.edits],
        "as_node": as_node,
        **(settings or {}),
    }
    outcome = run_child(plan.fmt, python, request).event
    if outcome.get("event") != "edited":
        raise UsageError(str(outcome.get("message") or f"the edit did not happen ({outcome.get('event')})"))
    return outcome


async def record_edit(
    history: History, plan: EditPlan, agent_label: str, as_node: str | None = None
) -> int | None:
    """Record an edit the framework wrote (`edit_through_agent`) as one undoable op: its id.
    (`plan_edit` checked that the format declares RUN.)"""
    from agentctl.storage.contract import RecordsRuns

    m = plan.meta
    summary = f"edit {m.thread_id} at step {m.step} ({m.checkpoint_id}): {plan.what}"
    return await cast(RecordsRuns, history).record_run(
        m.thread_id,
        plan.before,
        summary,
        {
            "agent": agent_label,
            "edits": [e.to_wire() for e in plan.edits],
            "as_node": as_node,
            "ref": m.checkpoint_id,
        },
        kind="edit",
    )
