"""The child process of `agentctl run` for the OpenAI Agents SDK: runs the user's own
`Agent`, in the user's interpreter, through the SDK's `Runner.run`, with the SDK's own
session on the user's database.

Standalone on purpose (as langgraph_child.py, whose protocol it speaks): the standard
library, the `agents` package and the user's code only. agentctl starts it as
`PYTHON openai_child.py EVENTS_FD` and writes one JSON request on its stdin:
{"kind", "target", "thread", "input": TEXT, "agent", "paths", "tables": [S, M]}.
It writes one JSON object per line to EVENTS_FD:

  {"event": "checkpoint", "step": N, "kind": role or type, "text": short text}  (a new item)
  {"event": "done", "output": the run's final output}
  {"event": "error", "type", "message", "agent": the agent's name, "frames": [...]}
  {"event": "setup", "message"}       (the agent or the SDK cannot be loaded)
  {"event": "interrupted"}            (Ctrl-C)

Exit status: 0 done, 1 the user's code raised, 2 setup, 130 interrupted.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if os.path.dirname(os.path.abspath(__file__)) not in sys.path:  # python -P: no script directory
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
if TYPE_CHECKING:  # for the type checker: the same file, as a module of the package
    from agentctl.runners.childlib import SetupError, emit, ended, instance, load, serve_async
else:  # this file's sibling, never the agentctl package
    from childlib import SetupError, emit, ended, instance, load, serve_async


def _agent(obj: Any) -> Any:
    """An `agents.Agent`: the object, or what a factory returns."""
    from agents import Agent

    return instance(obj, Agent, "an agents.Agent")


def _quiet_tracing() -> None:
    """The SDK exports traces to OpenAI by default and, with no key, says "OPENAI_API_KEY
    is not set, skipping trace export" on every run: the export is turned off unless the
    user configured it (OPENAI_API_KEY set, a key given to set_tracing_export_api_key, or
    trace processors of the user's own set by the agent's code)."""
    try:
        from agents import set_tracing_disabled
        from agents.tracing import get_trace_provider
        from agents.tracing.processors import default_exporter, default_processor

        if os.environ.get("OPENAI_API_KEY") or getattr(default_exporter(), "_api_key", None):
            return
        processors = getattr(getattr(get_trace_provider(), "_multi_processor", None), "_processors", None)
        if processors is None or tuple(processors) != (default_processor(),):
            return  # the user's own processors (or an SDK this does not know): as they are
        set_tracing_disabled(True)
    except Exception:  # an SDK without these: its own behaviour
        return


def _prepare(req: dict[str, Any]) -> tuple[Any, Any]:
    agent = _agent(load(req["agent"]))
    _quiet_tracing()  # after the user's code ran: it may have set up tracing its own way
    return agent, _session(req["kind"], req["target"], req["thread"], req["tables"], req.get("session"))


def _session(kind: str, target: str, thread: str, tables: list[str], advanced: str | None = None) -> Any:
    """The SDK's own session on the database: SQLiteSession, or SQLAlchemySession on
    Postgres (asyncpg; agentctl's DSN may carry `search_path=`, a server setting); the
    AdvancedSQLiteSession `advanced` when the thread is one of its branches (switched
    to the branch in `_run`)."""
    sessions, messages = tables
    if advanced is not None:
        from agents.extensions.memory import AdvancedSQLiteSession

        return AdvancedSQLiteSession(
            session_id=advanced, db_path=target, sessions_table=sessions, messages_table=messages
        )
    if kind == "sqlite":
        from agents import SQLiteSession

        return SQLiteSession(thread, target, sessions_table=sessions, messages_table=messages)
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    try:
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
        from sqlalchemy.ext.asyncio import create_async_engine
    except ImportError as exc:
        raise SetupError(f"{sys.executable} has no SQLAlchemySession for Postgres ({exc})") from exc
    parts = urlsplit(target)
    query = dict(parse_qsl(parts.query))
    path = query.pop("search_path", None)
    url = urlunsplit(parts._replace(scheme="postgresql+asyncpg", query=urlencode(query)))
    connect_args = {"server_settings": {"search_path": path}} if path else {}
    engine = create_async_engine(url, connect_args=connect_args)
    return SQLAlchemySession(thread, engine=engine, sessions_table=sessions, messages_table=messages)


def _text(item: Any) -> str:
    """A short text of an item (a message's text, a tool call's name and arguments)."""
    if not isinstance(item, dict):
        return repr(item)[:80]
    content = item.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    elif item.get("type") == "function_call":
        text = f"{item.get('name')}({item.get('arguments', '')})"
    else:
        text = str(item.get("output", ""))
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:79] + "…"


async def _run(out: Any, req: dict[str, Any], agent: Any, session: Any) -> int:
    from agents import Runner

    if req.get("branch") is not None:
        await session.switch_to_branch(req["branch"])
    before = len(await session.get_items())
    result: Any = None
    failure: BaseException | None = None
    try:
        result = await Runner.run(agent, req["input"], session=session)
    except Exception as exc:  # the user's bug (or the model's): shown with the user's frames
        failure = exc
    finally:
        try:
            for n, item in enumerate((await session.get_items())[before:], before + 1):
                kind = item.get("role") or item.get("type") if isinstance(item, dict) else type(item).__name__
                emit(out, {"event": "checkpoint", "step": n, "kind": kind, "text": _text(item)})
        finally:
            engine = getattr(session, "_engine", None)
            if engine is not None:
                await engine.dispose()
    return ended(out, failure, getattr(agent, "name", None), getattr(result, "final_output", None))


if __name__ == "__main__":
    serve_async("the OpenAI Agents SDK", "agents", _prepare, _run)
