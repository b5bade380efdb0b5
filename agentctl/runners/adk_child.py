"""The child process of `agentctl run` for Google ADK: runs the user's own agent, in the
user's interpreter, through ADK's `Runner.run_async` with ADK's own
`DatabaseSessionService` on the user's database.

Standalone on purpose (as langgraph_child.py, whose protocol it speaks): the standard
library, google-adk, the user's code and its sibling `childlib.py` only. The request:
{"kind", "target", "thread": "APP/USER/SESSION", "input": TEXT, "agent", "paths"};
`agent` is {"file"|"module", "var"} or {"dir": PATH} (an agents folder: the package's
`root_agent`, or its `agent.root_agent`, as `adk run DIR` loads it). Events on EVENTS_FD:

  {"event": "checkpoint", "step": N, "kind": the event's author, "text": short text}
  {"event": "done", "output": the last text an agent said}
  {"event": "error", "type", "message", "agent", "frames": [...]}
  {"event": "setup", "message"}      {"event": "interrupted"}

Exit status: 0 done, 1 the user's code raised, 2 setup, 130 interrupted.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

if os.path.dirname(os.path.abspath(__file__)) not in sys.path:  # python -P: no script directory
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
if TYPE_CHECKING:  # for the type checker: the same file, as a module of the package
    from agentctl.runners.childlib import SetupError, emit, ended, instance, load, serve_async
else:  # this file's sibling, never the agentctl package
    from childlib import SetupError, emit, ended, instance, load, serve_async


def _agent(spec: dict[str, Any]) -> Any:
    from google.adk.agents import BaseAgent

    if "dir" in spec:
        path = spec["dir"]
        sys.path.insert(0, os.path.dirname(path))
        try:
            module = importlib.import_module(os.path.basename(path))
        except Exception as exc:
            raise SetupError(
                f"importing the agents folder {path} raised {type(exc).__name__}: {exc}"
            ) from exc
        obj = getattr(module, "root_agent", None)
        if obj is None:
            obj = getattr(getattr(module, "agent", None), "root_agent", None)
        if obj is None:
            raise SetupError(f"{path} has no root_agent (nor agent.root_agent)")
    else:
        obj = load(spec)
    return instance(obj, BaseAgent, "an ADK agent (a BaseAgent)")


def _service(kind: str, target: str) -> Any:
    from google.adk.sessions import DatabaseSessionService

    if kind == "sqlite":
        return DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{target}")
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    from sqlalchemy.ext.asyncio import create_async_engine

    parts = urlsplit(target)
    query = dict(parse_qsl(parts.query))
    path = query.pop("search_path", None)
    url = urlunsplit(parts._replace(scheme="postgresql+asyncpg", query=urlencode(query)))
    engine = create_async_engine(url, connect_args={"server_settings": {"search_path": path}} if path else {})
    return DatabaseSessionService(db_engine=engine)


def _text(event: Any) -> str:
    parts = getattr(getattr(event, "content", None), "parts", None) or []
    bits = []
    for p in parts:
        if getattr(p, "text", None):
            bits.append(p.text)
        elif getattr(p, "function_call", None):
            bits.append(f"{p.function_call.name}(...)")
        elif getattr(p, "function_response", None):
            bits.append(f"{p.function_response.name} -> ...")
    text = " ".join(" ".join(bits).split())
    return text if len(text) <= 80 else text[:79] + "…"


async def _run(out: Any, req: dict[str, Any], agent: Any, service: Any) -> int:
    from google.adk.runners import Runner
    from google.genai import types

    app, user, session_id = req["thread"].split("/", 2)
    failure: BaseException | None = None
    output = None
    before = None
    try:
        session = await service.get_session(app_name=app, user_id=user, session_id=session_id)
        if session is None:
            session = await service.create_session(app_name=app, user_id=user, session_id=session_id)
        before = len(session.events)
        runner = Runner(app_name=app, agent=agent, session_service=service)
        message = types.Content(role="user", parts=[types.Part(text=req["input"])])
        try:
            async for event in runner.run_async(user_id=user, session_id=session_id, new_message=message):
                if not getattr(event, "partial", False) and event.author != "user" and _text(event):
                    output = _text(event)
        except Exception as exc:  # the user's bug: shown with the user's frames
            failure = exc
    finally:  # also when Ctrl-C stopped the run: what it saved is said
        try:
            if before is not None:  # the events ADK saved, as it stored them (the user's message included)
                saved = await service.get_session(app_name=app, user_id=user, session_id=session_id)
                for n, event in enumerate(saved.events[before:] if saved else [], before + 1):
                    emit(out, {"event": "checkpoint", "step": n, "kind": event.author, "text": _text(event)})
        finally:
            await service.close()
    return ended(out, failure, getattr(agent, "name", None), output)


if __name__ == "__main__":
    serve_async(
        "Google ADK",
        "google.adk",
        lambda req: (_agent(req["agent"]), _service(req["kind"], req["target"])),
        _run,
    )
