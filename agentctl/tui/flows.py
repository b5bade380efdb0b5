"""The TUI's writes, each one flow: ask for what it needs, plan (the format's History,
nothing written), confirm (a ConfirmScreen showing the plan), write, say what happened
(OperationFinished, which reloads the views).

Imported when the first write starts. Each flow runs in a worker of the main screen
(group "write": one at a time); they await the dialogs they push.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Coroutine

from rich.console import Group, RenderableType
from rich.text import Text

from agentctl.errors import MergeConflictError
from agentctl.model import CheckpointMetadata
from agentctl.storage import PruneSpec
from agentctl.text import inert
from agentctl.tui.messages import OperationFinished
from agentctl.tui.names import short_meta

if TYPE_CHECKING:
    from agentctl.tui.host import WriteHost


def start(screen: "WriteHost", action: str) -> None:
    """Start the write `action` (rewind, branch, merge, prune, undo, redo, edit) on what the
    screen shows, if this database can do it and what it needs is selected. (`R`'s run
    is agentctl.tui.agent_run's.)"""
    if not can_write(screen, action):
        return
    flow: Coroutine[Any, Any, None]
    if action == "edit":
        meta = need_selection(screen, action)
        if meta is None:
            return
        flow = edit(screen, meta)
    elif action in ("rewind", "branch"):
        meta = need_selection(screen, "rewind" if action == "rewind" else "branch from")
        if meta is None:
            return
        flow = rewind(screen, meta) if action == "rewind" else branch(screen, meta)
    elif action in ("merge", "prune"):
        thread = target_thread(screen, action)
        if thread is None:
            return
        flow = merge(screen, thread) if action == "merge" else prune(screen, thread)
    elif action == "redo":
        flow = redo(screen)
    else:
        flow = undo(screen)
    screen.run_worker(flow, name=f"{action}_flow", group="write", exclusive=True,
                      exit_on_error=False)


# ---- what a write needs ------------------------------------------------------------------


def can_write(screen: "WriteHost", action: str) -> bool:
    if screen.readonly:
        import os

        why = ("agentctl serve without --allow-writes" if "web_driver" in os.environ.get("TEXTUAL_DRIVER", "")
               else "started with --read-only")
        screen.notify(f"read-only mode: {action} is disabled ({why})", severity="warning", markup=False)
        return False
    backend = screen.source.backend
    if backend is None:
        return False
    from agentctl.storage.contract import ALL_CAPABILITIES

    # each write is a declared Capability (edit, run and redo too): refused here unless declared
    if action in {c.value for c in ALL_CAPABILITIES} and not backend.can(action):
        screen.notify(f"the {backend.format.name} format does not support {action}",
                      severity="warning", markup=False)
        return False
    return True


def need_selection(screen: "WriteHost", action: str) -> CheckpointMetadata | None:
    if screen.selected is None:
        screen.notify(f"select a checkpoint to {action}", severity="warning")
    return screen.selected


def target_thread(screen: "WriteHost", action: str) -> str | None:
    """The thread a merge or a prune is about: the selected checkpoint's, else the
    thread shown (None, said, when there is neither)."""
    thread = screen.selected.thread_id if screen.selected is not None else screen.thread_id
    if thread is None:
        screen.notify(f"select a thread to {action}", severity="warning")
    return thread


async def confirm(screen: "WriteHost", title: str, body: RenderableType,
                  choices: list[tuple[str, str, str]] | None = None,
                  keys: list[tuple[str, str, str]] | None = None) -> str | None:
    from agentctl.tui.screens.confirm import ConfirmScreen

    return await screen.app.push_screen_wait(ConfirmScreen(title, body, choices, keys))


def done(screen: "WriteHost", kind: str, summary: str, select_thread: str | None = None,
         select: str | None = None, title: str | None = None, severity: str = "information") -> None:
    """Say what a write did (one notice: `title`, `severity`); the views reload (on
    `select_thread`, on checkpoint `select`)."""
    screen.post_message(OperationFinished(kind, summary, select_thread, select, title, severity))


async def safety_copy(screen: "WriteHost") -> str | None:
    """Before a hard delete on SQLite, the copy of the file the CLI takes too
    (storage.backup.safety_copy, in a thread: a large file takes a while); its path."""
    import asyncio

    from agentctl.storage import local_file
    from agentctl.storage.backup import safety_copy as copy

    path = local_file(screen.source.url)
    return await asyncio.to_thread(copy, path) if path is not None else None


# ---- the flows -----------------------------------------------------------------------------


async def rewind(screen: "WriteHost", meta: CheckpointMetadata) -> None:
    from agentctl.render import plan_text

    engine = screen.source.engine
    plan = await engine.plan_rewind(meta.checkpoint_id)
    if not plan.moved:
        screen.notify(f"{short_meta(meta)} is already the head: nothing to rewind",
                      markup=False)
        return
    choice = await confirm(screen, f"Rewind {short_meta(meta)}?", plan_text(plan),
                           [("confirm", "Rewind", "warning")])
    if choice is None:
        screen.notify("rewind cancelled: nothing changed")
        return
    # The archive thread named in the preview is the one written.
    result = await engine.rewind(meta.checkpoint_id, archive_thread=plan.archive_thread)
    archive = getattr(result, "archive_thread", None) or plan.archive_thread
    summary = (f"rewound {meta.thread_id} to step {meta.step}; {len(plan.moved)} later "
               f"checkpoint(s) " + ("marked rewound by a new rewind event (kept in the thread)"
                                    if getattr(result, "marked", False)  # ADK
                                    else "kept as a branch (a fork is the new head)"
                                    if archive == meta.thread_id  # LangGraph
                                    else f"moved to {archive}" if archive else "removed")
               + " (u undoes)")
    done(screen, "rewind", summary, meta.thread_id)


async def branch(screen: "WriteHost", meta: CheckpointMetadata) -> None:
    from agentctl.refs import check_branch_name
    from agentctl.tui.screens.prompt import PromptScreen

    body = Text.assemble(
        "A new thread ", ("<thread>-branch-<name>-<4 hex>", "cyan"),
        " starts with a copy of ", (short_meta(meta), "bold"), " (step 0, tags branch, "
        "<name>).\nNothing else changes. Name:")
    name = await screen.app.push_screen_wait(PromptScreen(
        f"Branch from {short_meta(meta)}", body, placeholder="branch name, e.g. retry-backoff",
        ok_label="Branch", validate=check_branch_name))
    if name is None:
        screen.notify("branch cancelled: nothing changed")
        return
    thread = await screen.source.engine.branch(meta.checkpoint_id, name)
    done(screen, "branch", f"created branch thread {thread} from {short_meta(meta)} (u undoes)",
         thread)


async def merge(screen: "WriteHost", branch: str) -> None:
    from agentctl.render import diff_table, plan_text
    from agentctl.tui.screens.prompt import PromptScreen
    from agentctl.tui.source import changes_between

    summary = await screen.source.db.thread_summary(branch)
    default = summary.branch_of if summary is not None and summary.branch_of else ""
    suggestions = [t for t in screen.threads.summaries if t != branch]
    target = await screen.app.push_screen_wait(PromptScreen(
        f"Merge {inert(branch, one_line=True)} into…",
        Text("The thread to merge into (its head gets one new merge checkpoint). "
             "The next screen shows the merge and any conflicts."),
        value=default, placeholder="target thread id", suggestions=suggestions,
        ok_label="Preview"))
    if target is None:
        screen.notify("merge cancelled: nothing changed")
        return
    engine = screen.source.engine
    plan = await engine.plan_merge(branch, target)
    if plan.up_to_date:
        screen.notify(inert(f"{target} already contains {branch}: nothing to merge", one_line=True))
        return
    if plan.conflicts:
        # plan_text lists the conflicts; the result depends on the side chosen.
        body: RenderableType = Group(
            plan_text(plan),
            Text(f"\na three-way merge cannot decide {len(plan.conflicts)} conflict(s): "
                 "merge keeping ours (the target's values) or theirs (the branch's), "
                 "or cancel.", style="bold red"))
        choices = [("ours", "Keep ours", "warning"), ("theirs", "Keep theirs", "warning")]
        title = f"Merge {branch} into {target}: conflicts"
    else:
        # What the target's head would become: the merged checkpoint against it.
        changes = [c for c in changes_between(plan.ours, plan.merged)
                   if c.section != "metadata"]
        effect: RenderableType = Group(
            Text(f"\nchanges to {inert(target, one_line=True)}'s head:", style="bold"),
            diff_table(changes)) if changes else Text(
            "\nno change to the target's messages, state or tools", style="dim")
        body = Group(plan_text(plan), effect)
        choices = [("three-way", "Merge", "primary")]
        title = f"Merge {branch} into {target}?"
    choice = await confirm(screen, inert(title, one_line=True), body, choices)
    if choice is None:
        screen.notify("merge cancelled: nothing changed")
        return
    try:
        cid = await engine.merge_branch(branch, target, strategy=choice, checkpoint_id=None
                                        if getattr(plan, "id_at_write", "") else plan.merged.metadata.checkpoint_id)
    except MergeConflictError as exc:
        # The target moved between the preview and the merge.
        screen.notify(inert(str(exc)), title="Merge conflict", severity="error", markup=False)
        return
    done(screen, "merge", f"merged {branch} into {target} as {cid} "
         f"({'strategy ' + choice + ', ' if choice != 'three-way' else ''}u undoes)", target)


async def prune(screen: "WriteHost", thread: str) -> None:
    from agentctl.render import plan_text
    from agentctl.tui.screens.prompt import PruneScreen

    engine = screen.source.engine
    answer = await screen.app.push_screen_wait(
        PruneScreen(inert(thread, one_line=True), getattr(engine, "prune_policies", None)))
    if answer is None:
        screen.notify("prune cancelled: nothing changed")
        return
    policy, raw = answer
    try:
        param = int(raw or "0")
    except ValueError:
        screen.notify(f"the parameter must be a whole number, not {inert(raw, one_line=True)!r}",
                      severity="error", markup=False)
        return
    spec = prune_spec(thread, policy, param)
    plans = await engine.plan_prune_spec(spec)
    count = sum(p.delete_count for p in plans)
    kept = sum(p.keep_count for p in plans)
    if not count:
        screen.notify(f"{policy} {param} keeps all {kept} checkpoints of "
                      f"{thread}: nothing to prune", markup=False)
        return
    body = plan_text(plans[0]) if len(plans) == 1 else Group(*[plan_text(p) for p in plans])
    choice = await confirm(screen, f"Prune {inert(thread, one_line=True)}?", body,
                           [("confirm", f"Delete {count}", "error")])
    if choice is None:
        screen.notify("prune cancelled: nothing changed")
        return
    copy = await safety_copy(screen)
    results = await engine.prune_spec(spec)
    results = results if isinstance(results, list) else [results]
    deleted = sum(len(r.deleted) for r in results)
    done(screen, "prune", f"pruned {thread}: {deleted} checkpoint(s) deleted, "
         f"{kept} kept (u undoes)" + (f"; a copy of the file from before: {copy}" if copy else ""), thread)


async def undo(screen: "WriteHost") -> None:
    engine = screen.source.engine
    ops = [op for op in await engine.oplog(limit=50)
           if getattr(op, "undoable", not op.undone and op.kind not in ("undo", "purge"))]
    if not ops:
        screen.notify("nothing to undo")
        return
    op = ops[0]
    body = Text()
    body.append(f"#{op.op_id} {op.kind}", style="bold")
    body.append(f"  {inert(op.created_at, one_line=True)}\n", style="dim")
    body.append(inert(op.summary))
    if op.threads:
        body.append("\nthreads: ", style="dim")
        body.append(inert(", ".join(op.threads)))
    choice = await confirm(screen, "Undo the last operation?", body,
                           [("confirm", "Undo", "warning")])
    if choice is None:
        screen.notify("undo cancelled: nothing changed")
        return
    result = await engine.undo(op.op_id)
    select = op.threads[0] if op.threads else None
    done(screen, "undo", result.summary, select)


async def redo(screen: "WriteHost") -> None:
    """Ctrl-Y: re-apply the newest undone operation (as `agentctl redo`): what it would do
    first (History.redo's dry run), then the write. A format whose writes are not on the
    journal yet says so (Unsupported), nothing changed."""
    from agentctl.errors import AgentctlError

    engine = screen.source.engine
    try:
        plan = await engine.redo(None, dry_run=True)
    except AgentctlError as exc:
        screen.notify(inert(str(exc)), title="Redo", severity="warning", markup=False)
        return
    # what it would do, as the plan says it ("redo operation N (…)"), and to which checkpoints
    body = Text(inert(plan.summary))
    counts = [f"{verb} {len(ids)}" for verb, ids in (("bring back", plan.created), ("remove", plan.deleted),
                                                     ("move", plan.moved)) if ids]
    if counts:
        body.append(f"\nit would {', '.join(counts)} checkpoint(s)", style="dim")
    choice = await confirm(screen, "Redo the last undone operation?", body,
                           [("confirm", "Redo", "warning")])
    if choice is None:
        screen.notify("redo cancelled: nothing changed")
        return
    result = await engine.redo(plan.op_id)
    done(screen, "redo", result.summary)


async def edit(screen: "WriteHost", meta: CheckpointMetadata) -> None:
    """`e`: the editor (agentctl.tui.screens.edit), the diff, the write: as `agentctl
    edit` does it (agentctl.edits: the format's own edit, or LangGraph's update_state in
    the user's interpreter)."""
    import asyncio

    from agentctl.edits import edit_natively, edit_through_agent, graph_at_hand, plan_edit, record_edit
    from agentctl.errors import UsageError
    from agentctl.render import diff_table
    from agentctl.tui.screens.edit import EditScreen

    db, engine = screen.source.db, screen.source.engine
    try:
        # what the editor starts from (and a format that cannot edit: said before it opens)
        graph = graph_at_hand(screen.agent.get("agent"), screen.agent.get("config"))
        probe = await plan_edit(db, engine, meta, [], for_write=False, graph=graph)
    except UsageError as exc:
        screen.notify(inert(str(exc)), title="Edit", severity="warning", markup=False)
        return
    edits = await screen.app.push_screen_wait(EditScreen(
        f"Edit the state of {short_meta(meta)} ({inert(meta.checkpoint_id, one_line=True)})", probe.old,
        screen.edit_path, new_keys=getattr(engine, "EDIT_NEW_KEYS", False)))
    if edits is None:
        screen.notify("edit cancelled: nothing changed")
        return
    if edits:
        screen.edit_path = edits[0].key if len(edits) == 1 else ""
    try:
        plan = await plan_edit(db, engine, meta, edits, graph=graph) if edits else probe
        who = python = None
        if not plan.native:  # the user's graph writes it: found before the confirmation
            from agentctl.runners import find_agent, pick_interpreter

            who = find_agent(screen.agent.get("agent"), screen.agent.get("config"))
            python = pick_interpreter(who, screen.agent.get("python"))
    except UsageError as exc:
        screen.notify(inert(str(exc)), title="Edit", severity="error", markup=False)
        return
    if not plan.changes:
        screen.notify("the value is as it was: nothing to edit")
        return
    body = Group(Text(plan.confirm_text[0].upper() + plan.confirm_text[1:] + ":"),
                 Text(""), diff_table(plan.changes, fit=True))
    choice = await confirm(screen, f"Edit {short_meta(meta)}?", body, [("confirm", "Write", "warning")])
    if choice is None:
        screen.notify("edit cancelled: nothing changed")
        return
    if plan.native:
        result = await edit_natively(engine, plan)
        created = getattr(result, "created", None) or [meta.checkpoint_id]
        done(screen, "edit", f"{result.summary} (u undoes)", meta.thread_id, created[-1])
        return
    assert who is not None and python is not None
    screen.notify(f"writing the edit through {who.label}…", markup=False)
    try:
        from agentctl.runs import parse_run_options, run_settings

        settings = run_settings("langgraph", *parse_run_options(screen.agent.get("run_options") or ""))
        outcome = await asyncio.to_thread(edit_through_agent, plan, screen.source.url, who, python, None, settings)
    except UsageError as exc:
        screen.notify(inert(str(exc)), title="Edit", severity="error", markup=False)
        return
    await record_edit(engine, plan, who.label)
    done(screen, "edit", f"edited {meta.thread_id}: new checkpoint {outcome.get('id')} at step "
         f"{outcome.get('step')} (u undoes)", meta.thread_id, str(outcome.get("id") or "") or None)


def prune_spec(thread: str, policy: str, param: int) -> PruneSpec:
    """The PruneSpec of the prune dialog's answer (a policy of CheckpointGC's names)."""
    field = {"keep_last_n": "keep_last", "keep_age": "older_than",
             "keep_milestones": "milestones"}.get(str(getattr(policy, "value", policy)), "keep_last")
    options: dict[str, Any] = {field: param}
    return PruneSpec(threads=[thread], **options)
