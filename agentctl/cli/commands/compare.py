"""`compare`: where two runs parted."""

from typing import Annotated, Any

import typer

from agentctl.cli.complete import complete_ref
from agentctl.cli.context import run, state
from agentctl.cli.options import JsonOpt, RefArg
from agentctl.cli.output import emit_json, say, show_changes, stdout_is_tty


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)


def compare(
    ctx: typer.Context,
    a: RefArg,
    b: Annotated[
        str,
        typer.Argument(
            metavar="B", help="The other run's checkpoint (or thread: its head).", autocompletion=complete_ref
        ),
    ],
    exact: Annotated[
        bool,
        typer.Option(
            "--exact", help="Compare the ids and times the frameworks generate too (else paired by place)."
        ),
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Where two runs parted: the first step at which their states differ, and the diff there.

    A and B are checkpoints or threads (their heads). Each run is walked from its root to
    A / B along parent links (across branches); a checkpoint whose messages, state and
    tool results equal its parent's (a LangGraph fork copy) is not a step. The two runs'
    steps are aligned from the root; the first pair that differs is reported with its
    structural diff (the JSON paths of `diff`), then how many steps each run has after it.
    The ids and times the frameworks generate anew in every run (message, tool-call, item,
    event, run and invocation ids; timestamps) are paired by place and left out, so a
    replay of an unchanged LLM app does not part; --exact compares them too.

    --json: {first_divergent_step (null when one run is the other or a prefix of it), a, b
    (checkpoint ids at the divergence), a_step, b_step (their own steps), changes, a_steps,
    b_steps, common_steps, fork_point, exact}.

    Example: agentctl --db sample_db/langgraph.db compare support-refund-replay~2 support-refund-replay
    """
    from agentctl.compare import compare as compare_runs
    from agentctl.refs import resolve

    async def go() -> Any:
        async with state(ctx).open() as store:
            meta_a = await resolve(store, a)
            meta_b = await resolve(store, b)
            return await compare_runs(store, meta_a, meta_b, exact=exact)

    result = run(go())
    if json_out:
        emit_json(result.to_dict())
        return
    from agentctl import render

    if result.first_divergent_step is None:
        say(render.comparison_head(result).plain)
        return
    if not stdout_is_tty():
        say(
            f"parted at step {result.first_divergent_step}: A {result.a_at} (step {result.a_step}), "
            f"B {result.b_at} (step {result.b_step}); "
            f"after it A has {result.a_steps} step(s), B {result.b_steps}"
        )
        show_changes(result.changes)
        return
    show_changes(result.changes, head=render.comparison_head(result))
