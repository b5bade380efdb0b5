"""One run of the user's agent on from a checkpoint, planned, started and recorded: what
the CLI's `run` and the TUI's `R` share (headless: no rich, no textual). The child process
itself is agentctl.runners'."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from agentctl.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from agentctl.storage.contract import History, Store

__all__ = [
    "RunPlan",
    "plan_run",
    "without_tables",
    "create_tables",
    "run_settings",
    "parse_run_options",
    "start_request",
    "RunTally",
    "recorded_summary",
    "record_run",
]


def json_value(option: str, text: str | None) -> Any:
    """`text` as JSON (None stays None); UsageError naming `option` when it is not JSON."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{option} is not JSON: {exc}") from None


#: configurable keys LangGraph itself sets (the thread and the checkpoint a run is on)
RESERVED = ("thread_id", "checkpoint_ns", "checkpoint_id", "checkpoint_map")


def parse_run_options(text: str) -> tuple[str | None, list[str]]:
    """`--context JSON --configurable KEY=JSON ...` as a shell would split it (the TUI's
    run options, typed as on the command line): (the context text, the KEY=JSON items).
    UsageError for anything else."""
    import shlex

    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"the options do not parse as a command line: {exc}") from None
    context: str | None = None
    configurable: list[str] = []
    while words:
        word = words.pop(0)
        name, eq, inline = word.partition("=")
        if name not in ("--context", "--configurable"):
            raise UsageError(f"{word!r}: the options are --context JSON and --configurable KEY=JSON")
        if not eq and not words:
            raise UsageError(f"{name} needs a value")
        value = inline if eq else words.pop(0)
        if name == "--context":
            context = value
        else:
            configurable.append(value)
    return context, configurable


def run_settings(
    fmt: str, context_text: str | None = None, configurable: list[str] | None = None
) -> dict[str, Any]:
    """What the graph is run with besides its input: {"context": --context JSON (the
    graph's Runtime context), "configurable": {KEY: JSON} of --configurable KEY=JSON}, the
    keys given only; UsageError for bad JSON, a reserved key, or a format that has none."""
    from agentctl.runners import RUNNERS

    out: dict[str, Any] = {}
    if context_text is None and not configurable:
        return out
    if not RUNNERS.get(fmt, RUNNERS["langgraph"]).graph_options:
        raise UsageError(f"--context and --configurable are LangGraph's; a {fmt} agent takes none")
    if context_text is not None:
        out["context"] = json_value("--context", context_text)
    values: dict[str, Any] = {}
    for item in configurable or []:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--configurable {item!r} is not KEY=JSON (e.g. user_id='\"u1\"')")
        if key in RESERVED:
            raise UsageError(
                f"--configurable {key}: agentctl sets {key} itself (the thread and checkpoint "
                "are THREAD and --from)"
            )
        values[key] = json_value(f"--configurable {key}", text)
    if values:
        out["configurable"] = values
    return out


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
    settings: dict[str, Any] = field(default_factory=dict)


async def plan_run(
    store: Store,
    history: History,
    thread: str,
    from_ref: str | None = None,
    input_text: str | None = None,
    resume_text: str | None = None,
    context_text: str | None = None,
    configurable: list[str] | None = None,
) -> RunPlan:
    """Check a run can start (the format has a runtime, the thread and REF exist, the
    input is what the framework takes) and read what it is recorded against; nothing is
    run or written. UsageError / ThreadNotFound otherwise."""
    from agentctl.errors import NotFoundError, ThreadNotFound
    from agentctl.refs import resolve
    from agentctl.runners import RUNNERS, require_runtime
    from agentctl.storage.contract import run_recorder

    if input_text is not None and resume_text is not None:
        raise UsageError("use one of --input and --resume")
    fmt = store.format.name
    require_runtime(fmt, "run")
    settings = run_settings(fmt, context_text, configurable)
    runtime = RUNNERS[fmt]
    if runtime.replays and resume_text is not None and not runtime.graph_options:
        raise UsageError(
            f"--resume is LangGraph's (the answer to an interrupt); a {fmt} run resumes from its "
            "checkpoint as it is"
        )
    if not runtime.replays and (from_ref is not None or resume_text is not None):
        raise UsageError(
            f"--from and --resume are LangGraph's; a {fmt} "
            + (
                "session runs on from its end with --input TEXT"
                if runtime.input == "required"
                else "flow is kicked off again with its id"
            )
        )
    if runtime.input == "required" and input_text is None:  # the SDKs: a session on from its end
        raise UsageError(f"a {fmt} run needs --input TEXT (the user's message)")
    if runtime.input == "none" and input_text is not None:
        raise UsageError(
            f"a {fmt} run resumes from a checkpoint and takes no --input (its inputs are the checkpoint's)"
        )
    recorder = run_recorder(store, history)
    from_id = None
    exists = await store.find_thread_ids(thread, 1) == [thread]
    if runtime.from_head and from_ref is None:  # THREAD (its newest checkpoint) or a checkpoint
        from_ref = thread
        if not exists:
            thread = (await resolve(store, thread)).thread_id
            exists = True
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
    extra = await history.run_options(thread, from_id)
    before = await recorder.run_keys(thread)
    # LangGraph's --input is the graph's input (JSON); an SDK's, the user's message (TEXT)
    value = json_value("--input", input_text) if runtime.graph_input else input_text
    if runtime.input == "object" and value is not None and not isinstance(value, dict):
        raise UsageError('--input is the flow\'s inputs: a JSON object, e.g. \'{"city": "Oslo"}\'')
    return RunPlan(
        fmt,
        thread,
        from_id,
        before,
        extra,
        input_text,
        resume_text,
        value,
        json_value("--resume", resume_text),
        settings,
    )


async def without_tables(db: str) -> bool:
    """Whether the database has no tables yet: a SQLite file that does not exist (its
    directory does) or is empty, a Postgres database (schema) with none. Reads only."""
    import os

    from agentctl.storage import local_file, parse_url
    from agentctl.storage.schema import tables_or_none

    kind, target = parse_url(db)
    path = local_file(db)
    if path is not None:
        if path == ":memory:" or (
            not os.path.exists(path) and not os.path.isdir(os.path.dirname(path) or ".")
        ):
            return False
        if os.path.exists(path) and os.path.getsize(path) > 0:
            tables = await tables_or_none(kind, target)
            return tables is not None and not [t for t in tables if not t.startswith("sqlite_")]
        return True
    tables = await tables_or_none(kind, target)
    return tables is not None and not tables


def create_tables(db: str, python: str, agent: Any = None) -> None:
    """LangGraph's saver makes its tables in the database (setup(), in the user's
    interpreter, as `langgraph dev` would; LangGraph.js's in node for a JS `agent`): what a
    run with --input on a new database needs first. UsageError when it cannot."""
    from agentctl.runners import run_child
    from agentctl.storage import parse_url

    kind, target = parse_url(db)
    request: dict[str, Any] = {"mode": "create", "kind": kind, "target": target}
    if agent is not None and agent.runtime == "node":
        request.update(agent.request())
    ended = run_child("langgraph", python, request)
    if ended.event.get("event") != "created":
        raise UsageError(str(ended.event.get("message") or "the tables were not created"))


def start_request(plan: RunPlan, db: str, agent: Any) -> dict[str, Any]:
    """What the child is asked to do (agentctl.runners.run_child's request; `agent`:
    agentctl.runners.Agent)."""
    from agentctl.storage import target_to_write

    kind, target = target_to_write(db)
    request: dict[str, Any] = {
        "kind": kind,
        "target": target,
        "thread": plan.thread,
        "from": plan.from_id,
        **agent.request(),
        **plan.extra,
        **plan.settings,
    }
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


def error_line(event: dict[str, Any]) -> str:
    """What an "error" event says: the user's agent raised (a frame of the user's code on
    its traceback), else the framework (or the runner) did: never the user's then."""
    where = (
        f" in node {event['node']!r}"
        if event.get("node")
        else (f" in agent {event['agent']!r}" if event.get("agent") else "")
    )
    origin = event.get("origin") or "agent"
    who = (
        "your agent raised" if origin == "agent" else f"the run failed in {origin} itself, not in your code:"
    )
    return f"{who} {event.get('type')}{where}: {event.get('message')}"


def recorded_summary(plan: RunPlan, agent_label: str, outcome: Any) -> tuple[dict[str, Any], str, str]:
    """(the outcome's last event, the result word, the op log's summary) of a finished
    child (agentctl.runners.ChildOutcome)."""
    event: dict[str, Any] = {"event": "interrupted"} if outcome.interrupted else dict(outcome.event)
    result = {"done": "done", "error": f"error: {event.get('type')}", "interrupted": "interrupted"}.get(
        str(event.get("event")), f"exit {outcome.code}"
    )
    shown = plan.resume_text if plan.resume_text is not None else plan.input_text
    summary = (
        f"run {plan.thread}"
        + (f" from {plan.from_id}" if plan.from_id else "")
        + f" with {agent_label}"
        + (f" ({'resume' if plan.resume_text is not None else 'input'} {short(shown)})" if shown else "")
        + f": {result}"
    )
    return event, result, summary


async def record_run(
    history: History, plan: RunPlan, agent_label: str, summary: str, result: str
) -> int | None:
    """Record what the run saved as one undoable op: its id (None when it saved nothing).
    (`plan_run` checked that the format declares RUN.)"""
    from agentctl.storage.contract import RecordsRuns

    return await cast(RecordsRuns, history).record_run(
        plan.thread,
        plan.before,
        summary,
        {
            "agent": agent_label,
            "input": plan.value,
            "resume": plan.resume,
            "from": plan.from_id,
            "result": result,
            **plan.settings,
        },
    )
