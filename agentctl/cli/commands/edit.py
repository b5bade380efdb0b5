"""`edit`: change the state at a step, in the framework's own meaning."""


from typing import Annotated, Any

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
    objects, pickled) and graphs with DeltaChannels: pass --agent for those.

    OpenAI Agents SDK: REF is an item; KEY a key of the item as the SDK stores it
    (`content`, `content.0.text`): the item is changed in place, and the SDK's get_items
    returns the edited item where it was.

    The article's store: REF is a message (a session id: its last message); KEY is one of
    the message's `content`, `role`, `tool_calls`, `tool_call_id` (the message is changed
    in place) or the session's `session.title`, `session.status`, `session.model`,
    `session.metadata[.KEY]` (its updated_at becomes now). messages_fts follows the new
    content; undo puts both rows back as they were.

    Example: agentctl --db lg.db edit t1 --set fixed=true --yes   (no graph: agentctl writes it)

    Example: agentctl --db lg.db edit t1 --set fixed=true --agent graph.py:graph --yes
    """
    from agentctl.diff import diff_values
    from agentctl.edits import apply_edits, parse_edits
    from agentctl.errors import UsageError
    from agentctl.refs import resolve
    from agentctl.runners import require_runtime

    edits = parse_edits(sets, unsets)
    st = state(ctx)
    from pathlib import Path

    from agentctl.runners import CONFIG_NAME

    graph_at_hand = agent is not None or config is not None or (Path.cwd() / CONFIG_NAME).is_file()

    async def plan():
        async with st.engine(write=False) as (store, history):
            fmt = store.format.name
            # the format writes the edit itself; LangGraph only without the user's graph
            native = hasattr(history, "edit_state") and not (fmt == "langgraph" and graph_at_hand)
            if not native:
                require_runtime(fmt, "edit")
            meta = await resolve(store, ref)
            if fmt == "langgraph" and "|" in meta.thread_id and meta.thread_id.split("|", 1)[1]:
                raise UsageError(f"{meta.checkpoint_id} is a checkpoint of a subgraph; edit the parent graph's")
            cp = await store.get(meta.checkpoint_id)
            if hasattr(history, "edit_view"):  # what the format edits is not the whole state (an SDK's item)
                own = history.edit_view(cp)
            else:
                own = {k: v for k, v in (cp.state or {}).items() if not (k.startswith("__") and k.endswith("__"))}
            new = apply_edits(own, edits)
            if hasattr(history, "edit_check"):  # what the format's rows can hold
                history.edit_check(own, new)
            before = None if dry_run or native else await history.run_keys(meta.thread_id)
            return fmt, native, meta, own, new, before

    fmt, native, meta, old, new, before = run_coro(plan())
    changes = diff_values(old, new, "state")
    if dry_run:
        if json_out:
            emit_json({"ref": meta.checkpoint_id, "thread_id": meta.thread_id, "step": meta.step,
                       "changes": [c.to_dict() for c in changes]})
        else:
            show_changes(changes)
        return
    what = ", ".join(("unset " if e.unset else "set ") + e.key for e in edits)
    if native:
        keys = list(dict.fromkeys(e.path[0] for e in edits))
        _edit_natively(st, fmt, meta, new, what, changes, yes, json_out,
                       {"keys": keys, "as_node": as_node, "thread_id": meta.thread_id} if fmt == "langgraph" else {})
        return
    from agentctl.runners import find_agent, pick_python, run_child

    who = find_agent(agent, config)
    interpreter = pick_python(python)
    if not json_out:
        info(f"edit {meta.checkpoint_id} (step {meta.step} of {meta.thread_id}): {len(changes)} change(s)")
        for c in changes:
            info(f"  {c.op} {c.path}")
    confirm(f"write a new checkpoint after {meta.checkpoint_id} with these values", yes=yes)
    from agentctl.storage import parse_url

    kind, target = parse_url(st.db)
    request: dict[str, Any] = {"mode": "edit", "kind": kind, "target": target, "thread": meta.thread_id,
                               "from": meta.checkpoint_id, "agent": who.target, "paths": who.paths,
                               "edits": [e.to_wire() for e in edits], "as_node": as_node}
    outcome = run_child(fmt, interpreter, request).event
    if outcome.get("event") != "edited":
        raise UsageError(str(outcome.get("message") or f"the edit did not happen ({outcome.get('event')})"))
    summary = f"edit {meta.thread_id} at step {meta.step} ({meta.checkpoint_id}): {what}"

    async def record():
        async with st.engine(need="undo") as (_, history):
            return await history.record_run(meta.thread_id, before, summary,
                                            {"agent": who.label, "edits": [e.to_wire() for e in edits],
                                             "as_node": as_node, "ref": meta.checkpoint_id}, kind="edit")

    op_id = run_coro(record())
    if json_out:
        emit_json({"op_id": op_id, "checkpoint_id": outcome.get("id"), "step": outcome.get("step"),
                   "next": outcome.get("next"), "changes": [c.to_dict() for c in changes]})
        return
    say(f"edited {meta.thread_id}: new checkpoint {outcome.get('id')} at step {outcome.get('step')}"
        + (f" (op {op_id}; undo: agentctl undo {op_id})" if op_id is not None else ""))


def _edit_natively(st: Any, fmt: str, meta: Any, new: dict[str, Any], what: str, changes: list[Any], yes: bool,
                   json_out: bool, extra: dict[str, Any]) -> None:
    """A format whose History writes the edit itself (AgentOS: a new head holding REF's
    checkpoint with the new state; the OpenAI Agents SDK: the item changed in place;
    LangGraph without the graph: an update checkpoint after REF)."""
    if not json_out:
        info(f"edit {meta.checkpoint_id} (step {meta.step} of {meta.thread_id}): {len(changes)} change(s)")
        for c in changes:
            info(f"  {c.op} {c.path}")
    confirm(f"change item {meta.checkpoint_id} of {meta.thread_id} in place" if fmt == "openai-agents" else
            f"write a new checkpoint after {meta.checkpoint_id} with these values" if fmt == "langgraph" else
            f"change message {meta.checkpoint_id} / session {meta.thread_id} in place" if fmt == "article" else
            f"write a new head of {meta.thread_id} holding this checkpoint with these values", yes=yes)

    async def go():
        async with st.engine(need="undo") as (_, history):
            return await history.edit_state(meta.checkpoint_id, new, what, **extra)

    result = run_coro(go())
    if json_out:
        out = dict(result.to_dict(), changes=[c.to_dict() for c in changes])
        if fmt == "langgraph":
            out["checkpoint_id"] = result.created[0]
        emit_json(out)
        return
    say(result.summary if result.op_id is None else
        f"{result.summary} (op {result.op_id}; undo: agentctl undo {result.op_id})")
