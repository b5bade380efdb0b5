"""`run`: run the user's own agent on from a checkpoint, through the framework itself."""

from typing import Annotated, Any

import typer

from agentctl.cli.complete import complete_ref, complete_thread
from agentctl.cli.context import run as run_coro
from agentctl.cli.context import state
from agentctl.cli.options import AcceptYesOpt, ConfigurableOpt, ContextOpt, JsonOpt, NodeOpt
from agentctl.cli.output import emit_jsonl, info, say


def register(app: typer.Typer) -> None:
    app.command("run")(run_agent)


def run_agent(
    ctx: typer.Context,
    thread: Annotated[
        str,
        typer.Argument(
            metavar="THREAD",
            help="The thread to run (a new one with --input; CrewAI checkpoints: a branch, or "
            "the checkpoint to resume from).",
            autocompletion=complete_thread,
        ),
    ],
    from_ref: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="REF",
            help="Run from this checkpoint of the thread (LangGraph's replay / fork), not from the head.",
            autocompletion=complete_ref,
        ),
    ] = None,
    input_json: Annotated[
        str | None,
        typer.Option(
            "--input",
            metavar="JSON|TEXT",
            help="LangGraph: the graph's input (JSON), e.g. '{\"messages\": "
            '[{"role": "user", "content": "hi"}]}\'; OpenAI Agents SDK, Google ADK, Agno: the user\'s message '
            "(TEXT).",
        ),
    ] = None,
    resume_json: Annotated[
        str | None,
        typer.Option(
            "--resume",
            metavar="JSON",
            help="The answer to a pending interrupt() (LangGraph's Command(resume=...)).",
        ),
    ] = None,
    context_json: ContextOpt = None,
    configurable: ConfigurableOpt = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            metavar="NAME|FILE.py:VAR|module:var|FILE.mjs:EXPORT",
            help="The agent: a graph of langgraph.json, or where its graph object is (a .js/.mjs/.cjs/.ts "
            "file: a LangGraph.js graph, run by node).",
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
            "--python",
            metavar="PATH",
            help="The interpreter of the agent's environment (default: "
            "$AGENTCTL_PYTHON, the active virtualenv's, else agentctl's own).",
        ),
    ] = None,
    node: NodeOpt = None,
    json_out: JsonOpt = False,
    yes: AcceptYesOpt = False,
) -> None:
    """Run your own agent from a checkpoint, through its framework, on this database.

    The agent's code runs in a child process in your interpreter (never inside agentctl),
    with the framework's own saver on --db; each new checkpoint is printed as it is saved
    (--json: JSON Lines). THREAD alone resumes the thread's head (LangGraph:
    invoke(None)); --from REF runs from an earlier checkpoint; --input gives the graph
    input; --resume answers a pending interrupt(); --context gives the graph's Runtime
    context (its context_schema: a dataclass, pydantic model or TypedDict, built from the
    JSON object), --configurable KEY=JSON a value of config["configurable"]. A graph with
    async nodes runs through LangGraph's async API (astream) with its async saver, as
    `langgraph dev` runs it. What the run saved is one operation in
    the op log: `agentctl undo` moves it to the trash. An exception in your code is shown
    with your own frames (exit 1); what was saved before it stays, undoable. Ctrl-C stops
    the run (exit 130); what it saved stays, undoable. A LangGraph run with --input on a
    database without tables (a new SQLite file, an empty Postgres database) has LangGraph's
    saver create them first (setup(), as `langgraph dev` would), and says so.

    OpenAI Agents SDK: --agent FILE.py:VAR (an Agent), --input TEXT (the user's message):
    Runner.run(agent, TEXT, session=...) with the SDK's own session on --db; each new item
    is printed; undo moves the items to the trash and puts the session row back. Google
    ADK: THREAD is APP/USER/SESSION, --agent DIR (root_agent) or FILE.py:VAR, --input TEXT:
    Runner.run_async with ADK's DatabaseSessionService on --db. --from and --resume are
    LangGraph's. Agno: --agent FILE.py:VAR (an Agent, Team or Workflow), --input TEXT:
    VAR.run(TEXT, session_id=THREAD) (arun when it has async tools, hooks or steps), its db
    agno's SqliteDb / PostgresDb on --db; each message of the runs it added is printed.

    CrewAI: checkpoints (`run REF --agent FILE.py:FlowClass`) resume the flow from REF, a
    branch from its newest checkpoint, through Flow.from_checkpoint (Crew.from_checkpoint
    for a crew's checkpoint) with CrewAI's SqliteProvider on --db and the checkpoint's own
    on_events, on the checkpoint's branch; a crew whose agents' model is a class of your
    own (a BaseLLM subclass) cannot be rebuilt by CrewAI and is refused (exit 2). @persist
    flow states (`run UUID --agent FILE.py:FlowClass [--input JSON]`) kick the flow off
    with inputs {"id": UUID} (and --input's object) and SQLiteFlowPersistence on --db.
    CrewAI's checkpoints need SQLite >= 3.45 in --python: pysqlite3 (pysqlite3-binary) is
    used in its place when that is installed.

    LangGraph.js: a graph of a langgraph.json with "node_version" (./src/agent.ts:graph,
    ./graph.mjs:graph), or --agent FILE.mjs:EXPORT (.js/.mjs/.cjs/.ts), runs in a child
    `node` (--node, $AGENTCTL_NODE, else node on PATH) with LangGraph.js and its savers
    as installed in the graph's project (npm install there); TypeScript through the
    project's own tsx. The same lines, options and undo as a Python graph's.

    Example: agentctl --db sample_db/langgraph.db backup lg.db && agentctl --db lg.db run trip --config sample_db/story/langgraph.json --input '{"request": "3 nights"}'
    """
    from agentctl.cli.writes import perform
    from agentctl.ops import RunAgent
    from agentctl.runners import find_agent, pick_interpreter
    from agentctl.runs import create_tables, without_tables

    st = state(ctx)
    if (
        input_json is not None
        and from_ref is None
        and resume_json is None
        and st.format in (None, "langgraph")
        and run_coro(without_tables(st.db))
    ):
        # a new database: LangGraph's saver makes its tables first, as `langgraph dev` would
        # (reads never create anything; a run with an input is a write of the framework's)
        maker = find_agent(agent, config)
        create_tables(st.db, pick_interpreter(maker, python, node), maker)
        info(
            f"created LangGraph{'.js' if maker.runtime == 'node' else ''}'s checkpoint tables in {st.db} (its saver's setup(); undo does not remove them)"
        )
    op = RunAgent(
        thread,
        from_ref,
        input_json,
        resume_json,
        context_json,
        configurable,
        st.db,
        agent,
        config,
        python,
        node,
    )
    _, result, _ = perform(st, op, on_checkpoint=emit_jsonl if json_out else _say_checkpoint)
    assert result is not None
    outcome, op_id = result.json, result.op_id
    if json_out:
        emit_jsonl(outcome)
    tail = f" (op {op_id}; undo: agentctl undo {op_id})" if op_id is not None else " (nothing was written)"
    if result.data == "error":
        _say_error(outcome)
        info(f"{result.summary}{tail}")
        raise typer.Exit(1)
    if result.data == "interrupted":
        info(f"interrupted: {result.summary}{tail}")
        raise typer.Exit(130)
    if not json_out:
        say(f"{result.summary}{tail}{result.more}")


def _say_checkpoint(event: dict[str, Any]) -> None:
    if "text" in event:  # an SDK's item (Agno: a message of step N's run)
        say(
            f"{'step' if 'id' in event else 'item'} {event.get('step')}  {event.get('kind')}  {event.get('text')}"
        )
        return
    nodes = ", ".join(event.get("nodes") or []) or event.get("source") or ""
    keys = ", ".join(event.get("keys") or [])
    say(
        f"step {event.get('step')}  {event.get('id') or event.get('ref')}  {nodes}"
        + (f"  changed: {keys}" if keys else "")
        + (f"  (subgraph {event['ns']})" if event.get("ns") else "")
    )


def _say_error(event: dict[str, Any]) -> None:
    from agentctl.runs import error_line

    info(error_line(event))
    for f in event.get("frames") or []:
        info(f'  File "{f.get("file")}", line {f.get("line")}, in {f.get("name")}')
        if f.get("code"):
            info(f"    {f['code']}")
