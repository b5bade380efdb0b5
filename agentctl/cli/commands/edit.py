"""`edit`: change the state at a step, in the framework's own meaning."""

from typing import Annotated, Any

import typer

from agentctl.cli.context import state
from agentctl.cli.options import ConfigurableOpt, ContextOpt, DryRunOpt, JsonOpt, NodeOpt, RefArg, YesOpt
from agentctl.cli.output import info, show_changes


def register(app: typer.Typer) -> None:
    app.command("edit")(edit)


def edit(
    ctx: typer.Context,
    ref: RefArg,
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=JSON",
            help="Set a key of the state (dots for nested keys: plan.next_city). Repeatable.",
        ),
    ] = None,
    unsets: Annotated[
        list[str] | None,
        typer.Option("--unset", metavar="KEY", help="Remove a nested key of the state. Repeatable."),
    ] = None,
    as_node: Annotated[
        str | None,
        typer.Option(
            "--as-node",
            metavar="NODE",
            help="LangGraph: the node the update is written as (update_state's as_node).",
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent", metavar="NAME|FILE.py:VAR|module:var", help="The agent's graph (as `run` takes it)."
        ),
    ] = None,
    config: Annotated[
        str | None,
        typer.Option(
            "--config", metavar="PATH", help="The langgraph.json to read (default: the current directory's)."
        ),
    ] = None,
    python: Annotated[
        str | None,
        typer.Option(
            "--python", metavar="PATH", help="The interpreter of the agent's environment (as `run` takes it)."
        ),
    ] = None,
    node: NodeOpt = None,
    context_json: ContextOpt = None,
    configurable: ConfigurableOpt = None,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Change the state at a checkpoint: a new checkpoint after REF that holds exactly the values given.

    KEY is a key of the state as `show --json` shows it, dots for nested keys; the value is
    JSON. The plan (the diff) first; --dry-run shows only it. One operation in the op log,
    undoable.

    LangGraph: a new checkpoint, child of REF (a fork when REF is not the head), as
    update_state at REF writes it (source "update", step REF+1; a channel with a reducer
    gets the value, not an append). Which path: with the graph at hand (--agent, --config,
    or a langgraph.json in the current directory), LangGraph itself writes the update in
    your interpreter (exact semantics: reducers, routing, messages). Without it, agentctl
    writes the checkpoint itself, as update_state does for plain channels: new channel
    versions, the edges --as-node (default: the node that wrote last) wrote when it last
    ran, its versions_seen; LangGraph reads and resumes it as its own update. That path
    refuses (exit 2) channels whose values are not plain data (LangChain messages, other
    objects, pickled) and graphs with DeltaChannels: pass --agent for those. With --agent,
    --context and --configurable KEY=JSON are given to the graph as `run` gives them (an
    async graph's update goes through aupdate_state and LangGraph's async saver). A
    LangGraph.js graph (as `run` takes it, in node) writes it with its updateState.

    OpenAI Agents SDK: REF is an item; KEY a key of the item as the SDK stores it
    (`content`, `content.0.text`): the item is changed in place, and the SDK's get_items
    returns the edited item where it was.

    The article's store: REF is a message (a session id: its last message); KEY is one of
    the message's `content`, `role`, `tool_calls`, `tool_call_id` (the message is changed
    in place) or the session's `session.title`, `session.status`, `session.model`,
    `session.metadata[.KEY]` (its updated_at becomes now). messages_fts follows the new
    content; undo puts both rows back as they were.

    Example: agentctl --db sample_db/langgraph.db backup lg.db && agentctl --db lg.db edit support-refund --set refund_cents=500 --yes   (no graph: agentctl writes it)

    Example: agentctl --db lg.db run trip --config sample_db/story/langgraph.json --input '{"request": "3 nights"}' && agentctl --db lg.db edit trip@1 --set plan.next_city='"Lisbon"' --config sample_db/story/langgraph.json --yes
    """
    from agentctl.cli.writes import finish, perform
    from agentctl.edits import parse_edits
    from agentctl.ops import EditState
    from agentctl.runs import run_settings

    st = state(ctx)
    op = EditState(
        ref,
        parse_edits(sets, unsets),
        st.db,
        as_node,
        agent,
        config,
        python,
        node,
        run_settings("langgraph", context_json, configurable),
        for_write=not dry_run,
    )

    def present(plan: Any) -> None:
        meta, changes = plan.data.meta, plan.data.changes
        if dry_run:
            show_changes(changes)
        elif not json_out:
            info(
                f"edit {meta.checkpoint_id} (step {meta.step} of {meta.thread_id}): {len(changes)} change(s)"
            )
            for c in changes:
                info(f"  {c.op} {c.path}")

    finish(perform(st, op, dry_run=dry_run, yes=yes, json_out=json_out, present=present)[1], json_out)
