"""One run of the user's agent on from a checkpoint, planned, started and recorded: what
the CLI's `run` and the TUI's `R` share (headless: no rich, no textual). The child process
itself is agentctl.runners'."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agentctl.errors import UsageError

__all__ = ["RunPlan", "plan_run", "start_request", "RunTally", "recorded_summary", "record_run"]


def json_value(option: str, text: str | None) -> Any:
    """`text` as JSON (None stays None); UsageError naming `option` when it is not JSON."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{option} is not JSON: {exc}") from None


@dataclass
class RunPlan:
    """What a run starts from: the thread, the checkpoint (None: the head), the input
    (LangGraph: JSON; an SDK's: the user's message) or the resume value, and the keys of
    what the thread holds before (what the run adds is recorded against them)."""

    fmt: str
    thread: str
    from_id: str | None
    before: Any
    extra: dict[str, Any] = field(default_factory=dict)
    input_text: str | None = None
    resume_text: str | None = None
    value: Any = None
    resume: Any = None


async def plan_run(store: Any, history: Any, thread: str, from_ref: str | None = None,
                   input_text: str | None = None, resume_text: str | None = None) -> RunPlan:
    """Check a run can start (the format has a runtime, the thread and REF exist, the
    input is what the framework takes) and read what it is recorded against; nothing is
    run or written. UsageError / ThreadNotFound otherwise."""
    from agentctl.errors import NotFoundError, ThreadNotFound
    from agentctl.refs import resolve
    from agentctl.runners import RUNNERS, require_runtime

    if input_text is not None and resume_text is not None:
        raise UsageError("use one of --input and --resume")
    fmt = store.format.name
    require_runtime(fmt, "run")
    if not RUNNERS[fmt].replays:  # the SDKs run a session on from its end, with the user's message
        if from_ref is not None or resume_text is not None:
            raise UsageError(f"--from and --resume are LangGraph's; a {fmt} session runs on from its "
                             "end with --input TEXT")
        if input_text is None:
            raise UsageError(f"a {fmt} run needs --input TEXT (the user's message)")
    extra = history.run_options() if hasattr(history, "run_options") else {}
    from_id = None
    exists = await store.find_thread_ids(thread, 1) == [thread]
    if from_ref is not None:
        try:
            meta = await resolve(store, from_ref)
        except NotFoundError as exc:
            raise UsageError(f"--from {from_ref}: {exc}") from None
        if meta.thread_id != thread:
            raise UsageError(f"--from {from_ref} is a checkpoint of {meta.thread_id}, not of {thread}")
        from_id = meta.checkpoint_id
    elif not exists and input_text is None:
        raise ThreadNotFound(thread)
    before = await history.run_keys(thread)
    # LangGraph's --input is the graph's input (JSON); an SDK's, the user's message (TEXT)
    value = json_value("--input", input_text) if RUNNERS[fmt].graph_input else input_text
    return RunPlan(fmt, thread, from_id, before, extra, input_text, resume_text, value,
                   json_value("--resume", resume_text))


def start_request(plan: RunPlan, db: str, agent: Any) -> dict[str, Any]:
    """What the child is asked to do (agentctl.runners.run_child's request; `agent`:
    agentctl.runners.Agent)."""
    from agentctl.storage import target_to_write

    kind, target = target_to_write(db)
    request: dict[str, Any] = {"kind": kind, "target": target, "thread": plan.thread, "from": plan.from_id,
                               "agent": agent.target, "paths": agent.paths, **plan.extra}
    if plan.resume_text is not None:
        request["resume"] = plan.resume
    else:
        request["input"] = plan.value
    return request


class RunTally:
    """Counts what the run saves, as it comes: `take(event)` is True for a new checkpoint
    (LangGraph streams the one it starts from again: not new); `ids`: the new checkpoints
    of the thread itself (a subgraph's, under their namespace, are counted, not listed)."""

    def __init__(self, plan: RunPlan) -> None:
        self.plan = plan
        self.saved = 0
        self.ids: list[str] = []

    def take(self, event: dict[str, Any]) -> bool:
        if (event.get("ns") or "", event.get("id")) in self.plan.before.get("checkpoints", ()):
            return False  # where the run started (LangGraph streams it again, a subgraph's too)
        self.saved += 1
        if event.get("id") is not None and not event.get("ns"):  # the thread's own (not a subgraph's)
            self.ids.append(str(event["id"]))
        return True


def short(text: str | None, width: int = 60) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def recorded_summary(plan: RunPlan, agent_label: str, outcome: Any) -> tuple[dict[str, Any], str, str]:
    """(the outcome's last event, the result word, the op log's summary) of a finished
    child (agentctl.runners.ChildOutcome)."""
    event: dict[str, Any] = {"event": "interrupted"} if outcome.interrupted else dict(outcome.event)
    result = {"done": "done", "error": f"error: {event.get('type')}", "interrupted": "interrupted"}.get(
        str(event.get("event")), f"exit {outcome.code}")
    shown = plan.resume_text if plan.resume_text is not None else plan.input_text
    summary = (f"run {plan.thread}" + (f" from {plan.from_id}" if plan.from_id else "") + f" with {agent_label}"
               + (f" ({'resume' if plan.resume_text is not None else 'input'} {short(shown)})" if shown else "")
               + f": {result}")
    return event, result, summary


async def record_run(history: Any, plan: RunPlan, agent_label: str, summary: str, result: str) -> Any:
    """Record what the run saved as one undoable op: its id (None when it saved nothing)."""
    return await history.record_run(
        plan.thread, plan.before, summary, {"agent": agent_label, "input": plan.value, "resume": plan.resume,
                                            "from": plan.from_id, "result": result})
