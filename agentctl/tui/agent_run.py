"""`R`: run the user's agent from the selected checkpoint, as `agentctl run THREAD --from
REF` does (agentctl.runs: the plan and the op record; agentctl.runners: the child process
in the user's interpreter), then compare the new run with the old.

The flow: the format must have a runtime (else a message, nothing run); a LangGraph
checkpoint waiting at an interrupt asks for the resume value, one where the graph has
ended for an input (JSON; empty: none); the agent is found as `run` finds it
(langgraph.json in the current directory or `agentctl tui --agent/--config/--python`); a
confirmation; the run, its checkpoints shown as the child saves them (the tree reloads its
tail; the run's dialog lists them), escape / ctrl+c stopping it; the op recorded (u undoes
it); then the compare view: the run's new head against the thread's head before the run.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from rich.text import Text

from agentctl.errors import UsageError
from agentctl.model import CheckpointMetadata
from agentctl.text import inert
from agentctl.tui.flows import can_write, confirm, done, need_selection
from agentctl.tui.names import short_meta

if TYPE_CHECKING:
    from agentctl.tui.host import WriteHost


def _check_json(text: str) -> None:
    try:
        json.loads(text)
    except ValueError as exc:
        raise UsageError(f"not JSON: {exc} (a string needs quotes)") from None


#: how much of an interrupt's question the resume dialog shows
QUESTION_MAX = 2000


def interrupt_text(writes: Any) -> str:
    """What pending `__interrupt__` writes ask, readable: each Interrupt's value (not
    the write's task id nor the Interrupt's type and id), a string as it is (its lines
    kept), a dict as `key: value` lines, anything else as JSON; inert, at most
    QUESTION_MAX characters."""
    values: list[Any] = []
    for w in writes if isinstance(writes, list) else [writes]:
        v = w.get("value") if isinstance(w, dict) and "task_id" in w else w
        for i in v if isinstance(v, list) else [v]:
            if isinstance(i, dict) and str(i.get("__type__", "")).endswith("Interrupt"):
                i = i.get("value")
            values.append(i)

    def shown(v: Any) -> str:
        return v if isinstance(v, str) else json.dumps(v, default=str, ensure_ascii=False)

    lines = []
    for v in values:
        if isinstance(v, dict):
            lines += [f"{k}: {shown(x)}" for k, x in v.items()]
        else:
            lines.append(shown(v))
    text = "\n".join(lines)
    return inert(text if len(text) <= QUESTION_MAX else text[: QUESTION_MAX - 1] + "…")


def _check_object(text: str) -> None:
    _check_json(text)
    if not isinstance(json.loads(text), dict):
        raise UsageError("the flow's inputs are a JSON object")


async def _ask(
    screen: WriteHost, meta: CheckpointMetadata, runtime: Any
) -> tuple[bool, str | None, str | None]:
    """(go on?, input text, resume text): what the run starts with."""
    from agentctl.tui.screens.prompt import PromptScreen

    if runtime.input == "none":  # a CrewAI checkpoint: resumed as it is
        return True, None, None
    if runtime.input == "object":  # a CrewAI @persist flow, kicked off again with its id
        text = await screen.app.push_screen_wait(
            PromptScreen(
                f"Run {short_meta(meta)}: the flow's inputs",
                Text.assemble(
                    "The flow is kicked off again with its id (CrewAI loads its newest state) and these inputs, as a "
                    "JSON object (empty: none), e.g. ",
                    ('{"city": "Oslo"}', "cyan"),
                ),
                placeholder="JSON object (empty: none)",
                ok_label="Next",
                validate=_check_object,
                allow_empty=True,
            )
        )
        return text is not None, text or None, None
    graph_input = runtime.graph_input
    cp = await screen.source.db.get(meta.checkpoint_id)
    tools = (cp.tools_result or {}) if cp is not None else {}
    waiting = bool(
        cp is not None
        and cp.next_node
        and isinstance(tools, dict)
        and "__interrupt__" in tools
        and "__resume__" not in tools
    )
    if not graph_input:  # an SDK's session runs on with the user's message (TEXT)
        text = await screen.app.push_screen_wait(
            PromptScreen(
                f"Run {short_meta(meta)}: the user's message",
                Text("The session runs on from its end with this message."),
                placeholder="the user's message",
                ok_label="Next",
            )
        )
        return text is not None, text, None
    if cp is not None and cp.next_node and not waiting:
        return True, None, None  # the graph goes on by itself (its next nodes)
    what = "resume value" if waiting else "input"
    body = Text.assemble(
        "The graph is waiting at an interrupt" if waiting else "The graph has ended here",
        (f" ({inert(cp.next_node, one_line=True)})" if waiting and cp is not None else ""),
        f": the {what} to run on with, as JSON (empty: none), e.g. ",
        ("true" if waiting else '{"messages": [{"role": "user", "content": "hi"}]}', "cyan"),
    )
    if waiting:
        body.append("\nthe interrupt asks:\n", style="dim")
        body.append(interrupt_text(tools.get("__interrupt__")))
    text = await screen.app.push_screen_wait(
        PromptScreen(
            f"Run {short_meta(meta)}: {what}",
            body,
            placeholder="JSON (empty: none)",
            ok_label="Next",
            validate=_check_json,
            allow_empty=True,
        )
    )
    if text is None:
        return False, None, None
    if not text:
        return True, None, None
    return (True, None, text) if waiting else (True, text, None)


async def _options(screen: WriteHost, fmt: str) -> None:
    """The run's options, as `run` takes them (`--context JSON --configurable KEY=JSON`),
    kept for the session's next runs and LangGraph edits (`e` through the agent)."""
    from agentctl.runs import parse_run_options, run_settings
    from agentctl.tui.screens.prompt import PromptScreen

    def check(text: str) -> None:
        run_settings(fmt, *parse_run_options(text))

    body = Text.assemble(
        'The graph\'s Runtime context and config["configurable"] values, as `agentctl run` '
        "takes them (empty: none), e.g. ",
        ('--context \'{"model": "m"}\' --configurable user_id=\'"u1"\'', "cyan"),
    )
    text = await screen.app.push_screen_wait(
        PromptScreen(
            "Run options",
            body,
            value=screen.agent.get("run_options") or "",
            placeholder="--context JSON --configurable KEY=JSON",
            ok_label="Set",
            validate=check,
            allow_empty=True,
        )
    )
    if text is not None:
        screen.agent["run_options"] = text


#: how many of a thread's newest checkpoints are looked at for the run to compare with
RECENT = 200


async def previous_run(screen: WriteHost, meta: CheckpointMetadata) -> tuple[CheckpointMetadata, str]:
    """What the new run is compared with, and how to say it: the thread's newest
    checkpoint (before the run) that is not on the line the run starts from (the head
    before the run, when the run starts before it: the REF's old continuation; when it
    starts from the head, the run that went on from an earlier step, e.g. before an
    edit), else the checkpoint the run starts from."""
    from agentctl.compare import run_path

    db = screen.source.db
    line = {m.checkpoint_id for m in await run_path(db, meta)}
    for m in await db.read_thread(meta.thread_id, limit=RECENT, descending=True):
        if m.checkpoint_id not in line:
            return m, f"the run before ({short_meta(m)})"
    return meta, f"where the run started ({short_meta(meta)})"


def start(screen: WriteHost) -> None:
    """`R` on the selected checkpoint (a write: refused in read-only mode, as under
    `agentctl serve` without --allow-writes)."""
    if not can_write(screen, "run"):
        return
    meta = need_selection(screen, "run from")
    if meta is None:
        return
    screen.run_worker(run(screen, meta), name="run_flow", group="write", exclusive=True, exit_on_error=False)


async def run(screen: WriteHost, meta: CheckpointMetadata) -> None:
    from agentctl.runners import RUNNERS

    db = screen.source.db
    fmt = db.format.name
    if fmt not in RUNNERS:
        screen.notify(
            f"the {fmt} format has no runtime agentctl can run (R runs agents of "
            f"{', '.join(sorted(RUNNERS))} databases): nothing run",
            title="Run",
            severity="warning",
            markup=False,
        )
        return
    go, input_text, resume_text = await _ask(screen, meta, RUNNERS[fmt])
    if not go:
        screen.notify("run cancelled: nothing run")
        return
    asked = await _confirmed(screen, meta, input_text, resume_text)
    if asked is not None:
        await _run(screen, meta, *asked)


async def _confirmed(
    screen: WriteHost, meta: CheckpointMetadata, input_text: str | None, resume_text: str | None
) -> tuple[Any, Any, tuple[CheckpointMetadata, str]] | None:
    """The run's operation and plan (agentctl.ops.RunAgent, as `agentctl run` plans it) once
    confirmed (`o` there sets the run's options, then it asks again), and what it is
    compared with; None (said) when cancelled or it cannot start."""
    from agentctl.ops import RunAgent
    from agentctl.runners import RUNNERS
    from agentctl.runs import parse_run_options

    runtime, thread = RUNNERS[screen.source.db.format.name], meta.thread_id
    while True:
        options = screen.agent.get("run_options") or ""
        try:
            op = RunAgent(
                thread,
                meta.checkpoint_id if runtime.replays else None,
                input_text,
                resume_text,
                *parse_run_options(options),
                url=screen.source.url,
                agent=screen.agent.get("agent"),
                config=screen.agent.get("config"),
                python=screen.agent.get("python"),
            )
            plan = await op.plan(screen.source.db, screen.source.history)
        except UsageError as exc:
            screen.notify(
                inert(f"{exc}: nothing run"), title="Run", severity="error", markup=False, timeout=12
            )
            return None
        against = await previous_run(screen, meta)
        who, python = plan.facts["agent"], plan.facts["python"]
        start = (
            f"from {short_meta(meta)}"
            if plan.data.from_id
            else f"on from the end of {inert(thread, one_line=True)}"
        )
        plan.facts["start"] = start
        body = Text.assemble(
            "Runs ",
            (inert(who.label, one_line=True), "bold"),
            f" {start} in ",
            (inert(python, one_line=True), "cyan"),
            (
                f" with {'resume' if resume_text is not None else 'input'} "
                + inert(resume_text or input_text or "", one_line=True)
                if (resume_text or input_text)
                else ""
            ),
            (" and " + inert(options, one_line=True) if options else ""),
            ".\nYour agent's code runs in a child process; what it saves is one operation (u undoes it). "
            "Then the compare view shows where the new run parted from the old.",
        )
        keys = [("o", "options", "options (--context, --configurable)")] if runtime.graph_options else []
        choice = await confirm(
            screen,
            f"Run {inert(who.label, one_line=True)} {start}?",
            body,
            [("confirm", "Run", "warning")],
            keys,
        )
        if choice is None:
            screen.notify("run cancelled: nothing run")
            return None
        if choice != "options":
            return op, plan, against
        await _options(screen, screen.source.db.format.name)


async def _run(
    screen: WriteHost, meta: CheckpointMetadata, op: Any, plan: Any, against: tuple[CheckpointMetadata, str]
) -> None:
    """The run, its checkpoints shown as the child saves them (the run's dialog, the tree's
    tail), escape / ctrl+c stopping it; then what it did and the compare view."""
    from agentctl.runners import RUNNERS
    from agentctl.tui.screens.run import RunScreen, checkpoint_line

    loop = asyncio.get_running_loop()
    thread = meta.thread_id
    child: list[Any] = []
    stopped = False

    def stop() -> None:
        nonlocal stopped
        stopped = True
        if child:
            child[0].interrupt()

    dialog = RunScreen(f"Running {plan.facts['agent'].label} {plan.facts['start']}", stop)
    screen.app.push_screen(dialog)

    def shown(event: dict[str, Any]) -> None:  # on the app's loop
        if dialog.is_attached:
            dialog.add(checkpoint_line(event))
        if screen.thread_id == thread:
            screen.load_tail(thread)  # the tree grows as the run goes (as follow mode's)

    def on_start(started: Any) -> None:
        child.append(started)
        screen.running = started
        if stopped:
            started.interrupt()

    try:
        result = await op.apply(
            screen.source.db,
            screen.source.history,
            plan,
            blocking=asyncio.to_thread,
            on_checkpoint=lambda event: loop.call_soon_threadsafe(shown, event),
            on_start=on_start,
        )
    except UsageError as exc:
        if dialog.is_attached:
            dialog.dismiss()
        screen.notify(inert(str(exc)), title="Run", severity="error", markup=False, timeout=12)
        return
    finally:
        screen.running = None
    if dialog.is_attached:
        dialog.dismiss()
    if result.data == "error":  # one notice, the error's
        done(screen, "run", _said(result), thread, result.select, title="The run failed", severity="error")
    else:
        done(screen, "run", _said(result), thread, result.select)
    if result.select is None:
        return
    b = await screen.source.db.get_metadata(result.select)
    if b is not None and RUNNERS[plan.data.fmt].replays:
        a, what = against
        screen.compare(a, b, note=f"A: {what} · B: the new run's last checkpoint")


def _said(result: Any) -> str:
    """What a run did, in the notice's one line: stopped, its error (where it was raised)
    or its summary (where it waits), and whether u undoes it."""
    from agentctl.runs import error_line

    outcome, undo = result.json, " (u undoes)" if result.op_id is not None else " (nothing was written)"
    if result.data == "interrupted":
        return f"stopped: {result.summary}{undo}"
    if result.data == "error":
        frames = outcome.get("frames") or []
        at = f" ({frames[-1].get('file')}, line {frames[-1].get('line')})" if frames else ""
        return f"{error_line(outcome)}{at}; {result.summary}{undo}"
    nxt = outcome.get("next") or []
    return f"{result.summary}{undo}" + (f"; waiting at {', '.join(map(str, nxt))}" if nxt else "")
