"""Changing history through the format's History: `rewind`, `branch`, `merge`, `prune`.

Each write is one operation of agentctl.ops (one transaction, recorded in the op log, undoable).
Destructive ones show their plan first, ask on a terminal, need --yes otherwise, and
write nothing with --dry-run.
"""

import re
from typing import Annotated, Any

import typer

from agentctl.cli.complete import complete_thread
from agentctl.cli.context import state
from agentctl.cli.options import AcceptYesOpt, DryRunOpt, JsonOpt, NoBackupOpt, RefArg, VacuumOpt, YesOpt
from agentctl.cli.output import done, emit_json, info, progress, say, show, show_plan
from agentctl.cli.writes import finish, perform


def register(app: typer.Typer) -> None:
    app.command("rewind")(rewind)
    app.command("branch")(branch)
    app.command("merge")(merge)
    app.command("prune")(prune)


def rewind(
    ctx: typer.Context,
    ref: RefArg,
    hard: Annotated[
        bool,
        typer.Option(
            "--hard", help="Delete the later checkpoints instead of moving them to an archive thread."
        ),
    ] = False,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    no_backup: NoBackupOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Make a checkpoint the head of its thread again. The checkpoints after it move to
    an archive thread (shown as abandoned in `tree`), or with --hard are deleted.
    Undoable with `agentctl undo` (until `purge`).

    Example: agentctl --db sample_db/checkpoints.db rewind coder-fix-flaky-test@6 --dry-run
    """
    from agentctl.ops import Rewind

    def present(plan: Any) -> None:
        from agentctl import render

        show_plan(render.plan_text(plan.data), to_stdout=dry_run)

    _, result, _ = perform(
        state(ctx),
        Rewind(ref, hard),
        dry_run=dry_run,
        yes=yes,
        no_backup=no_backup,
        json_out=json_out,
        present=present,
    )
    finish(result, json_out)


def branch(
    ctx: typer.Context,
    ref: RefArg,
    name: Annotated[
        str, typer.Argument(metavar="NAME", help="Branch name (no spaces, '@', '~', '/', '\\' or '..').")
    ],
    json_out: JsonOpt = False,
    yes: AcceptYesOpt = False,
) -> None:
    """Start a new thread from a checkpoint (the writer's naming:
    THREAD-branch-NAME-XXXX). Prints the new thread id.

    Example: agentctl --db sample_db/checkpoints.db backup my.db && agentctl --db my.db branch coder-fix-flaky-test@6 try-mocks
    """
    from agentctl.ops import Branch

    _, result, _ = perform(state(ctx), Branch(ref, name))
    assert result is not None
    if json_out:
        emit_json(result.json)
        return
    say(str(result.thread))
    info(f"{result.summary} (op {result.op_id}; undo: agentctl undo {result.op_id})")


def merge(
    ctx: typer.Context,
    branch_thread: Annotated[
        str,
        typer.Argument(metavar="BRANCH", help="The branch thread to merge.", autocompletion=complete_thread),
    ],
    into: Annotated[
        str | None,
        typer.Option(
            "--into",
            help="Thread to merge into (default: the thread the branch came from).",
            autocompletion=complete_thread,
        ),
    ] = None,
    strategy: Annotated[
        str, typer.Option("--strategy", "-s", help="three-way (conflicts stop the merge) | ours | theirs")
    ] = "three-way",
    dry_run: DryRunOpt = False,
    json_out: JsonOpt = False,
    yes: AcceptYesOpt = False,
) -> None:
    """Merge a branch's head into a thread: a three-way merge of state and tool results
    from their common ancestor, the branch's new messages appended. Writes one new
    checkpoint. Conflicts print a table (path, base, ours, theirs), exit 4, write nothing.

    Example: agentctl --db sample_db/checkpoints.db merge coder-fix-flaky-test-branch-retry-backoff-70e7 --dry-run
    """
    from agentctl.errors import MergeConflictError
    from agentctl.ops import Merge

    op = Merge(branch_thread, into, strategy)

    def conflicts_out(plan: Any) -> None:
        if json_out:
            emit_json(op.conflicts_json(plan))
        else:
            _conflicts_plain(plan.data.conflicts)

    seen: list[Any] = []

    def present(plan: Any) -> None:
        seen.append(plan)
        if dry_run and not plan.nothing:
            from agentctl import render

            show(render.plan_text(plan.data))

    try:
        plan, result, _ = perform(
            state(ctx), op, dry_run=dry_run, json_out=json_out, present=present, refused=conflicts_out
        )
    except MergeConflictError:
        if seen:  # the threads moved on since the plan: the write's conflicts
            conflicts_out(seen[0])
        raise
    if json_out:  # (a plan with nothing to merge: perform printed the write's keys)
        finish(result, json_out)
        return
    # nothing to merge, planned or found by the write (another writer brought the branch
    # in since the plan)
    nothing = (
        result.summary
        if result is not None and result.op_id is None
        else plan.nothing
        if plan is not None and result is None
        else ""
    )
    if nothing:
        say(nothing)
    if nothing or result is None:
        return
    say(str(result.select))
    info(f"{result.summary} (op {result.op_id}; undo: agentctl undo {result.op_id})")


def _conflicts_plain(conflicts: list[Any]) -> None:
    from agentctl.cli.output import compact_json, stdout_is_tty, tsv

    if stdout_is_tty():
        from agentctl import render
        from agentctl.cli.output import console

        show(render.conflicts_table(conflicts, width=console().width))
        return
    tsv(
        ["PATH", "BASE", "OURS", "THEIRS"],
        [[c.path, compact_json(c.base), compact_json(c.ours), compact_json(c.theirs)] for c in conflicts],
    )


_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> float:
    """'7d', '12h', '1d12h', '90m', '30s', '2w' -> seconds."""
    from agentctl.errors import UsageError

    s = text.strip().lower()
    parts = _DURATION.findall(s)
    if not s or not parts or "".join(n + u for n, u in parts) != s:
        raise UsageError(f"bad duration {text!r}; use e.g. 7d, 12h, 90m, 1d12h")
    return sum(float(n) * _UNIT[u] for n, u in parts)


def prune(
    ctx: typer.Context,
    thread: Annotated[
        str | None,
        typer.Argument(
            metavar="[THREAD]",
            help="The thread to prune (none, or --all: every thread the policy selects).",
            autocompletion=complete_thread,
        ),
    ] = None,
    all_threads: Annotated[bool, typer.Option("--all", help="Prune every thread.")] = False,
    keep_last: Annotated[
        int | None, typer.Option("--keep-last", min=1, help="Keep the newest N checkpoints.")
    ] = None,
    older_than: Annotated[
        str | None, typer.Option("--older-than", help="Delete checkpoints older than this (7d, 12h, ...).")
    ] = None,
    milestones: Annotated[
        int | None,
        typer.Option(
            "--milestones", min=2, help="Keep N evenly spaced checkpoints (first and last included)."
        ),
    ] = None,
    status: Annotated[
        str | None,
        typer.Option(
            "--status", help="Session stores: only sessions in these statuses (e.g. completed,cancelled)."
        ),
    ] = None,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    no_backup: NoBackupOpt = False,
    vacuum: VacuumOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Delete old checkpoints by a policy; a thread's head and its fork points (the parent
    of a branch, or of several checkpoints) are always kept, and a kept checkpoint whose
    parent goes gets its nearest kept ancestor as parent, or none (as the plan says). Without THREAD, every
    thread the policy selects (as --all). In a session
    store, whole sessions go (with their messages, tool logs and tasks): --older-than
    (not updated since), --status, --keep-last N per user, combinable. One operation,
    undoable with `agentctl undo` until `purge`. --vacuum runs VACUUM afterwards and
    reports the size before and after (the rows removed stay in the trash until `purge`).

    Example: agentctl --db sample_db/checkpoints.db prune loop-research-7 --keep-last 20 --dry-run
    """
    from agentctl.errors import UsageError

    statuses = [s.strip() for s in status.split(",") if s.strip()] if status is not None else None
    policy: dict[str, Any] = {
        n: v
        for n, v in (
            ("keep_last", keep_last),
            ("older_than", older_than),
            ("milestones", milestones),
            ("statuses", statuses),
        )
        if v is not None
    }
    if not policy:
        raise UsageError(
            "give a policy: --keep-last N, --older-than AGE, --milestones N "
            "(or, for session stores, --status S)"
        )
    if "older_than" in policy:
        policy["older_than"] = parse_duration(str(older_than))
    if thread is not None and all_threads:
        raise UsageError("give a THREAD or --all (not both)")
    from agentctl import render
    from agentctl.ops import Prune

    # No THREAD: every thread the policy selects (as --all), with the same plan and prompt.
    # The plan printed lists the first rows only; --json --dry-run prints all.
    op = Prune(thread, policy, preview=None if json_out and dry_run else render.PRUNE_LISTED)

    def present(plan: Any) -> None:
        if not plan.data:
            if not json_out:
                say(plan.nothing)
            return
        show_plan(_prune_plan_text(plan.data, plan.facts["todo"], plan.facts["total"]), to_stdout=dry_run)

    _, result, report = perform(
        state(ctx),
        op,
        dry_run=dry_run,
        yes=yes,
        no_backup=no_backup,
        vacuum=vacuum,
        json_out=json_out,
        present=present,
        rolled_back=True,
        progress=lambda n: progress("prune", n, enabled=n > 1),
    )
    if result is None:
        return
    if json_out:
        emit_json({**result.json, "vacuum": report})
        return
    for summary, op_id in result.lines:
        done(summary, op_id)


def _prune_plan_text(plans: list[Any], todo: list[Any], total: int) -> Any:
    """The plans of a prune as the terminal shows them: each thread's (the first 20 that
    lose checkpoints), then the sum."""
    from rich.console import Group
    from rich.text import Text

    from agentctl import render

    shown = todo[:20] if len(todo) > 1 else plans
    parts: list[Any] = [render.plan_text(p) for p in shown]
    if len(todo) > 20:
        parts.append(Text(f"… and {len(todo) - 20} more threads"))
    if len(plans) > 1:
        parts.append(
            Text(f"in all: delete {total} checkpoint(s) in {len(todo)} of {len(plans)} threads", style="bold")
        )
    return parts[0] if len(parts) == 1 else Group(*parts)
