"""The TUI's writes, each one flow: ask for what it needs, plan (agentctl.ops: the
operation the CLI's command runs too, nothing written), confirm (a ConfirmScreen showing
the plan), apply, say what happened (the operation's summary; OperationFinished, which
reloads the views).

Imported when the first write starts. Each flow runs in a worker of the main screen
(group "write": one at a time); they await the dialogs they push.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.text import Text

from agentctl.errors import MergeConflictError
from agentctl.model import CheckpointMetadata
from agentctl.storage import PruneSpec
from agentctl.text import inert
from agentctl.tui.messages import OperationFinished
from agentctl.tui.names import short_meta

if TYPE_CHECKING:
    from agentctl.ops import Operation, Plan
    from agentctl.tui.host import WriteHost


def start(screen: WriteHost, action: str) -> None:
    """Start the write `action` (a key of FLOWS: rewind, branch, merge, prune, undo, redo,
    edit) on what the screen shows, if this database can do it and what it needs is
    selected. (`R`'s run is agentctl.tui.agent_run's.)"""
    if not can_write(screen, action):
        return
    target, what, flow = FLOWS[action]
    args: list[Any] = []
    if target is not None:
        found = need_selection(screen, what) if target == "checkpoint" else target_thread(screen, what)
        if found is None:
            return
        args.append(found)
    screen.run_worker(
        flow(screen, *args), name=f"{action}_flow", group="write", exclusive=True, exit_on_error=False
    )


# ---- what a write needs ------------------------------------------------------------------


def can_write(screen: WriteHost, action: str) -> bool:
    if screen.readonly:
        import os

        why = (
            "agentctl serve without --allow-writes"
            if "web_driver" in os.environ.get("TEXTUAL_DRIVER", "")
            else "started with --read-only"
        )
        screen.notify(f"read-only mode: {action} is disabled ({why})", severity="warning", markup=False)
        return False
    store = screen.source.store
    if store is None:
        return False
    from agentctl.storage.contract import ALL_CAPABILITIES

    # each write is a declared Capability (edit, run and redo too): refused here unless declared
    if action in {c.value for c in ALL_CAPABILITIES} and not store.can(action):
        screen.notify(
            f"the {store.format.name} format does not support {action}", severity="warning", markup=False
        )
        return False
    return True


def need_selection(screen: WriteHost, action: str) -> CheckpointMetadata | None:
    if screen.selected is None:
        screen.notify(f"select a checkpoint to {action}", severity="warning")
    return screen.selected


def target_thread(screen: WriteHost, action: str) -> str | None:
    """The thread a merge or a prune is about: the selected checkpoint's, else the
    thread shown (None, said, when there is neither)."""
    thread = screen.selected.thread_id if screen.selected is not None else screen.thread_id
    if thread is None:
        screen.notify(f"select a thread to {action}", severity="warning")
    return thread


async def confirm(
    screen: WriteHost,
    title: str,
    body: RenderableType,
    choices: list[tuple[str, str, str]] | None = None,
    keys: list[tuple[str, str, str]] | None = None,
) -> str | None:
    from agentctl.tui.screens.confirm import ConfirmScreen

    return await screen.app.push_screen_wait(ConfirmScreen(title, body, choices, keys))


def done(
    screen: WriteHost,
    kind: str,
    summary: str,
    select_thread: str | None = None,
    select: str | None = None,
    title: str | None = None,
    severity: str = "information",
) -> None:
    """Say what a write did (one notice: `title`, `severity`); the views reload (on
    `select_thread`, on checkpoint `select`)."""
    screen.post_message(OperationFinished(kind, summary, select_thread, select, title, severity))


async def safety_copy(screen: WriteHost) -> str | None:
    """Before a hard delete on SQLite, the copy of the file the CLI takes too
    (storage.backup.safety_copy, in a thread: a large file takes a while); its path."""
    import asyncio

    from agentctl.storage import local_file
    from agentctl.storage.backup import safety_copy as copy

    path = local_file(screen.source.url)
    return await asyncio.to_thread(copy, path) if path is not None else None


# ---- the flows -----------------------------------------------------------------------------


async def plan_or_say(screen: WriteHost, op: Operation) -> Plan | None:
    """The operation's plan, or None when there is nothing to write (said)."""
    plan = await op.plan(screen.source.db, screen.source.history)
    if plan.nothing:
        screen.notify(inert(plan.nothing, one_line=True), markup=False)
        return None
    return plan


async def asked(
    screen: WriteHost, kind: str, title: str, body: RenderableType, choices: list[tuple[str, str, str]]
) -> str | None:
    """The confirmation's answer; None (cancelled, said) when there is none."""
    choice = await confirm(screen, title, body, choices)
    if choice is None:
        screen.notify(f"{kind} cancelled: nothing changed")
    return choice


async def apply(screen: WriteHost, op: Operation, plan: Plan, **more: Any) -> None:
    """The write, then what it did (how to undo it: u), on the thread it changed. A
    destructive one (a prune) takes the safety copy the CLI takes first, and names it."""
    copy = await safety_copy(screen) if plan.destructive else None
    result = await op.apply(screen.source.db, screen.source.history, plan, **more)
    said = result.summary + (" (u undoes)" if result.undoable and result.op_id is not None else "")
    done(screen, op.kind, said + (f"; a copy of the file from before: {copy}" if copy else ""), result.thread)


async def rewind(screen: WriteHost, meta: CheckpointMetadata) -> None:
    from agentctl.ops import Rewind
    from agentctl.render import plan_text

    op = Rewind(meta.checkpoint_id)
    plan = await plan_or_say(screen, op)
    if plan is not None and await asked(
        screen,
        "rewind",
        f"Rewind {short_meta(meta)}?",
        plan_text(plan.data),
        [("confirm", "Rewind", "warning")],
    ):
        await apply(screen, op, plan)  # the archive thread named in the preview is the one written


async def branch(screen: WriteHost, meta: CheckpointMetadata) -> None:
    from agentctl.ops import Branch
    from agentctl.refs import check_branch_name
    from agentctl.tui.screens.prompt import PromptScreen

    body = Text.assemble(
        "A new thread ",
        ("<thread>-branch-<name>-<4 hex>", "cyan"),
        " starts with a copy of ",
        (short_meta(meta), "bold"),
        " (step 0, tags branch, <name>).\nNothing else changes. Name:",
    )
    name = await screen.app.push_screen_wait(
        PromptScreen(
            f"Branch from {short_meta(meta)}",
            body,
            placeholder="branch name, e.g. retry-backoff",
            ok_label="Branch",
            validate=check_branch_name,
        )
    )
    if name is None:
        screen.notify("branch cancelled: nothing changed")
        return
    op = Branch(meta.checkpoint_id, name)
    await apply(screen, op, await op.plan(screen.source.db, screen.source.history))


async def merge(screen: WriteHost, branch: str) -> None:
    from agentctl.ops import Merge
    from agentctl.render import diff_table, plan_text
    from agentctl.tui.screens.prompt import PromptScreen
    from agentctl.tui.source import changes_between

    summary = await screen.source.db.thread_summary(branch)
    default = summary.branch_of if summary is not None and summary.branch_of else ""
    suggestions = [t for t in screen.threads.summaries if t != branch]
    target = await screen.app.push_screen_wait(
        PromptScreen(
            f"Merge {inert(branch, one_line=True)} into…",
            Text(
                "The thread to merge into (its head gets one new merge checkpoint). "
                "The next screen shows the merge and any conflicts."
            ),
            value=default,
            placeholder="target thread id",
            suggestions=suggestions,
            ok_label="Preview",
        )
    )
    if target is None:
        screen.notify("merge cancelled: nothing changed")
        return
    op = Merge(branch, target)
    found = await plan_or_say(screen, op)
    if found is None:
        return
    plan = found.data
    if plan.conflicts:
        # plan_text lists the conflicts; the result depends on the side chosen.
        body: RenderableType = Group(
            plan_text(plan),
            Text(
                f"\na three-way merge cannot decide {len(plan.conflicts)} conflict(s): "
                "merge keeping ours (the target's values) or theirs (the branch's), "
                "or cancel.",
                style="bold red",
            ),
        )
        choices = [("ours", "Keep ours", "warning"), ("theirs", "Keep theirs", "warning")]
        title = f"Merge {branch} into {target}: conflicts"
    else:
        # What the target's head would become: the merged checkpoint against it.
        changes = [c for c in changes_between(plan.ours, plan.merged) if c.section != "metadata"]
        effect: RenderableType = (
            Group(
                Text(f"\nchanges to {inert(target, one_line=True)}'s head:", style="bold"),
                diff_table(changes),
            )
            if changes
            else Text("\nno change to the target's messages, state or tools", style="dim")
        )
        body = Group(plan_text(plan), effect)
        choices = [("three-way", "Merge", "primary")]
        title = f"Merge {branch} into {target}?"
    choice = await asked(screen, "merge", inert(title, one_line=True), body, choices)
    if choice is None:
        return
    try:
        await apply(screen, op, found, strategy=choice)
    except MergeConflictError as exc:
        # The target moved between the preview and the merge.
        screen.notify(inert(str(exc)), title="Merge conflict", severity="error", markup=False)


async def prune(screen: WriteHost, thread: str) -> None:
    from agentctl.ops import Prune
    from agentctl.render import plan_text
    from agentctl.tui.screens.prompt import PruneScreen

    history = screen.source.history
    answer = await screen.app.push_screen_wait(
        PruneScreen(inert(thread, one_line=True), getattr(history, "prune_policies", None))
    )
    if answer is None:
        screen.notify("prune cancelled: nothing changed")
        return
    policy, raw = answer
    try:
        param = int(raw or "0")
    except ValueError:
        screen.notify(
            f"the parameter must be a whole number, not {inert(raw, one_line=True)!r}",
            severity="error",
            markup=False,
        )
        return
    op = Prune(thread, prune_policy(policy, param))
    plan = await plan_or_say(screen, op)
    if plan is None:
        return
    plans = plan.data
    body = plan_text(plans[0]) if len(plans) == 1 else Group(*[plan_text(p) for p in plans])
    if await asked(
        screen,
        "prune",
        f"Prune {inert(thread, one_line=True)}?",
        body,
        [("confirm", f"Delete {plan.facts['total']}", "error")],
    ):
        await apply(screen, op, plan)


async def undo(screen: WriteHost) -> None:
    from agentctl.ops import Undo

    op = Undo()
    plan = await plan_or_say(screen, op)
    if plan is None:
        return
    record = plan.data
    body = Text()
    body.append(f"#{record.op_id} {record.kind}", style="bold")
    body.append(f"  {inert(record.created_at, one_line=True)}\n", style="dim")
    body.append(inert(record.summary))
    if record.threads:
        body.append("\nthreads: ", style="dim")
        body.append(inert(", ".join(record.threads)))
    if await asked(screen, "undo", "Undo the last operation?", body, [("confirm", "Undo", "warning")]):
        await apply(screen, op, plan)


async def redo(screen: WriteHost) -> None:
    """Ctrl-Y: re-apply the newest undone operation (as `agentctl redo`): what it would do
    first (History.redo's dry run), then the write. A format whose writes are not on the
    journal yet says so (Unsupported), nothing changed."""
    from agentctl.errors import AgentctlError
    from agentctl.ops import Redo

    op = Redo()
    try:
        plan = await op.plan(screen.source.db, screen.source.history)
    except AgentctlError as exc:
        screen.notify(inert(str(exc)), title="Redo", severity="warning", markup=False)
        return
    # what it would do, as the plan says it ("redo operation N (…)"), and to which checkpoints
    dry = plan.data
    body = Text(inert(dry.summary))
    counts = [
        f"{verb} {len(ids)}"
        for verb, ids in (("bring back", dry.created), ("remove", dry.deleted), ("move", dry.moved))
        if ids
    ]
    if counts:
        body.append(f"\nit would {', '.join(counts)} checkpoint(s)", style="dim")
    if await asked(screen, "redo", "Redo the last undone operation?", body, [("confirm", "Redo", "warning")]):
        await apply(screen, op, plan)


async def edit(screen: WriteHost, meta: CheckpointMetadata) -> None:
    """`e`: the editor (agentctl.tui.screens.edit), the diff, the write: as `agentctl
    edit` does it (agentctl.edits: the format's own edit, or LangGraph's update_state in
    the user's interpreter)."""
    import asyncio

    from agentctl.edits import graph_at_hand, plan_edit
    from agentctl.errors import UsageError
    from agentctl.ops import EditState
    from agentctl.render import diff_table
    from agentctl.runs import parse_run_options, run_settings
    from agentctl.tui.screens.edit import EditScreen

    db, history, agent = screen.source.db, screen.source.history, screen.agent
    try:
        # what the editor starts from (and a format that cannot edit: said before it opens)
        probe = await plan_edit(
            db,
            history,
            meta,
            [],
            for_write=False,
            graph=graph_at_hand(agent.get("agent"), agent.get("config")),
        )
    except UsageError as exc:
        screen.notify(inert(str(exc)), title="Edit", severity="warning", markup=False)
        return
    edits = await screen.app.push_screen_wait(
        EditScreen(
            f"Edit the state of {short_meta(meta)} ({inert(meta.checkpoint_id, one_line=True)})",
            probe.old,
            screen.edit_path,
            new_keys=getattr(history, "EDIT_NEW_KEYS", False),
        )
    )
    if edits is None:
        screen.notify("edit cancelled: nothing changed")
        return
    if edits:
        screen.edit_path = edits[0].key if len(edits) == 1 else ""
    try:
        # the user's graph writes it (not native): found, and the run options read, before the question
        settings = (
            {}
            if probe.native
            else run_settings("langgraph", *parse_run_options(agent.get("run_options") or ""))
        )
        op = EditState(
            meta.checkpoint_id,
            edits,
            screen.source.url,
            agent=agent.get("agent"),
            config=agent.get("config"),
            python=agent.get("python"),
            settings=settings,
        )
        plan = await op.plan(db, history) if edits else None
    except UsageError as exc:
        screen.notify(inert(str(exc)), title="Edit", severity="error", markup=False)
        return
    if plan is None or not plan.data.changes:
        screen.notify("the value is as it was: nothing to edit")
        return
    body = Group(
        Text(plan.confirm[0].upper() + plan.confirm[1:] + ":"),
        Text(""),
        diff_table(plan.data.changes, fit=True),
    )
    if not await asked(screen, "edit", f"Edit {short_meta(meta)}?", body, [("confirm", "Write", "warning")]):
        return
    if "agent" in plan.facts:
        screen.notify(f"writing the edit through {plan.facts['agent'].label}…", markup=False)
    try:
        result = await op.apply(db, history, plan, blocking=asyncio.to_thread)
    except UsageError as exc:
        screen.notify(inert(str(exc)), title="Edit", severity="error", markup=False)
        return
    done(screen, "edit", f"{result.summary} (u undoes)", result.thread, result.select)


def prune_policy(policy: str, param: int) -> dict[str, Any]:
    """The PruneSpec fields of the prune dialog's answer (a policy of CheckpointGC's names)."""
    field = {"keep_last_n": "keep_last", "keep_age": "older_than", "keep_milestones": "milestones"}.get(
        str(getattr(policy, "value", policy)), "keep_last"
    )
    return {field: param}


def prune_spec(thread: str, policy: str, param: int) -> PruneSpec:
    """The PruneSpec of the prune dialog's answer."""
    return PruneSpec(threads=[thread], **prune_policy(policy, param))


#: each write the keys start: what it acts on ("checkpoint": the selected one, "thread":
#: the selected checkpoint's or the one shown, None: the op log), how a missing one is
#: named, and its flow
FLOWS: dict[str, tuple[str | None, str, Callable[..., Coroutine[Any, Any, None]]]] = {
    "rewind": ("checkpoint", "rewind", rewind),
    "branch": ("checkpoint", "branch from", branch),
    "edit": ("checkpoint", "edit", edit),
    "merge": ("thread", "merge", merge),
    "prune": ("thread", "prune", prune),
    "undo": (None, "undo", undo),
    "redo": (None, "redo", redo),
}
