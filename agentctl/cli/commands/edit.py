"""`edit`: change the state at a step, in the framework's own meaning."""


from typing import Annotated

import typer

from agentctl.cli.context import run as run_coro
from agentctl.cli.context import state
from agentctl.cli.options import DryRunOpt, JsonOpt, RefArg, YesOpt
from agentctl.cli.output import confirm, emit_json, info, say, show_changes


def register(app: typer.Typer) -> None:
    app.command("edit")(edit)


def edit(
    ctx: typer.Context,
    ref: RefArg,
    sets: Annotated[list[str] | None, typer.Option(
        "--set", metavar="KEY=JSON", help="Set a key of the state (dots for nested keys: plan.next_city). Repeatable.")] = None,
    unsets: Annotated[list[str] | None, typer.Option(
        "--unset", metavar="KEY", help="Remove a nested key of the state. Repeatable.")] = None,
    as_node: Annotated[str | None, typer.Option(
        "--as-node", metavar="NODE", help="LangGraph: the node the update is written as (update_state's as_node).")] = None,
    agent: Annotated[str | None, typer.Option(
        "--agent", metavar="NAME|FILE.py:VAR|module:var", help="The agent's graph (as `run` takes it).")] = None,
    config: Annotated[str | None, typer.Option(
        "--config", metavar="PATH", help="The langgraph.json to read (default: the current directory's).")] = None,
    python: Annotated[str | None, typer.Option(
        "--python", metavar="PATH", help="The interpreter of the agent's environment (as `run` takes it).")] = None,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Change the state at a checkpoint: a new checkpoint after REF that holds exactly the values given.

    KEY is a key of the state as `show --json` shows it, dots for nested keys; the value is
    JSON. LangGraph: LangGraph itself writes the update in your interpreter (update_state at
    REF, as --as-node; a channel with a reducer gets the value, not an append), so your graph
    is needed (langgraph.json or --agent); REF need not be the head (that is a fork). The plan
    (the diff) first; --dry-run shows only it. One operation in the op log, undoable.

    OpenAI Agents SDK: REF is an item; KEY a key of the item as the SDK stores it
    (`content`, `content.0.text`): the item is changed in place, and the SDK's get_items
    returns the edited item where it was.

    Example: agentctl --db lg.db edit t1 --set fixed=true --agent graph.py:graph --yes
    """
    from agentctl.edits import edit_natively, edit_through_agent, parse_edits, plan_edit, record_edit
    from agentctl.refs import resolve

    edits = parse_edits(sets, unsets)
    st = state(ctx)

    async def plan():
        async with st.engine(write=False) as (store, history):
            return await plan_edit(store, history, await resolve(store, ref), edits, for_write=not dry_run)

    p = run_coro(plan())
    meta, changes = p.meta, p.changes
    if dry_run:
        if json_out:
            emit_json({"ref": meta.checkpoint_id, "thread_id": meta.thread_id, "step": meta.step,
                       "changes": [c.to_dict() for c in changes]})
        else:
            show_changes(changes)
        return
    if not p.native:  # the agent first: a wrong --agent is one line, before anything else
        from agentctl.runners import find_agent, pick_python

        who = find_agent(agent, config)
        interpreter = pick_python(python)
    if not json_out:
        info(f"edit {meta.checkpoint_id} (step {meta.step} of {meta.thread_id}): {len(changes)} change(s)")
        for c in changes:
            info(f"  {c.op} {c.path}")
    if p.native:
        confirm(p.confirm_text, yes=yes)

        async def go():
            async with st.engine(need="undo") as (_, history):
                return await edit_natively(history, p)

        result = run_coro(go())
        if json_out:
            emit_json(dict(result.to_dict(), changes=[c.to_dict() for c in changes]))
            return
        say(f"{result.summary} (op {result.op_id}; undo: agentctl undo {result.op_id})")
        return
    confirm(p.confirm_text, yes=yes)
    outcome = edit_through_agent(p, st.db, who, interpreter, as_node)

    async def record():
        async with st.engine(need="undo") as (_, history):
            return await record_edit(history, p, who.label, as_node)

    op_id = run_coro(record())
    if json_out:
        emit_json({"op_id": op_id, "checkpoint_id": outcome.get("id"), "step": outcome.get("step"),
                   "next": outcome.get("next"), "changes": [c.to_dict() for c in changes]})
        return
    say(f"edited {meta.thread_id}: new checkpoint {outcome.get('id')} at step {outcome.get('step')}"
        + (f" (op {op_id}; undo: agentctl undo {op_id})" if op_id is not None else ""))
