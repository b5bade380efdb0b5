"""Write the Agno format's test database with the real agno (3.x, or 2.x for the v2
layout), offline (`agno_model.Scripted`). Run as a process, in the interpreter of the
agno version wanted:

    python agno_write.py write|migrate|append sqlite FILE | postgres SQLALCHEMY_URL SCHEMA

write: the sessions below; migrate: agno 3's `MigrationManager(db).up()` (v2 -> v3,
keeping the legacy arrays); append: one more run of the "chat" agent (on a v2 file not
migrated, agno 3 writes it to a new runs table).

Sessions: "chat" (an agent with a tool that counts in session_state: 3 runs, then a
regeneration of run 3 and a `continue_run(fork=True)` of run 2), "team" (a team
delegating to a member: the member's run and the team's), "flow" (a workflow of two
agent steps), "janitor" (a run PAUSED on a tool that requires confirmation). Prints
{session: [top-level run ids in order]} as JSON.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from agno.agent import Agent  # noqa: E402
from agno.team import Team  # noqa: E402
from agno.tools import tool  # noqa: E402
from agno.workflow import Step, Workflow  # noqa: E402
from agno_model import Scripted  # noqa: E402


def open_db(argv: list[str]):
    if argv[0] == "sqlite":
        from agno.db.sqlite import SqliteDb

        return SqliteDb(db_file=argv[1])
    from agno.db.postgres import PostgresDb

    return PostgresDb(db_url=argv[1], db_schema=argv[2])


def count(run_context=None, session_state=None) -> str:  # noqa: ANN001 - agno passes what it has
    """Add one to the counter in the session state."""
    state = run_context.session_state if run_context is not None else session_state
    state["count"] = state.get("count", 0) + 1
    return f"count is {state['count']}"


def chat_agent(db, script):  # noqa: ANN001, ANN201
    return Agent(
        model=Scripted(script=script),
        id="chat",
        name="Chat",
        db=db,
        tools=[count],
        add_history_to_context=True,
        session_state={"count": 0},
    )


def main(argv: list[str]) -> None:
    action, argv = argv[0], argv[1:]
    db = open_db(argv)
    if action == "migrate":
        import asyncio

        from agno.db.migrations.manager import MigrationManager

        asyncio.run(MigrationManager(db).up())
        return
    if action == "append":
        run = chat_agent(db, [{"tool": "count"}, "appended"]).run("fourth", session_id="chat", user_id="ada")
        print(json.dumps({"chat": [run.run_id]}))
        return
    out: dict[str, list[str]] = {}
    chat = chat_agent(
        db,
        [
            {"tool": "count"},
            "Hello, zephyrine Zürich.",
            {"tool": "count"},
            "two",
            "three",
            "three again",
            "forked",
        ],
    )
    runs = [chat.run(text, session_id="chat", user_id="ada") for text in ("first", "second", "third")]
    # agno 2.9 and 3.x both have continue_run(regenerate=, fork=)
    runs.append(chat.continue_run(run_id=runs[2].run_id, session_id="chat", user_id="ada", regenerate=True))
    runs.append(
        chat.continue_run(
            run_id=runs[1].run_id,
            session_id="chat",
            user_id="ada",
            fork=True,
            continue_from=1,
            input="second, again",
        )
    )
    out["chat"] = [r.run_id for r in runs]

    geo = Agent(model=Scripted(script=["Paris is the capital."]), id="geo", name="Geo", db=db)
    team = Team(
        model=Scripted(
            script=[
                {
                    "tool": "delegate_task_to_member",
                    "args": {"member_id": "geo", "task": "capital of France"},
                },
                "It is Paris.",
            ]
        ),
        members=[geo],
        id="quiz",
        name="Quiz",
        db=db,
    )
    out["team"] = [team.run("capital of France?", session_id="team", user_id="bob").run_id]

    writer = Agent(model=Scripted(script=["draft text"]), id="writer", name="Writer")
    editor = Agent(model=Scripted(script=["final text"]), id="editor", name="Editor")
    flow = Workflow(
        id="pipe",
        name="Pipe",
        db=db,
        steps=[Step(name="draft", agent=writer), Step(name="edit", agent=editor)],
    )
    out["flow"] = [flow.run("write a poem", session_id="flow", user_id="bob").run_id]

    @tool(requires_confirmation=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    janitor = Agent(
        model=Scripted(script=[{"tool": "delete_file", "args": {"path": "/tmp/x"}}]),
        id="janitor",
        db=db,
        tools=[delete_file],
    )
    out["janitor"] = [janitor.run("clean up", session_id="janitor").run_id]
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
